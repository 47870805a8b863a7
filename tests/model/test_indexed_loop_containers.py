"""A loop over a literal list of containers, a starred ModuleList among them (`for m in [self.reward, *self.qs]`,
lerobot's TD-MPC heads; `calls.ModuleCalls._elements_of`), with the item indexed (`m[-1].weight`): a module indexed
is a container, its item one of the layers it holds (`params._param_owner`), so initialising it in `__init__` after
the heads were built is ZG103. Look-alikes: the same loop reading a setting (`m[-1].out_features`) or setting a flag
on the parameter."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """\
import torch.nn as nn


class Heads(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.reward = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
        self.qs = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1)) for _ in range(n)])
        for m in [self.reward, *self.qs]:
            nn.init.zeros_(m[-1].weight)  # 10 hazard
        for m in (self.reward, self.qs[0]):
            nn.init.zeros_(m[-1].bias)  # 12 hazard
        self.outs = [m[-1].out_features for m in [self.reward, *self.qs]]  # 13 setting
        for m in [self.reward, *self.qs]:
            m[-1].weight.requires_grad = False  # 15 flag

    def forward(self, x):
        return self.reward(x) + sum(q(x) for q in self.qs)
"""


def test_indexed_items_of_a_literal_list_of_containers(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert ("ZG103", 10) in got
    assert ("ZG103", 12) in got


def test_settings_and_flags_stay_clean(tmp_path):
    got = found_in_package(tmp_path, {"model.py": MODEL}, "model.py", prefix="ZG1")
    assert not [line for _code, line in got if line in (13, 15)]


# A nested `apply` callback whose parameter has the loop variable's name (`def _apply_fn(m)`): its own `m`, the module
# `apply` visits and gathers, not the method's loop variable (`params._shadowed`).
APPLIED = """\
import torch.nn as nn


class Heads(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.reward = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
        self.qs = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1)) for _ in range(n)])

        def _apply_fn(m):
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight.data)  # 12 gathered by apply
                nn.init.zeros_(m.bias)  # 13 gathered by apply

        self.apply(_apply_fn)
        for m in [self.reward, *self.qs]:
            nn.init.zeros_(m[-1].weight)  # 17 hazard

    def forward(self, x):
        return self.reward(x) + sum(q(x) for q in self.qs)
"""


def test_nested_callback_parameter_is_not_the_loop_variable(tmp_path):
    got = found_in_package(tmp_path, {"model.py": APPLIED}, "model.py", prefix="ZG1")
    assert ("ZG103", 17) in got
    assert not [line for _code, line in got if line in (12, 13)]
