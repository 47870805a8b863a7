"""zgen.runtime: the ZeRO stage-3 engine that generated training scripts run on.

```python
import zgen.runtime as zr
zr.init_distributed()                       # torchrun's env://; a no-op without torchrun
engine = zr.initialize(model=model, config="ds_config.json", plan=None)
for batch in loader:
    loss = engine(**batch)                  # the unmodified module's forward
    engine.backward(loss)
    engine.step()                           # optimizer only at the accumulation boundary
engine.save_checkpoint("ckpt/step100")      # sharded; loads on any world size
```

The engine needs torch only (no libcst, no z3). `config` is a DeepSpeed-style
dict, a path to one, or a `zgen.config.resolved.ResolvedConfig`; `plan` is a
`zgen.schedule.plan.Plan` from `zgen plan`, or None for `default_plan(model, config)`.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from zgen.errors import ZgenError
from zgen.schedule.plan import Plan

from .comm import DistInfo, init_distributed, shutdown, world
from .config import RuntimeConfig
from .engine import DTYPES, Engine
from .meta_build import RECORD_MODES, build_on_meta
from .materialize import fill_from_meta, fill_from_weights, has_meta, move_buffers
from .partitioned import Partitioned
from .own_init import apply_init
from .plans import bind, default_plan
from . import sharding

__all__ = ["initialize", "apply_init", "build_on_meta", "init_distributed", "shutdown", "default_plan", "Engine", "DistInfo", "Partitioned", "RuntimeConfig"]


def initialize(
    model: nn.Module | Callable[[], nn.Module],
    config: Any,
    plan: Plan | None = None,
    *,
    init_fn: Callable[[nn.Module], None] | None = None,
    device: str | torch.device | None = None,
    keep_low_precision: bool = False,
    split_master: bool | None = None,
    optimizer: Callable[[list[torch.Tensor]], torch.optim.Optimizer] | None = None,
    init_rng: str | None = None,
) -> Engine:
    """Shard `model` over the job's ranks and return the engine that trains it.

    `model` is a module (on any device, or on `meta`) or a factory. A factory
    is called with its large tensors deferred (`build_on_meta`,
    `zgen.runtime.deferred`): no rank ever holds the full model, and each
    rank's weights are those `factory()` gives, everything its constructor
    does to them included (its `self.apply(init)`, a scaled init over
    `named_parameters()`, tying). `init_fn`, when given, then runs module by
    module in `model.apply` order, as `factory().apply(init_fn)` would. A
    module its author built on `meta` gets its own initialisation methods
    (`zgen.runtime.own_init`; `apply_init` gives a real model the same).
    `init_rng` says how random numbers of that initialisation are drawn:
    "exact" draws the plain build's numbers (the same bits as `factory()` on
    the CPU after the same `torch.manual_seed`, at the cost of drawing every
    number of the plain build on the CPU), "seeded" seeds each random call
    from the build's seed and draws on `device` (fast on a GPU; same
    distributions, not the same bits). Default: "exact" on the CPU, "seeded"
    on a GPU.
    `device` defaults to the local GPU under NCCL, else the CPU.
    `keep_low_precision` keeps a persistent compute-dtype copy of the weights
    at world size 1 (faster, +2 bytes per parameter); by default each unit
    is cast from the fp32 master just before it runs. `split_master` (bf16
    only; the default there) stores each fp32 master as its bf16 rounding plus
    a 16-bit remainder (`zgen.runtime.split`): the bf16 copy costs no memory
    and no cast, and one fused pass updates both halves. `split_master=False`
    keeps plain fp32 shards stepped by torch's fused AdamW.

    `optimizer` is a factory `lambda params: torch.optim.X(params, ...)`: it is
    called once with the flat fp32 master shards (one tensor per unit) and the
    optimizer it returns is stepped one unit at a time, in forward order, on
    gradients already averaged and clipped; its state goes into checkpoints.
    The config must then have no `optimizer` block (its `scheduler`, if any,
    sets the learning rate). Without it the config's optimizer is used:
    Adam/AdamW (the fast default), Lion, or a torch.optim class by name.
    `zero_optimization.offload_optimizer.device: "cpu"` keeps masters and
    optimizer state in host memory (`zgen.runtime.offload`); with it,
    `offload_param.device: "cpu"` keeps the compute-dtype shards there too,
    each copied up just before its unit's gather.
    """
    rank, size = world()
    dev = _device(device)
    if init_rng is None:
        init_rng = "exact" if dev.type == "cpu" else "seeded"
    if init_rng not in RECORD_MODES:
        raise ZgenError(f"init_rng must be one of {', '.join(RECORD_MODES)}, not {init_rng!r}")
    if not isinstance(model, nn.Module):
        if not callable(model):
            raise ZgenError(f"model must be an nn.Module or a factory returning one, not {type(model).__name__}")
        model = build_on_meta(model, record=init_rng)  # parameters on meta, their constructor recorded
        if not isinstance(model, nn.Module):
            raise ZgenError(f"the model factory returned {type(model).__name__}, not an nn.Module")
    if optimizer is not None and not callable(optimizer):
        raise ZgenError(
            f"optimizer must be a factory such as `lambda params: torch.optim.SGD(params, lr=0.1)`, not {type(optimizer).__name__}"
        )
    cfg = RuntimeConfig.load(config, size, client_optimizer=optimizer is not None)
    adam = cfg.optimizer in ("adam", "adamw")
    if split_master is None:
        split_master = cfg.precision == "bf16" and not keep_low_precision and adam and not cfg.offload_optimizer
    if split_master and cfg.precision != "bf16":
        raise ZgenError(f"split_master needs bf16 compute; the config asks for {cfg.precision}")
    if split_master and not adam:
        raise ZgenError("split_master is an Adam(W) update; this job steps another optimizer", help="drop split_master=True")
    if split_master and cfg.offload_optimizer:
        raise ZgenError("split_master and offload_optimizer exclude each other (the offloaded master is plain fp32)")
    if plan is None:
        plan = default_plan(model, cfg)
    elif not isinstance(plan, Plan):
        raise ZgenError(f"plan must be a zgen.schedule.plan.Plan or None, not {type(plan).__name__}")
    binding = bind(model, plan, size)
    info = DistInfo(rank, size, dev.index or 0, dev)
    # How units are gathered and reduced across ranks: one rank, flat, parameter offload or hpZ, chosen here once.
    strategy = sharding.choose(cfg, size, DTYPES[cfg.reduce_dtype])
    if has_meta(model):

        def fill(units):
            fill_from_meta(model, units, binding, init_fn, dev, seeded=init_rng == "seeded")

    else:
        if init_fn is not None:
            raise ZgenError(
                "init_fn was given but the model already has real weights",
                help="build the model on the meta device (or pass a factory) to have init_fn run on the shards",
            )
        move_buffers(model, dev)

        def fill(units):
            fill_from_weights(units)

    return Engine(
        model, cfg, plan, binding, info, sharding=strategy, keep_low_precision=keep_low_precision,
        split_master=split_master, fill=fill, optimizer=optimizer,
    )


def _device(device: str | torch.device | None) -> torch.device:
    if device is not None:
        dev = torch.device(device)
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        return dev
    if torch.distributed.is_initialized():
        backend = torch.distributed.get_backend()
        if backend == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
