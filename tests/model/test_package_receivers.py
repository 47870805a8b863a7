"""ZG303 on a module handed in untyped whose class is defined in a file of the package the calling file never
imports (h-zg3pkg): the method called may only be run by the package's module classes that define it, so a call
counts when every one of them computes with its own parameters in it; each hazard beside a safe look-alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

VQ = """
import torch
from torch import nn


class VQ(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.codebook = nn.Embedding(k, d)
        self.proj = nn.Linear(d, d)

    def forward(self, z):
        return self.proj(z)

    def lookup(self, idx):
        return torch.index_select(self.codebook.weight, 0, idx)

    def decode(self, h):
        return h @ self.proj.weight.T

    def describe(self, h):
        return h @ self.proj.weight


class Wrapper(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.vq = VQ(k, d)

    def forward(self, z):
        return self.vq(z)
"""

OTHER = """
from torch import nn


class Scaler(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.register_buffer("scale", None)

    def forward(self, x):
        return self.fc(x)

    def rescale(self, x):
        return x * 2.0

    def describe(self, x):
        return x.mean()

    def sample(self):
        return self.fc.weight.data.normal_()
"""

SCORE = """
def score(model, x):
    return model.lookup(x)


def score_child(model, x):
    return model.vq.lookup(x)


def rescaled(model, x):
    return model.rescale(x)


def described(model, x):
    return model.describe(x)


class Evaluator:
    def __init__(self, model):
        self.model = model

    def run(self, x):
        return self.model.decode(x)

    def run_rescaled(self, x):
        return self.model.rescale(x)

    def run_bound(self, x):
        book = self.model.vq
        return book.lookup(x)

    def run_bound_safe(self, x):
        book = self.model.vq
        return book.rescale(x)
"""

HEAD = """
from torch import nn


class Head(nn.Module):
    def __init__(self, model, d):
        super().__init__()
        self.model = model
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(self.model.decode(x))


class SafeHead(nn.Module):
    def __init__(self, model, d):
        super().__init__()
        self.model = model
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(self.model.rescale(x))


class RandomActor(nn.Module):
    def __init__(self, action_space, d):
        super().__init__()
        self.space = action_space
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x) * self.space.sample()
"""


def _package(tmp_path):
    pkg = tmp_path / "proj"
    for part in ("", "models", "evals"):
        (pkg / part).mkdir(exist_ok=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "models" / "vq.py").write_text(textwrap.dedent(VQ))
    (pkg / "models" / "other.py").write_text(textwrap.dedent(OTHER))
    (pkg / "evals" / "score.py").write_text(textwrap.dedent(SCORE))
    (pkg / "evals" / "head.py").write_text(textwrap.dedent(HEAD))
    return pkg


def _zg303(path) -> list[int]:
    return sorted(f.line for f in check_source(str(path), path.read_text()) if f.code == "ZG303")


def test_a_method_only_an_unimported_module_class_of_the_package_defines_reads_its_parameters(tmp_path):
    # `score`, `score_child` (a child of the model), `Evaluator.run` and `run_bound` (a local bound to a child of the
    # model held); not `rescaled`/`run_rescaled` (the only
    # class defining `rescale` computes with no parameter of its own), nor `described` (two classes define
    # `describe`, one reading none of its parameters: the name does not say which class answers)
    assert _zg303(_package(tmp_path) / "evals" / "score.py") == [3, 7, 23, 30]


def test_a_module_handed_an_untyped_model_calls_a_package_method_in_its_forward(tmp_path):
    # not `self.space.sample()`: an argument kept, nothing says it is a model (a gym space), though a module class
    # of the package defines `sample`
    assert _zg303(_package(tmp_path) / "evals" / "head.py") == [12]


CODEC = """
from torch import nn


class Codec{n}(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, z):
        return self.proj(z)

    def decode(self, h):
        return h @ self.proj.weight.T
"""

# `Head` above in a file that defines a function `decode` of its own
DECODING_HEAD = """
from torch import nn


def decode(tokens):
    return tokens
""" + HEAD[HEAD.index("\n\nclass Head("):HEAD.index("\n\nclass SafeHead(")] + "\n"


def _codecs(tmp_path, count: int):
    pkg = tmp_path / "coders"
    (pkg / "models").mkdir(parents=True)
    for directory in (pkg, pkg / "models"):
        (directory / "__init__.py").write_text("")
    for n in range(count):
        (pkg / "models" / f"codec{n}.py").write_text(textwrap.dedent(CODEC.format(n=n)))
    head = pkg / "head.py"
    head.write_text(textwrap.dedent(DECODING_HEAD))
    return head


def test_the_calling_files_own_definition_does_not_count_among_the_package_definers(tmp_path):
    # `decode`: six other files of the package define it (the most read), each reading its own parameters; the
    # calling file's own `def decode(` is no module that `self.model` may be, and does not count among them
    assert _zg303(_codecs(tmp_path, 6)) == [16]


def test_a_method_more_other_files_define_than_are_read_tells_no_class(tmp_path):
    # seven other files define `decode`: a common verb of the package, no class is told by the name
    assert _zg303(_codecs(tmp_path, 7)) == []


def test_a_method_only_the_calling_file_defines_records_no_package_dependency(tmp_path):
    # no other file defines `decode`: which files do is never asked, so the findings do not depend on the answer
    # (`project.definers_key`); once one does, they do
    deps: dict[str, str] = {}
    head = _codecs(tmp_path / "alone", 0)
    check_source(str(head), head.read_text(), None, deps)
    assert not [key for key in deps if key.endswith("def decode(")]
    head = _codecs(tmp_path / "shared", 1)
    check_source(str(head), head.read_text(), None, deps)
    assert [key for key in deps if key.endswith("def decode(")]
