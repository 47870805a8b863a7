"""A function of the file the module classes hand a typed child to, calling a method of a submodule of it
(`def quantize_with(holder, z): return holder.book.quantize(z)` with `quantize_with(self.holder, z)` in a forward):
the submodule's class is read through each class's members (`instances.member_instance`), and a method computing
with its own parameters runs with no hook of it. One that only runs its children stays clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
from torch import nn


class Codebook(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.embed = nn.Embedding(n, d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)

    def quantize(self, z):
        return self.embed.weight[(z @ self.embed.weight.t()).argmax(-1)]

    def project(self, z):
        return self.proj(z)


class Holder(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.book = Codebook(n, d)

    def forward(self, x):
        return self.book(x)
"""


def _zg3(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    # (the fixture's own non-forward methods, above `start`, read their parameters: ZG303 there is not the case's)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG3") and f.line > start)


def test_a_method_of_a_submodule_of_a_handed_child() -> None:
    assert _zg3("""
def quantize_with(holder, z):
    return holder.book.quantize(z)


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.holder = Holder(n, d)

    def forward(self, z):
        return quantize_with(self.holder, z)
""") == [("ZG303", 3)]


def test_a_method_running_only_children_stays_clean() -> None:
    assert _zg3("""
def project_with(holder, z):
    return holder.book.project(z)


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.holder = Holder(n, d)

    def forward(self, z):
        return project_with(self.holder, z)
""") == []


def test_a_trainer_reaching_a_submodule_through_an_unwrapped_local_and_a_helpers_parameter() -> None:
    assert _zg3("""
def unwrap(m):
    return m.module if hasattr(m, "module") else m


class Trainer:
    def __init__(self, model: Holder):
        self.model = model

    def evaluate(self, z):
        model = unwrap(self.model)
        return model.book.quantize(z)

    def codes(self, z):
        return self.encode_with(self.model.book, z) + self.project_with(self.model.book, z)

    def encode_with(self, book, z):
        return book.quantize(z)

    def project_with(self, book, z):
        return book.project(z)
""") == [("ZG303", 12), ("ZG303", 18)]


def test_a_function_given_a_trainer_reaching_a_submodule_of_its_model() -> None:
    assert _zg3("""
class Trainer:
    def __init__(self, model: Holder):
        self.model = model


def evaluate(trainer: Trainer, z):
    return trainer.model.book.quantize(z)


def project(trainer: Trainer, z):
    return trainer.model.book.project(z)
""") == [("ZG303", 8)]
