"""An entry read from an input with `.get` (`advantage = tensordict.get("advantage", None)`, `batch.get("feats")`) may
be absent from this call's batch, as optional as a parameter defaulting to `None`: a tower run only when it is
missing skips its gathers on the ranks whose batch carries it (torchrl's PPO critic shape). Entries of `self` (a
setting), conventional names (`attention_mask`), branches with no tower and a handed-in member of a kind the index
cannot tell (neuraloperator's `self.weighting_fn`, a plain function) stay clean (`zg205._batch_entries`;
h-optin2)."""

from __future__ import annotations

from tests.model.package_check import found_in_package

FEATS = """
from torch import nn

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(1024, 1024)
        self.b = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.b(self.a(x))

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.image_encoder = Tower()
        self.head = nn.Linear(1024, 4)

    def forward(self, batch):
        feats = batch.get("image_feats", None)
        if feats is None:
            feats = self.image_encoder(batch["images"])
        return self.head(feats)
"""

ADVANTAGE = """
from torch import nn

class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 1024), nn.Tanh(), nn.Linear(1024, 1))

    def forward(self, td):
        td["value"] = self.net(td["obs"])
        return td

class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = Critic()

    def forward(self, tensordict):
        advantage = tensordict.get("advantage")
        if advantage is None:
            self.critic(tensordict)
            advantage = tensordict["value"]
        return advantage.mean()
"""

MASK = """
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mask_net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
        self.head = nn.Linear(1024, 4)

    def forward(self, batch):
        attention_mask = batch.get("attention_mask", None)
        x = batch["x"]
        if attention_mask is not None:
            x = x * self.mask_net(attention_mask)
        return self.head(x)
"""

SETTING = """
from torch import nn

class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.extra = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
        self.head = nn.Linear(1024, 4)

    def forward(self, x):
        extra = self.config.get("extra", None)
        if extra is not None:
            x = self.extra(x)
        return self.head(x)
"""

NO_TOWER = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(1024, 4)

    def forward(self, batch):
        feats = batch.get("feats", None)
        if feats is None:
            feats = torch.zeros(1, 1024)
        return self.head(feats)
"""

HANDED_CALLABLE = """
from torch import nn

class Transform(nn.Module):
    def __init__(self, weighting_fn=None):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 1024))
        self.weighting_fn = weighting_fn

    def forward(self, y, neighbors, weights=None):
        nbr_weights = neighbors.get("weights")
        if nbr_weights is None:
            nbr_weights = weights
        h = self.mlp(y)
        if nbr_weights is not None:
            if self.weighting_fn is not None:
                nbr_weights = self.weighting_fn(nbr_weights)
            h = h * nbr_weights
        return h
"""


def test_a_batch_entry_missing_runs_the_tower(tmp_path):
    assert found_in_package(tmp_path, {"model.py": FEATS}, "model.py", prefix="ZG205") == [("ZG205", 21)]


def test_a_missing_advantage_runs_the_critic(tmp_path):
    assert found_in_package(tmp_path, {"model.py": ADVANTAGE}, "model.py", prefix="ZG205") == [("ZG205", 20)]


def test_look_alikes_stay_clean(tmp_path):
    for name, source in (("mask", MASK), ("setting", SETTING), ("plain", NO_TOWER), ("callable", HANDED_CALLABLE)):
        assert found_in_package(tmp_path, {"model.py": source}, "model.py", name=name, prefix="ZG205") == [], name
