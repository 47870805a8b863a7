"""How `zgen plan` shows a plan: the unit table, the memory timeline as text, SVG or PNG.

The SVG is written by hand (no dependency): one stacked bar per position of
the step, forward then backward, with a line at the GPU's memory when it is
known. PNG goes through matplotlib when it is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from zgen.errors import ZgenError
from zgen.memory import MemoryPoint
from zgen.plan.planner import unit_numel
from zgen.schedule.replay import simulate
from zgen.schedule.plan import Plan

__all__ = ["human_bytes", "render_unit_table", "render_timeline", "svg_timeline", "check_plot_path", "write_plot"]

# (attribute, legend, colour) from the bottom of a bar to the top.
LAYERS = (
    ("states", "model states (shards)", "#4c72b0"),
    ("persistent", "persistent parameters", "#8172b2"),
    ("gathered", "gathered units", "#55a868"),
    ("inflight", "prefetch in flight", "#a6d96a"),
    ("activations", "activations", "#dd8452"),
    ("gradients", "unit gradient (before reduce-scatter)", "#c44e52"),
    ("buckets", "reduce buckets", "#937860"),
)


def human_bytes(n: float) -> str:
    """`1.50 GiB`, `12.0 MiB`, `512 B`."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}" if unit == "GiB" else f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    def line(r):
        return "  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [line(header), *(line(r) for r in rows)]


def render_unit_table(plan: Plan, trace, resolved) -> str:
    """One row per unit: size, and when it is gathered and freed in forward and backward."""
    per = {"bf16": 2, "fp16": 2, "fp32": 4}[resolved.precision]
    numel = unit_numel(plan, trace)
    steps = simulate(plan)
    fwd_len = len(plan.forward_order)
    labels = {"forward": "fwd", "backward": "bwd"}

    def events(unit: str, phase: str) -> tuple[str, str]:
        got, freed = [], []
        for s in steps:
            if s.phase != phase:
                continue
            if unit in s.issued:
                got.append(f"prefetch @{labels[phase]} {s.index}")
            elif unit in s.on_demand:
                got.append(f"on demand @{labels[phase]} {s.index}")
            if unit in s.freed:
                freed.append(f"after {labels[phase]} {s.index}")
        if phase == "backward" and not got and any(unit in s.gathered for s in steps[fwd_len:]):
            got.append("kept from forward")
        if phase == "forward" and not freed and any(unit in s.gathered for s in steps[:fwd_len]):
            freed.append("kept for backward")
        return ", ".join(got) or "-", ", ".join(freed) or "-"

    rows = []
    for i, u in enumerate(sorted(plan.units, key=lambda u: _first(plan, u.module))):
        fg, ff = events(u.module, "forward")
        bg, bf = events(u.module, "backward")
        rows.append((str(i), u.label, str(len(u.params)), f"{numel[u.module]:,}", human_bytes(numel[u.module] * per),
                     fg, ff, bg, bf, ", ".join(u.external) or "-"))
    header = ("#", "unit", "params", "elements", "gathered", "fwd: gathered", "fwd: freed", "bwd: gathered",
              "bwd: freed", "external")
    sizes = {p.name: p.numel for p in trace.params}
    pers = sum(sizes[p] for p in plan.persistent)
    lines = [f"units ({len(plan.units)}; bytes at {resolved.precision}; @fwd i / @bwd i = position in the order)",
             *_table(header, rows, {0, 2, 3, 4}),
             f"  persistent: {len(plan.persistent)} parameters, {pers:,} elements, {human_bytes(pers * per)} "
             "(gathered for the whole step)"]
    return "\n".join(lines) + "\n"


def _first(plan: Plan, module: str) -> int:
    try:
        return plan.forward_order.index(module)
    except ValueError:
        return len(plan.forward_order)


def render_timeline(points: Sequence[MemoryPoint]) -> str:
    """The per-GPU memory at each position as a table, with the peak marked."""
    if not points:
        return "memory per GPU: no positions\n"
    peak = max(points, key=lambda p: p.total)
    rows = [(p.label, p.unit or "<root>", human_bytes(p.states), human_bytes(p.persistent), human_bytes(p.gathered),
             human_bytes(p.inflight), human_bytes(p.activations), human_bytes(p.gradients), human_bytes(p.buckets),
             human_bytes(p.total), "<- peak" if p is peak else "") for p in points]
    header = ("position", "unit", "states", "persistent", "gathered", "in flight", "activations", "gradient",
              "buckets", "total", "")
    return "\n".join([
        "memory per GPU over one step (zgen.memory's model, the one `zgen check --show-memory` uses)",
        *_table(header, rows, {2, 3, 4, 5, 6, 7, 8, 9}),
        f"  peak {human_bytes(peak.total)} at {peak.label} ({peak.unit or '<root>'})",
    ]) + "\n"


def svg_timeline(points: Sequence[MemoryPoint], *, title: str, gpu_mem: int | None = None) -> str:
    """A stacked-bar SVG of the timeline (deterministic text, no dependency)."""
    if not points:
        raise ZgenError("there is no memory timeline to draw")
    width, height = 960, 420
    left, right, top, bottom = 70, 240, 40, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    ymax = max([p.total for p in points] + [gpu_mem or 0, 1]) * 1.05
    bar = plot_w / max(1, len(points))
    y = lambda v: top + plot_h - plot_h * v / ymax  # noqa: E731
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14">{_esc(title)}: memory per GPU over one step</text>',
    ]
    for i in range(6):  # grid and y labels
        v = ymax * i / 5
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v / 2**30:.1f} GiB</text>')
    for i, p in enumerate(points):
        base = 0
        x = left + i * bar
        for attr, legend, colour in LAYERS:
            v = getattr(p, attr)
            if v > 0:
                out.append(f'<rect x="{x + 0.5:.1f}" y="{y(base + v):.1f}" width="{max(bar - 1, 0.5):.1f}" '
                           f'height="{y(base) - y(base + v):.1f}" fill="{colour}">'
                           f'<title>{_esc(p.label)} {_esc(p.unit or "<root>")}: {legend} {human_bytes(v)}</title></rect>')
            base += v
    n_fwd = sum(1 for p in points if p.label.startswith("fwd"))
    xb = left + n_fwd * bar
    out.append(f'<line x1="{xb:.1f}" x2="{xb:.1f}" y1="{top}" y2="{top + plot_h}" stroke="#333" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{left + n_fwd * bar / 2:.1f}" y="{top + plot_h + 18}" text-anchor="middle">forward</text>')
    out.append(f'<text x="{xb + (len(points) - n_fwd) * bar / 2:.1f}" y="{top + plot_h + 18}" '
               'text-anchor="middle">backward</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 12}" text-anchor="middle">'
               'position in the step (one bar per unit call)</text>')
    if gpu_mem:
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(gpu_mem):.1f}" y2="{y(gpu_mem):.1f}" '
                   'stroke="#c00" stroke-width="1.5"/>')
        out.append(f'<text x="{left + plot_w - 4}" y="{y(gpu_mem) - 4:.1f}" text-anchor="end" fill="#c00">'
                   f'GPU memory {human_bytes(gpu_mem)}</text>')
    for i, (_attr, legend, colour) in enumerate(reversed(LAYERS)):
        ly = top + 10 + i * 20
        out.append(f'<rect x="{left + plot_w + 16}" y="{ly}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{left + plot_w + 34}" y="{ly + 10}">{_esc(legend)}</text>')
    peak = max(points, key=lambda p: p.total)
    out.append(f'<text x="{left + plot_w + 16}" y="{top + 10 + len(LAYERS) * 20 + 16}">'
               f'peak {human_bytes(peak.total)} at {_esc(peak.label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def check_plot_path(path: str) -> None:
    """Fail early (before any tracing) on a picture type zgen cannot write here."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ZgenError(f"--plot `{path}`: unknown picture type `{suffix or '(none)'}`", help="end the name in .svg or .png")
    if suffix == ".png":
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise ZgenError(f"--plot `{path}`: writing PNG needs matplotlib, which is not installed",
                            help="`pip install matplotlib`, or write an SVG: --plot memory.svg")


def write_plot(points: Sequence[MemoryPoint], path: str, *, title: str, gpu_mem: int | None = None) -> None:
    """Write the timeline to `path`: `.svg` by hand, `.png` with matplotlib (ZgenError if it is missing)."""
    check_plot_path(path)
    if Path(path).suffix.lower() == ".svg":
        _write(path, svg_timeline(points, title=title, gpu_mem=gpu_mem))
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 5))
    xs = range(len(points))
    base = [0.0] * len(points)
    for attr, legend, colour in LAYERS:
        vals = [getattr(p, attr) / 2**30 for p in points]
        ax.bar(xs, vals, bottom=base, color=colour, label=legend, width=0.9)
        base = [b + v for b, v in zip(base, vals)]
    if gpu_mem:
        ax.axhline(gpu_mem / 2**30, color="#c00", label="GPU memory")
    ax.set_xticks(list(xs), [p.label for p in points], rotation=90, fontsize=7)
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"{title}: memory per GPU over one step")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise ZgenError(f"--plot `{path}`: cannot write: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise ZgenError(f"--plot `{path}`: cannot write: {e.strerror or e}") from None
