"""Children a module builds in a method its framework runs after construction, and parameter groups keyed by name.

pix2pixHD's `Pix2PixHDModel.initialize(opt)` builds `self.netG = networks.define_G(...)`, a generator holding only
`nn.Sequential` children, and calls `self.netG.forward(x)`: nothing is lost, since the generator registers no
parameter of its own and its children run through their hooks. MMF's models build theirs in `build()`. Read as
members, those children tell what they are. And `group["lr"] = lr` over optimizer parameter groups stores into a
mapping, no parameter.
"""

from __future__ import annotations

from zgen.model import check_source

LATE = """
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))

    def forward(self, x):
        return self.model(x)


class Head(nn.Linear):
    def forward(self, x):
        return super().forward(x)


class Pix2Pix(nn.Module):
    def initialize(self, d):
        self.netG = Generator(d)
        self.head = Head(d, d)

    def forward(self, x):
        return self.head.forward(self.netG.forward(x))
"""


GROUPS = """
from torch import nn


def configured(module, lr=None):
    params = list(module.named_parameters())
    groups = [
        {"params": [p for n, p in params if "bias" not in n], "weight_decay": 0.01},
        {"params": [p for n, p in params if "bias" in n], "weight_decay": 0.0},
    ]
    if lr is not None:
        for p in groups:
            p["lr"] = lr
    return groups


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Linear(4, 4)

    def forward(self, x):
        return self.model(x)

    def get_optimizer_parameters(self, config):
        return configured(self.model, config.lr)
"""


def test_children_built_after_construction_are_read_as_members():
    found = [(f.code, f.line) for f in check_source("pix2pix.py", LATE)]
    assert found == [("ZG302", 26)]  # the head owns its weight; the generator owns none of its own
    assert "self.head.forward" in next(f.message for f in check_source("pix2pix.py", LATE))


def test_a_learning_rate_stored_into_parameter_groups_writes_no_parameter():
    assert [f.code for f in check_source("groups.py", GROUPS)] == []


HELPED = """
import torch
from torch import nn


class Captioner(nn.Module):
    def build(self):
        self._build_output()

    def _build_output(self):
        self.classifier = nn.Linear(768, 5000)

    def forward(self, h):
        return h @ self.classifier.weight.t()
"""


def test_children_a_build_helper_makes_are_members_too():
    assert [f.code for f in check_source("m4c.py", HELPED)] == ["ZG301"]


PARAMETER_DICT = """
import torch
from torch import nn


class Discretizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.params_dict = nn.ParameterDict({"bin_centers": nn.Parameter(torch.zeros(4096, 512))})

    def fit(self, actions):
        self.params_dict["bin_centers"] = actions.mean(0)

    def forward(self, x):
        return x @ self.params_dict["bin_centers"].t()


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.action_ae = Discretizer()

    def forward(self, x):
        return self.action_ae(x)

    def fit_action_ae(self, actions):
        self.action_ae.fit(actions)
"""


def test_an_entry_a_parameter_dict_takes_by_name_is_still_its_parameter():
    assert "ZG303" in [f.code for f in check_source("bet.py", PARAMETER_DICT)]
