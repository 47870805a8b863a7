"""Constraint rules for `zgen check` on configs; shipped inside the package as `zgen.rules`."""
