"""zgen.report."""
