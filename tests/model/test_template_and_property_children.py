"""ZG301 through three ways a module reaches a child that the members did not see before.

* Template methods: a class with no `forward` (or `__init__`) of its own whose base in another file defines it and
  calls `self.m(...)` hooks the class overrides (`_init_layers` from the base's `__init__`, `pre_decoder` from the
  base's `forward` through `self.loss` -> `self.run_transformer`). The overrides run in the base's `__init__` (their
  children are members) and in its `forward` (a child's weight read there is read outside that child's hooks).
* A `@property` handing back a member as is (`@property def model(self): return self._model`, here or in a base of
  any file): `self.model[0]`, `for layer in self.layers`, `self.heads["a"]` are that member's items, so a local or
  loop variable bound to one is a child whose `.weight` read in forward no hook of it gathered.

* A mixin's method of another file called from forward that walks the parameters of the class's children
  (`self.momentum_update()` over `self.model_pairs`): read with the class's members, reported at the call.

Next to look-alikes that stay clean: the child called, only its dtype used.
"""

from __future__ import annotations

import textwrap

from package_check import found_in_package

from zgen.model import check_source

BASE = """
import torch
from torch import nn


class Detector(nn.Module):
    def __init__(self, num_queries=100):
        super().__init__()
        self.num_queries = num_queries
        self.backbone = nn.Linear(1024, 1024)
        self._init_layers()

    def _init_layers(self):
        raise NotImplementedError

    def forward(self, x, mode="loss"):
        if mode == "loss":
            return self.loss(x)
        return self.predict(x)

    def loss(self, x):
        return self.run_transformer(self.backbone(x)).sum()

    def predict(self, x):
        return self.run_transformer(self.backbone(x))

    def run_transformer(self, feats):
        query = self.pre_decoder(feats)
        return self.decode(query, feats)

    def pre_decoder(self, feats):
        raise NotImplementedError

    def decode(self, query, feats):
        raise NotImplementedError
"""

DETECTORS = """
import torch
from torch import nn
from .base import Detector


class Reads(Detector):
    def _init_layers(self):
        self.query_embedding = nn.Embedding(self.num_queries, 4096)
        self.decoder = nn.Linear(4096, 4096)

    def pre_decoder(self, feats):
        query = self.query_embedding.weight
        return query.unsqueeze(0).repeat(feats.size(0), 1, 1)

    def decode(self, query, feats):
        return self.decoder(query)


class Calls(Detector):
    def _init_layers(self):
        self.query_embedding = nn.Embedding(self.num_queries, 4096)
        self.decoder = nn.Linear(4096, 4096)

    def pre_decoder(self, feats):
        ids = torch.arange(self.num_queries, device=feats.device)
        query = self.query_embedding(ids).to(self.query_embedding.weight.dtype)
        return query.unsqueeze(0).repeat(feats.size(0), 1, 1)

    def decode(self, query, feats):
        return self.decoder(query)
"""


def test_an_override_a_base_forward_of_another_file_runs_reads_a_child_weight(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "detectors.py": DETECTORS}, "detectors.py", prefix="ZG3")
    assert ("ZG301", 13) in found


def test_an_override_calling_its_child_is_clean(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "detectors.py": DETECTORS}, "detectors.py", prefix="ZG3")
    assert [f for f in found if f[1] > 20] == []


MLP = """
from torch import nn


def block(d_in, d_out):
    return [nn.Linear(d_in, d_out), nn.SiLU()]


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        layers = []
        for h in hidden:
            layers += block(d, h)
            d = h
        self._model = nn.Sequential(*layers)

    @property
    def model(self):
        return self._model

    def forward(self, x):
        return self.model(x)
"""

PROJECTED = """
import torch.nn.functional as F
from .mlp import MLP


class Projected(MLP):
    def forward(self, x=None, obs=None):
        if x is not None:
            return super().forward(x)
        first = self.model[0]
        return F.linear(obs, first.weight[:, 16:])


class Called(MLP):
    def forward(self, obs):
        first = self.model[0]
        return first(obs.to(first.weight.dtype))
"""


def test_an_item_of_a_base_property_of_another_file_read_by_weight(tmp_path):
    found = found_in_package(tmp_path, {"mlp.py": MLP, "projected.py": PROJECTED}, "projected.py", prefix="ZG3")
    assert found == [("ZG301", 11)]


HEAD = """
import torch.nn.functional as F
from torch import nn
"""


def _zg3(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG3"))


NET = """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self._layers = nn.ModuleList([nn.Linear(d, 2048) for _ in range(3)])
        self._heads = nn.ModuleDict({"a": nn.Linear(d, 2048)})

    @property
    def layers(self):
        return self._layers

    @property
    def heads(self):
        return self._heads
"""


def test_loop_and_key_items_of_a_property_read_by_weight() -> None:
    assert _zg3(NET + """
class Reads(Net):
    def forward(self, x):
        for layer in self.layers:
            x = x @ layer.weight.t()
        head = self.heads["a"]
        return F.linear(x, head.weight)
""") == [("ZG301", 19), ("ZG301", 21)]


def test_items_of_a_property_called_are_clean() -> None:
    assert _zg3(NET + """
class Calls(Net):
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        first = self.layers[0]
        head = self.heads["a"]
        return head(x).to(first.weight.dtype)
""") == []


MIXIN = """
import torch


class MomentumMixin:
    @torch.no_grad()
    def momentum_update(self):
        for online, target in self.model_pairs:
            for p, p_m in zip(online.parameters(), target.parameters()):
                p_m.data.mul_(self.momentum).add_(p.data, alpha=1 - self.momentum)

    def count_pairs(self):
        return sum(p.numel() for online, _ in self.model_pairs for p in online.parameters())
"""

MOMENTUM = """
import torch
from torch import nn
from .mixin import MomentumMixin


class Encoder(nn.Module, MomentumMixin):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(1024, 1024)
        self.enc_m = nn.Linear(1024, 1024)
        self.model_pairs = [(self.enc, self.enc_m)]
        self.momentum = 0.995

    def forward(self, x):
        with torch.no_grad():
            self.momentum_update()
            y = self.enc_m(x)
        return self.enc(x) + y + self.count_pairs()
"""


def test_a_mixin_of_another_file_walking_child_parameters_in_forward(tmp_path):
    found = found_in_package(tmp_path, {"mixin.py": MIXIN, "model.py": MOMENTUM}, "model.py", prefix="ZG3")
    assert found == [("ZG301", 17)]  # the update; counting the parameters (sizes only) stays clean
