"""Build the typed `ResolvedConfig` from the written values, DeepSpeed's defaults and the solver's model.

Every field gets an `Origin`: `config` (written), `default` (DeepSpeed's
default for the chosen release), `derived` (computed the way DeepSpeed does,
e.g. the batch sizes) or `auto` (an `"auto"` placeholder, with what fills it
and whether the rest of the config forces its value).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from zgen.config.autofill import MODEL_FILLED, hf_fill
from zgen.deepspeed_defaults import default as ds_default
from zgen.config.resolved import (OffloadSpec, OptimizerSpec, Origin, ResolvedConfig, SchedulerSpec, ZeroSpec,
                                  precision_of)
from zgen.config.schema import Key, Section
from zgen.config.validate import AUTO, ConfigValues
from zgen.launch import ModelShape

__all__ = ["resolve"]

_BATCH = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


@dataclass
class _Ctx:
    values: ConfigValues
    model_values: dict
    forced: frozenset[str]
    derive_explain: dict[str, str]
    model: ModelShape | None
    origins: dict[str, Origin]

    def spec(self, key: str) -> Key | None:
        node: Section = self.values.schema
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.section_index.get(part)
            if node is None:
                return None
        return node.key_index.get(parts[-1])

    def get(self, key: str, fallback: object = None) -> object:
        """The value of `key` and record its origin."""
        s = self.values.settings.get(key)
        spec = self.spec(key)
        if s is not None and s.state == "user" and s.value is not None:
            self.origins[key] = Origin(kind="config", detail=f"written as `{s.written}`", line=s.span.line,
                                       column=s.span.column)
            return s.value
        if s is not None and s.state == "auto":
            value = self.auto_value(key, spec, fallback)
            how = "forced by the other keys" if key in self.forced else "not determined by the config; zgen assumed the value shown"
            if key in MODEL_FILLED and not hf_fill(self.model):
                how = ("the model's `hidden_size` is not known to this check (a model built in code, or no model "
                       "file given), so DeepSpeed's default stands in here; `zgen plan`/`zgen emit` read it from the "
                       "model and use the formula")
            self.origins[key] = Origin(kind="auto", detail=f"\"auto\" -> {value!r}: {s.fill}; {how}",
                                       line=s.span.line, column=s.span.column)
            return value
        if key in self.derive_explain and key in self.model_values and self.model_values[key] is not None:
            value = self.model_values[key]
            self.origins[key] = Origin(kind="derived", detail=f"{self.derive_explain[key]} = {value!r}")
            return value
        value = spec.default if spec is not None else ds_default(key, self.values.version)
        known = value is not None
        if not known:
            value = fallback
        span = s.span if s is not None else None
        self.origins[key] = Origin(kind="default", detail="DeepSpeed default" if known
                                   else "zgen's default (DeepSpeed has none)",
                                   line=span.line if span else None, column=span.column if span else None)
        return value

    def int(self, key: str) -> int:
        """`get(key)` as an int; DeepSpeed's default when the value is not a number (e.g. unknown)."""
        value = self.get(key)
        return int(value) if _is_number(value) else int(ds_default(key, self.values.version))

    def float(self, key: str) -> float:
        """`get(key)` as a float; DeepSpeed's default when the value is not a number."""
        value = self.get(key)
        return float(value) if _is_number(value) else float(ds_default(key, self.values.version))

    def auto_value(self, key: str, spec: Key | None, fallback: object) -> object:
        if key in self.model_values and self.model_values[key] is not None:
            return self.model_values[key]
        hf = hf_fill(self.model)
        if key in hf:
            return hf[key]
        assumed = self.values.settings[key].assumed
        if assumed is not None:
            return assumed
        if spec is not None and spec.default is not None:
            return spec.default
        return fallback


def _offload(ctx: _Ctx, block: str) -> OffloadSpec:
    prefix = f"zero_optimization.{block}"
    if prefix not in ctx.values.sections:
        return OffloadSpec()
    device = ctx.get(f"{prefix}.device")
    path = ctx.get(f"{prefix}.nvme_path")
    pin = ctx.get(f"{prefix}.pin_memory")
    ratio = ctx.float(f"{prefix}.ratio") if block == "offload_optimizer" else 1.0
    return OffloadSpec(device=device, nvme_path=str(path) if path else None, pin_memory=bool(pin), ratio=float(ratio))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_int(value: object, fallback: int) -> int:
    return int(value) if _is_number(value) else fallback


def resolve(values: ConfigValues, model_values: dict, forced: frozenset[str], derive_explain: dict[str, str],
            world_size: int, world_origin: Origin, model: ModelShape | None, source_path: str) -> ResolvedConfig:
    """The resolved config for `world_size`; `model_values` are the solver's values by canonical key."""
    ctx = _Ctx(values, model_values, forced, derive_explain, model, {})
    batch = {k: _as_int(ctx.get(k, 1), 1) for k in _BATCH}
    precision = precision_of(bool(ctx.get("fp16.enabled")), bool(ctx.get("bf16.enabled")))
    stage = ctx.int("zero_optimization.stage")
    overlap = ctx.get("zero_optimization.overlap_comm")
    if overlap is None:
        overlap = stage == 3
        ctx.origins["zero_optimization.overlap_comm"] = Origin(kind="derived", detail=f"on for stage 3 only = {overlap}")
    comm = values.settings.get("communication_data_type")
    if comm is not None and comm.value in ("fp32", "bf16", "fp16"):
        reduce_dtype = comm.value
        ctx.origins["zero_optimization.reduce_dtype"] = Origin(kind="config", detail="`communication_data_type`",
                                                               line=comm.span.line, column=comm.span.column)
    else:
        reduce_dtype = precision
        ctx.origins["zero_optimization.reduce_dtype"] = Origin(
            kind="derived", detail="`communication_data_type` not set: DeepSpeed reduces in the compute dtype")
    z = "zero_optimization."
    zero = ZeroSpec(
        stage=stage,
        overlap_comm=bool(overlap),
        contiguous_gradients=bool(ctx.get(z + "contiguous_gradients")),
        reduce_bucket_size=ctx.int(z + "reduce_bucket_size"),
        allgather_bucket_size=ctx.int(z + "allgather_bucket_size"),
        prefetch_bucket_size=ctx.int(z + "stage3_prefetch_bucket_size"),
        param_persistence_threshold=ctx.int(z + "stage3_param_persistence_threshold"),
        max_live_parameters=ctx.int(z + "stage3_max_live_parameters"),
        max_reuse_distance=ctx.int(z + "stage3_max_reuse_distance"),
        sub_group_size=ctx.int(z + "sub_group_size"),
        reduce_dtype=reduce_dtype,
        offload_param=_offload(ctx, "offload_param"),
        offload_optimizer=_offload(ctx, "offload_optimizer"),
    )
    optimizer = _optimizer(ctx)
    scheduler = _scheduler(ctx)
    clip = ctx.get("gradient_clipping")
    steps = ctx.get("steps_per_print", 10)
    resolved = ResolvedConfig(
        train_batch_size=batch["train_batch_size"],
        train_micro_batch_size_per_gpu=batch["train_micro_batch_size_per_gpu"],
        gradient_accumulation_steps=batch["gradient_accumulation_steps"],
        world_size=world_size,
        gradient_clipping=float(clip) if isinstance(clip, (int, float)) else 0.0,
        precision=precision,
        zero=zero,
        optimizer=optimizer,
        scheduler=scheduler,
        loss_scale=ctx.float("fp16.loss_scale"),
        initial_scale_power=ctx.int("fp16.initial_scale_power"),
        loss_scale_window=ctx.int("fp16.loss_scale_window"),
        hysteresis=ctx.int("fp16.hysteresis"),
        min_loss_scale=ctx.float("fp16.min_loss_scale"),
        steps_per_print=_as_int(steps, 10),
        source_path=source_path,
        origins=(),
    )
    ctx.origins["world_size"] = world_origin
    return replace(resolved, origins=tuple(sorted(ctx.origins.items())))


def _num(value: object, fallback: float) -> float:
    return value if _is_number(value) else fallback


def _optimizer(ctx: _Ctx) -> OptimizerSpec:
    if "optimizer" not in ctx.values.sections and "optimizer.type" not in ctx.values.settings:
        ctx.origins["optimizer.type"] = Origin(kind="default", detail="no `optimizer` section; zgen's default AdamW")
        return OptimizerSpec()
    # A written `optimizer` section gets DeepSpeed's Adam defaults for the parameters it leaves out.
    name = ctx.get("optimizer.type", OptimizerSpec().type)
    lr, eps, wd = (ctx.float(f"optimizer.params.{p}") for p in ("lr", "eps", "weight_decay"))
    betas = ctx.get("optimizer.params.betas")
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2 and all(_is_number(b) for b in betas)):
        betas = ds_default("optimizer.params.betas", ctx.values.version)
    return OptimizerSpec(type=str(name), lr=float(lr), betas=(float(betas[0]), float(betas[1])), eps=float(eps),
                         weight_decay=float(wd))


def _scheduler(ctx: _Ctx) -> SchedulerSpec | None:
    s = ctx.values.settings.get("scheduler.type")
    if s is None or s.value is None:
        return None
    name = ctx.get("scheduler.type")
    params = []
    for key, setting in sorted(ctx.values.settings.items()):
        if not key.startswith("scheduler.params."):
            continue
        value = ctx.get(key)
        if setting.value is AUTO and value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            params.append((key.rpartition(".")[2], float(value)))
    return SchedulerSpec(type=str(name), params=tuple(params))
