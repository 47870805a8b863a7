"""`zgen plan`: trace the model on the meta device and show its stage-3 schedule and memory.

Prints the unit table (what each unit holds, when it is gathered and freed)
and the per-GPU memory timeline over one step, then where the trace and the
static check disagree. `--json` prints the `Plan` the runtime consumes,
`--plot memory.svg` (or `.png`, with matplotlib) draws the timeline.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zgen.commands.check import add_launch_arguments
from zgen.commcost import summary_lines
from zgen.pipeline import (Prepared, add_model_arguments, blocking_findings, memory_findings, memory_timeline,
                           prepare, print_findings, request_from_args)

if TYPE_CHECKING:
    from zgen.memory import MemoryPoint

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="show the stage-3 schedule and per-GPU memory of a model", description=__doc__)
    add_model_arguments(p)
    add_launch_arguments(p)
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the plan as JSON (what zgen.runtime consumes)")
    out.add_argument("--plot", metavar="FILE", help="draw the memory timeline to FILE (.svg, or .png with matplotlib)")


def run(args, settings) -> int:
    from zgen.plan.planner import crosscheck_notes
    from zgen.plan.plot import render_timeline, render_unit_table

    if args.plot:
        from zgen.plan.plot import check_plot_path

        check_plot_path(args.plot)
    prep = prepare(request_from_args(args, settings))
    problems = blocking_findings(prep)
    if problems:
        print_findings(problems, prep)
        if prep.trace_finding is not None:
            from zgen.plan.planner import trace_failure_note

            print("trace vs static check:\n  " + trace_failure_note(prep.trace_finding, prep.check.findings,
                                                                    prep.settings.root, Path.cwd()))
        return 1
    plan = prep.plan
    if args.json:
        sys.stdout.write(plan.to_json() + "\n")
        return 0
    points = memory_timeline(prep)
    out = [_header(prep), render_unit_table(plan, prep.trace, prep.report.resolved), render_timeline(points),
           _communication(prep)]
    notes = list(prep.notes) + list(plan.notes)
    if notes:
        out.append("notes:\n" + "".join(f"  {n}\n" for n in notes))
    cross = crosscheck_notes(prep.trace, plan, prep.check.findings, prep.settings.root, Path.cwd())
    out.append("trace vs static check:\n" + ("".join(f"  {n}\n" for n in cross) if cross else "  no disagreement\n"))
    sys.stdout.write("\n".join(out))
    if args.plot:
        from zgen.plan.plot import write_plot

        write_plot(points, args.plot, title=f"{prep.model_target} at world size {prep.world_size}",
                   gpu_mem=prep.settings.gpu_mem)
        print(f"wrote {args.plot}")
    return _fits(prep, points)


def _fits(prep: Prepared, points: list[MemoryPoint]) -> int:
    """Exit 1, saying so, when the peak is more than --gpu-mem (the figure `zgen check` also reports)."""
    from zgen.plan.plot import human_bytes

    gpu_mem = prep.settings.gpu_mem
    if gpu_mem is None:
        return 0
    peak = max(points, key=lambda p: p.total)
    if peak.total <= gpu_mem:
        print(f"fits: the peak of {human_bytes(peak.total)} per GPU is within {human_bytes(gpu_mem)}")
        return 0
    print(f"does not fit: the peak of {human_bytes(peak.total)} per GPU (at {peak.label}) is more than the "
          f"{human_bytes(gpu_mem)} given by --gpu-mem")
    print_findings(memory_findings(prep), prep)
    return 1


def _communication(prep: Prepared) -> str:
    """The step's communication at 8-1024 GPUs, flat against hierarchical sharding (zgen.commcost's model)."""
    r = prep.resolved
    lines = summary_lines(
        prep.trace.total_params,
        units=max(1, len(prep.plan.units)),
        micro_steps=r.gradient_accumulation_steps,
        param_bytes=4 if r.precision == "fp32" else 2,
        grad_bytes={"fp32": 4, "bf16": 2, "fp16": 2}[r.zero.reduce_dtype],
    )
    hpz = _hpz_partition_size(prep.config or {})
    lines.append(f"  this config: hpZ over {hpz} GPUs (`zero_optimization.zero_hpz_partition_size`)" if hpz > 1 else
                 "  this config: flat; set `zero_optimization.zero_hpz_partition_size` to the GPUs per node for hpZ, "
                 "which pays once the world spans nodes")
    return "\n".join(lines) + "\n"


def _hpz_partition_size(config: Mapping[str, Any]) -> int:
    """`zero_optimization.zero_hpz_partition_size` as written (1 when absent: DeepSpeed's default)."""
    value = (config.get("zero_optimization") or {}).get("zero_hpz_partition_size", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _header(prep: Prepared) -> str:
    r = prep.report.resolved
    t = prep.trace
    return (f"plan for {prep.model_target} ({t.total_params:,} parameters) with {prep.config_path}\n"
            f"world size {prep.world_size}, {r.precision}, micro batch {r.train_micro_batch_size_per_gpu}, "
            f"sequence length {prep.seq_len}, ZeRO stage {r.zero.stage}\n")

