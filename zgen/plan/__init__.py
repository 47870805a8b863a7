"""Planning from a trace: what `zgen plan` and `zgen emit` run with torch.

`trace` runs the model once on the meta device (`stand_ins` gives values to
value-dependent ops inside one module), `planner` turns the trace and the
resolved config into a `zgen.schedule.plan.Plan`, `plot` draws it. The
torch-free rules they share with the runtime and the memory model live in
`zgen.schedule`. This file imports nothing so that `zgen.plan.trace` loads
only what it needs.
"""
