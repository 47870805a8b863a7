"""`.forward(...)` called on a whole model a function is given or an object holds, of no class zgen can read
(untyped, or typed only `nn.Module`), skips the hooks of that model's root alone: a whole model's root most often owns
no parameter of its own, its layers run as modules inside that forward, so it is no ZG302 (the corpus labellers
judged captum's, sbi's and genrl's so). A named part of it (`model.fc.forward(x)`, likely a layer) still is, and so are
a model of a class that owns parameters itself and a child the class built of another library's class."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4096, d))

    def forward(self, x):
        return x * self.scale


class Attribution:
    def __init__(self, model: {annotation}):
        self.model = model

    def scores(self, x):
        return self.model{path}.forward(x)


def score(model, x):
    return model{path}.forward(x)
"""


def zg302(annotation: str, path: str = "") -> list[int]:
    source = textwrap.dedent(SOURCE.format(annotation=annotation, path=path))
    return [f.line for f in check_source("m.py", source) if f.code == "ZG302"]


def test_the_forward_of_a_whole_model_of_no_readable_class_is_clean():
    assert zg302("nn.Module") == []


def test_the_forward_of_a_named_part_of_it_is_flagged():
    assert zg302("nn.Module", ".fc") == [20, 24]


def test_the_forward_of_a_held_model_whose_class_owns_parameters_is_flagged():
    assert 20 in zg302("Scaled")


BUILT = """
from torch import nn
from torchrl.modules import MultiAgentMLP


class Mlp(nn.Module):
    def __init__(self, d, n_agents, shared):
        super().__init__()
        if shared:
            self.mlp = MultiAgentMLP(d, d, n_agents)
        else:
            self.mlp = nn.ModuleList([nn.Linear(d, d) for _ in range(n_agents)])

    def forward(self, x):
        return self.mlp.forward(x)
"""


def test_the_forward_of_a_child_the_class_built_of_another_librarys_class_is_flagged():
    # (such a class may own parameters itself: torchrl's MultiAgentMLP keeps the agents' stacked weights)
    assert [f.line for f in check_source("m.py", textwrap.dedent(BUILT)) if f.code == "ZG302"] == [15]
