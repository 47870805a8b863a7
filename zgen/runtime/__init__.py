"""zgen.runtime."""
