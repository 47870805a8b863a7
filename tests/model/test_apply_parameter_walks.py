"""An `apply` callback that walks the visited module's parameters (issue 20: `self.apply(partial(init_fn, ...))`).

`zero.Init` wraps `nn.Module.apply` so that each visited module's OWN parameters (`parameters(recurse=False)`)
are gathered around the callback. `for name, p in module.named_parameters()` recurses into the module's children,
whose parameters stay partitioned at that visit: writing them writes placeholders. A walk run for every module
writes each parameter again at its owner's own, gathered visit, so the writes lost are those only an ancestor's
visit makes: the walk runs for classes with children (`if isinstance(module, Block):`) or picks a child's path
(`if name == "out_proj.weight":`), ZG103. A walk for torch layers without children, with `recurse=False`, run for
every module alike, or reading sizes only is clean.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import math
from functools import partial
import torch
from torch import nn


def _init_weights(module, n_layer, std=0.02):
    if isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=std)
    {walk}


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.in_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        return self.out_proj(self.in_proj(x))


class LM(nn.Module):
    def __init__(self, d, n_layer, v):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.layers = nn.ModuleList([Block(d) for _ in range(n_layer)])
        self.apply(partial(_init_weights, n_layer=n_layer))

    def forward(self, ids):
        h = self.emb(ids)
        for layer in self.layers:
            h = layer(h)
        return h
"""

RESCALE = """for name, p in module.named_parameters():
        if name in ["out_proj.weight", "fc2.weight"]:
            nn.init.kaiming_uniform_(p, a=math.sqrt(5))"""


def _zg103(walk: str) -> list[int]:
    source = textwrap.dedent(SOURCE).replace("{walk}", walk)
    return [f.line for f in check_source("lm.py", source) if f.code == "ZG103"]


def test_a_rescale_over_named_parameters_in_a_partial_callback_writes_childrens_parameters():
    # `out_proj.weight` is yielded when `Block` is visited: a child's parameter, not gathered by `apply`
    assert _zg103(RESCALE) == [13]


METHOD = """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.apply(self._init)

    def _init(self, m):
        {test}
            for p in m.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

    def forward(self, x):
        return self.blocks(x)
"""


def _method_zg103(test: str) -> list[int]:
    source = textwrap.dedent(METHOD).replace("{test}", test)
    return [f.line for f in check_source("net.py", source) if f.code == "ZG103"]


def test_a_walk_run_for_a_class_with_children_in_a_method_callback():
    # Only the visit of each `Block` runs the walk; its `fc` parameters are not gathered there, and the visit of
    # `fc` itself (a Linear) does not take this branch: xavier is never applied under ZeRO-3
    assert _method_zg103("if isinstance(m, Block):") == [23]


def test_a_walk_run_for_every_module_alike_is_clean():
    # each parameter is written again, gathered, when its owner is visited
    assert _method_zg103("if True:") == []


def test_the_walk_of_a_torch_layer_without_children_is_clean():
    guarded = RESCALE.replace("for name, p", "if isinstance(module, (nn.Linear, nn.Conv1d)):\n        for name, p")
    guarded = guarded.replace("\n        if name", "\n            if name").replace("\n            nn.init", "\n                nn.init")
    assert _zg103(guarded) == []


def test_a_walk_of_own_parameters_only_is_clean():
    assert _zg103(RESCALE.replace("named_parameters()", "named_parameters(recurse=False)")) == []


def test_a_walk_that_reads_sizes_is_clean():
    assert _zg103("for p in module.parameters():\n        print(p.shape)") == []
