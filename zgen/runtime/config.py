"""The DeepSpeed-style config, reduced to what the runtime does with it.

`RuntimeConfig.load(config, world_size)` accepts the plain dict a user writes
in `ds_config.json`, a path to such a file, or a `ResolvedConfig` (through its
`to_ds_config()`), checks the batch arithmetic for the actual world size, and
refuses anything the runtime would otherwise silently ignore (offload, a stage
other than 3, an optimizer it does not implement) with a `ZgenError` naming
the key. Keys that only steer DeepSpeed's logging or profiling are accepted
and ignored; `zgen check` reports typos.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from zgen.deepspeed_defaults import defaults, scheduler_defaults
from zgen.errors import ZgenError

__all__ = ["RuntimeConfig", "LossScaleConfig", "SchedulerConfig", "as_dict", "zero_settings"]

Precision = Literal["bf16", "fp16", "fp32"]

# DeepSpeed's defaults (one table shared with `zgen check`); every default below is read from it.
_DS = defaults()
_Z = "zero_optimization."

_FIX_HINT = "remove the key or change its value; `zgen check` lists what each key does"

# zero_optimization keys whose only effect is on DeepSpeed's own bucketing or bookkeeping:
# the runtime's plan replaces them, so any value is accepted.
_ZERO_ACCEPTED = {
    "stage",
    "overlap_comm",
    "contiguous_gradients",
    "reduce_bucket_size",
    "allgather_bucket_size",
    "allgather_partitions",
    "reduce_scatter",
    "stage3_prefetch_bucket_size",
    "prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "sub_group_size",
    "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
    "gather_16bit_weights_on_model_save",
    "round_robin_gradients",
    "elastic_checkpoint",
    "ignore_unused_parameters",
    "load_from_fp32_weights",
    "memory_efficient_linear",
    "log_trace_cache_warnings",
    "stage3_model_persistence_threshold",
    "model_persistence_threshold",
    "use_multi_rank_bucket_allreduce",
    "offload_optimizer",  # read by _offload
    "cpu_offload",
    "offload_param",  # read by _offload_param
    "cpu_offload_params",
    "zero_hpz_partition_size",  # read by _parse
}
# zero_optimization features the runtime does not implement: refused unless off.
_ZERO_REFUSED = {
    "zero_quantized_weights": "quantized weights",
    "zero_quantized_nontrainable_weights": "quantized weights",
    "zero_quantized_gradients": "quantized gradients",
    "mics_shard_size": "MiCS sharding",
}
# Optimizer offload's keys: the device (cpu), pinned host memory and the offloaded share (`ratio`) are
# honoured; the rest tune DeepSpeed's own NVMe/CPU-Adam machinery and change no result.
_OFFLOAD_KEYS = {"device", "pin_memory", "buffer_count", "fast_init", "ratio", "nvme_path", "pipeline_read",
                 "pipeline_write", "cpuadam_cores_perc"}
# Parameter offload's keys: the device is honoured (pinning follows offload_optimizer's); the rest size
# DeepSpeed's own host buffers and change no result.
_OFFLOAD_PARAM_KEYS = {"device", "pin_memory", "buffer_count", "buffer_size", "max_in_cpu", "nvme_path"}
# DeepSpeed's config optimizers the runtime steps besides Adam(W): its own Lion, and torch.optim classes
# by their exact name (as DeepSpeed falls back to `getattr(torch.optim, type)`).
_OWN_OPTIMIZERS = {"lion": "Lion"}
# DeepSpeed's own optimizers with no torch.optim counterpart of that name: refused, not looked up.
_DEEPSPEED_ONLY = {"lamb", "onebitadam", "zerooneadam", "onebitlamb", "muadam", "muadamw", "musgd", "muon"}


@dataclass(frozen=True, slots=True, kw_only=True)
class LossScaleConfig:
    """fp16 loss scaling: `static` > 0 fixes the scale, otherwise it is dynamic."""

    static: float = _DS["fp16.loss_scale"]
    initial_scale_power: int = _DS["fp16.initial_scale_power"]
    window: int = _DS["fp16.loss_scale_window"]
    min_scale: float = float(_DS["fp16.min_loss_scale"])


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """One of DeepSpeed's warmup schedules (`WarmupLR`, `WarmupDecayLR`, `WarmupCosineLR`)."""

    type: str
    warmup_min_lr: float = scheduler_defaults("WarmupLR")["warmup_min_lr"]
    warmup_max_lr: float | None = scheduler_defaults("WarmupLR")["warmup_max_lr"]
    warmup_num_steps: int = scheduler_defaults("WarmupLR")["warmup_num_steps"]
    warmup_type: str = scheduler_defaults("WarmupLR")["warmup_type"]
    total_num_steps: int | None = None
    warmup_min_ratio: float = scheduler_defaults("WarmupCosineLR")["warmup_min_ratio"]
    cos_min_ratio: float = scheduler_defaults("WarmupCosineLR")["cos_min_ratio"]

    def lr(self, iteration: int, base_lr: float) -> float:
        """The learning rate DeepSpeed's scheduler reports at `iteration` (-1 before the first step)."""
        warm = max(2, self.warmup_num_steps)
        if self.type == "WarmupCosineLR":
            return base_lr * self._cosine_ratio(iteration, warm)
        lo = self.warmup_min_lr
        hi = base_lr if self.warmup_max_lr is None else self.warmup_max_lr
        if iteration < 0:
            return lo
        if iteration < warm:
            gamma = self._warm(iteration, warm)
        elif self.type == "WarmupDecayLR":
            total = self.total_num_steps or 0
            gamma = max(0.0, (total - iteration) / max(1.0, total - warm))
        else:
            gamma = 1.0
        return lo + (hi - lo) * gamma

    def _warm(self, iteration: int, warm: int) -> float:
        if self.warmup_type == "linear":
            return iteration / warm
        return math.log(iteration + 1) / math.log(warm)

    def _cosine_ratio(self, iteration: int, warm: int) -> float:
        if iteration < 0:
            return 0.0
        if iteration < warm:
            return self.warmup_min_ratio + self._warm(iteration, warm) * (1.0 - self.warmup_min_ratio)
        progress = min(1.0, (iteration - warm + 1) / max(1, (self.total_num_steps or 0) - warm))
        return max(0.0, self.cos_min_ratio + (1.0 - self.cos_min_ratio) * (1 + math.cos(math.pi * progress)) / 2)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeConfig:
    """What the engine needs from a DeepSpeed-style config, checked against the world size."""

    world_size: int
    micro_batch_size: int
    gradient_accumulation_steps: int
    train_batch_size: int
    gradient_clipping: float
    precision: Precision
    loss_scale: LossScaleConfig = LossScaleConfig()
    optimizer: str  # "adamw" (decoupled weight decay), "adam" (L2 in the gradient), "lion", "torch:<Name>", "client"
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    scheduler: SchedulerConfig | None = None
    reduce_dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    # Only the default plan (no plan given) reads these two.
    persistence_threshold: int = 100_000
    prefetch_bucket_size: int = 50_000_000
    optimizer_params: dict = field(default_factory=dict)  # for "lion" and "torch:<Name>": the params block
    offload_optimizer: bool = False  # fp32 master and optimizer state in host memory
    pin_memory: bool = False  # offloaded host buffers page-locked (CUDA only)
    offload_param: bool = False  # compute-dtype shards in host memory too, copied up at each gather
    # offload_optimizer.ratio: the share of the parameters whose optimizer is offloaded; the first units in step
    # order keep theirs on the GPU (`zgen.zero_policy.optimizer_on_device`)
    offload_ratio: float = 1.0
    hpz_partition_size: int = 1  # zero_hpz_partition_size: secondary partition for the gathers (1: off)

    @classmethod
    def load(cls, config: Any, world_size: int, client_optimizer: bool = False) -> RuntimeConfig:
        """Parse a ds_config dict, a path to one, or a `ResolvedConfig`; a `RuntimeConfig` is taken as it is.

        `client_optimizer`: the caller passes its own optimizer, so the config must not name one.
        """
        if isinstance(config, RuntimeConfig):
            if config.world_size != world_size:
                raise ZgenError(f"the config was built for world size {config.world_size} but this job has "
                                f"{world_size} ranks")
            if client_optimizer and config.optimizer != "client":
                raise ZgenError("initialize() was given an optimizer and the config names one too",
                                help="build the RuntimeConfig with optimizer=\"client\", or drop the optimizer argument")
            return config
        return _parse(as_dict(config), world_size, client_optimizer)


def zero_settings(config: Any) -> tuple[int, int]:
    """(param persistence threshold, prefetch bucket size) from any accepted config form (None: the defaults)."""
    if config is None:
        return _DS[_Z + "stage3_param_persistence_threshold"], _DS[_Z + "stage3_prefetch_bucket_size"]
    if isinstance(config, RuntimeConfig):
        return config.persistence_threshold, config.prefetch_bucket_size
    return _zero(as_dict(config))


def as_dict(config: Any) -> dict:
    """The config as a plain ds_config dict (reads a path, converts a ResolvedConfig)."""
    if hasattr(config, "to_ds_config"):
        return config.to_ds_config()
    if isinstance(config, (str, Path)):
        path = Path(config)
        try:
            text = path.read_text()
        except OSError as e:
            raise ZgenError(f"{path}: cannot read the config: {e.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ZgenError(
                f"{path}:{e.lineno}:{e.colno}: the config is not valid JSON: {e.msg}",
                help="`zgen check` also reads hjson-style comments; the runtime wants plain JSON",
            ) from None
        if not isinstance(data, dict):
            raise ZgenError(f"{path}: the config must be a JSON object")
        return data
    if isinstance(config, dict):
        return config
    raise ZgenError(f"config must be a dict, a path to a .json file or a ResolvedConfig, not {type(config).__name__}")


def _get(d: dict, key: str, default: Any, where: str = "") -> Any:
    value = d.get(key, default)
    if value == "auto":
        raise ZgenError(
            f'`{where}{key}` is "auto"; the runtime needs a concrete value',
            help="resolve it with `zgen check --show-resolved` and pass the ResolvedConfig, or write the number",
        )
    return value


def _number(d: dict, key: str, default: Any, kind: type, where: str = "") -> Any:
    value = _get(d, key, default, where)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ZgenError(f"`{where}{key}` must be a number, not {value!r}")
    if kind is int:
        if value != int(value):
            raise ZgenError(f"`{where}{key}` must be a whole number, not {value!r}")
        return int(value)
    return float(value)


def _enabled(d: dict, key: str) -> bool:
    block = d.get(key)
    if block is None:
        return False
    if not isinstance(block, dict):
        raise ZgenError(f"`{key}` must be an object such as {{\"enabled\": true}}")
    return bool(_get(block, "enabled", _DS.get(f"{key}.enabled", False), f"{key}."))


def _parse(d: dict, world: int, client_optimizer: bool = False) -> RuntimeConfig:
    if _enabled(d, "amp"):
        raise ZgenError("`amp.enabled` (NVIDIA apex AMP) is not supported by zgen.runtime", help="use `bf16` or `fp16`")
    bf16 = _enabled(d, "bf16") or _enabled(d, "bfloat16")
    fp16 = _enabled(d, "fp16")
    if bf16 and fp16:
        raise ZgenError("`bf16.enabled` and `fp16.enabled` are both true", help="enable one of them")
    precision: Precision = "bf16" if bf16 else "fp16" if fp16 else "fp32"
    loss_scale = LossScaleConfig()
    if fp16:
        f = d["fp16"]
        loss_scale = LossScaleConfig(
            static=_number(f, "loss_scale", _DS["fp16.loss_scale"], float, "fp16."),
            initial_scale_power=_number(f, "initial_scale_power", _DS["fp16.initial_scale_power"], int, "fp16."),
            window=_number(f, "loss_scale_window", _DS["fp16.loss_scale_window"], int, "fp16."),
            min_scale=_number(f, "min_loss_scale", _DS["fp16.min_loss_scale"], float, "fp16."),
        )

    micro, accum, train = _batch(d, world)
    clip = _number(d, "gradient_clipping", _DS["gradient_clipping"], float)
    if clip < 0:
        raise ZgenError(f"`gradient_clipping` must be >= 0, not {clip}")

    if client_optimizer:
        if d.get("optimizer") is not None:
            raise ZgenError(
                "the config has an `optimizer` block and initialize() was given an optimizer too",
                help="remove the config's `optimizer` block, or drop the optimizer argument",
            )
        opt_name, lr, betas, eps, wd, opt_params = "client", 0.0, (0.9, 0.999), 1e-8, 0.0, {}
    else:
        opt_name, lr, betas, eps, wd, opt_params = _optimizer(d)
    zero = _zero(d)
    offload, pin, ratio = _offload(d["zero_optimization"])
    offload_param = _offload_param(d["zero_optimization"], offload)
    if offload_param and ratio < 1:
        raise ZgenError(
            f"`zero_optimization.offload_optimizer.ratio` {ratio} keeps part of the optimizer on the GPU, which "
            "zgen.runtime does only without parameter offload",
            help="remove `offload_param`, or set `offload_optimizer.ratio` to 1",
        )
    hpz = _number(d["zero_optimization"], "zero_hpz_partition_size", _DS[_Z + "zero_hpz_partition_size"], int, _Z)
    if hpz < 1 or world % hpz:
        raise ZgenError(
            f"`zero_optimization.zero_hpz_partition_size` ({hpz}) must divide the world size ({world})",
            help="use the number of GPUs per node, or 1 to turn it off",
        )
    comm = _get(d, "communication_data_type", None)
    reduce_dtype = {None: "fp32", "fp32": "fp32", "bf16": "bf16", "bfp16": "bf16", "fp16": "fp16"}.get(comm)
    if reduce_dtype is None:
        raise ZgenError(f"`communication_data_type` must be one of fp32, bf16, fp16, not {comm!r}")
    return RuntimeConfig(
        world_size=world,
        micro_batch_size=micro,
        gradient_accumulation_steps=accum,
        train_batch_size=train,
        gradient_clipping=clip,
        precision=precision,
        loss_scale=loss_scale,
        optimizer=opt_name,
        lr=lr,
        betas=betas,
        eps=eps,
        weight_decay=wd,
        scheduler=_scheduler(d),
        reduce_dtype=reduce_dtype,
        persistence_threshold=zero[0],
        prefetch_bucket_size=zero[1],
        optimizer_params=opt_params,
        offload_optimizer=offload,
        pin_memory=pin,
        offload_param=offload_param,
        offload_ratio=ratio,
        hpz_partition_size=hpz,
    )


def _offload(z: dict) -> tuple[bool, bool, float]:
    """(offload the optimizer to the host, pin its memory, the share offloaded) from `zero_optimization.offload_optimizer`."""
    block = z.get("offload_optimizer")
    if block is None and z.get("cpu_offload"):  # DeepSpeed's older spelling
        block = {"device": "cpu"}
    if block is None:
        return False, False, 1.0
    w = "zero_optimization.offload_optimizer."
    if not isinstance(block, dict):
        raise ZgenError('`zero_optimization.offload_optimizer` must be an object such as {"device": "cpu"}')
    for key in block:
        if key not in _OFFLOAD_KEYS:
            raise ZgenError(f"`{w}{key}` is not an optimizer offload setting", help=_FIX_HINT)
    device = str(_get(block, "device", _DS[w + "device"], w)).lower()
    if device == "nvme":
        raise ZgenError(f"`{w}device` nvme is not supported by zgen.runtime", help='use "cpu"')
    if device not in ("cpu", "none"):
        raise ZgenError(f"`{w}device` must be cpu or none, not {device!r}")
    pin = _get(block, "pin_memory", _DS[w + "pin_memory"], w)
    if not isinstance(pin, bool):
        raise ZgenError(f"`{w}pin_memory` must be true or false, not {pin!r}")
    ratio = _number(block, "ratio", _DS[w + "ratio"], float, w)
    if not 0.0 <= ratio <= 1.0:
        raise ZgenError(f"`{w}ratio` must be between 0 and 1 (the share of the optimizer offloaded), not {ratio!r}")
    return device == "cpu", pin, (ratio if device == "cpu" else 1.0)


def _offload_param(z: dict, offload_optimizer: bool) -> bool:
    """Whether `zero_optimization.offload_param` puts the parameters' shards in host memory (needs the optimizer there)."""
    block = z.get("offload_param")
    if block is None and z.get("cpu_offload_params"):  # DeepSpeed's older spelling
        block = {"device": "cpu"}
    if block is None:
        return False
    w = "zero_optimization.offload_param."
    if not isinstance(block, dict):
        raise ZgenError('`zero_optimization.offload_param` must be an object such as {"device": "cpu"}')
    for key in block:
        if key not in _OFFLOAD_PARAM_KEYS:
            raise ZgenError(f"`{w}{key}` is not a parameter offload setting", help=_FIX_HINT)
    device = str(_get(block, "device", _DS[w + "device"], w)).lower()
    if device == "nvme":
        raise ZgenError(f"`{w}device` nvme is not supported by zgen.runtime", help='use "cpu"')
    if device not in ("cpu", "none"):
        raise ZgenError(f"`{w}device` must be cpu or none, not {device!r}")
    if device == "cpu" and not offload_optimizer:
        raise ZgenError(
            f"`{w}device` cpu needs the optimizer in host memory too in zgen.runtime",
            help='add `"offload_optimizer": {"device": "cpu"}` to zero_optimization',
        )
    return device == "cpu"


def _batch(d: dict, world: int) -> tuple[int, int, int]:
    train = _number(d, "train_batch_size", None, int)
    micro = _number(d, "train_micro_batch_size_per_gpu", None, int)
    accum = _number(d, "gradient_accumulation_steps", None, int)
    for key, v in (("train_batch_size", train), ("train_micro_batch_size_per_gpu", micro), ("gradient_accumulation_steps", accum)):
        if v is not None and v <= 0:
            raise ZgenError(f"`{key}` must be positive, not {v}")
    if train is not None and micro is not None and accum is not None:
        if train != micro * accum * world:
            raise ZgenError(
                f"`train_batch_size` ({train}) != `train_micro_batch_size_per_gpu` ({micro}) x "
                f"`gradient_accumulation_steps` ({accum}) x world_size ({world}) = {micro * accum * world}",
                help="drop `train_batch_size` and let it follow from the other two",
            )
    elif train is not None and micro is not None:
        accum, rem = divmod(train, micro * world)
        if rem or accum == 0:
            raise ZgenError(
                f"`train_batch_size` ({train}) is not a multiple of `train_micro_batch_size_per_gpu` ({micro}) x "
                f"world_size ({world}) = {micro * world}"
            )
    elif train is not None and accum is not None:
        micro, rem = divmod(train, accum * world)
        if rem or micro == 0:
            raise ZgenError(
                f"`train_batch_size` ({train}) is not a multiple of `gradient_accumulation_steps` ({accum}) x "
                f"world_size ({world}) = {accum * world}"
            )
    elif train is not None:
        accum = 1
        micro, rem = divmod(train, world)
        if rem or micro == 0:
            raise ZgenError(f"`train_batch_size` ({train}) is not a multiple of world_size ({world})")
    else:
        micro = micro or 1
        accum = accum or 1
    train = micro * accum * world
    return micro, accum, train


def _optimizer(d: dict) -> tuple[str, float, tuple[float, float], float, float, dict]:
    block = d.get("optimizer")
    if block is None:
        raise ZgenError("the config has no `optimizer`", help='add `"optimizer": {"type": "AdamW", "params": {"lr": ...}}`')
    given = str(_get(block, "type", "", "optimizer."))
    kind = given.lower()
    params = block.get("params", {}) or {}
    if not isinstance(params, dict):
        raise ZgenError("`optimizer.params` must be an object")
    if kind not in ("adam", "adamw"):
        if kind in _OWN_OPTIMIZERS:
            name = kind
        elif kind not in _DEEPSPEED_ONLY and given.isidentifier() and given[0].isupper() and given != "Optimizer":
            name = f"torch:{given}"  # checked against torch.optim when the engine builds it
        else:
            raise ZgenError(
                f"`optimizer.type` {given!r} is not supported by zgen.runtime",
                help="use AdamW, Adam, Lion, or a torch.optim class by its name (SGD, Adagrad, ...)",
            )
        lr = _number(params, "lr", _DS["optimizer.params.lr"], float, "optimizer.params.")
        return name, lr, (0.9, 0.999), 1e-8, 0.0, dict(params)
    for key in ("amsgrad", "maximize", "capturable", "differentiable"):
        if params.get(key):
            raise ZgenError(f"`optimizer.params.{key}` is not supported by zgen.runtime", help=_FIX_HINT)
    # DeepSpeed's "Adam" decouples weight decay unless adam_w_mode is false.
    decoupled = kind == "adamw" or bool(params.get("adam_w_mode", True))
    lr = _number(params, "lr", _DS["optimizer.params.lr"], float, "optimizer.params.")
    betas = params.get("betas", _DS["optimizer.params.betas"])
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2):
        raise ZgenError(f"`optimizer.params.betas` must be a list of two numbers, not {betas!r}")
    eps = _number(params, "eps", _DS["optimizer.params.eps"], float, "optimizer.params.")
    wd = _number(params, "weight_decay", _DS["optimizer.params.weight_decay"], float, "optimizer.params.")
    return ("adamw" if decoupled else "adam"), lr, (float(betas[0]), float(betas[1])), eps, wd, {}


def _scheduler(d: dict) -> SchedulerConfig | None:
    block = d.get("scheduler")
    if block is None:
        return None
    kind = _get(block, "type", "", "scheduler.")
    if kind not in ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR"):
        raise ZgenError(
            f"`scheduler.type` {kind!r} is not supported by zgen.runtime",
            help="use WarmupLR, WarmupDecayLR or WarmupCosineLR, or drive the learning rate yourself",
        )
    p = block.get("params", {}) or {}
    w = "scheduler.params."
    total = _number(p, "total_num_steps", None, int, w)
    if kind != "WarmupLR" and total is None:
        raise ZgenError(f"`scheduler.params.total_num_steps` is required by {kind}")
    # Fields the class does not take keep the other classes' defaults (they are not read for it).
    sd = {**scheduler_defaults("WarmupLR"), **scheduler_defaults("WarmupCosineLR"), **scheduler_defaults(kind)}
    warmup_type = _get(p, "warmup_type", sd["warmup_type"], w)
    if warmup_type not in ("log", "linear"):
        raise ZgenError(f"`scheduler.params.warmup_type` must be log or linear, not {warmup_type!r}")
    return SchedulerConfig(
        type=kind,
        warmup_min_lr=_number(p, "warmup_min_lr", sd["warmup_min_lr"], float, w),
        warmup_max_lr=_number(p, "warmup_max_lr", sd["warmup_max_lr"], float, w),
        warmup_num_steps=_number(p, "warmup_num_steps", sd["warmup_num_steps"], int, w),
        warmup_type=warmup_type,
        total_num_steps=total,
        warmup_min_ratio=_number(p, "warmup_min_ratio", sd["warmup_min_ratio"], float, w),
        cos_min_ratio=_number(p, "cos_min_ratio", sd["cos_min_ratio"], float, w),
    )


def _zero(d: dict) -> tuple[int, int]:
    z = d.get("zero_optimization")
    if z is None:
        raise ZgenError("the config has no `zero_optimization` block", help='zgen.runtime is ZeRO stage 3: add `"zero_optimization": {"stage": 3}`')
    stage = _get(z, "stage", _DS[_Z + "stage"], "zero_optimization.")
    if stage != 3:
        raise ZgenError(
            f"`zero_optimization.stage` is {stage}; zgen.runtime implements stage 3 only",
            help='set `"stage": 3`, or train this config with DeepSpeed',
        )
    for key, value in z.items():
        if key in _ZERO_REFUSED:
            if _feature_on(value):
                raise ZgenError(
                    f"`zero_optimization.{key}` asks for {_ZERO_REFUSED[key]}, which zgen.runtime does not implement",
                    help=f"remove `zero_optimization.{key}` or train this config with DeepSpeed",
                )
        elif key not in _ZERO_ACCEPTED:
            raise ZgenError(
                f"`zero_optimization.{key}` is not a stage-3 setting zgen.runtime knows",
                help="remove it (`zgen check` says whether DeepSpeed would read it)",
            )
    persist = _number(z, "stage3_param_persistence_threshold",
                      z.get("param_persistence_threshold", _DS[_Z + "stage3_param_persistence_threshold"]), int, _Z)
    prefetch = _number(z, "stage3_prefetch_bucket_size",
                       z.get("prefetch_bucket_size", _DS[_Z + "stage3_prefetch_bucket_size"]), int, _Z)
    return persist, prefetch


def _feature_on(value: Any) -> bool:
    if isinstance(value, dict):
        return str(value.get("device", "none")).lower() not in ("none", "")
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 1  # partition sizes: 1 (or -1) means off
    return value not in (None, "none", "")
