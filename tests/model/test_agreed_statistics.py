"""A statistic every rank holds alike decides no exit (h-rl): an early stop of a PPO epoch loop on a KL estimate a
method of the class all-reduces before returning it (`if self._mean_kl(old, new) > limit: break`), on every rank's
values gathered (`accelerator.gather(kl).mean().item()`, bound first: `kls = accelerator.gather_for_metrics(kl)` ...
`kls.mean()`), or on a reduction of a local all-reduced in place; beside the same loops on this rank's own
statistic, and on `out.gather(1, idx)` (an index into one tensor), which stay ZG204."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

PPO = """
import torch
import torch.distributed as dist
from torch import nn


class Actor(nn.Module):
    def __init__(self, d, h=1024):
        super().__init__()
        self.body = nn.Linear(d, h)
        self.mu = nn.Linear(h, 4)

    def forward(self, x):
        return self.mu(torch.relu(self.body(x)))


class PPO:
    def __init__(self, d, accelerator, target_kl=0.01):
        self.actor = Actor(d)
        self.accelerator = accelerator
        self.target_kl = target_kl

    def _mean_kl(self, old_logp, logp):
        kl = (old_logp - logp).mean().detach()
        dist.all_reduce(kl)
        return kl.item() / dist.get_world_size()

    def _local_kl(self, old_logp, logp):
        return (old_logp - logp).mean().item()

    def update(self, obs, old_logp, idx, epochs=10):
        for epoch in range(epochs):
            logp = self.actor(obs).sum(-1)
{body}
                break
            (-logp.mean()).backward()
"""


def _exits(body: str) -> list[tuple[str, int]]:
    body = textwrap.indent(textwrap.dedent(body).strip(), " " * 12)
    source = textwrap.dedent(PPO).replace("{body}", body)
    return [(f.code, f.line) for f in check_source("ppo.py", source) if f.code == "ZG204"]


def test_a_statistic_a_method_all_reduces_decides_no_exit() -> None:
    assert _exits("if self._mean_kl(old_logp, logp) > 1.5 * self.target_kl:") == []


def test_the_same_method_without_the_collective_is_this_ranks_own() -> None:
    assert _exits("if self._local_kl(old_logp, logp) > 1.5 * self.target_kl:") == [("ZG204", 34)]


def test_every_ranks_values_gathered_inline_decide_no_exit() -> None:
    body = """
    kl = self.accelerator.gather((old_logp - logp).mean().detach()).mean().item()
    if kl > self.target_kl:
    """
    assert _exits(body) == []


def test_every_ranks_values_gathered_into_a_local_then_reduced_decide_no_exit() -> None:
    body = """
    kls = self.accelerator.gather_for_metrics(old_logp - logp)
    if kls.mean().item() > self.target_kl:
    """
    assert _exits(body) == []


def test_a_local_all_reduced_in_place_then_reduced_decides_no_exit() -> None:
    body = """
    kls = (old_logp - logp).detach()
    dist.all_reduce(kls)
    if kls.mean() > self.target_kl:
    """
    assert _exits(body) == []


def test_an_index_into_the_output_stays_this_ranks_data() -> None:
    body = """
    picked = self.actor(obs).gather(1, idx)
    if picked.mean().item() > self.target_kl:
    """
    assert _exits(body) == [("ZG204", 35)]
