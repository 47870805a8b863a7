"""Safe look-alikes of hazards, each from a false-positive pattern found by judging zgen's findings on real
model code (bench/corpus/reviewed.tsv), next to the hazard it resembles, which must still be found."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import deepspeed
import torch
import torch.nn.functional as F
from torch import nn
"""

# (pattern, code that must fire, hazard, safe look-alike that must stay clean)
CASES = {
    "bias-of-a-layer-read-in-forward": ("ZG301", """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return F.linear(x, self.proj.weight, None)
""", """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) + self.proj.bias
"""),
    "bias-read-on-the-built-model": ("ZG109", """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        return self.qkv(x)

    def fuse(self):
        return self.qkv.weight.data.clone()
""", """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        # a small parameter read in forward context: kept gathered once fetched (outside forward it is not)
        return self.qkv(x) + self.qkv.bias.data.clone()
"""),
    "bias-of-a-passed-in-layer": ("ZG109", """
class Head(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.lin = nn.Linear(d, n)

    def forward(self, x):
        return self.lin(x)

    def resize(self, layer, n):
        new = nn.Linear(4, n)
        new.weight.data[:n] = layer.weight.data[:n]
        return new
""", """
class Head(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.lin = nn.Linear(d, n)

    def forward(self, x):
        return self.lin(x)

    def resize(self, layer, n):
        # only the dtype of the passed-in layer's bias (a read of its data would see the placeholder)
        return nn.Linear(4, n).to(layer.bias.dtype)
"""),
    "detach-in-place-is-no-write": ("ZG101", """
class Rep(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv1 = nn.Conv2d(d, d, 3)
        self.conv2 = nn.Conv2d(d, d, 1)

    def forward(self, x):
        return self.conv1(x) + self.conv2(x)

    def fuse(self):
        for p in self.parameters():
            p.zero_()
""", """
class Rep(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conv1 = nn.Conv2d(d, d, 3)
        self.conv2 = nn.Conv2d(d, d, 1)

    def forward(self, x):
        return self.conv1(x) + self.conv2(x)

    def fuse(self):
        for p in self.parameters():
            p.detach_()
"""),
    "member-named-like-a-class-is-called-not-built": ("ZG106", """
class Embedding(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.n, self.d = n, d

    def forward(self, x):
        return nn.Embedding(self.n, self.d)(x.long())
""", """
class Embedding(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.Embedding = nn.Embedding(n, d)
        self.Linear = nn.Linear(d, d)

    def forward(self, x):
        return self.Linear(self.Embedding(x.long()))
"""),
    "helper-writes-a-copy-of-its-argument": ("ZG101", """
def attention(x, w, b=None):
    if b is not None:
        b[:4].zero_()
    return F.linear(x, w, b)


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        return attention(x, self.qkv.weight.t().t(), b=self.qkv.bias)
""", """
def attention(x, w, b=None):
    if b is not None:
        b = b.clone()
        b[:4].zero_()
    return F.linear(x, w, b)


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        return self.qkv(x) + attention(x, x, b=self.qkv.bias)
"""),
    "private-helper-called-only-where-gathered": ("ZG101", """
class Model(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.head = nn.Linear(d, n)

    def forward(self, x):
        return self.head(x)

    def resize(self, n):
        new = nn.Linear(4, n)
        with deepspeed.zero.GatheredParameters([self.head.weight], modifier_rank=0):
            self._copy(new, self.head, n)
        self._copy(new, self.head, n)
        self.head = new

    def _copy(self, new, old, n):
        old.weight.data[:n, :] = new.weight.data[:n, :]
""", """
def is_deepspeed_zero3_enabled():
    return False


class Model(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.head = nn.Linear(d, n)

    def forward(self, x):
        return self.head(x)

    def resize(self, n):
        new = nn.Linear(4, n)
        if is_deepspeed_zero3_enabled():
            with deepspeed.zero.GatheredParameters([self.head.weight], modifier_rank=0):
                self._copy(new, self.head, n)
        else:
            self._copy(new, self.head, n)
        self.head = new

    def _copy(self, new, old, n):
        old.weight.data[:n, :] = new.weight.data[:n, :]
"""),
    "vector-parameter-sized-by-a-call": ("ZG109", """
class Head(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.decoder = nn.Linear(w.size(1), w.size(0), bias=False)
        self.table = nn.Parameter(torch.zeros(w.size()))

    def forward(self, x):
        return self.decoder(x) + self.table.sum()


class Model(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.head = Head(w)

    def forward(self, x):
        return self.head(x)

    def resize(self, n):
        return self.head.table.data[:n].clone()
""", """
class Head(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.decoder = nn.Linear(w.size(1), w.size(0), bias=False)
        self.bias = nn.Parameter(torch.zeros(w.size(0)))

    def forward(self, x):
        return self.decoder(x) + self.bias


class Model(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.head = Head(w)

    def forward(self, x):
        # a vector parameter read in forward context stays gathered once fetched
        return self.head(x) + self.head.bias.data[:1].clone()
"""),
    "write-into-a-module-this-method-rebuilt": ("ZG101", """
class Emb(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.pos = nn.Embedding(n, d)

    def forward(self, x):
        return self.pos(x)


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.emb = Emb(n, d)

    def forward(self, x):
        return self.emb(x)

    def resize(self, rows):
        with torch.no_grad():
            self.emb.pos.weight[:4] = rows
        self.emb.pos = nn.Embedding(8, 4)
""", """
class Emb(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.pos = nn.Embedding(n, d)

    def forward(self, x):
        return self.pos(x)


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.emb = Emb(n, d)

    def forward(self, x):
        return self.emb(x)

    def resize(self, rows):
        self.emb.pos = nn.Embedding(8, 4)
        with torch.no_grad():
            self.emb.pos.weight[:4] = rows
"""),
    "optional-input-asserted-by-configuration": ("ZG205", """
class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, d)


class Layer(nn.Module):
    def __init__(self, d, cross):
        super().__init__()
        self.attn = nn.Linear(d, d)
        self.cross = Tower(d) if cross else None

    def forward(self, x, src=None):
        if self.training:
            assert src is not None
        x = self.attn(x)
        if src is not None:
            x = x + self.cross(src)
        return x
""", """
class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, d)


class Layer(nn.Module):
    def __init__(self, d, cross):
        super().__init__()
        self.attn = nn.Linear(d, d)
        self.cross = Tower(d) if cross else None

    def forward(self, x, src=None):
        if self.cross is not None:
            assert src is not None, "cross attention needs a source"
        else:
            assert src is None
        x = self.attn(x)
        if src is not None:
            x = x + self.cross(src)
        return x
"""),
    "scaled-vector-parameter-read-on-the-built-model": ("ZG109", """
class Mix(nn.Module):
    def __init__(self, dim, init_values=1e-5):
        super().__init__()
        self.mix = nn.Parameter(init_values * torch.randn(dim, dim))

    def forward(self, x):
        return x @ self.mix


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = Mix(dim)

    def forward(self, x):
        return self.scale(x)

    def fuse(self):
        return self.scale.mix.data.clone()
""", """
class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim, 1, 1))

    def forward(self, x):
        return x * self.gamma


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = LayerScale(dim)

    def forward(self, x):
        # a vector parameter read in forward context stays gathered once fetched
        return self.scale(x) + self.scale.gamma.data.clone()
"""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hazard_is_found(case):
    code, hazard, _safe = CASES[case]
    found = [f.code for f in check_source("m.py", HEAD + textwrap.dedent(hazard))]
    assert code in found, (case, found)


@pytest.mark.parametrize("case", sorted(CASES))
def test_look_alike_is_clean(case):
    _code, _hazard, safe = CASES[case]
    found = [(f.code, f.line) for f in check_source("m.py", HEAD + textwrap.dedent(safe))]
    assert found == [], (case, found)


def test_a_bias_whose_built_size_is_known_large_is_still_read_partitioned():
    body = """
class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out = nn.Linear(d, 250000)

    def forward(self, x):
        return F.linear(x, self.out.weight.t().t(), self.out.bias)
"""
    found = [f.message for f in check_source("m.py", HEAD + textwrap.dedent(body)) if f.code == "ZG301"]
    assert any("self.out.bias" in m for m in found), found


def test_a_copy_made_in_one_branch_does_not_cover_a_write_after_it():
    body = """
def attention(x, b, clone):
    if clone:
        b = b.clone()
    b.zero_()
    return x + b


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        return self.qkv(x) + attention(x, self.qkv.bias, False)
"""
    assert "ZG101" in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


def test_a_public_method_called_where_gathered_may_still_be_called_by_the_training_loop():
    body = """
class Model(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.head = nn.Linear(d, n)

    def forward(self, x):
        return self.head(x)

    def resize(self, n):
        with deepspeed.zero.GatheredParameters([self.head.weight], modifier_rank=0):
            self.clamp(n)

    def clamp(self, n):
        self.head.weight.data[:n, :] = 0.0
"""
    assert "ZG101" in [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


def test_a_module_rebuilt_by_a_factory_of_another_file_is_fresh(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(textwrap.dedent("""
        from torch import nn

        def create_conv2d(cin, cout, k, bias=True):
            return nn.Conv2d(cin, cout, k, bias=bias)
        """))
    model = textwrap.dedent("""
        from torch import nn
        from .layers import create_conv2d

        class Rep(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = create_conv2d(c, c, 3)
                self.c = c

            def forward(self, x):
                return self.conv(x)

            def fuse(self, kernel, bias):
                {first}
                self.conv.weight.data = kernel
                {second}
        """)
    rebuilt = model.format(first="self.conv = create_conv2d(self.c, self.c, 3)", second="pass")
    (pkg / "model.py").write_text(rebuilt)
    assert [f.code for f in check_source(str(pkg / "model.py"), rebuilt)] == []
    written_first = model.format(first="pass", second="self.conv = create_conv2d(self.c, self.c, 3)")
    (pkg / "model.py").write_text(written_first)
    assert "ZG101" in [f.code for f in check_source(str(pkg / "model.py"), written_first)]


def test_a_bias_inherited_from_a_torch_layer_in_another_file_is_a_vector(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Conv2dSame(nn.Conv2d):
            def __init__(self, c):
                super().__init__(c, c, 3)

        class BiasTable(nn.Conv2d):
            def __init__(self, c):
                super().__init__(c, c, 3)
                self.bias = nn.Parameter(torch.randn(c, c))
        """))
    model = textwrap.dedent("""
        from torch import nn
        from .layers import {layer}

        class Block(nn.Module):
            def __init__(self, c, same=True):
                super().__init__()
                self.conv = {layer}(c) if same else nn.Conv2d(c, c, 3)

            def forward(self, x):
                return self.conv(x) + self.conv.bias.data.clone()  # read in forward context
        """)
    inherited = model.format(layer="Conv2dSame")
    (pkg / "model.py").write_text(inherited)
    assert [f.code for f in check_source(str(pkg / "model.py"), inherited)] == []
    own = model.format(layer="BiasTable")
    (pkg / "model.py").write_text(own)
    assert "ZG301" in [f.code for f in check_source(str(pkg / "model.py"), own)]
