"""`zgen check PATH...`: model sources and DeepSpeed configs, findings in the chosen format.

With no paths, checks `[tool.zgen] src` (default `.`) plus the configured
`model` and `config`. A model file and its configured config are always
checked together, which is what the pre-commit hook relies on.

`--trace` also runs the model (`--model`, `--inputs`, `--loss`, `--config`,
`--entry`, as for `zgen plan`) as simulated ZeRO-3 ranks on the CPU
(`zgen.trace_check`) and reports what it saw in the same report; the static
check then reads the model, config, inputs and entry files. Without
`--trace`, `zgen check` never imports torch or the user's code.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import Counter
from pathlib import Path

from zgen import __version__
from zgen.errors import ZgenError
from zgen.findings import UNREADABLE, Severity
from zgen.launch import LaunchFacts, ModelShape
from zgen.config.autofill import CONSUMERS
from zgen.settings import OUTPUT_FORMATS, parse_memory, parse_size

__all__ = ["add_parser", "run", "facts_from"]


def _codes(text: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


# Flag converters raise ArgumentTypeError, so the error names the flag: `argument --world-size: ...`.
def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ZgenError as e:
        raise argparse.ArgumentTypeError(f"{e.message} ({e.help})" if e.help else e.message) from None


def _memory(text: str) -> int:
    try:
        return parse_memory(text)
    except ZgenError as e:
        raise argparse.ArgumentTypeError(f"{e.message} ({e.help})" if e.help else e.message) from None


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not an integer") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"`{text}` must be a positive integer")
    return v


def add_launch_arguments(p) -> None:
    """Launch facts shared by `check`, `plan` and `emit`."""
    g = p.add_argument_group("launch facts (override [tool.zgen])")
    g.add_argument("--world-size", type=_positive, metavar="N", help="number of ranks (GPUs) the job runs on")
    g.add_argument("--gpus-per-node", type=_positive, metavar="N")
    g.add_argument("--gpu-mem", type=_memory, metavar="SIZE", help="memory per GPU with its unit, e.g. 80GiB")
    g.add_argument("--params", type=_size, metavar="COUNT", help="model parameter count, e.g. 1.2B")
    g.add_argument("--seq-len", type=_positive, metavar="N", help="sequence length for the activation estimate")
    g.add_argument("--deepspeed-version", metavar="X.Y.Z", help="DeepSpeed release whose schema applies")
    g.add_argument("--rules", action="append", metavar="FILE", help="extra constraint rule file (repeatable)")
    g.add_argument("--settings", metavar="PYPROJECT", help="read [tool.zgen] from this pyproject.toml")


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="check model sources and DeepSpeed configs", description=__doc__)
    p.add_argument("paths", nargs="*", metavar="PATH", help=".py files, .json/.hjson configs, or directories")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, help="default: full")
    p.add_argument("-o", "--output-file", metavar="FILE", help="write the report here instead of stdout")
    p.add_argument("--select", type=_codes, metavar="CODES", help="only these codes or prefixes (comma-separated)")
    p.add_argument("--extend-select", type=_codes, metavar="CODES", help="add codes or prefixes to the selection")
    p.add_argument("--ignore", type=_codes, metavar="CODES", help="skip these codes or prefixes")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--statistics", action="store_true", help="print a count per code instead of each finding")
    p.add_argument("--show-resolved", action="store_true", help="print each config with every value resolved")
    p.add_argument("--show-memory", action="store_true", help="print the per-GPU memory breakdown of each config")
    p.add_argument("--force-exclude", action="store_true", help="apply excludes to files named on the command line")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the findings cache")
    p.add_argument("--jobs", type=_positive, metavar="N", help="worker processes (default: CPU count)")
    p.add_argument("--fix", action="store_true", help="apply the fixes zgen is sure of (unique smallest fixes), "
                   "keeping the file's formatting and comments")
    p.add_argument("--diff", action="store_true", help="print the fixes --fix would apply as a diff; change nothing")
    p.add_argument("--consumer", choices=CONSUMERS,
                   help="who reads the configs, which decides what \"auto\" means (default: inferred from the "
                   "training scripts checked, else hf)")
    add_launch_arguments(p)
    from zgen.pipeline import add_model_arguments

    g = p.add_argument_group("trace (zgen check --trace; needs torch)")
    g.add_argument("--trace", action="store_true",
                   help="also run the model as simulated ZeRO-3 ranks on the CPU and report what it does")
    g.add_argument("--entry", action="append", metavar="PATH:FUNCTION",
                   help="fn(model, batch) run after the training step, e.g. generation or an EMA update "
                        "(repeatable; with --trace)")
    add_model_arguments(p, units=False)


def facts_from(args, settings) -> LaunchFacts:
    """LaunchFacts from flags over `[tool.zgen]`."""
    params = getattr(args, "params", None) or settings.params
    seq_len = getattr(args, "seq_len", None) or settings.seq_len
    return LaunchFacts(
        world_size=getattr(args, "world_size", None) or settings.world_size,
        gpus_per_node=getattr(args, "gpus_per_node", None) or settings.gpus_per_node,
        gpu_mem_bytes=getattr(args, "gpu_mem", None) or settings.gpu_mem,
        model=ModelShape(params=params, seq_len=seq_len, source="--params") if params else None,
        deepspeed_version=getattr(args, "deepspeed_version", None) or settings.deepspeed_version,
        consumer=getattr(args, "consumer", None) or settings.consumer,
        consumer_reason=_consumer_reason(args, settings),
    )


def _consumer_reason(args, settings) -> str:
    if getattr(args, "consumer", None):
        return "--consumer"
    if settings.consumer:
        return f"`consumer` in [tool.zgen] ({settings.pyproject})"
    return ""


def run(args, settings) -> int:
    from zgen.kept_code import kept_dataclass_code, kept_patterns

    with kept_dataclass_code("zgen"):  # (as `cli.main` imports the command: the checker's modules)
        from zgen.checker import check_paths
        from zgen.report import ReportContext, render
        from zgen.report.text import summary_line

    settings = settings.merged(
        select=args.select,
        ignore=(settings.ignore + args.ignore) if args.ignore else None,
        extend_select=(settings.extend_select + args.extend_select) if args.extend_select else None,
        rules=(settings.rules + tuple(args.rules)) if args.rules else None,
        seq_len=args.seq_len,
        params=args.params,
    )
    fmt = args.output_format or settings.output_format
    paths, trace_findings, trace_notes = list(args.paths), (), []
    if args.trace:
        paths, trace_findings, trace_notes = _trace(args, settings, paths)
    elif args.entry or args.model or args.inputs or args.loss:
        raise ZgenError("--model, --inputs, --loss and --entry run the model: they need --trace",
                        help="add --trace, or check the files themselves: zgen check path/to/model.py")

    def check():
        # The rules' regular expressions are compiled from programs kept by an earlier run (`zgen.kept_code`).
        with kept_patterns("zgen.check"):
            return check_paths(paths, settings, facts_from(args, settings), force_exclude=args.force_exclude,
                               jobs=args.jobs, use_cache=not args.no_cache, trace_findings=trace_findings)

    result = check()
    for note in (*trace_notes, *result.notes):
        sys.stderr.write(f"warning: {note}\n")
    if args.diff:
        diff = "".join(_diff(path, old, new) for path, (old, new, _) in sorted(_fixed_texts(result.findings).items()))
        sys.stdout.write(diff)
        return 1 if diff and not args.exit_zero else 0
    if args.fix:
        fixed = 0
        # A fix can uncover or settle others (ruff iterates the same way); a few passes reach a fixed point.
        for _ in range(_FIX_PASSES):
            changed = _fixed_texts(result.findings)
            if not changed:
                break
            for path, (_old, new, applied) in changed.items():
                _write_back(path, new)
                fixed += applied
            result = check()
        sys.stderr.write(f"Fixed {fixed} finding{'s' if fixed != 1 else ''}.\n" if fixed else "")
    ctx = ReportContext(rules=result.rules, version=__version__, root=Path.cwd())
    if args.statistics and fmt in ("full", "concise"):
        text = _statistics(result.findings, result.rules) + summary_line(result.findings) + "\n"
    else:
        text = render(fmt, result.findings, ctx)
    extra = _config_sections(result, args)
    _write(text, args.output_file)
    if extra:
        # Machine-readable formats keep stdout parseable; the tables go to stderr there.
        stream = sys.stdout if fmt in ("full", "concise") and not args.output_file else sys.stderr
        stream.write(extra)
    # A file zgen could not read as source or config: reported above, and the run could not do its job.
    if any(f.code in UNREADABLE for f in result.findings):
        return 2
    # An info finding is a note (SARIF "note", a GitHub "notice"): shown, never failing a commit.
    failing = [f for f in result.findings if f.severity is not Severity.INFO]
    return 0 if args.exit_zero or not failing else 1


_FIX_PASSES = 3


def _trace(args, settings, paths: list[str]) -> tuple[list[str], tuple, list[str]]:
    """Run the trace check; returns the paths the static check reads with it, the findings and notes."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise ZgenError("`zgen check --trace` needs torch, which is not installed",
                        help="install the training extra: pip install 'zgen[train]' (or the torch build you train "
                             "with), or run `zgen check` without --trace")
    from zgen.pipeline import cwd_paths, request_from_args, trace_request
    from zgen.trace_check import trace_check

    request, files, notes = trace_request(request_from_args(args, settings))
    # The user's prints go to stderr: stdout carries the report (JSON, SARIF) and must stay parseable.
    with contextlib.redirect_stdout(sys.stderr):
        result = trace_check(request)
    notes = notes + list(result.notes)
    given = {str(Path(p).resolve()) for p in paths}
    extra = [p for p in cwd_paths(files) if str(Path(p).resolve()) not in given]
    return paths + extra, result.findings, notes


def _fixed_texts(findings) -> dict[str, tuple[str, str, int]]:
    """path -> (text now, text with the safe fixes applied, fixes applied), for files that change."""
    from zgen.config.edit import apply_edits

    by_path: dict[str, list] = {}
    for f in findings:
        if f.fix is not None and f.fix.applicability == "safe":
            by_path.setdefault(f.path, []).append(f.fix)
    out = {}
    for path, fixes in by_path.items():
        try:
            old = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ZgenError(f"{path}: cannot read the file to fix it: {e}") from None
        new, applied = apply_edits(old, [fix.edits for fix in fixes])
        if new != old:
            out[path] = (old, new, applied)
    return out


def _write_back(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise ZgenError(f"{path}: cannot write the fixed file: {e.strerror or e}") from None


def _diff(path: str, old: str, new: str) -> str:
    import difflib

    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


def _statistics(findings, rules) -> str:
    counts = Counter(f.code for f in findings)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        info = rules.get(code)
        lines.append(f"{n:>5}  {code}  {info.name if info else ''}")
    return "\n".join(lines) + ("\n" if lines else "")


def _config_sections(result, args) -> str:
    from zgen.config import format_world_sizes, render_memory, render_resolved

    out = []
    failing = {f.path for f in result.findings if f.severity == Severity.ERROR}
    for path, report in sorted(result.configs.items()):
        sizes = getattr(report, "valid_world_sizes", None)
        # The list is the world sizes the batch rules allow; a config with errors is valid for none.
        if sizes is not None and not args.world_size and path not in failing:
            out.append(f"{path}: valid for world sizes: {format_world_sizes(sizes)}\n")
        if args.show_resolved:
            if report.resolved is None:
                out.append(f"{path}: not resolved (fix the errors above first)\n")
            else:
                out.append(f"\n{path}: resolved\n{render_resolved(report.resolved)}")
        if args.show_memory:
            if report.memory is None:
                out.append(f"{path}: no memory estimate: the static check could not size the model (give --params, "
                           "e.g. --params 1.2B; it sizes a module class whose layer sizes are literals or come from "
                           "a config class in the same file)\n")
            else:
                out.append(f"\n{path}: memory per GPU\n{render_memory(report.memory)}")
    return "".join(s if s.endswith("\n") else s + "\n" for s in out)


def _write(text: str, output_file: str | None) -> None:
    if output_file is None:
        sys.stdout.write(text)
        return
    try:
        Path(output_file).write_text(text, encoding="utf-8")
    except OSError as e:
        raise ZgenError(f"{output_file}: cannot write report: {e.strerror or e}") from None
