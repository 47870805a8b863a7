"""Render the training script from a resolved config, a plan and a trace.

Everything the script contains comes in through `ScriptInputs`, a frozen
value built by `zgen emit`; `render_script` is a pure function of it, so the
same inputs give the same bytes (`zgen emit --check` relies on that). Values
that end up in code are never spliced raw: names are checked to be Python
identifiers, paths and strings become literals through `repr`, numbers are
formatted from ints and floats.
"""

from __future__ import annotations

import importlib.resources
import keyword
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from zgen import __version__
from zgen.config.resolved import Origin, ResolvedConfig
from zgen.errors import ZgenError
from zgen.plan.schedule import Plan

__all__ = ["CodeRef", "ScriptInputs", "render_script", "py_literal", "string_literal", "settings_rows", "TEMPLATE"]

TEMPLATE = "train.py.j2"
_WIDTH = 100  # the generated code's line length


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeRef:
    """A function in a user file, as the script imports it: path relative to the script's folder."""

    path: str
    function: str

    def __post_init__(self) -> None:
        for part in self.function.split("."):
            if not part.isidentifier() or keyword.iskeyword(part):
                raise ZgenError(f"`{self.function}` is not a Python identifier; zgen will not write it into code")
        if "\n" in self.path or "\r" in self.path:
            raise ZgenError(f"path {self.path!r} contains a line break; zgen will not write it into code")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptInputs:
    """Everything the generated script depends on (and nothing else: no clock, no absolute paths)."""

    script: str  # the output path as the user names it (for the launch commands)
    model_target: str  # `path.py:factory` as configured
    model: CodeRef
    inputs: CodeRef | None = None
    inputs_target: str | None = None
    data: CodeRef | None = None
    data_target: str | None = None
    init: CodeRef | None = None
    config_label: str
    resolved: ResolvedConfig
    plan: Plan | None
    plan_failure: str | None = None  # why there is no plan (the trace failed and --force was given)
    n_params: int
    vocab_size: int | None
    world_size: int
    gpus_per_node: int | None
    seq_len: int
    seq_len_origin: str
    units_label: str
    regenerate: str
    check_command: str
    forced: tuple[str, ...] = ()
    hazards: tuple[str, ...] = ()
    planned_peak: int | None = None  # bytes per GPU at `world_size`, from the plan's memory timeline
    max_steps: int = 1000
    seed: int = 1337
    checkpoint_every: int = 1000


# -- literals ---------------------------------------------------------------------------------

def string_literal(s: str) -> str:
    """A Python string literal for `s`, double-quoted unless `s` contains a double quote (as `repr` would)."""
    r = repr(s)
    if r.startswith("'") and '"' not in s:
        return '"' + r[1:-1].replace("\\'", "'") + '"'
    return r


def _number(v: int | float) -> str:
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return f"{v:_}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, float) and v.is_integer() and abs(v) >= 1e6:
        return f"{v:.0e}".replace("e+0", "e").replace("e+", "e")
    return repr(float(v))


def py_literal(value, indent: int = 0) -> str:
    """A deterministic, readable Python literal for plain data (dicts, lists, strings, numbers)."""
    pad = " " * indent
    flat = _flat(value)
    if flat is not None and (len(pad) + len(flat) <= _WIDTH or not isinstance(value, (dict, list, tuple))):
        return flat  # a scalar too long for the line stays whole
    if isinstance(value, dict):
        inner = " " * (indent + 4)
        items = [f"{inner}{string_literal(k)}: {py_literal(v, indent + 4).lstrip()}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        inner = " " * (indent + 4)
        # Pack short items several to a line, the way a person would write a long list of names.
        lines: list[str] = []
        current = ""
        for item in value:
            text = py_literal(item, indent + 4).lstrip() + ","
            if "\n" in text or (current and len(inner) + len(current) + 1 + len(text) > _WIDTH):
                if current:
                    lines.append(inner + current)
                current = text
            else:
                current = f"{current} {text}" if current else text
        if current:
            lines.append(inner + current)
        return "[\n" + "\n".join(lines) + f"\n{pad}]"
    raise ZgenError(f"cannot write {type(value).__name__} {value!r} as a literal")


def _flat(value) -> str | None:
    if value is None or isinstance(value, (bool, int, float)):
        return "None" if value is None else _number(value)
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, dict):
        parts = {k: _flat(v) for k, v in value.items()}
        if any(p is None for p in parts.values()):
            return None
        return "{" + ", ".join(f"{string_literal(k)}: {p}" for k, p in parts.items()) + "}"
    if isinstance(value, (list, tuple)):
        items = [_flat(v) for v in value]
        return None if any(p is None for p in items) else "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    return None


# -- settings -----------------------------------------------------------------------------------

def _origin_text(name: str, o: Origin | None, key: str) -> str:
    """Where a value came from, short: the key is named only when the variable's name differs from it."""
    parts = key.split(".")
    leaf = ".".join(parts[-2:]) if parts[-1] in ("enabled", "type", "device") and len(parts) > 1 else parts[-1]
    named = "" if leaf == name else f"`{leaf}` "
    if o is None:
        return f"{named}not set".strip()
    if o.kind == "config":
        return f"{named}config line {o.line}" if o.line else f"{named}config"
    if o.kind == "default":
        return f"{named}DeepSpeed default"
    if o.kind == "auto":
        return f"{named}\"auto\" solved: {o.detail}" if o.detail else f"{named}\"auto\" solved by zgen"
    return f"{named}derived: {o.detail}" if o.detail else f"{named}derived"


def _origin(resolved: ResolvedConfig, *keys: str) -> tuple[Origin | None, str]:
    for k in keys:
        o = resolved.origin(k)
        if o is not None:
            return o, k
    return None, keys[0]


def settings_rows(resolved: ResolvedConfig, seq_len: int, seq_len_origin: str) -> list[tuple[str, list[str]]]:
    """The flat settings block: sections of aligned `name = value  # what (where from)` lines."""
    r, z = resolved, resolved.zero

    def row(name: str, value, what: str, *keys: str) -> tuple[str, str, str]:
        origin, key = _origin(r, *keys)
        return name, py_literal(value), f"{what} ({_origin_text(name, origin, key)})"

    zk = "zero_optimization."
    sections: list[tuple[str, list[tuple[str, str, str]]]] = [
        ("batch", [
            row("train_batch_size", r.train_batch_size, "sequences per optimizer step, all ranks", "train_batch_size"),
            row("micro_batch_size", r.train_micro_batch_size_per_gpu, "sequences per rank per forward",
                "train_micro_batch_size_per_gpu"),
            ("seq_len", py_literal(seq_len), f"tokens per sequence ({seq_len_origin})"),
            row("log_every", r.steps_per_print, "progress line every N steps", "steps_per_print"),
        ]),
        ("precision, clipping, optimizer", [
            row("precision", r.precision, "compute dtype; fp32 master weights", "bf16.enabled", "fp16.enabled",
                "precision"),
            row("gradient_clipping", float(r.gradient_clipping), "max global gradient norm (0: off)",
                "gradient_clipping"),
            row("optimizer", r.optimizer.type, "over the flat fp32 shards", "optimizer.type"),
            row("lr", float(r.optimizer.lr), "learning rate", "optimizer.params.lr"),
            row("betas", tuple(float(b) for b in r.optimizer.betas), "Adam betas", "optimizer.params.betas"),
            row("eps", float(r.optimizer.eps), "Adam epsilon", "optimizer.params.eps"),
            row("weight_decay", float(r.optimizer.weight_decay), "decoupled weight decay",
                "optimizer.params.weight_decay"),
        ]),
    ]
    if r.scheduler is not None:
        sections[1][1].extend([
            row("scheduler", r.scheduler.type, "learning-rate schedule", "scheduler.type"),
            row("scheduler_params", {k: v for k, v in r.scheduler.params}, "its parameters", "scheduler.params"),
        ])
    if r.precision == "fp16":
        sections[1][1].extend([
            row("loss_scale", float(r.loss_scale), "0: dynamic loss scaling", "fp16.loss_scale"),
            row("initial_scale_power", r.initial_scale_power, "dynamic scale starts at 2**this",
                "fp16.initial_scale_power"),
            row("loss_scale_window", r.loss_scale_window, "steps without overflow before it grows",
                "fp16.loss_scale_window"),
            row("hysteresis", r.hysteresis, "overflows tolerated before it shrinks", "fp16.hysteresis"),
            row("min_loss_scale", float(r.min_loss_scale), "floor of the scale", "fp16.min_loss_scale"),
        ])
    sections.append(("ZeRO", [
        row("zero_stage", z.stage, "params, grads and optimizer states partitioned", zk + "stage"),
        row("overlap_comm", z.overlap_comm, "collectives overlap compute", zk + "overlap_comm"),
        row("contiguous_gradients", z.contiguous_gradients, "one flat gradient buffer per unit",
            zk + "contiguous_gradients"),
        row("reduce_bucket_size", z.reduce_bucket_size, "elements per reduce-scatter", zk + "reduce_bucket_size"),
        row("allgather_bucket_size", z.allgather_bucket_size, "elements per all-gather, stages 1-2",
            zk + "allgather_bucket_size"),
        row("prefetch_bucket_size", z.prefetch_bucket_size, "elements prefetched ahead",
            zk + "stage3_prefetch_bucket_size", zk + "prefetch_bucket_size"),
        row("param_persistence_threshold", z.param_persistence_threshold, "smaller parameters stay gathered",
            zk + "stage3_param_persistence_threshold", zk + "param_persistence_threshold"),
        row("max_live_parameters", z.max_live_parameters, "elements gathered at once, at most",
            zk + "stage3_max_live_parameters", zk + "max_live_parameters"),
        row("max_reuse_distance", z.max_reuse_distance, "keep a unit if reused within this",
            zk + "stage3_max_reuse_distance", zk + "max_reuse_distance"),
        row("sub_group_size", z.sub_group_size, "elements per optimizer group", zk + "sub_group_size"),
        row("offload_param", z.offload_param.device, "where parameter shards live", zk + "offload_param.device"),
        row("offload_optimizer", z.offload_optimizer.device, "where optimizer states live",
            zk + "offload_optimizer.device"),
    ]))
    return [(title, _align(rows)) for title, rows in sections]


def _align(rows: Sequence[tuple[str, str, str]]) -> list[str]:
    width = max(len(n) + 3 + len(v) for n, v, _ in rows if "\n" not in v)
    return [f"{n} = {v}".ljust(width) + f"  # {c}" for n, v, c in rows]


# -- rendering ------------------------------------------------------------------------------------

def _environment() -> jinja2.Environment:
    def load(name: str) -> str:
        return importlib.resources.files("zgen.templates").joinpath(name).read_text(encoding="utf-8")

    return jinja2.Environment(
        loader=jinja2.FunctionLoader(load),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_script(inp: ScriptInputs) -> str:
    """The generated training script for `inp` (deterministic)."""
    r = inp.resolved
    nproc = min(inp.world_size, inp.gpus_per_node) if inp.gpus_per_node else inp.world_size
    nnodes = -(-inp.world_size // nproc)
    loop = [
        ("max_steps", py_literal(inp.max_steps), "optimizer steps to train (--steps)"),
        ("seed", py_literal(inp.seed), "seed of the data and of dropout (--seed)"),
        ("checkpoint_every", py_literal(inp.checkpoint_every),
         "sharded checkpoint every N steps and after the last (--checkpoint-every; 0: never)"),
    ]
    settings = settings_rows(r, inp.seq_len, inp.seq_len_origin)
    settings.append(("training loop (defaults of the command-line flags below)", _align(loop)))
    plan_literal = "None" if inp.plan is None else "    " + py_literal(inp.plan.to_dict(), 4)
    text = _environment().get_template(TEMPLATE).render(
        version=__version__,
        script=inp.script,
        model_target=inp.model_target,
        inputs_label=inp.inputs_target or (
            f"synthesized `input_ids`/`labels` over the model's vocabulary ({inp.vocab_size})"
            if inp.data is None else "none (the data function yields whole micro batches)"),
        data_label=inp.data_target,
        config_label=inp.config_label,
        world_size=inp.world_size,
        gpus_per_node=inp.gpus_per_node,
        seq_len=inp.seq_len,
        units_label=inp.units_label,
        regenerate=inp.regenerate,
        check_command=inp.check_command,
        forced=inp.forced,
        hazards=inp.hazards,
        nproc=nproc,
        nnodes=nnodes,
        train_batch_size=r.train_batch_size,
        settings=settings,
        precision=r.precision,
        scheduler=r.scheduler is not None,
        offload_param=r.zero.offload_param.device,
        offload_optimizer=r.zero.offload_optimizer.device,
        model_file=string_literal(inp.model.path),
        model_factory=string_literal(inp.model.function),
        inputs_file=string_literal(inp.inputs.path) if inp.inputs else None,
        inputs_function=string_literal(inp.inputs.function) if inp.inputs else None,
        data_file=string_literal(inp.data.path) if inp.data else None,
        data_function=string_literal(inp.data.function) if inp.data else None,
        init_file=string_literal(inp.init.path) if inp.init else None,
        init_function=string_literal(inp.init.function) if inp.init else None,
        n_params_literal=py_literal(inp.n_params),
        vocab_size=inp.vocab_size if (inp.inputs is None and inp.data is None) else None,
        plan_literal=plan_literal,
        plan_failure=inp.plan_failure,
        planned_peak=py_literal(inp.planned_peak) if inp.planned_peak else None,
    )
    return text
