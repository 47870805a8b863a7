"""zgen.model.rules."""
