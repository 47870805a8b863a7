"""zgen.solver."""
