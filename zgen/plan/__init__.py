"""The plan: what the runtime gathers, when, and in which groups.

Torch-free rules the runtime and the memory model share: `schedule` (the `Plan`
type the runtime consumes), `replay` (a plan position by position), `prefetch`
(which all-gathers a position issues), `retention` (which units stay gathered
from forward to backward), `trace_rule` (ZG290's documentation). With torch:
`units` groups a module tree into units, `trace` runs the model on the meta
device, `planner` builds a `Plan` from a trace and the resolved config, `plot`
draws it. This file imports nothing so that the light modules stay light.
"""
