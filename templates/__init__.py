"""Jinja2 templates for `zgen emit`; shipped inside the package as `zgen.templates`."""
