"""A model's own training method over a loader it is given (`def _train_epoch(self, loader)`, sklearn-style
models), and parameter containers left out by a setting.

* The batches a loop takes from the loader, and their parts (`X, y = sample`), are this rank's data, in a module's
  method as in a trainer's: skipping a batch of fewer than two rows (`if len(X) < 2: continue`) before the forward
  makes ranks whose last batch is short run one forward fewer (ZG203). A test of the step index is the same on
  every rank.
* A model's own helper method handed the parameters of a copy its training method keeps (`self._update_ema(
  self.target.parameters(), self.net.parameters())`) writes them where it blends them in place, after the optimizer
  step (ZG101); a helper that only switches their gradients off writes nothing.
* `self.global_embs = nn.ParameterDict()` in one arm and `None` in the other is still a parameter container, never
  called: an entry read in a helper the forward runs is read outside any hook (ZG301).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, prefix: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source)) if f.code.startswith(prefix)]


MLP = """
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.model = nn.Linear(d, 1)

    def forward(self, X):
        return self.model(X)

    def train_epoch(self, loader):
        losses = []
        for batch_ndx, sample in enumerate(loader):
            X_next, y_next = sample
            if len(X_next) < 2:
                continue
            losses.append((self.forward(X_next) - y_next).pow(2).mean())
        return losses

    def warm_epoch(self, loader, warmup):
        losses = []
        for batch_ndx, sample in enumerate(loader):
            X_next, y_next = sample
            if batch_ndx < warmup:
                continue
            losses.append((self.forward(X_next) - y_next).pow(2).mean())
        return losses
"""


def test_a_short_batch_skipped_in_a_models_own_training_loop_is_found() -> None:
    assert _found(MLP, "ZG2") == [("ZG203", 18)]


GLOBAL = """
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, entities, dim, use_global):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        if use_global:
            self.global_embs = nn.ParameterDict()
            for entity in entities:
                self.global_embs["emb_" + entity] = nn.Parameter(torch.zeros(dim))
        else:
            self.global_embs = None
        if use_global:
            self.extra = nn.Linear(dim, dim)
        else:
            self.extra = None

    def adjust(self, embs, entity_type):
        if self.global_embs is not None:
            embs = embs + self.global_embs["emb_" + entity_type]
        if self.extra is not None:
            embs = self.extra(embs)
        return embs

    def forward(self, embs, entity_type):
        return self.proj(self.adjust(embs, entity_type))
"""


def test_a_parameter_container_left_out_by_a_setting_is_still_read_outside_any_hook() -> None:
    assert _found(GLOBAL, "ZG3") == [("ZG301", 23)]


EMA = """
import copy

from torch import nn


class DDPM(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, d)

    def _update_ema(self, target_params, source_params, rate=0.999):
        for targ, src in zip(target_params, source_params):
            targ.detach().mul_(rate).add_(src.detach(), alpha=1 - rate)

    def _freeze(self, params):
        for p in params:
            p.requires_grad_(False)

    def fit(self, loader, optimizer):
        self.target = copy.deepcopy(self.net)
        for x in loader:
            self.net(x).sum().backward()
            optimizer.step()
            self._update_ema(self.target.parameters(), self.net.parameters())
            self._freeze(self.target.parameters())

    def forward(self, x):
        return self.net(x)
"""


def test_a_models_own_helper_blending_its_childrens_parameters_writes_them() -> None:
    assert _found(EMA, "ZG101") == [("ZG101", 25)]
