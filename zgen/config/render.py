"""Text views of a resolved config (`--show-resolved`) and a memory breakdown (`--show-memory`)."""

from __future__ import annotations

from dataclasses import fields

from zgen.config.resolved import ResolvedConfig
from zgen.memory import MemoryBreakdown

__all__ = ["render_resolved", "render_memory", "format_world_sizes"]


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, float) and v.is_integer() and abs(v) >= 1e6:
        return f"{v:.0e}"
    return str(v)


def _flat(resolved: ResolvedConfig) -> list[tuple[str, object]]:
    z = resolved.zero
    rows: list[tuple[str, object]] = [
        ("consumer", resolved.consumer),
        ("world_size", resolved.world_size),
        ("train_batch_size", resolved.train_batch_size),
        ("train_micro_batch_size_per_gpu", resolved.train_micro_batch_size_per_gpu),
        ("gradient_accumulation_steps", resolved.gradient_accumulation_steps),
        ("gradient_clipping", resolved.gradient_clipping),
        ("precision", resolved.precision),
        ("steps_per_print", resolved.steps_per_print),
    ]
    if resolved.precision == "fp16":
        rows += [("fp16.loss_scale", resolved.loss_scale), ("fp16.initial_scale_power", resolved.initial_scale_power),
                 ("fp16.loss_scale_window", resolved.loss_scale_window), ("fp16.hysteresis", resolved.hysteresis),
                 ("fp16.min_loss_scale", resolved.min_loss_scale)]
    names = {
        "prefetch_bucket_size": "stage3_prefetch_bucket_size",
        "param_persistence_threshold": "stage3_param_persistence_threshold",
        "max_live_parameters": "stage3_max_live_parameters",
        "max_reuse_distance": "stage3_max_reuse_distance",
    }
    for f in fields(z):
        value = getattr(z, f.name)
        if f.name in ("offload_param", "offload_optimizer"):
            rows.append((f"zero_optimization.{f.name}.device", value.device))
            if value.device != "none":
                rows.append((f"zero_optimization.{f.name}.pin_memory", value.pin_memory))
                if value.nvme_path:
                    rows.append((f"zero_optimization.{f.name}.nvme_path", value.nvme_path))
                if f.name == "offload_optimizer":
                    rows.append((f"zero_optimization.{f.name}.ratio", value.ratio))
            continue
        rows.append((f"zero_optimization.{names.get(f.name, f.name)}", value))
    o = resolved.optimizer
    rows += [("optimizer.type", o.type), ("optimizer.params.lr", o.lr), ("optimizer.params.betas", list(o.betas)),
             ("optimizer.params.eps", o.eps), ("optimizer.params.weight_decay", o.weight_decay)]
    if resolved.scheduler is not None:
        rows.append(("scheduler.type", resolved.scheduler.type))
        rows += [(f"scheduler.params.{k}", v) for k, v in resolved.scheduler.params]
    return rows


def render_resolved(resolved: ResolvedConfig) -> str:
    """Every resolved value with its origin, one per line, aligned."""
    rows = []
    for key, value in _flat(resolved):
        origin = resolved.origin(key)
        if origin is None:
            how = "default: DeepSpeed default" if not key.startswith("precision") else ""
        else:
            where = f" (line {origin.line})" if origin.line and origin.kind != "config" else ""
            how = f"{origin.kind}: {origin.detail}{where}"
        if key == "precision":
            how = "from `fp16.enabled` / `bf16.enabled`"
        rows.append((key, _value(value), how))
    width_k = max(len(r[0]) for r in rows)
    width_v = max(len(r[1]) for r in rows)
    return "".join(f"  {k:<{width_k}}  {v:<{width_v}}  {how}".rstrip() + "\n" for k, v, how in rows)


def _gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"


def render_memory(breakdown: MemoryBreakdown) -> str:
    """The breakdown as a table: term, GiB, formula; then the total against the GPU memory."""
    rows = [(i.name, _gib(i.bytes), i.formula) for i in breakdown.items]
    rows.append(("total", _gib(breakdown.total), ""))
    if breakdown.gpu_mem_bytes is not None:
        free = breakdown.gpu_mem_bytes - breakdown.total
        rows.append(("GPU memory", _gib(breakdown.gpu_mem_bytes), "--gpu-mem"))
        rows.append(("headroom" if free >= 0 else "over by", _gib(abs(free)), ""))
    wn = max(len(r[0]) for r in rows)
    wb = max(len(r[1]) for r in rows)
    return "".join(f"  {n:<{wn}}  {b:>{wb}}  {f}".rstrip() + "\n" for n, b, f in rows)


def format_world_sizes(sizes: tuple[int, ...], bound: int = 1024) -> str:
    """`1-1024 (every size)`, `1, 2, 4, 8, 16`, or runs compressed: `8, 16, 24, ..., 1024 (multiples of 8)`."""
    if not sizes:
        return "none"
    if list(sizes) == list(range(1, bound + 1)):
        return f"every world size from 1 to {bound}"
    step = sizes[0]
    if len(sizes) > 6 and list(sizes) == list(range(step, bound + 1, step)):
        return f"multiples of {step} ({step}, {2 * step}, ..., {sizes[-1]})"
    if len(sizes) > 24:
        return ", ".join(map(str, sizes[:20])) + f", ... ({len(sizes)} sizes up to {sizes[-1]})"
    return ", ".join(map(str, sizes))
