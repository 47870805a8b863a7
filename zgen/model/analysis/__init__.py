"""Questions over the program that several rules ask: control flow, taint, parameter accesses, divergence.

Each module answers one kind of question once per file (memoised on the
`ModelIndex`); the rules filter the answers. Nothing here imports a rule.
"""
