"""Tensors of a `ParameterList`/`ParameterDict` the module holds, read in its forward (`params._param_container_item`).

The container is a child module of its own that nobody calls, so no hook gathers its tensors: the holder's hooks
gather only the parameters registered on the holder itself. Read by subscript, by iteration (`.items()`,
`.values()`, `zip`), through a local bound to an item, and through a `ModuleDict` of `ParameterDict`s, whatever
their size (persistence keeps a tensor gathered only once some hook gathered it); next to look-alikes that stay
clean: sizes, dtypes, membership and length."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
from torch import nn, einsum
"""


def _zg3(body: str) -> list[tuple[str, int]]:
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG3"))


def test_a_parameter_dict_walked_by_items() -> None:
    assert _zg3("""
class LinearSE3(nn.Module):
    def __init__(self, fiber):
        super().__init__()
        self.weights = nn.ParameterDict()
        for degree, dim_in, dim_out in fiber:
            self.weights[str(degree)] = nn.Parameter(torch.randn(dim_in, dim_out))

    def forward(self, x):
        out = {}
        for degree, weight in self.weights.items():
            out[degree] = einsum('b n d m, d e -> b n e m', x[degree], weight)
        return out
""") == [("ZG301", 12)]


def test_a_parameter_list_by_subscript_local_and_loop() -> None:
    assert _zg3("""
class Stack(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for d in dims])
        self.wd = nn.ParameterDict({"a": nn.Parameter(torch.randn(dims[0], dims[0]))})

    def forward(self, x):
        x = x @ self.ws[0]
        w = self.wd["a"]
        x = x @ w
        for v in self.ws:
            x = x @ v
        return x
""") == [("ZG301", 9), ("ZG301", 11), ("ZG301", 13)]


def test_a_module_dict_of_parameter_dicts() -> None:
    assert _zg3("""
class NormSE3(nn.Module):
    def __init__(self, fiber):
        super().__init__()
        self.transform = nn.ModuleDict()
        for degree, chan in fiber:
            self.transform[str(degree)] = nn.ParameterDict({"w_gate": nn.Parameter(torch.randn(chan, chan))})

    def forward(self, features):
        out = {}
        for degree, t in features.items():
            params = self.transform[degree]
            out[degree] = einsum('b n d, d e -> b n e', t, params["w_gate"])
        return out
""") == [("ZG301", 13)]


def test_vectors_of_a_container_are_read_unhooked() -> None:
    """Gains (`torch.ones(d)`), padding rows and statistics in a container: small, but never gathered by a hook."""
    assert _zg3("""
class Scales(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(d)) for d in dims])
        self.proj = nn.Linear(dims[0], dims[0])

    def forward(self, xs):
        out = [x * g for x, g in zip(xs, self.gains)]
        return self.proj(out[0]) * self.gains[0]

class Pads(nn.Module):
    def __init__(self, modalities, n, stats):
        super().__init__()
        self.padding = nn.ParameterDict({m: nn.Parameter(torch.randn(1, n - c)) for m, c in modalities.items()})
        self.scale = nn.ParameterDict({k: nn.Parameter(v.clone()) for k, v in stats.items()})

    def forward(self, inputs):
        return {m: torch.cat([x, self.padding[m].expand(x.shape[0], -1)], -1) * self.scale[m] for m, x in inputs.items()}
""") == [("ZG301", 9), ("ZG301", 10), ("ZG301", 19), ("ZG301", 19)]


def test_sizes_and_bookkeeping_stay_clean() -> None:
    assert _zg3("""
class Shapes(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for d in dims])

    def forward(self, x):
        n = len(self.ws)
        for w in self.ws:
            x = x.new_zeros(w.shape[0])
        return x, "a" in self.ws, self.ws[0].dtype, n
""") == []


def test_containers_built_with_an_annotation_or_initialised_tensors_and_their_slices() -> None:
    """`self.kernels: nn.Module = nn.ParameterList(...)` is a container as much as without the annotation; a tensor
    filled in place by an initialiser (`nn.init.xavier_normal_(torch.empty(n, n))`) is as large as the tensor it
    fills; a slice of a container's tensor (`self.u[layer][i]`) reads it."""
    assert _zg3("""
class CrossNet(nn.Module):
    def __init__(self, n, layers):
        super().__init__()
        self.kernels: nn.Module = nn.ParameterList(
            [nn.Parameter(nn.init.xavier_normal_(torch.empty(n, n))) for _ in range(layers)]
        )
        self.u = nn.ParameterList([nn.Parameter(torch.empty(4, n, n)) for _ in range(layers)])
        self.layers = layers

    def forward(self, x):
        for layer in range(self.layers):
            x = torch.matmul(self.kernels[layer], x)
            x = torch.matmul(self.u[layer][0], x)
        return x
""") == [("ZG301", 13), ("ZG301", 14)]


def test_columns_are_read_unhooked_beside_a_matrix() -> None:
    """A `ParameterList` of columns (`torch.empty(n, 1)`, one element per feature) is read unhooked like the list
    of matrices beside it."""
    assert _zg3("""
class CrossNet(nn.Module):
    def __init__(self, n, layers):
        super().__init__()
        self.kernels: nn.Module = nn.ParameterList(
            [nn.Parameter(nn.init.xavier_normal_(torch.empty(n, n))) for _ in range(layers)]
        )
        self.bias: nn.Module = nn.ParameterList(
            [nn.Parameter(nn.init.zeros_(torch.empty(n, 1))) for _ in range(layers)]
        )
        self.layers = layers

    def forward(self, x):
        for layer in range(self.layers):
            x = torch.matmul(self.kernels[layer], x) + self.bias[layer]
        return x
""") == [("ZG301", 15), ("ZG301", 15)]


def test_statistics_put_in_a_dict_bare_are_read_unhooked() -> None:
    """Tensors put in a `ParameterDict` without `nn.Parameter` are its parameters too: per-channel statistics
    (`torch.zeros((1, c, 1, 1))`), numbers (`torch.tensor(0.0)`) and a table are read unhooked alike; the holder's
    own matrix (`self.proj`) is gathered by the holder's hook."""
    assert _zg3("""
class Student(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(n, n))
        self.mean_std: nn.ParameterDict = nn.ParameterDict(
            {"mean": torch.zeros((1, c, 1, 1)), "std": torch.zeros((1, c, 1, 1))},
        )
        self.quantiles: nn.ParameterDict = nn.ParameterDict({"qa": torch.tensor(0.0), "qb": torch.tensor(0.0)})
        self.tables = nn.ParameterDict({"a": torch.randn(n, n)})

    def forward(self, x):
        x = (x @ self.proj - self.mean_std["mean"]) / self.mean_std["std"]
        return x * self.quantiles["qa"] + self.quantiles["qb"] + x @ self.tables["a"]
""") == [("ZG301", 13), ("ZG301", 13), ("ZG301", 14), ("ZG301", 14), ("ZG301", 14)]
