"""A training script reading the engine's parameters after `deepspeed.initialize` reads placeholders (ZG109): an
EMA folding in `p.data`, a log of `p.data.norm()`, a gradient norm over `p.grad` (ZeRO-3 keeps gradients in its own
buffers). One finding per line. Reading them before the engine partitioned the model, or reading only what a
parameter is (`p.requires_grad`, `p.dtype`), is fine."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import deepspeed
import torch


def main(model, ds_config, loader, ema):
{before}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)
    for x in loader:
        engine.backward(engine(x).sum())
        engine.step()
{after}
"""


def zg109(before: str = "", after: str = "") -> list[tuple[str, int]]:
    source = textwrap.dedent(SOURCE).format(
        before=textwrap.indent(textwrap.dedent(before).strip("\n") or "pass", " " * 4),
        after=textwrap.indent(textwrap.dedent(after).strip("\n") or "pass", " " * 8),
    )
    return [(f.code, f.line) for f in check_source("train.py", source) if f.code == "ZG109"]


def test_an_ema_folding_in_the_engines_parameters_reads_placeholders():
    after = """
    with torch.no_grad():
        for e, p in zip(ema.parameters(), engine.module.parameters()):
            e.mul_(0.99).add_(p.data, alpha=0.01)
    """
    assert zg109(after=after) == [("ZG109", 14)]


def test_a_gradient_norm_over_the_engines_parameters_is_one_finding_per_line():
    after = "gn = sum(p.grad.norm() ** 2 for p in engine.module.parameters() if p.grad is not None)"
    found = check_source("train.py", textwrap.dedent(SOURCE).format(before="    pass", after="        " + after))
    assert [(f.code, f.line) for f in found if f.code == "ZG109"] == [("ZG109", 12)]
    assert "reads the gradient" in next(f.message for f in found if f.code == "ZG109")


def test_reading_the_parameters_before_the_engine_or_only_their_flags_is_fine():
    before = "print(sum(p.data.norm() for p in model.parameters()))"
    after = "print([p.requires_grad for p in engine.module.parameters()])"
    assert zg109(before=before, after=after) == []
