"""`zgen emit --out train_gen.py`: write the training script for a checked model and config.

Runs `zgen check --trace` on the model, its config and the inputs file (the
model run as simulated ZeRO-3 ranks, `zgen.trace_check`), traces the model on
the meta device, plans the stage-3 schedule and renders the script,
with the plan next to it as `<script>.plan.json` (what `zgen plan --json`
prints; the script reads it at start). It refuses while errors remain (exit 1; `--force` writes anyway and says so in
the banner). External and tied parameters that the plan attaches to the unit
reading them do not block: the banner lists them.

`--check` writes nothing: exit 1 when the script or its plan file on disk
differs from what would be written (stale or missing), 0 when both are current. A file emitted with
`--force` is checked as if `--force` were given again.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import sys
from pathlib import Path

from zgen.commands.check import add_launch_arguments
from zgen.config.autofill import EMIT_MAX_STEPS, EMIT_WARMUP_STEPS
from zgen.errors import ZgenError
from zgen.pipeline import (OUT_OF_MEMORY, Prepared, add_auto_arguments, add_model_arguments, auto_search, blocking_findings, cli_path,
                           display_path, memory_timeline, prepare, print_findings, request_from_args)
from zgen.settings import format_memory

__all__ = ["add_parser", "run", "FORCED_MARK"]

# The banner line that records `--force`; `--check` looks for it.
FORCED_MARK = "# --force: emitted although"


def add_parser(sub) -> None:
    p = sub.add_parser("emit", help="write the training script for the model and config", description=__doc__)
    add_model_arguments(p)
    add_launch_arguments(p)
    add_auto_arguments(p)
    g = p.add_argument_group("the generated script")
    g.add_argument("--out", metavar="PATH", help="where to write the script (default: [tool.zgen] out)")
    g.add_argument("--data", metavar="PATH:FUNCTION",
                   help="fn(rank, world_size, micro_batch_size, seq_len, seed) yielding this rank's micro batches "
                        "(default: seeded synthetic data)")
    g.add_argument("--init", metavar="PATH:FUNCTION",
                   help="init_fn(module) the runtime applies to each module in model.apply order (default: the "
                        "model's own: reset_parameters() and friends, Hugging Face _init_weights)")
    g.add_argument("--max-steps", type=int, default=EMIT_MAX_STEPS, metavar="N",
                   help="the script's default --steps; also the scheduler's `total_num_steps` where the config says "
                        f"\"auto\" (default {EMIT_MAX_STEPS})")
    g.add_argument("--precision", choices=("bf16", "fp16", "fp32"),
                   help="the compute dtype, over the config's fp16/bf16 sections (needed to fix it when the config "
                        "says \"auto\": the script then takes bf16 on a GPU that supports it, else fp32)")
    g.add_argument("--warmup-steps", type=int, default=None, metavar="N",
                   help="the scheduler's `warmup_num_steps` where the config says \"auto\" "
                        f"(default {EMIT_WARMUP_STEPS}, as HF Trainer's `warmup_steps`)")
    g.add_argument("--force", action="store_true", help="write the script even though `zgen check` reports errors")
    g.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the file on disk is not what emit would write")


def _regenerate_args(args, forced: bool) -> list[str]:
    """The flags of this invocation, canonical, so the banner's command reproduces the file."""
    out = []
    for flag, value in (
        ("--model", args.model), ("--inputs", args.inputs), ("--data", args.data), ("--init", args.init),
        ("--loss", args.loss),
        ("--config", args.config), ("--units", ",".join(args.units) if args.units else None),
        ("--world-size", args.world_size), ("--gpus-per-node", args.gpus_per_node), ("--gpu-mem", format_memory(args.gpu_mem) if args.gpu_mem is not None else None),
        ("--params", args.params), ("--seq-len", args.seq_len), ("--deepspeed-version", args.deepspeed_version),
        ("--settings", args.settings), ("--max-steps", args.max_steps if args.max_steps != EMIT_MAX_STEPS else None),
        ("--warmup-steps", args.warmup_steps), ("--precision", args.precision), ("--margin", args.margin),
        ("--gemm-tflops", args.gemm_tflops), ("--attention-tflops", args.attention_tflops), ("--hbm-gbps", args.hbm_gbps),
    ):
        if value is not None:
            out += [flag, str(value)]
    for r in args.rules or ():
        out += ["--rules", r]
    if args.auto:
        out.append("--auto")
    if args.out:
        out += ["--out", args.out]
    if forced:
        out.append("--force")
    return out


def run(args, settings) -> int:
    from zgen.emit import CodeRef, ScriptInputs, render_plan, render_script, runtime_ds_config
    from zgen.plan.planner import honoured_build_findings, resolved_hazards
    from zgen.plan.target import parse_target
    from zgen.runtime.config import RuntimeConfig

    if args.max_steps < 1:
        raise ZgenError(f"--max-steps must be a positive integer, not {args.max_steps}")
    if args.warmup_steps is not None and args.warmup_steps < 0:
        raise ZgenError(f"--warmup-steps must be 0 or more, not {args.warmup_steps}")
    s = settings.merged(out=args.out)
    if not s.out:
        raise ZgenError("no output file given", help="pass --out train_gen.py or set `out` in [tool.zgen]")
    out_path = cli_path(args, "out", s.out, s)
    existing = _read(out_path) if args.check else None
    forced = args.force or (existing is not None and FORCED_MARK in existing)

    prep = prepare(request_from_args(args, settings), trace_check=True)
    s = prep.settings
    if prep.resolved is None:
        print_findings(blocking_findings(prep), prep)
        print(f"zgen: emit: the config `{prep.config_path}` does not resolve; nothing written", file=sys.stderr)
        return 1
    hazards, resolved_keys = ([], set()) if prep.trace is None else resolved_hazards(
        prep.trace, prep.plan, prep.check.findings, s.root, Path.cwd())
    init_lines, init_keys = honoured_build_findings(prep.check.findings, prep.build_lines, Path.cwd())
    hazards, resolved_keys = hazards + init_lines, resolved_keys | init_keys
    errors = [f for f in prep.check.errors if (f.path, f.line, f.code) not in resolved_keys
              and not (prep.request.auto and f.code == OUT_OF_MEMORY)]  # --auto picks a setting that fits
    if prep.trace_finding is not None:
        errors.append(prep.trace_finding)
    if errors and not forced:
        print_findings(errors, prep)
        print(f"zgen: emit refused: {len(errors)} error(s) remain; fix them, or pass --force to write anyway",
              file=sys.stderr)
        return 1

    out_dir = os.path.dirname(os.path.abspath(out_path))
    def ref(target_text: str | None, option: str) -> tuple[CodeRef | None, str | None]:
        if not target_text:
            return None, None
        t = parse_target(target_text, option)
        f = cli_path(args, option.lstrip("-"), t.path, s) if option.startswith("--") else s.resolve(t.path)
        if not f.is_file():
            raise ZgenError(f"{option} `{target_text}`: file `{t.path}` does not exist")
        return CodeRef(path=os.path.relpath(os.path.abspath(f), out_dir).replace(os.sep, "/"), function=t.function), \
            f"{display_path(f, s.root)}:{t.function}"

    model_ref, _ = ref(s.model, "--model" if args.model else "model")
    inputs_ref, inputs_label = ref(s.inputs, "--inputs" if args.inputs else "inputs")
    data_ref, data_label = ref(s.data, "--data" if args.data else "data")
    init_ref, _ = ref(args.init or getattr(s, "init", None), "--init" if args.init else "init")
    loss_ref, _ = ref(args.loss, "--loss")
    trace = prep.trace
    if trace is None and data_ref is None and inputs_ref is None and _vocab(prep.model) is None:
        raise ZgenError("cannot synthesize data: the model has no `nn.Embedding`", help="pass --inputs or --data")
    regen = ["zgen", "emit", *_regenerate_args(args, bool(errors))]
    check_cmd = ["zgen", "emit", "--check", *_regenerate_args(args, False)]
    # The runtime's own reading of the config: what it refuses (offload, stage 2) stops here, not at launch.
    raw = dict(prep.config or {})
    resolved = _run_length(prep.resolved, raw, args)
    plan, found = prep.plan, None
    if prep.request.auto and plan is not None:
        from zgen.plan import auto

        found = auto_search(prep, args)
        plan = auto.apply(plan, found)
        resolved, raw = _auto_config(resolved, raw, found.best.candidate)
    resolved, raw, precision_note, at_launch = _precision(resolved, raw, args.precision)
    ds_config = runtime_ds_config(resolved, raw)
    _no_auto_left(ds_config, prep.config_path)
    runtime = RuntimeConfig.load(ds_config, prep.world_size)
    # The script runs at any world size that divides the global batch, so its plan names none.
    plan = None if plan is None else dataclasses.replace(plan, world_size=None)
    plan_path = None if plan is None else out_path.with_name(out_path.stem + ".plan.json")
    text = render_script(ScriptInputs(
        script=display_path(out_path, s.root),
        model_target=str(prep.model_target),
        model=model_ref,
        inputs=inputs_ref,
        inputs_target=inputs_label,
        data=data_ref,
        data_target=data_label,
        init=init_ref,
        loss=loss_ref,
        config_label=prep.config_path,
        resolved=resolved,
        runtime=runtime,
        plan=plan,
        plan_file=None if plan_path is None else plan_path.name,
        plan_failure=None if trace is not None else _trace_failure(prep.trace_finding),
        n_params=trace.total_params if trace is not None else sum(p.numel() for p in prep.model.parameters()),
        vocab_size=trace.vocab_size if trace is not None else _vocab(prep.model),
        world_size=prep.world_size,
        gpus_per_node=s.gpus_per_node,
        seq_len=prep.seq_len,
        seq_len_origin=prep.seq_len_origin,
        units_label=", ".join(s.units) if s.units else "default (the repeated blocks of the model's stacks, plus the root)",
        regenerate=shlex.join(regen),
        check_command=shlex.join(check_cmd),
        forced=tuple(_finding_line(f) for f in errors) if errors else (),
        hazards=tuple(hazards),
        planned_peak=_planned_peak(prep) if found is None else found.best.peak.total,
        auto=None if found is None else plan.setting,
        max_steps=args.max_steps,
        precision_note=precision_note,
        precision_at_launch=at_launch,
        smoke=_smoke_test(args, s, prep),
    ))
    files = [(out_path, text)] + ([] if plan is None else [(plan_path, render_plan(plan))])
    if args.check:
        return _check(files, s.root, shlex.join(regen))
    for path, content in files:
        _write(path, content, s.root)
    if precision_note:
        print(f"precision: {precision_note}")
    if found is not None:
        print(f"auto: {plan.setting}")
    units = len(plan.units) if plan is not None else 0
    print(f"wrote {display_path(out_path, s.root)}"
          + (f" and {display_path(plan_path, s.root)}" if plan is not None else "")
          + f": {units} units, world size {prep.world_size}"
          + (f", {len(hazards)} hazard(s) resolved by the plan" if hazards else "")
          + (f"; FORCED past {len(errors)} error(s)" if errors else ""))
    for note in plan.notes if plan is not None else ():
        if note.startswith("0 units:"):
            print(note)
    return 0


def _run_length(resolved, raw: dict, args):
    """The resolved config with the scheduler's "auto" step counts taken from --max-steps / --warmup-steps."""
    from zgen.config.resolved import Origin

    sched = raw.get("scheduler")
    params = sched.get("params") if isinstance(sched, dict) else None
    if resolved.scheduler is None or not isinstance(params, dict):
        return resolved
    warmup = EMIT_WARMUP_STEPS if args.warmup_steps is None else args.warmup_steps
    given = {"total_num_steps": (args.max_steps, f"--max-steps {args.max_steps}"),
             "warmup_num_steps": (warmup, f"--warmup-steps {warmup}" if args.warmup_steps is not None
                                  else f"--warmup-steps not given: {warmup}, as HF Trainer's `warmup_steps`")}
    filled = dict(resolved.scheduler.params)
    origins = dict(resolved.origins)
    for name, (value, how) in given.items():
        if params.get(name) == "auto":
            filled[name] = float(value)
            old = origins.get(f"scheduler.params.{name}")
            origins[f"scheduler.params.{name}"] = Origin(kind="auto", detail=f"\"auto\" -> {value}: from {how}",
                                                         line=old.line if old else None,
                                                         column=old.column if old else None)
    scheduler = dataclasses.replace(resolved.scheduler, params=tuple(sorted(filled.items())))
    return dataclasses.replace(resolved, scheduler=scheduler, origins=tuple(sorted(origins.items())))


def _auto_config(resolved, raw: dict, c):
    """The resolved config and the raw one with `--auto`'s micro batch, accumulation and offload written in."""
    from zgen.config.resolved import Origin

    z = resolved.zero
    why = Origin(kind="derived", detail="zgen plan --auto")

    def device(spec, on: bool):
        return dataclasses.replace(spec, device="cpu" if on else "none", pin_memory=on or spec.pin_memory)

    optimizer = dataclasses.replace(device(z.offload_optimizer, c.offload_optimizer), ratio=c.offload_ratio)
    zero = dataclasses.replace(z, offload_optimizer=optimizer, offload_param=device(z.offload_param, c.offload_param))
    origins = dict(resolved.origins)
    for key in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                "zero_optimization.offload_optimizer.device", "zero_optimization.offload_optimizer.ratio",
                "zero_optimization.offload_param.device"):
        origins[key] = why
    resolved = dataclasses.replace(resolved, train_micro_batch_size_per_gpu=c.micro_batch,
                                   gradient_accumulation_steps=c.accumulation, zero=zero,
                                   origins=tuple(sorted(origins.items())))
    zero_raw = dict(raw.get("zero_optimization") or {})
    for key, on in (("offload_optimizer", c.offload_optimizer), ("offload_param", c.offload_param)):
        if not on:
            zero_raw.pop(key, None)
    return resolved, {**raw, "zero_optimization": zero_raw}


def _precision(resolved, raw: dict, flag: str | None):
    """(resolved, raw, note, decided at launch): the compute dtype under --precision, or an "auto" one.

    HF Trainer fills `bf16.enabled: "auto"` from its own `--bf16`; zgen has no such flag to read, so
    unless --precision says, the script takes bf16 on a GPU that supports it and fp32 elsewhere, and
    says so in its banner and on the command line.
    """
    def enabled(section: str):
        block = raw.get(section)
        return block.get("enabled") if isinstance(block, dict) else None

    if flag is not None:
        raw = {**raw, "fp16": {**(raw.get("fp16") or {}), "enabled": flag == "fp16"},
               "bf16": {**(raw.get("bf16") or {}), "enabled": flag == "bf16"}}
        return dataclasses.replace(resolved, precision=flag), raw, f"{flag} (--precision)", False
    written = {enabled("fp16"), enabled("bf16")}
    if "auto" in written and True not in written:
        raw = {**raw, "fp16": {**(raw.get("fp16") or {}), "enabled": False},
               "bf16": {**(raw.get("bf16") or {}), "enabled": False}}
        note = ("\"auto\" in the config -> bf16 on a GPU that supports it, else fp32, decided when the script "
                "starts; pass --precision to fix it")
        return dataclasses.replace(resolved, precision="fp32"), raw, note, True
    return resolved, raw, None, False


def _no_auto_left(ds_config: dict, config_path: str) -> None:
    """Every "auto" the runtime would read and nothing filled, named in one message."""
    left: list[str] = []

    def walk(node, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{prefix}{k}.")
        elif node == "auto":
            left.append(prefix.rstrip("."))

    walk(ds_config, "")
    if left:
        keys = ", ".join(f"`{k}`" for k in left)
        raise ZgenError(f"{config_path}: {len(left)} value(s) are \"auto\" and nothing zgen knows fills them: {keys}",
                        help="write the numbers in the config; `zgen check --consumer zgen --show-resolved` lists how "
                             "zgen fills every other \"auto\"")


def _check(files: list[tuple[Path, str]], root: Path, regenerate: str) -> int:
    """`--check`: 0 when every file on disk is what emit would write, else 1 naming the first that is not."""
    for path, content in files:
        existing = _read(path)
        if existing != content:
            why = "does not exist" if existing is None else "is stale"
            print(f"{display_path(path, root)}: {why}; regenerate with: {regenerate}")
            return 1
    return 0


def _write(path: Path, content: str, root: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    except OSError as e:
        raise ZgenError(f"{display_path(path, root)}: cannot write: {e.strerror or e}") from None


# A CPU smoke test of 5 steps stays within about a minute below this many FLOPs (6 x parameters x tokens each).
_CPU_SMOKE_FLOP = 1e12
# Names of factories that build a model small: `build_tiny_model`, `small_config`, `make_debug_model`...
_SMALL = re.compile(r"tiny|small|mini|toy|debug", re.IGNORECASE)


def _smoke_test(args, s, prep) -> str | None:
    """The docstring's CPU smoke test when the model itself is too big for one (None: run the script itself)."""
    n = prep.trace.total_params if prep.trace is not None else sum(p.numel() for p in prep.model.parameters())
    if 5 * 6 * n * prep.resolved.train_batch_size * prep.seq_len <= _CPU_SMOKE_FLOP:
        return None
    from zgen.plan.target import parse_target

    target = parse_target(s.model, "--model")
    small = _small_factories(cli_path(args, "model", target.path, s), target.function)
    head = (f"A CPU smoke test: this model ({n:,} parameters) is too big for a quick run on a CPU; try the\n"
            "pipeline on a small build of it")
    if not small:
        return (head + ": add a factory to the model's file that builds it with few, narrow layers and emit\n"
                f"a script for it (--model {target.path}:your_factory --out train_smoke.py), then run that with\n"
                "`torchrun --standalone --nproc_per_node 2 train_smoke.py --device cpu --steps 5`.")
    flags = ["--model", f"{target.path}:{small[0]}", "--config", s.config]
    for flag, value in (("--init", args.init or getattr(s, "init", None)), ("--inputs", s.inputs), ("--data", s.data)):
        if value:
            flags += [flag, value]
    flags += ["--world-size", "2", "--seq-len", str(min(prep.seq_len, 128)), "--out", "train_smoke.py"]
    return (head + f", `{small[0]}` from the same file:\n\n"
            f"    {shlex.join(['zgen', 'emit', *flags])}\n"
            "    torchrun --standalone --nproc_per_node 2 train_smoke.py --device cpu --steps 5")


def _small_factories(model_file: Path, factory: str) -> list[str]:
    """Functions of the model's file that look like small builds of it and take no arguments (read, not run)."""
    import ast

    try:
        tree = ast.parse(model_file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name != factory and _SMALL.search(node.name):
            a = node.args
            if len(a.args) - len(a.defaults) <= 0 and not a.posonlyargs and all(
                    d is not None for d in a.kw_defaults):
                out.append(node.name)
    return sorted(out)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise ZgenError(f"{path}: cannot read: {e}") from None


def _finding_line(f) -> str:
    return f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}"


def _trace_failure(finding) -> str:
    return f"tracing stopped at {finding.path}:{finding.line} ({finding.code}: data-dependent control flow)"


def _vocab(model) -> int | None:
    from zgen.plan.trace import vocab_size

    return vocab_size(model)


def _planned_peak(prep: Prepared) -> int | None:
    """The plan's per-GPU peak over one step (the figure `zgen plan` prints), or None without a plan."""
    return max((p.total for p in memory_timeline(prep)), default=None)
