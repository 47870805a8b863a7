"""A loop over a tensor of this rank's data (a name the function reads an extent of: `x.shape`, `x.size(1)`,
`x.dim()`) walks its first dimension, one item a step, as often as it is long: what `x.unbind(0)` hands back
(`counts.tensor_names`). A module run per step (`for t, x_t in enumerate(x): h = self.cell(x_t, h)`) runs as often
as this rank's sequence is long. A list of feature maps (`for f in feats`) has no extent of its own and stays a
count of the model's structure. From blind21's torchdyn `HybridNeuralDE.forward` (h-b21c)."""

from __future__ import annotations

from tests.model.package_check import found, write_package

WALKS = """
import torch
from torch import nn


class Hybrid(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.cell = nn.GRUCell(d, d)
        self.flow = nn.Linear(d, d)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 8)
        for t, x_t in enumerate(x):
            h = self.flow(self.cell(x_t, h))
        return h


def rollout(model, obs):
    steps = obs.size(0)
    return [model(o) for o in obs], steps
"""

LOOK_ALIKES = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = nn.Conv2d(d, d, 1)

    def forward(self, feats):
        n = feats[0].shape[0]
        return [self.head(f).view(n, -1) for f in feats]


class Pool(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        n = x.shape[0]
        sums = [x_t.sum() for x_t in x]
        return self.proj(torch.stack(sums).view(n, 1))


def task_losses(model, loss_head, batch, per_atom):
    preds = model(batch.x)
    if per_atom:
        targets = [t.reshape(-1, 1) for t in batch.targets]
    else:
        targets = batch.targets
        weights = torch.ones(targets.shape[1])
    return [loss_head(p, t) for p, t in zip(preds, targets)]
"""


def test_module_run_per_step_of_a_data_tensor(tmp_path):
    path = write_package(tmp_path, {"walks.py": WALKS}) / "walks.py"
    assert [line for code, line in found(path, "ZG2") if code == "ZG204"] == [14, 21]


def test_list_of_features_and_steps_running_no_module_stay_clean(tmp_path):
    path = write_package(tmp_path, {"look.py": LOOK_ALIKES}) / "look.py"
    assert found(path, "ZG2") == []
