"""zgen.commands."""
