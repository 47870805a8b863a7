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
from dataclasses import dataclass, fields

import jinja2

from zgen import __version__
from zgen.config.resolved import Origin, ResolvedConfig
from zgen.errors import ZgenError
from zgen.schedule.plan import Plan

__all__ = ["CodeRef", "ScriptInputs", "render_script", "render_plan", "py_literal", "string_literal", "settings_rows",
           "zero_comments", "runtime_arguments", "runtime_ds_config", "optimizer_label", "TEMPLATE"]

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
    loss: CodeRef | None = None  # loss_fn(outputs, batch) -> scalar, when the forward returns no loss
    config_label: str
    resolved: ResolvedConfig
    runtime: object  # the zgen.runtime.config.RuntimeConfig that `resolved` parses to (its values go in the script)
    plan: Plan | None
    plan_file: str | None = None  # the plan's JSON file, relative to the script's folder (None without a plan)
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
    auto: str | None = None  # what `--auto` chose, in one line (its micro batch, recomputation, loss, offload)
    max_steps: int = 1000
    # Where the compute dtype came from when the config leaves it open (`"auto"`) or a flag set it; with
    # `precision_at_launch` the script picks bf16 on a GPU that supports it, else fp32.
    precision_note: str | None = None
    precision_at_launch: bool = False
    smoke: str | None = None  # a CPU smoke-test command for the docstring (None: the script itself is small enough)
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
        opening, closing = ("(", ")") if isinstance(value, tuple) else ("[", "]")
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
        return opening + "\n" + "\n".join(lines) + f"\n{pad}{closing}"
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
        if any(p is None for p in items):
            return None
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore[arg-type]
        return "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    return None


# -- the runtime's config ---------------------------------------------------------------------------

def runtime_ds_config(resolved: ResolvedConfig, raw: dict) -> dict:
    """The ds_config the runtime is to read: the user's file with every value zgen resolved written over it.

    `ResolvedConfig` holds what `zgen check` reasons about; the runtime also
    reads keys it does not model (an optimizer's own params, `communication_data_type`,
    `zero_hpz_partition_size`), so those keep the file's values. A non-Adam
    optimizer's params are the file's alone: Adam's betas and eps filled in
    by the resolver would be arguments SGD or Adagrad refuse.
    """
    decided = resolved.to_ds_config()
    merged = _overlay(raw, decided)
    given = raw.get("optimizer")
    if isinstance(given, dict) and str(given.get("type", "")).lower() not in ("adam", "adamw", "auto"):
        params = given.get("params") or {}
        if isinstance(params, dict):
            solved = decided["optimizer"]["params"]
            merged["optimizer"]["params"] = {k: solved.get(k, v) if v == "auto" else v for k, v in params.items()}
    return merged


def _overlay(base, top):
    """`base` with `top`'s values written over it, object by object."""
    if not (isinstance(base, dict) and isinstance(top, dict)):
        return top
    return {**base, **{k: _overlay(base.get(k), v) for k, v in top.items()}}


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


# DeepSpeed keys zgen.runtime reads nowhere: the banner says so when the config sets them.
_UNUSED_KEYS = ("zero_optimization.overlap_comm", "zero_optimization.contiguous_gradients",
                "zero_optimization.reduce_bucket_size", "zero_optimization.allgather_bucket_size",
                "zero_optimization.sub_group_size", "fp16.hysteresis")
# The ZeRO keys a plan is made from: with a plan file they are in it, not in the script.
_PLAN_KEYS = (("stage3_prefetch_bucket_size", "prefetch_bucket_size"),
              ("stage3_param_persistence_threshold", "param_persistence_threshold"),
              ("stage3_max_live_parameters", "max_live_parameters"),
              ("stage3_max_reuse_distance", "max_reuse_distance"))


def settings_rows(resolved: ResolvedConfig, runtime, seq_len: int, seq_len_origin: str,
                  planned: bool = True, precision: tuple[str, str] | None = None) -> list[tuple[str, list[str]]]:
    """The flat settings block: sections of aligned `name = value  # what (where from)` lines.

    Values are the runtime's (`runtime` is the `RuntimeConfig` the config
    parses to), origins the resolved config's. Only settings the script or
    the runtime reads are rows; ZeRO's schedule settings are comments when a
    plan file carries them (`planned`).
    """
    r, c = resolved, runtime

    def row(name: str, value, what: str, *keys: str, unmodelled: bool = False) -> tuple[str, str, str]:
        origin, key = _origin(r, *keys)
        # Keys only the runtime reads have no origin in the resolved config: they are the file's own values.
        if unmodelled and origin is None:
            where = f"`{key.removeprefix(zk)}` in the config"
        else:
            where = _origin_text(name, origin, key)
        return name, py_literal(value), f"{what} ({where})"

    zk = "zero_optimization."
    sections: list[tuple[str, list[tuple[str, str, str]]]] = [
        ("batch", [
            row("train_batch_size", c.train_batch_size, "sequences per optimizer step, all ranks", "train_batch_size"),
            row("micro_batch_size", c.micro_batch_size, "sequences per rank per forward",
                "train_micro_batch_size_per_gpu"),
            ("seq_len", py_literal(seq_len), f"tokens per sequence ({seq_len_origin})"),
            row("log_every", r.steps_per_print, "progress line every N steps", "steps_per_print"),
        ]),
        ("precision, clipping, optimizer", [
            ("precision", py_literal(precision[0]), f"compute dtype; fp32 master weights ({precision[1]})")
            if precision else row("precision", c.precision, "compute dtype; fp32 master weights", "bf16.enabled",
                                  "fp16.enabled", "precision"),
            row("gradient_clipping", c.gradient_clipping, "max global gradient norm (0: off)", "gradient_clipping"),
            row("optimizer", c.optimizer, f"{optimizer_label(c.optimizer)} over the flat fp32 shards"
                f"{_ADAM_DECAY.get(c.optimizer, '')}", "optimizer.type"),
            row("lr", c.lr, "learning rate", "optimizer.params.lr"),
        ]),
    ]
    if c.optimizer in _ADAM_DECAY:
        sections[1][1].extend([
            row("betas", c.betas, "Adam betas", "optimizer.params.betas"),
            row("eps", c.eps, "Adam epsilon", "optimizer.params.eps"),
            row("weight_decay", c.weight_decay, "weight decay", "optimizer.params.weight_decay"),
        ])
    elif _other_params(c):
        sections[1][1].append(row("optimizer_params", _other_params(c),
                                  f"{optimizer_label(c.optimizer)}'s other arguments", "optimizer.params",
                                  unmodelled=True))
    if c.reduce_dtype != _default(c, "reduce_dtype"):
        sections[1][1].append(row("reduce_dtype", c.reduce_dtype, "dtype gradients are reduce-scattered in",
                                  "communication_data_type", unmodelled=True))
    if c.offload_optimizer != _default(c, "offload_optimizer") or c.pin_memory != _default(c, "pin_memory"):
        sections.append(("optimizer offload", [
            row("offload_optimizer", c.offload_optimizer,
                "fp32 master weights and optimizer state in host memory, stepped on the CPU",
                zk + "offload_optimizer.device", unmodelled=True),
            row("pin_memory", c.pin_memory, "page-locked host buffers: faster copies (CUDA only)",
                zk + "offload_optimizer.pin_memory", unmodelled=True),
        ] + ([row("offload_ratio", c.offload_ratio,
                  "share of the parameters whose optimizer is offloaded; the units stepped first keep theirs on the GPU",
                  zk + "offload_optimizer.ratio", unmodelled=True)] if c.offload_ratio != _default(c, "offload_ratio") else [])))
    if c.hpz_partition_size != _default(c, "hpz_partition_size"):
        sections.append(("ZeRO stage 3 hierarchical partitioning", [
            row("hpz_partition_size", c.hpz_partition_size,
                "ranks per secondary partition: gathers after the forward stay inside the group",
                zk + "zero_hpz_partition_size", unmodelled=True),
        ]))
    if c.scheduler is not None:
        sections[1][1].extend([
            row("scheduler", c.scheduler.type, "learning-rate schedule", "scheduler.type"),
            ("scheduler_params", py_literal(_scheduler_params(c.scheduler, r)), f"its parameters ({_params_origin(r)})"),
        ])
    if c.precision == "fp16":
        ls = c.loss_scale
        sections[1][1].extend([
            row("loss_scale", ls.static, "0: dynamic loss scaling", "fp16.loss_scale"),
            row("initial_scale_power", ls.initial_scale_power, "dynamic scale starts at 2**this",
                "fp16.initial_scale_power"),
            row("loss_scale_window", ls.window, "steps without overflow before it grows", "fp16.loss_scale_window"),
            row("min_loss_scale", ls.min_scale, "floor of the scale", "fp16.min_loss_scale"),
        ])
    if not planned:
        sections.append(("ZeRO stage 3: the runtime's default plan reads these", [
            row("prefetch_bucket_size", c.prefetch_bucket_size, "elements prefetched ahead",
                zk + "stage3_prefetch_bucket_size", zk + "prefetch_bucket_size"),
            row("param_persistence_threshold", c.persistence_threshold, "smaller parameters stay gathered",
                zk + "stage3_param_persistence_threshold", zk + "param_persistence_threshold"),
        ]))
    return [(title, _align(rows)) for title, rows in sections]


# The Adam variants' own rows (betas, eps, weight_decay) and what their weight decay does.
_ADAM_DECAY = {"adamw": ", decoupled weight decay", "adam": ", L2 weight decay in the gradient"}


def optimizer_label(name: str) -> str:
    """The optimizer a `RuntimeConfig.optimizer` value names, as a person would write it."""
    if name.startswith("torch:"):
        return f"torch.optim.{name.removeprefix('torch:')}"
    return {"adamw": "AdamW", "adam": "Adam", "lion": "Lion (zgen.runtime's own)"}.get(name, name)


def _default(runtime, name: str):
    """The `RuntimeConfig` field's default (the runtime's, which the script leaves out when it is unchanged)."""
    return next(f.default for f in fields(runtime) if f.name == name)


def _other_params(runtime) -> dict:
    """The non-Adam optimizer's params besides `lr` (which has its own row and is passed back in)."""
    return {k: v for k, v in runtime.optimizer_params.items() if k != "lr"}


def runtime_arguments(runtime, planned: bool) -> list[str]:
    """The `RuntimeConfig(...)` keyword arguments, one per line, in the names of the settings rows.

    Every field that differs from its default is passed, so the script's
    config equals the one `RuntimeConfig.load` makes of the file; Adam's
    betas, eps and weight decay are literals for other optimizers, whose
    arguments are all in `optimizer_params`.
    """
    c = runtime
    out = ["world_size=world_size,", "train_batch_size=train_batch_size,", "micro_batch_size=micro_batch_size,",
           "gradient_accumulation_steps=accumulation,", "precision=precision,",
           "gradient_clipping=gradient_clipping,", "optimizer=optimizer,", "lr=lr,"]
    if c.optimizer in _ADAM_DECAY:
        out += ["betas=betas,", "eps=eps,", "weight_decay=weight_decay,"]
    else:
        out.append(f"betas={py_literal(c.betas)}, eps={py_literal(c.eps)}, weight_decay={py_literal(c.weight_decay)},"
                   f"  # unused by {optimizer_label(c.optimizer)}")
    if c.optimizer_params:
        if "lr" not in c.optimizer_params:
            out.append("optimizer_params=optimizer_params,")
        else:  # one learning rate: the `lr` row is also the optimizer's
            out.append('optimizer_params={"lr": lr, **optimizer_params},' if _other_params(c)
                       else 'optimizer_params={"lr": lr},')
    if c.scheduler is not None:
        out.append("scheduler=SchedulerConfig(type=scheduler, **scheduler_params),")
    if c.precision == "fp16":
        out.append("loss_scale=LossScaleConfig(static=loss_scale, initial_scale_power=initial_scale_power, "
                   "window=loss_scale_window,\n                               min_scale=min_loss_scale),")
    out += [f"{name}={name}," for name in ("reduce_dtype", "offload_optimizer", "pin_memory", "offload_ratio",
                                            "hpz_partition_size")
            if getattr(c, name) != _default(c, name)]
    if not planned:
        out += ["persistence_threshold=param_persistence_threshold,", "prefetch_bucket_size=prefetch_bucket_size,"]
    return out


def _params_origin(r: ResolvedConfig) -> str:
    """Where the scheduler's parameters came from: the lines written, and those an "auto" left to zgen."""
    keys = [k for k, _ in r.scheduler.params] if r.scheduler else []
    origins = [(k, r.origin(f"scheduler.params.{k}")) for k in keys]
    written = sorted(o.line for _, o in origins if o is not None and o.kind == "config" and o.line)
    solved = [k for k, o in origins if o is not None and o.kind == "auto"]
    parts = []
    if written:
        parts.append(f"config lines {written[0]}-{written[-1]}" if len(written) > 1 else f"config line {written[0]}")
    if solved:
        parts.append("\"auto\" solved for " + ", ".join(f"`{k}`" for k in solved))
    return "; ".join(parts) or "the runtime's defaults"


def _scheduler_params(scheduler, resolved: ResolvedConfig) -> dict:
    """The scheduler's fields the config set or the runtime defaults differently from the field's own default."""
    given = {k for k, _ in resolved.scheduler.params} if resolved.scheduler else set()
    out = {}
    for f in fields(scheduler):
        value = getattr(scheduler, f.name)
        if f.name != "type" and (f.name in given or value != f.default):
            out[f.name] = value
    return out


def zero_comments(resolved: ResolvedConfig, planned: bool) -> list[str]:
    """Comment lines for the ZeRO settings that are in the plan file, or that zgen.runtime does not use."""
    z, zk = resolved.zero, "zero_optimization."
    lines = []
    if planned:
        lines.append("the plan file was made from these; change them in the config and regenerate:")
        lines += [f"  {key} = {_number(getattr(z, attr))}" for key, attr in _PLAN_KEYS]
    unused = [k.removeprefix(zk) for k in _UNUSED_KEYS if (o := resolved.origin(k)) is not None and o.kind == "config"]
    if unused:
        lines += ["set in the config but unused by zgen.runtime:", "  " + ", ".join(f"`{k}`" for k in unused)]
    return lines


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


def render_plan(plan: Plan) -> str:
    """The plan file written next to the script: the same JSON `zgen plan --json` prints."""
    return plan.to_json() + "\n"


def render_script(inp: ScriptInputs) -> str:
    """The generated training script for `inp` (deterministic)."""
    r = inp.resolved
    if (inp.plan is None) != (inp.plan_file is None):
        raise ZgenError("internal: a plan needs a plan file and a plan file needs a plan")
    nproc = min(inp.world_size, inp.gpus_per_node) if inp.gpus_per_node else inp.world_size
    nnodes = -(-inp.world_size // nproc)
    loop = [
        ("max_steps", py_literal(inp.max_steps), "optimizer steps to train (--steps)"),
        ("seed", py_literal(inp.seed), "seed of the data and of dropout (--seed)"),
        ("checkpoint_every", py_literal(inp.checkpoint_every),
         "sharded checkpoint every N steps and after the last (--checkpoint-every; 0: never)"),
    ]
    planned = inp.plan is not None
    settings = settings_rows(r, inp.runtime, inp.seq_len, inp.seq_len_origin, planned=planned,
                             precision=("auto" if inp.precision_at_launch else inp.runtime.precision,
                                        inp.precision_note) if inp.precision_note else None)
    settings.append(("training loop (defaults of the command-line flags below)", _align(loop)))
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
        smoke=inp.smoke,
        train_batch_size=r.train_batch_size,
        settings=settings,
        zero_comments=zero_comments(r, planned),
        precision=inp.runtime.precision,
        precision_note=inp.precision_note,
        precision_at_launch=inp.precision_at_launch,
        config_arguments=runtime_arguments(inp.runtime, planned),
        scheduler=inp.runtime.scheduler is not None,
        model_file=string_literal(inp.model.path),
        model_factory=string_literal(inp.model.function),
        inputs_file=string_literal(inp.inputs.path) if inp.inputs else None,
        inputs_function=string_literal(inp.inputs.function) if inp.inputs else None,
        data_file=string_literal(inp.data.path) if inp.data else None,
        data_function=string_literal(inp.data.function) if inp.data else None,
        init_file=string_literal(inp.init.path) if inp.init else None,
        init_function=string_literal(inp.init.function) if inp.init else None,
        loss_file=string_literal(inp.loss.path) if inp.loss else None,
        loss_function=string_literal(inp.loss.function) if inp.loss else None,
        n_params_literal=py_literal(inp.n_params),
        vocab_size=inp.vocab_size if (inp.inputs is None and inp.data is None) else None,
        plan_file=string_literal(inp.plan_file) if planned else None,
        plan_label=inp.plan_file,
        n_units=len(inp.plan.units) if planned else 0,
        plan_failure=inp.plan_failure,
        planned_peak=py_literal(inp.planned_peak) if inp.planned_peak else None,
        auto=inp.auto,
        auto_literal=string_literal("zgen plan --auto chose " + inp.auto) if inp.auto else None,
    )
    return text
