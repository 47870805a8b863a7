"""zgen.model."""
