"""The stage-3 schedule: the `Plan` type and the torch-free rules that draw and replay one.

Base layer, shared by the planner (`zgen.plan`), the runtime (`zgen.runtime`)
and the memory model (`zgen.memory`):

* `plan`: the `Plan` and `Unit` types the runtime consumes (JSON round-trip);
* `units`: which modules get a unit (the repeated blocks of a model's stacks,
  or `--units` patterns);
* `grouping`: parameters into units, persistent parameters, tied parameters as
  externals: the pure core the planner and the runtime's default plan both call;
* `prefetch`: which all-gathers a position issues;
* `retention`: which units stay gathered from forward to backward;
* `replay`: a plan position by position.

Nothing here imports torch: a model, where one is read, is read through its
methods (`named_parameters`, `named_modules`). This file imports nothing.
"""
