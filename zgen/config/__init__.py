"""zgen.config."""
