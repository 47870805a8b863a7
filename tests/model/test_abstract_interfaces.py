"""A child typed with a module interface whose called method is abstract (`AdapterBase(nn.Module, ABC)` with an
`@abstractmethod def encode`), kept from an annotated `__init__` argument (also through `requires_grad_(False)` and
`if ... else None`): the module the caller hands in implements the method, with parameters of its own, and no hook of
it runs for the call (`instances.reads_own`). A subclass of the file that fills the method in answers for itself, and
an interface that is no module is no child."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
from abc import ABC, abstractmethod
from typing import Optional
from torch import nn, Tensor


class AdapterBase(nn.Module, ABC):
    @abstractmethod
    def encode(self, x: Tensor) -> Tensor:
        pass
"""


def _zg3(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG3"))


def test_an_abstract_method_of_a_handed_adapter_runs_its_implementation() -> None:
    assert _zg3("""
class Model(nn.Module):
    def __init__(self, dim, adapter: Optional[AdapterBase] = None):
        super().__init__()
        self.net = nn.Linear(dim, dim)
        self.adapter = adapter.requires_grad_(False) if adapter is not None else None

    def forward(self, x):
        x = self.adapter.encode(x) if self.adapter is not None else x
        return self.net(x)
""") == [("ZG303", 9)]


def test_an_implementation_of_the_file_and_an_interface_that_is_no_module_stay_clean() -> None:
    assert _zg3("""
class Projection(AdapterBase):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Linear(dim, dim)

    def encode(self, x):
        return self.net(x)


class Codec(ABC):
    @abstractmethod
    def encode(self, x):
        ...


class Model(nn.Module):
    def __init__(self, dim, adapter: AdapterBase, codec: Codec):
        super().__init__()
        self.net = nn.Linear(dim, dim)
        self.adapter = adapter
        self.codec = codec

    def forward(self, x):
        return self.net(self.adapter.encode(self.codec.encode(x)))
""") == []


def test_an_abstract_size_query_stays_clean() -> None:
    assert _zg3("""
class EncoderBase(nn.Module, ABC):
    @abstractmethod
    def output_size(self) -> int:
        raise NotImplementedError


class Model(nn.Module):
    def __init__(self, dim, encoder: EncoderBase):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.output_size(), dim)

    def forward(self, x):
        return self.head(self.encoder(x)) * self.encoder.output_size()
""") == []
