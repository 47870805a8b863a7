"""The program being checked: its files, classes, members and methods (the semantic model the rules query).

`skeleton` (the cheap `ast` pass), `tree` (libcst snippets), `project` (other
files, read never imported), `index` (`ModelIndex`: classes, methods, what
each `__init__` builds), `known` (names from torch, transformers, DeepSpeed),
`size` (how large a layer's parameters are), `trigger` (text pre-filters).
Nothing here knows a rule.
"""
