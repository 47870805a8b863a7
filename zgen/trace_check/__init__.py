"""`zgen check --trace`: the user's model run as simulated ZeRO-3 ranks on the CPU, before any GPU.

ZeRO-3 fails in two ways that only show when the model runs, and that
DeepSpeed itself trips on hours into a job: a parameter it has partitioned
is used while nothing gathers it (ZG1xx, ZG3xx), and ranks call different
submodules, so one waits forever in an all-gather (ZG2xx). This package runs
the model's factory, one training step and the user's entry points the way
ranks would, and reports both, as findings the static check's report merges.

One concept per module:

* `partitions`: which parameters are partitioned, who owns them, what gathers them now;
* `zero_init`: the simulated `zero.Init` during the factory (and what `apply` gathers);
* `deepspeed_api`: DeepSpeed's `GatheredParameters`, `register_external_parameter`, `zero.Init`,
  honoured when the user's code uses them;
* `access`: what an op does to a parameter (metadata, size, init, write, read);
* `hazards`: which rule an ungathered use is, and which statement did it;
* `decisions`: decisions on tensor values, their taint (data, random draws), forcing one the other way;
* `draws`: random draws (torch, Python's `random`, numpy): their support, and a draw forced to either end;
* `ranks`: simulated ranks (rank, data, random state) and collectives that agree across them;
* `events`: what a run did (user lines, calls that gather) and the forward hooks behind it;
* `runs`: one run: build, training step, entries; real CPU tensors for small models, `meta` above;
* `divergence`: where two runs part and the statement that decided it;
* `sites`: the statement a use is reported at (out of other packages' helpers handed the parameter), as
  `path:line:col`;
* `check`: the orchestration: which runs, in which order, and the findings.
"""

from .check import TraceRequest, TraceResult, trace_check

__all__ = ["TraceRequest", "TraceResult", "trace_check"]
