"""What `zgen plan` and `zgen emit` share: settings, static check, trace, resolved config, plan.

`prepare(args, settings)` is the front half of both commands, one plain
function from the command line to a frozen `Prepared`:

1. merge `[tool.zgen]` with the flags and resolve the input files;
2. build the model on the `meta` device and trace one forward and backward;
3. run `zgen check` on the model, its config and the inputs file (with the
   traced model's shape as launch facts, so both use one memory model);
4. plan the stage-3 schedule from the trace and the resolved config.

The commands then print (`plan`) or render (`emit`). Importing this module is
cheap; torch is imported only when `prepare` runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zgen.errors import ZgenError
from zgen.findings import Severity
from zgen.launch import LaunchFacts, ModelShape

__all__ = ["add_model_arguments", "Prepared", "prepare", "merged_settings", "cli_path", "display_path",
           "model_shape", "run_static_check", "blocking_findings", "memory_findings", "print_findings",
           "memory_timeline"]


def _units(text: str) -> tuple[str, ...]:
    return tuple(u.strip() for u in text.split(",") if u.strip())


def add_model_arguments(p) -> None:
    """The model/config inputs shared by `plan` and `emit` (each overrides [tool.zgen])."""
    g = p.add_argument_group("model and config (override [tool.zgen])")
    g.add_argument("--model", metavar="PATH:FACTORY", help="file and function returning the nn.Module")
    g.add_argument("--inputs", metavar="PATH:FUNCTION",
                   help="fn(batch_size, seq_len, generator) -> micro batch (tuple or dict); "
                        "default: causal-LM input_ids/labels")
    g.add_argument("--config", metavar="PATH", help="DeepSpeed-style config (JSON)")
    g.add_argument("--loss", metavar="PATH:FUNCTION",
                   help="loss_fn(outputs, batch) -> scalar, for a forward that returns logits, features or a "
                        "dataclass (default: the forward's scalar or its `.loss`)")
    g.add_argument("--units", type=_units, metavar="PATTERNS",
                   help="modules that get a unit, comma-separated patterns over qualified names: `*` stays within "
                        "one part, `**` crosses dots (e.g. 'layers.*', 'encoder.**.attn')")


@dataclass(frozen=True)
class Prepared:
    """Everything between the settings and the schedule, shared by `plan` and `emit`."""

    settings: object
    model_target: object  # zgen.plan.trace.Target
    model: object  # the meta-device nn.Module
    trace: object | None  # ExecutionTrace, None when the trace failed (see trace_finding)
    trace_finding: object | None  # a ZG290 Finding
    check: object  # zgen.checker.CheckResult
    config_path: str
    report: object | None  # ConfigReport of the config
    plan: object | None
    seq_len: int
    seq_len_origin: str
    world_size: int
    notes: tuple[str, ...] = ()

    @property
    def resolved(self):
        """The resolved config, or None when it does not resolve."""
        return None if self.report is None else self.report.resolved


def _option(args, name: str) -> str:
    return f"--{name.replace('_', '-')}" if getattr(args, name, None) else f"`{name.replace('_', '-')}` in [tool.zgen]"


def merged_settings(args, settings):
    """[tool.zgen] with this command's flags applied."""
    return settings.merged(
        model=args.model,
        inputs=args.inputs,
        data=getattr(args, "data", None),
        config=args.config,
        out=getattr(args, "out", None),
        world_size=args.world_size,
        gpus_per_node=args.gpus_per_node,
        gpu_mem=args.gpu_mem,
        params=args.params,
        seq_len=args.seq_len,
        deepspeed_version=args.deepspeed_version,
        units=args.units,
        rules=(settings.rules + tuple(args.rules)) if args.rules else None,
    )


def cli_path(args, name: str, value: str, settings) -> Path:
    """Flags are relative to the working directory, [tool.zgen] values to the project root."""
    return (Path.cwd() / value) if getattr(args, name, None) else settings.resolve(value)


def display_path(path: Path, root: Path) -> str:
    """`path` relative to the project root (through symlinks as written, so output is machine-independent)."""
    for p, r in ((Path(os.path.abspath(path)), Path(os.path.abspath(root))), (path.resolve(), Path(root).resolve())):
        try:
            return p.relative_to(r).as_posix()
        except ValueError:
            continue
    return str(path)


def prepare(args, settings) -> Prepared:
    """Merge settings, trace the model, check model and config, and plan (the shared front half)."""
    from zgen.plan import trace as tr

    s = merged_settings(args, settings)
    if not s.model:
        raise ZgenError("no model given", help="pass --model path/to/model.py:factory or set `model` in [tool.zgen]")
    if not s.config:
        raise ZgenError("no config given", help="pass --config ds_config.json or set `config` in [tool.zgen]")
    target = tr.parse_target(s.model, _option(args, "model"))
    model_file = cli_path(args, "model", target.path, s)
    target = tr.Target(display_path(model_file, s.root), target.function, target.option)
    config_file = cli_path(args, "config", s.config, s)
    if not config_file.is_file():
        raise ZgenError(f"{_option(args, 'config')}: config `{s.config}` does not exist")
    inputs = None
    if s.inputs:
        it = tr.parse_target(s.inputs, _option(args, "inputs"))
        inputs_file = cli_path(args, "inputs", it.path, s)
        it = tr.Target(display_path(inputs_file, s.root), it.function, it.option)
        inputs = (tr.load_callable(it, s.root), it)

    loss = None
    if getattr(args, "loss", None):
        lt = tr.parse_target(args.loss, "--loss")
        lt = tr.Target(display_path(cli_path(args, "loss", lt.path, s), s.root), lt.function, lt.option)
        loss = (tr.load_callable(lt, s.root), lt)

    factory = tr.load_callable(target, s.root)
    model = tr.build_meta_model(factory, target)
    seq_len, seq_origin = _seq_len(args, s, model)
    world = s.world_size or 1
    notes = [] if s.world_size else ["world size not given: planned for 1 (pass --world-size or set `world-size`)"]
    trace = finding = None
    try:
        dtype = _compute_dtype(config_file)
        trace = tr.trace_model(model, root=s.root, batch_size=1, seq_len=seq_len, inputs=inputs, loss=loss,
                               dtype=dtype)
    except tr.DataDependentTrace as e:
        finding = e.finding
    if trace is not None:
        notes.extend(tr.trace_notes(trace, dtype))

    check = run_static_check(s, [model_file, config_file] + ([Path(s.root) / inputs[1].path] if inputs else []),
                             _facts(s, world, model, trace, seq_len))
    report = _config_report(check, config_file)
    plan = None
    if trace is not None and report is not None and report.resolved is not None:
        from zgen.plan.planner import build_plan

        plan = build_plan(model, trace, report.resolved.zero, patterns=s.units, world_size=world)
    return Prepared(
        settings=s, model_target=target, model=model, trace=trace, trace_finding=finding, check=check,
        config_path=display_path(config_file, s.root), report=report, plan=plan, seq_len=seq_len,
        seq_len_origin=seq_origin, world_size=world, notes=tuple(notes),
    )


def _compute_dtype(config_file: Path) -> str | None:
    """The dtype training computes in (`bf16` / `fp16` enabled), read before the full check; None if unreadable."""
    from zgen.config.parse import parse, to_plain

    try:
        cfg = to_plain(parse(config_file.read_text(encoding="utf-8")).root)
    except Exception:  # the static check reports what is wrong with the file
        return None
    if not isinstance(cfg, dict):
        return None
    for key, dtype in (("bf16", "bfloat16"), ("fp16", "float16")):
        section = cfg.get(key)
        if isinstance(section, dict) and section.get("enabled") is True:
            return dtype
    return "float32"


def _seq_len(args, s, model) -> tuple[int, str]:
    if s.seq_len:
        return s.seq_len, ("--seq-len" if args.seq_len else "[tool.zgen] seq-len")
    cfg = getattr(model, "config", None)
    for name in ("max_position_embeddings", "n_positions", "block_size", "max_seq_len"):
        v = getattr(cfg, name, None)
        if isinstance(v, int) and v > 0:
            return v, f"model.config.{name}"
    raise ZgenError("sequence length unknown", help="pass --seq-len N or set `seq-len` in [tool.zgen]")


def model_shape(model, trace, seq_len: int):
    """A `ModelShape` for the memory model: counts from the trace, dimensions from `model.config`."""
    cfg = getattr(model, "config", None)

    def dim(*names):
        for n in names:
            v = getattr(cfg, n, None)
            if isinstance(v, int) and v > 0:
                return v
        return None

    layers = None
    if trace is not None:
        from zgen.schedule.units import block_modules

        layers = len(block_modules(model)) or None
    return ModelShape(
        params=trace.total_params if trace is not None else sum(p.numel() for p in model.parameters()),
        layers=dim("num_hidden_layers", "n_layer", "num_layers") or layers,
        hidden=dim("hidden_size", "n_embd", "d_model"),
        heads=dim("num_attention_heads", "n_head", "num_heads"),
        kv_heads=dim("num_key_value_heads", "n_kv_heads") or dim("num_attention_heads", "n_head", "num_heads"),
        ffn=dim("intermediate_size", "ffn_dim", "d_ff", "n_inner"),
        vocab=(trace.vocab_size if trace is not None else None) or dim("vocab_size"),
        seq_len=seq_len,
        traced_activation_bytes=(trace.activation_bytes // trace.batch_size) if trace and trace.activation_bytes else None,
        source="zgen trace (meta device)",
    )


def _facts(s, world: int, model, trace, seq_len: int):
    return LaunchFacts(world_size=world, gpus_per_node=s.gpus_per_node, gpu_mem_bytes=s.gpu_mem,
                       model=model_shape(model, trace, seq_len), deepspeed_version=s.deepspeed_version,
                       consumer="zgen", consumer_reason="`zgen plan`/`zgen emit` build zgen's runtime config")


def run_static_check(settings, files: list[Path], facts):
    """`zgen check` on the model, its config and the inputs file: the one place emit and plan call it."""
    from zgen.checker import check_paths

    cwd = Path.cwd()
    paths = []
    for f in files:
        try:
            paths.append(f.resolve().relative_to(cwd.resolve()).as_posix())
        except ValueError:
            paths.append(str(f))
    return check_paths(paths, settings, facts)


def _config_report(check, config_file: Path):
    want = config_file.resolve()
    for path, report in check.configs.items():
        if Path(path).resolve() == want:
            return report
    return None


# The config finding that says the estimate exceeds --gpu-mem: `zgen plan` shows the timeline behind it.
OUT_OF_MEMORY = "ZC601"


def _config_findings(prep: Prepared) -> list:
    return [f for f in prep.check.findings if f.key or f.path.endswith((".json", ".hjson"))]


def blocking_findings(prep: Prepared) -> list:
    """Problems that leave nothing true to plan: a failed trace, or config errors (a wrong type, a batch
    that does not divide...), which `zgen check` reports the same way. Running out of memory is not one."""
    problems = []
    if prep.trace_finding is not None:
        problems.append(prep.trace_finding)
    errors = [f for f in _config_findings(prep) if f.severity is Severity.ERROR and f.code != OUT_OF_MEMORY]
    if prep.resolved is None:
        errors = _config_findings(prep)
        if not errors:
            raise ZgenError(f"config `{prep.config_path}` could not be resolved",
                            help=f"run `zgen check {prep.config_path}` to see why")
    return problems + errors


def memory_findings(prep: Prepared) -> list:
    """The config check's out-of-memory finding (with its cheapest fix), when --gpu-mem is exceeded."""
    return [f for f in prep.check.findings if f.code == OUT_OF_MEMORY]


def print_findings(findings: Sequence, prep: Prepared) -> None:
    """The findings in `zgen check`'s concise format, on stdout."""
    from zgen import __version__
    from zgen.report import ReportContext, render

    ctx = ReportContext(rules=prep.check.rules, version=__version__, root=Path.cwd())
    sys.stdout.write(render("concise", findings, ctx))


def memory_timeline(prep: Prepared) -> list:
    """Per-GPU memory at every position of one step under the plan (empty without a plan)."""
    if prep.plan is None:
        return []
    from zgen.plan.planner import timeline

    return timeline(prep.plan, prep.trace, prep.resolved, model_shape(prep.model, prep.trace, prep.seq_len))
