"""A child module of a class of the file whose forward returns a value a collective agreed on (`dist.all_reduce` of
the stop flag it returns) gives every rank the same value: a loop left on it is left by all ranks together (ZG204).
A child whose forward returns this rank's own verdict still diverges."""

from __future__ import annotations

from pathlib import Path

from package_check import found

SOURCE = """
from collections import namedtuple
import torch
import torch.distributed as dist
from torch import nn

StopReturn = namedtuple("StopReturn", ["score", "should_stop"])


class Stopper(nn.Module):
    def __init__(self, model, evaluate):
        super().__init__()
        self.model = model
        self.evaluate = evaluate
        self.register_buffer("flag", torch.tensor(0.0))

    def sync(self):
        dist.all_reduce(self.flag)

    @torch.no_grad()
    def forward(self):
        score = self.evaluate(self.model)
        if score > 1.0:
            self.flag.copy_(1.0)
        dist.all_reduce(self.flag)
        return StopReturn(score, self.flag.item() == 1)


class Trainer(nn.Module):
    def __init__(self, model, evaluate, loader):
        super().__init__()
        self.model = model
        self.loader = loader
        self.stopper = Stopper(model, evaluate)

    def forward(self):
        for batch in self.loader:
            loss = self.model(batch)
            loss.backward()
            out = self.stopper()
            if out.should_stop:
                break
"""


def _check(tmp_path: Path, source: str) -> list[tuple[str, int]]:
    path = tmp_path / "train.py"
    path.write_text(source)
    return found(path, "ZG204")


def test_a_child_forward_returning_an_agreed_flag_stops_every_rank_together(tmp_path):
    assert _check(tmp_path, SOURCE) == []


def test_a_child_forward_returning_its_own_verdict_still_diverges(tmp_path):
    # the collective sits in another method: what forward returns is this rank's own
    own = SOURCE.replace("        dist.all_reduce(self.flag)\n        return", "        return")
    assert _check(tmp_path, own) == [("ZG204", 40)]
