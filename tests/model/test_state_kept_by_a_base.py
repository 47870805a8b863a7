"""What a base class's constructor keeps on `self` (`self.params`, the model's parameters it lists) is the state of
a subclass that calls `super().__init__(model, ...)`: the subclass's `fit` flattening `self.params` with
`parameters_to_vector` reads partitioned placeholders (ZG109), and `vector_to_parameters(sample, self.params)`
writes them (ZG101). A base keeping only settings (sizes a subclass makes tensors of) is no such state.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LAPLACE = """
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters


class BaseLaplace:
    def __init__(self, model: nn.Module, likelihood: str):
        self.model = model
        self.params = []
        for p in model.parameters():
            if p.requires_grad:
                self.params.append(p)


class DiagLaplace(BaseLaplace):
    def __init__(self, model: nn.Module, likelihood: str, prior=1.0):
        super().__init__(model, likelihood)
        self.prior = prior

    def fit(self, loader):
        self.mean = parameters_to_vector(self.params)

    def sample(self, s):
        vector_to_parameters(s, self.params)
"""

LOOK_ALIKES = """
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector


class Base:
    def __init__(self, likelihood: str, sizes):
        self.likelihood = likelihood
        self.params = list(sizes)


class Probe(Base):
    def __init__(self, likelihood: str, sizes, scale=2.0):
        super().__init__(likelihood, sizes)
        self.scale = scale

    def fit(self, loader):
        return parameters_to_vector([torch.ones(n) for n in self.params]) * self.scale
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("laplace.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_parameters_a_base_constructor_listed_are_read_and_written_by_the_subclass():
    assert _found(LAPLACE) == [("ZG101", 25), ("ZG109", 22)]


def test_a_base_keeping_settings_is_no_such_state():
    assert _found(LOOK_ALIKES) == []
