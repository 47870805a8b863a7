"""A divergent decision's finding reaches from the decision down to the submodule call it governs: both lines are
the hazard (a reader, or a `--select` by line, may point at either). The start stays at the decision, so `# noqa`
there still suppresses it. An exit reaches down to its `return`/`break` (the calls it skips lie past it, often far),
an optional input's test to the call it gates (ZG205)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source
from zgen.noqa import apply_noqa

SOURCE = """
import torch
import torch.distributed as dist
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.probe = nn.Linear(d, d)
        self.experts = nn.ModuleList([nn.Linear(d, d) for _ in range(4)])
        self.head = nn.Linear(d, d)

    def forward(self, x, choice):
        if dist.get_rank() == 0:  # DECIDE-RANK
            x = x + self.probe(x)  # CALL-RANK
        for i in choice.unique():  # DECIDE-LOOP
            rows = choice == i
            x[rows] = self.experts[i](x[rows])  # CALL-LOOP
        if x.shape[0] == 0:  # DECIDE-EXIT
            return x  # LEAVE-EXIT
        x = x * 2
        return self.head(x)  # CALL-EXIT


class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.text = nn.Linear(d, d)
        self.vision = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))

    def forward(self, text, image=None):
        h = self.text(text)
        if image is not None:  # DECIDE-INPUT
            h = h + self.vision(image)  # CALL-INPUT
        return h
"""


def _lines(source: str) -> dict[str, int]:
    return {line.rsplit("# ", 1)[1]: i for i, line in enumerate(source.splitlines(), 1) if "# " in line}


def test_a_gate_and_a_loop_reach_down_to_the_call_they_govern():
    source = textwrap.dedent(SOURCE)
    at = _lines(source)
    found = {f.line: f for f in check_source("m.py", source) if f.code.startswith("ZG2")}
    rank, loop = found[at["DECIDE-RANK"]], found[at["DECIDE-LOOP"]]
    assert (rank.code, rank.end_line) == ("ZG201", at["CALL-RANK"])
    assert (loop.code, loop.end_line) == ("ZG203", at["CALL-LOOP"])


def test_an_exit_reaches_down_to_its_return_not_to_the_calls_it_skips():
    source = textwrap.dedent(SOURCE)
    at = _lines(source)
    found = {f.line: f for f in check_source("m.py", source) if f.code.startswith("ZG2")}
    assert found[at["DECIDE-EXIT"]].end_line == at["LEAVE-EXIT"]


def test_an_optional_input_test_reaches_down_to_the_tower_it_gates():
    source = textwrap.dedent(SOURCE)
    at = _lines(source)
    found = {f.line: f for f in check_source("m.py", source) if f.code == "ZG205"}
    assert found[at["DECIDE-INPUT"]].end_line == at["CALL-INPUT"]


def test_noqa_on_the_decision_still_suppresses_it():
    decision = _lines(textwrap.dedent(SOURCE))["DECIDE-RANK"]
    source = textwrap.dedent(SOURCE).replace("# DECIDE-RANK", "# noqa: ZG201")
    found = check_source("m.py", source)
    assert any(f.code == "ZG201" and f.line == decision and f.end_line > f.line for f in found)
    kept = apply_noqa("m.py", source, found, {f.code for f in found}, lambda code: True)
    assert [f for f in kept if f.line == decision] == []
