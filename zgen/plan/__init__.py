"""The plan: what the runtime gathers, when, and in which groups.

`schedule` holds the `Plan` type the runtime consumes (torch-free, so the runtime
and the emitted script can import it cheaply); `units` the rule that groups a
module tree into units; `trace` the meta-device trace; `planner` builds a `Plan`
from a trace and the resolved config; `plot` draws it. This file imports nothing
so that `zgen.plan.schedule` stays light.
"""
