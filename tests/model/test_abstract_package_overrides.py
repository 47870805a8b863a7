"""A call of an `@abstractmethod` of a module base (`Model(nn.Module, ABC)` with `score(self, x)`) on a model
handed to a trainer runs what the subclasses fill in, and those may live in other files of the package that the
base's file never imports (pykeen's `Model.score_hrt`, filled in by `ERModel` of `nbase.py`): their overrides answer
for the call (`instances.reads_own` through `reach.method_targets`). An override reading a parameter of its own is
the hazard; one running its children through `__call__` is not. With no override anywhere, a user's subclass
computes there, and an override calling methods of the items of its module tree (`self.modules()`) runs code of any
class: both still flagged."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

BASE = """
import abc
import torch
from torch import nn


class Model(nn.Module, abc.ABC):
    @abc.abstractmethod
    def score(self, x: torch.Tensor) -> torch.Tensor:
        \"\"\"Score.\"\"\"

    def forward(self, x):
        return self.score(x)
"""

TRAINER = """
from .base import Model


class Trainer:
    def __init__(self, model: Model):
        self.model = model

    def step(self, x):
        return self.model.score(x).sum()
"""

THROUGH_CHILDREN = """
from torch import nn
from .base import Model


class EmbModel(Model):
    def __init__(self, n, d):
        super().__init__()
        self.emb = nn.Embedding(n, d)

    def _embed(self, x):
        return self.emb(x)

    def score(self, x):
        return self._embed(x).sum(-1)
"""

OWN_WEIGHT = """
import torch
from torch import nn
from .base import Model


class WModel(Model):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, d))

    def _lookup(self, x):
        return self.weight[x]

    def score(self, x):
        return self._lookup(x).sum(-1)
"""


def test_an_override_in_another_file_reading_its_own_parameter_is_found(tmp_path: Path) -> None:
    files = {"base.py": BASE, "trainer.py": TRAINER, "impl.py": OWN_WEIGHT}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG3") == [("ZG303", 10)]


def test_one_of_two_overrides_reading_its_own_parameter_is_found(tmp_path: Path) -> None:
    files = {"base.py": BASE, "trainer.py": TRAINER, "impl.py": THROUGH_CHILDREN, "impl2.py": OWN_WEIGHT}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG3") == [("ZG303", 10)]


def test_no_override_anywhere_stays_found(tmp_path: Path) -> None:
    files = {"base.py": BASE, "trainer.py": TRAINER}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG3") == [("ZG303", 10)]


def test_an_override_in_another_file_running_its_children_stays_clean(tmp_path: Path) -> None:
    files = {"base.py": BASE, "trainer.py": TRAINER, "impl.py": THROUGH_CHILDREN}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG3") == []


WALKS_TREE = """
from torch import nn
from .base import Model


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.tracked = []

    def pop_term(self):
        return sum(p.norm() for p in self.tracked)


class RegModel(Model):
    def __init__(self, n, d):
        super().__init__()
        self.emb = nn.Embedding(n, d)
        self.reg = Reg()
        self.reg.tracked.append(self.emb.weight)

    def score(self, x):
        return sum(r.pop_term() for r in self.modules() if isinstance(r, Reg)) + self.emb(x).sum(-1)
"""


def test_an_override_walking_its_module_tree_stays_found(tmp_path: Path) -> None:
    # the items of `self.modules()` may be of any class, their methods reading what they hold (pykeen's
    # `collect_regularization_term`: a regulariser's tracked parameters of other modules): no override answers
    files = {"base.py": BASE, "trainer.py": TRAINER, "impl.py": WALKS_TREE}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG3") == [("ZG303", 10)]
