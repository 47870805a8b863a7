"""What `zgen plan` and `zgen emit` share: the request, static check, trace, resolved config, plan.

`request_from_args(args, settings)` is the command line's edge: the flags
over `[tool.zgen]`, paths resolved and targets parsed once, in a frozen
`Request`. `prepare(request)` is the front half of both commands, one plain
function from the request to a frozen `Prepared`:

1. read the config once: its precision is the dtype the model is traced in,
   and the commands read their settings from the same values;
2. build the model on the `meta` device and trace one forward and backward;
3. run `zgen check` on the model, its config and the inputs file (with the
   traced model's shape as launch facts, so both use one memory model);
4. plan the stage-3 schedule from the trace and the resolved config.

The commands then print (`plan`) or render (`emit`). Importing this module is
cheap; torch is imported only when `prepare` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zgen.errors import ZgenError
from zgen.findings import Finding, Severity
from zgen.launch import LaunchFacts, ModelShape, config_field
from zgen.plan.target import Target, parse_target
from zgen.settings import Settings

if TYPE_CHECKING:
    from torch import nn

    from zgen.checker import CheckResult
    from zgen.config.check import ConfigReport
    from zgen.config.resolved import ResolvedConfig
    from zgen.memory import MemoryPoint
    from zgen.plan.trace import ExecutionTrace
    from zgen.schedule.plan import Plan

__all__ = ["add_model_arguments", "Request", "request_from_args", "Prepared", "prepare", "cli_path", "display_path",
           "model_shape", "run_static_check", "blocking_findings", "memory_findings", "print_findings",
           "memory_timeline", "trace_request", "cwd_paths", "add_auto_arguments", "auto_search"]


def _units(text: str) -> tuple[str, ...]:
    return tuple(u.strip() for u in text.split(",") if u.strip())


def add_model_arguments(p: argparse.ArgumentParser, *, units: bool = True) -> None:
    """The model/config inputs shared by `plan`, `emit` and `check --trace` (each overrides [tool.zgen])."""
    g = p.add_argument_group("model and config (override [tool.zgen])")
    g.add_argument("--model", metavar="PATH:FACTORY", help="file and function returning the nn.Module")
    g.add_argument("--inputs", metavar="PATH:FUNCTION",
                   help="fn(batch_size, seq_len, generator) -> micro batch (tuple or dict); "
                        "default: causal-LM input_ids/labels")
    g.add_argument("--config", metavar="PATH", help="DeepSpeed-style config (JSON)")
    g.add_argument("--loss", metavar="PATH:FUNCTION",
                   help="loss_fn(outputs, batch) -> scalar, for a forward that returns logits, features or a "
                        "dataclass (default: the forward's scalar or its `.loss`)")
    if units:
        g.add_argument("--units", type=_units, metavar="PATTERNS",
                       help="modules that get a unit, comma-separated patterns over qualified names: `*` stays within "
                            "one part, `**` crosses dots (e.g. 'layers.*', 'encoder.**.attn')")


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What `plan` and `emit` are asked to plan: the flags over `[tool.zgen]`, checked once.

    Targets' paths are relative to the project root (as messages and the
    script's banner show them; `file` makes them paths again). `seq_len` None:
    read it from the model's config. `world_size` None: not given, planned for 1.
    """

    settings: Settings  # [tool.zgen] with the flags applied
    model: Target
    config_file: Path
    inputs: Target | None = None
    loss: Target | None = None
    seq_len: int | None = None
    seq_len_origin: str = ""
    world_size: int | None = None
    entries: tuple[Target, ...] = ()  # `check --trace --entry`: fn(model, batch) run after the training step
    auto: bool = False  # search the fastest setting that fits `gpu_mem` (`--auto`, `[tool.zgen] auto`)

    def file(self, target: Target) -> Path:
        """The file a target names."""
        return Path(self.settings.root) / target.path


def request_from_args(args: argparse.Namespace, settings: Settings) -> Request:
    """The command line's edge: merge the flags into `[tool.zgen]`, resolve paths, parse targets."""
    s = _merged_settings(args, settings)
    if not s.model:
        raise ZgenError("no model given", help="pass --model path/to/model.py:factory or set `model` in [tool.zgen]")
    if not s.config:
        raise ZgenError("no config given", help="pass --config ds_config.json or set `config` in [tool.zgen]")

    def target(name: str, text: str | None) -> Target | None:
        if not text:
            return None
        t = parse_target(text, _option(args, name))
        return Target(display_path(cli_path(args, name, t.path, s), s.root), t.function, t.option)

    model = target("model", s.model)
    config_file = cli_path(args, "config", s.config, s)
    if not config_file.is_file():
        raise ZgenError(f"{_option(args, 'config')}: config `{s.config}` does not exist")
    entries = []
    for text in getattr(args, "entry", None) or ():
        e = parse_target(text, "--entry")
        entries.append(Target(display_path(cli_path(args, "entry", e.path, s), s.root), e.function, e.option))
    return Request(
        settings=s, model=model, config_file=config_file, inputs=target("inputs", s.inputs),
        loss=target("loss", getattr(args, "loss", None)), seq_len=s.seq_len,
        seq_len_origin=("--seq-len" if args.seq_len else "[tool.zgen] seq-len") if s.seq_len else "",
        world_size=s.world_size, entries=tuple(entries), auto=bool(getattr(args, "auto", False) or s.auto),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """Everything between the request and the schedule, shared by `plan` and `emit`."""

    request: Request
    model: nn.Module  # built on the meta device
    trace: ExecutionTrace | None  # None when the trace failed (see trace_finding)
    trace_finding: Finding | None  # a ZG290 finding
    check: CheckResult
    config: Mapping[str, Any] | None  # the config as DeepSpeed reads it; None when unreadable (the check says why)
    config_path: str
    report: ConfigReport | None  # the config's report in `check`
    plan: Plan | None
    seq_len: int
    seq_len_origin: str
    world_size: int
    notes: tuple[str, ...] = ()
    # (real path, line) of model code that ran while the factory built the model: zgen's runtime replays
    # what it did to the weights (`zgen.runtime.deferred`), so build-time ZG1 findings there are taken care of.
    build_lines: frozenset[tuple[str, int]] = frozenset()
    # `--auto`: the output projections whose logits the loss reads the way the runtime fuses (the trace's probe).
    heads: tuple[str, ...] = ()

    @property
    def settings(self) -> Settings:
        """`[tool.zgen]` with the flags applied."""
        return self.request.settings

    @property
    def model_target(self) -> Target:
        """The model factory, its path relative to the project root."""
        return self.request.model

    @property
    def resolved(self) -> ResolvedConfig | None:
        """The resolved config, or None when it does not resolve."""
        return None if self.report is None else self.report.resolved


def _option(args: argparse.Namespace, name: str) -> str:
    return f"--{name.replace('_', '-')}" if getattr(args, name, None) else f"`{name.replace('_', '-')}` in [tool.zgen]"


def _merged_settings(args: argparse.Namespace, settings: Settings) -> Settings:
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
        units=getattr(args, "units", None),
        rules=(settings.rules + tuple(args.rules)) if args.rules else None,
    )


def cli_path(args: argparse.Namespace, name: str, value: str, settings: Settings) -> Path:
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


# The dtype the model is traced in, by the config's precision.
_TRACE_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def prepare(request: Request, *, trace_check: bool = False) -> Prepared:
    """Read the config, trace the model, check model and config, and plan (the shared front half).

    With `trace_check` (`emit`), the model also runs as simulated ZeRO-3 ranks (`zgen.trace_check`) and
    what that finds is part of the check's findings, merged, suppressed and selected like its own.
    """
    from zgen.config.resolved import written_precision
    from zgen.plan import trace as tr

    s = request.settings
    config = _read_config(request.config_file)
    inputs = None if request.inputs is None else (tr.load_callable(request.inputs, s.root), request.inputs)
    loss = None if request.loss is None else (tr.load_callable(request.loss, s.root), request.loss)
    build_lines: set[tuple[str, int]] = set()
    model = tr.build_meta_model(tr.load_callable(request.model, s.root), request.model, lines=build_lines)
    seq_len, seq_origin = _seq_len(request, model)
    world = request.world_size or 1
    notes = [] if request.world_size else ["world size not given: planned for 1 (pass --world-size or set `world-size`)"]
    trace = finding = None
    dtype = None if config is None else _TRACE_DTYPES[written_precision(config)]
    try:
        trace = tr.trace_model(model, root=s.root, batch_size=1, seq_len=seq_len, inputs=inputs, loss=loss,
                               dtype=dtype)
    except tr.DataDependentTrace as e:
        finding = e.finding
    heads: tuple[str, ...] = ()
    if trace is not None:
        notes.extend(tr.trace_notes(trace, dtype))
        if request.auto:
            heads = tr.fused_heads(model, trace, inputs=inputs, loss=loss)

    files = [request.file(request.model), request.config_file] + ([request.file(request.inputs)] if inputs else [])
    trace_findings: Sequence[Finding] = ()
    if trace_check:
        from zgen.trace_check import trace_check as run_trace_check

        trace_req, files_read, _ = trace_request(request)
        result = run_trace_check(trace_req)
        trace_findings = result.findings
        files = list(dict.fromkeys(files + files_read))
        notes.extend(result.notes)
    check = run_static_check(s, files, _facts(s, world, model, trace, seq_len), trace_findings)
    report = _config_report(check, request.config_file)
    plan = None
    if trace is not None and report is not None and report.resolved is not None:
        from zgen.plan.planner import build_plan

        plan = build_plan(model, trace, report.resolved.zero, patterns=s.units, world_size=world)
    return Prepared(
        request=request, model=model, trace=trace, trace_finding=finding, check=check, config=config,
        config_path=display_path(request.config_file, s.root), report=report, plan=plan, seq_len=seq_len,
        seq_len_origin=seq_origin, world_size=world, notes=tuple(notes),
        build_lines=frozenset((os.path.realpath(f), n) for f, n in build_lines), heads=heads,
    )


def _read_config(path: Path) -> dict[str, Any] | None:
    """The config as DeepSpeed reads it (the pipeline's one read); None when unreadable: the check says why."""
    from zgen.config import load_config_dict

    try:
        return load_config_dict(str(path))
    except ZgenError:
        return None


def _seq_len(request: Request, model: nn.Module) -> tuple[int, str]:
    if request.seq_len:
        return request.seq_len, request.seq_len_origin
    cfg = getattr(model, "config", None)
    found = config_field(lambda name: getattr(cfg, name, None), "seq_len")
    if found is not None:
        return found[1], f"model.config.{found[0]}"
    raise ZgenError("sequence length unknown", help="pass --seq-len N or set `seq-len` in [tool.zgen]")


def model_shape(model: nn.Module, trace: ExecutionTrace | None, seq_len: int) -> ModelShape:
    """A `ModelShape` for the memory model: counts from the trace, dimensions from `model.config`."""
    cfg = getattr(model, "config", None)

    def dim(dimension: str) -> int | None:
        found = config_field(lambda name: getattr(cfg, name, None), dimension)
        return None if found is None else found[1]

    layers = None
    if trace is not None:
        from zgen.schedule.units import block_modules

        layers = len(block_modules(model)) or None
    return ModelShape(
        params=trace.total_params if trace is not None else sum(p.numel() for p in model.parameters()),
        layers=dim("layers") or layers,
        hidden=dim("hidden"),
        heads=dim("heads"),
        kv_heads=dim("kv_heads") or dim("heads"),
        ffn=dim("ffn"),
        vocab=(trace.vocab_size if trace is not None else None) or dim("vocab"),
        seq_len=seq_len,
        traced_activation_bytes=(trace.activation_bytes // trace.batch_size) if trace and trace.activation_bytes else None,
        source="zgen trace (meta device)",
    )


def _facts(s: Settings, world: int, model: nn.Module, trace: ExecutionTrace | None, seq_len: int) -> LaunchFacts:
    return LaunchFacts(world_size=world, gpus_per_node=s.gpus_per_node, gpu_mem_bytes=s.gpu_mem,
                       model=model_shape(model, trace, seq_len), deepspeed_version=s.deepspeed_version,
                       consumer="zgen", consumer_reason="`zgen plan`/`zgen emit` build zgen's runtime config")


def run_static_check(settings: Settings, files: list[Path], facts: LaunchFacts,
                     trace_findings: Sequence[Finding] = ()) -> CheckResult:
    """`zgen check` on the model, its config and the inputs file: the one place emit and plan call it."""
    from zgen.checker import check_paths

    return check_paths(cwd_paths(files), settings, facts, trace_findings=trace_findings)


def cwd_paths(files: Sequence[Path]) -> list[str]:
    """Files as `zgen check` takes them: relative to the cwd when under it, else absolute."""
    cwd = Path.cwd().resolve()
    out = []
    for f in files:
        try:
            out.append(f.resolve().relative_to(cwd).as_posix())
        except ValueError:
            out.append(str(f))
    return out


def _config_report(check: CheckResult, config_file: Path) -> ConfigReport | None:
    want = config_file.resolve()
    for path, report in check.configs.items():
        if Path(path).resolve() == want:
            return report
    return None


# The config finding that says the estimate exceeds --gpu-mem: `zgen plan` shows the timeline behind it.
OUT_OF_MEMORY = "ZC601"


def _config_findings(prep: Prepared) -> list[Finding]:
    return [f for f in prep.check.findings if f.key or f.path.endswith((".json", ".hjson"))]


def blocking_findings(prep: Prepared) -> list[Finding]:
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


def memory_findings(prep: Prepared) -> list[Finding]:
    """The config check's out-of-memory finding (with its cheapest fix), when --gpu-mem is exceeded."""
    return [f for f in prep.check.findings if f.code == OUT_OF_MEMORY]


def print_findings(findings: Sequence[Finding], prep: Prepared) -> None:
    """The findings in `zgen check`'s concise format, on stdout."""
    from zgen import __version__
    from zgen.report import ReportContext, render

    ctx = ReportContext(rules=prep.check.rules, version=__version__, root=Path.cwd())
    sys.stdout.write(render("concise", findings, ctx))


def memory_timeline(prep: Prepared) -> list[MemoryPoint]:
    """Per-GPU memory at every position of one step under the plan (empty without a plan)."""
    if prep.plan is None:
        return []
    from zgen.plan.planner import timeline

    return timeline(prep.plan, prep.trace, prep.resolved, model_shape(prep.model, prep.trace, prep.seq_len))


def trace_request(request: Request):
    """What `zgen check --trace` (and `emit`'s trace check) runs: a `TraceRequest` from the request, the files
    the static check reads with it, and notes on defaults taken."""
    from zgen.trace_check import TraceRequest

    s = request.settings
    notes = []
    if not s.world_size:
        notes.append("world size not given: ranks simulated for 2 (pass --world-size or set `world-size`)")
    if not s.seq_len:
        notes.append(f"sequence length not given: traced with {_TRACE_SEQ_LEN} (pass --seq-len or set `seq-len`)")
    threshold, micro = _zero_settings(request.config_file)
    trace = TraceRequest(model=request.model, root=Path(s.root), inputs=request.inputs, loss=request.loss,
                         entries=request.entries, world_size=s.world_size or 2, seq_len=s.seq_len or _TRACE_SEQ_LEN,
                         batch_size=micro, gpus_per_node=s.gpus_per_node, persistence_threshold=threshold)
    files = [request.file(request.model), request.config_file] + [
        request.file(x) for x in (request.inputs, request.loss, *request.entries) if x]
    return trace, list(dict.fromkeys(files)), notes


# The sequence length of a trace check when none is given: short, as only the control flow matters.
_TRACE_SEQ_LEN = 16
# The micro batch a trace check runs at most: values decide control flow, not memory.
_TRACE_MAX_MICRO_BATCH = 8


def _zero_settings(config_file: Path) -> tuple[int, int]:
    """`stage3_param_persistence_threshold` (DeepSpeed's default when not a number) and the micro batch
    size (1 when not a number) of the config; the static check reports what is wrong with it."""
    from zgen.checker import persistence_threshold
    from zgen.config import load_config_dict
    from zgen.deepspeed_defaults import default

    threshold = persistence_threshold([str(config_file)])
    if threshold is None:
        threshold = int(default("zero_optimization.stage3_param_persistence_threshold"))
    try:
        micro = load_config_dict(str(config_file)).get("train_micro_batch_size_per_gpu")
    except ZgenError:
        micro = None
    if not isinstance(micro, int) or isinstance(micro, bool) or micro < 1:
        micro = 1
    return threshold, min(micro, _TRACE_MAX_MICRO_BATCH)


def add_auto_arguments(p: argparse.ArgumentParser) -> None:
    """`--auto` and what steers it (shared by `plan` and `emit`)."""
    g = p.add_argument_group("the fastest setting that fits (--auto)")
    g.add_argument("--auto", action="store_true", default=None,
                   help="search micro batch, recomputed units, the fused loss and offload for the fastest setting "
                        "whose peak fits --gpu-mem (also `auto = true` in [tool.zgen])")
    g.add_argument("--margin", type=float, metavar="FRACTION",
                   help="share of --gpu-mem left free (default 0.10)")
    g.add_argument("--gemm-tflops", type=float, metavar="R", help="the GPU's matmul rate (default: the H200's, measured)")
    g.add_argument("--attention-tflops", type=float, metavar="R", help="its attention rate, causal half counted")
    g.add_argument("--hbm-gbps", type=float, metavar="R", help="its memory bandwidth in GB/s")


def auto_search(prep: Prepared, args: argparse.Namespace):
    """`zgen plan --auto`'s search over the prepared trace and plan (`zgen.plan.auto`); the device rates from the flags."""
    from dataclasses import replace

    from zgen.plan import auto
    from zgen.plan.planner import unit_numel
    from zgen.steptime import H200

    s = prep.settings
    if s.gpu_mem is None:
        raise ZgenError("--auto needs the memory budget per GPU", help="pass --gpu-mem 80GiB or set `gpu-mem` in [tool.zgen]")
    margin = auto.DEFAULT_MARGIN if getattr(args, "margin", None) is None else args.margin
    if not 0 <= margin < 1:
        raise ZgenError(f"--margin must be at least 0 and below 1, not {margin}")
    rates = H200
    for flag, field, scale in (("gemm_tflops", "gemm_flops", 1e12), ("attention_tflops", "attention_flops", 1e12),
                               ("hbm_gbps", "hbm_bytes", 1e9)):
        value = getattr(args, flag, None)
        if value is not None:
            if value <= 0:
                raise ZgenError(f"--{flag.replace('_', '-')} must be positive, not {value}")
            rates = replace(rates, name="stated", **{field: value * scale})
    trace, plan, r = prep.trace, prep.plan, prep.resolved
    sizes = {p.name: p.numel for p in trace.params}
    return auto.search(
        plan, trace.costs, unit_numel(plan, trace), trace_batch=trace.batch_size, params=trace.total_params,
        persistent=sum(sizes[p] for p in plan.persistent), train_batch_size=r.train_batch_size,
        world_size=prep.world_size, seq_len=prep.seq_len, precision=r.precision,
        adam=r.optimizer.type.lower() in ("adam", "adamw"), budget=s.gpu_mem, margin=margin, rates=rates,
        heads=prep.heads, vocab_hidden=_head_dims(prep.model, trace), clipping=r.gradient_clipping > 0)


def _head_dims(model: nn.Module, trace: ExecutionTrace) -> tuple[int, int] | None:
    """(vocabulary, hidden) of the output projection: the first vocabulary-sized linear layer the forward ran."""
    from torch import nn as tnn

    called = set(trace.forward_calls)
    for name, m in model.named_modules():
        if isinstance(m, tnn.Linear) and name in called and trace.vocab_size and m.out_features == trace.vocab_size:
            return m.out_features, m.in_features
    return None
