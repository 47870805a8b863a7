"""The resolved config: every value concrete, every derived or `"auto"` value explained.

`zgen check --show-resolved` prints it, `zgen emit` renders it into the
generated script, and `zgen.runtime` accepts it (or the plain dict from
`to_ds_config()`). It is plain data; no z3 or torch import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from zgen.deepspeed_defaults import defaults

__all__ = ["OptimizerSpec", "SchedulerSpec", "OffloadSpec", "ZeroSpec", "ResolvedConfig", "Origin", "precision_of",
           "written_precision"]

Precision = Literal["bf16", "fp16", "fp32"]


def precision_of(fp16: bool, bf16: bool) -> Precision:
    """The training precision from its two switches; fp16 first (DeepSpeed refuses both, ZC rules say so)."""
    return "fp16" if fp16 else "bf16" if bf16 else "fp32"


def written_precision(config: Mapping[str, object]) -> Precision:
    """The precision a plain config (the dict DeepSpeed reads) asks for, before it is checked.

    A switch is on when its `enabled` is `true`: an `"auto"` one is off, as zgen fills
    it. DeepSpeed reads `bf16` and, when that is absent or null, the old name `bfloat16`.
    """
    def enabled(section: object) -> bool:
        return isinstance(section, Mapping) and section.get("enabled") is True

    bf16 = config.get("bf16")
    return precision_of(enabled(config.get("fp16")), enabled(config.get("bfloat16") if bf16 is None else bf16))

# Field defaults are DeepSpeed's (current release), so a spec built in code means what an empty config means.
_DS = defaults()
_Z = "zero_optimization."


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where a resolved value came from.

    `kind` is one of `config` (the user wrote it), `default` (DeepSpeed's
    default for the chosen version), `derived` (computed from other keys),
    `auto` (an `"auto"` placeholder that zgen solved). `detail` is a sentence
    (`train_batch_size / (micro batch 1 x world 8)`) and `line`/`column`
    point at the key in the config file when there is one.
    """

    kind: Literal["config", "default", "derived", "auto"]
    detail: str = ""
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizerSpec:
    type: str = "AdamW"
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerSpec:
    """DeepSpeed scheduler (`WarmupLR`, `WarmupDecayLR`, `WarmupCosineLR`) with its params."""

    type: str
    params: tuple[tuple[str, float], ...] = ()

    def param(self, name: str, default: float | None = None) -> float | None:
        return dict(self.params).get(name, default)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffloadSpec:
    """Where ZeRO keeps offloaded parameters or optimizer state (`device` "none": on the GPU)."""

    device: Literal["none", "cpu", "nvme"] = _DS[_Z + "offload_param.device"]
    nvme_path: str | None = None
    pin_memory: bool = _DS[_Z + "offload_param.pin_memory"]
    ratio: float = _DS[_Z + "offload_optimizer.ratio"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroSpec:
    """The `zero_optimization` settings zgen models; `overlap_comm` defaults to DeepSpeed's stage-3 value."""

    stage: int = _DS[_Z + "stage"]
    overlap_comm: bool = True
    contiguous_gradients: bool = _DS[_Z + "contiguous_gradients"]
    reduce_bucket_size: int = _DS[_Z + "reduce_bucket_size"]
    allgather_bucket_size: int = _DS[_Z + "allgather_bucket_size"]
    prefetch_bucket_size: int = _DS[_Z + "stage3_prefetch_bucket_size"]
    param_persistence_threshold: int = _DS[_Z + "stage3_param_persistence_threshold"]
    max_live_parameters: int = _DS[_Z + "stage3_max_live_parameters"]
    max_reuse_distance: int = _DS[_Z + "stage3_max_reuse_distance"]
    sub_group_size: int = _DS[_Z + "sub_group_size"]
    reduce_dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    offload_param: OffloadSpec = field(default_factory=OffloadSpec)
    offload_optimizer: OffloadSpec = field(default_factory=OffloadSpec)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedConfig:
    """A DeepSpeed-style config with every value decided.

    `world_size` is the one the config was resolved for. `origins` maps dotted
    key paths (`zero_optimization.stage`, `train_batch_size`) to where each
    value came from; every field above that a user could write has an entry.
    """

    train_batch_size: int
    train_micro_batch_size_per_gpu: int
    gradient_accumulation_steps: int
    world_size: int
    gradient_clipping: float
    precision: Precision
    zero: ZeroSpec
    optimizer: OptimizerSpec
    scheduler: SchedulerSpec | None = None
    loss_scale: float = _DS["fp16.loss_scale"]  # fp16 only; 0 = dynamic
    initial_scale_power: int = _DS["fp16.initial_scale_power"]
    loss_scale_window: int = _DS["fp16.loss_scale_window"]
    hysteresis: int = _DS["fp16.hysteresis"]
    min_loss_scale: float = float(_DS["fp16.min_loss_scale"])
    steps_per_print: int = 10
    consumer: str = "hf"  # who reads the config: deepspeed, hf, accelerate or zgen (zgen.config.autofill)
    source_path: str = ""
    origins: tuple[tuple[str, Origin], ...] = ()

    def origin(self, key: str) -> Origin | None:
        return dict(self.origins).get(key)

    def to_ds_config(self) -> dict:
        """The equivalent plain DeepSpeed config dict, with no `"auto"` left."""
        z = self.zero
        cfg: dict = {
            "train_batch_size": self.train_batch_size,
            "train_micro_batch_size_per_gpu": self.train_micro_batch_size_per_gpu,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "gradient_clipping": self.gradient_clipping,
            "steps_per_print": self.steps_per_print,
            "bf16": {"enabled": self.precision == "bf16"},
            "fp16": {
                "enabled": self.precision == "fp16",
                "loss_scale": self.loss_scale,
                "initial_scale_power": self.initial_scale_power,
                "loss_scale_window": self.loss_scale_window,
                "hysteresis": self.hysteresis,
                "min_loss_scale": self.min_loss_scale,
            },
            "optimizer": {
                "type": self.optimizer.type,
                "params": {
                    "lr": self.optimizer.lr,
                    "betas": list(self.optimizer.betas),
                    "eps": self.optimizer.eps,
                    "weight_decay": self.optimizer.weight_decay,
                },
            },
            "zero_optimization": {
                "stage": z.stage,
                "overlap_comm": z.overlap_comm,
                "contiguous_gradients": z.contiguous_gradients,
                "reduce_bucket_size": z.reduce_bucket_size,
                "allgather_bucket_size": z.allgather_bucket_size,
                "stage3_prefetch_bucket_size": z.prefetch_bucket_size,
                "stage3_param_persistence_threshold": z.param_persistence_threshold,
                "stage3_max_live_parameters": z.max_live_parameters,
                "stage3_max_reuse_distance": z.max_reuse_distance,
                "sub_group_size": z.sub_group_size,
            },
        }
        for name, off in (("offload_param", z.offload_param), ("offload_optimizer", z.offload_optimizer)):
            if off.device != "none":
                block = {"device": off.device, "pin_memory": off.pin_memory}
                if off.nvme_path:
                    block["nvme_path"] = off.nvme_path
                if name == "offload_optimizer" and off.ratio != 1.0:
                    block["ratio"] = off.ratio
                cfg["zero_optimization"][name] = block
        if self.scheduler is not None:
            cfg["scheduler"] = {"type": self.scheduler.type, "params": dict(self.scheduler.params)}
        return cfg
