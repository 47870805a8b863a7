"""Supernet layers that run a sampled path: the sample is drawn in another method and kept on `self`.

* `self[self._sampled](x)` in a class whose `__getitem__` hands out its submodules (`self._modules[str(idx)]`), the
  sample drawn by an object's own `.random()`: which module runs is a draw of this host (ZG202).
* The sample handed to a helper method (`self.forward_path(self._sample_idx, x)`) that picks `self[...]` with it.
* A loop over a module list of classes no constructor names (`nn.ModuleList(self._replicate(blocks, n))`) that
  leaves at the sampled depth.
Look-alikes: a generator seeded with a constant (`random.Random(0).random()`) draws alike everywhere, a class whose
`__getitem__` hands out tensors picks no module, and a depth fixed by the configuration decides nothing.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

CHOICE = """
import random
import torch
from torch import nn


class Choice(nn.Module):
    def __init__(self, candidates, space):
        super().__init__()
        for name, module in candidates.items():
            self.add_module(name, module)
        self.space = space
        self._sampled = None

    def __getitem__(self, idx):
        return self._modules[str(idx)]

    def resample(self):
        self._sampled = {draw}

    def forward(self, x):
        return self[self._sampled](x)


class Proxyless(Choice):
    def resample(self):
        probs = torch.softmax(self.alpha, -1)
        self._sample_idx = int(torch.multinomial(probs, 1)[0].item())

    def forward(self, x):
        return self.forward_path(self._sample_idx, x)

    def forward_path(self, index, x):
        return self[self.names[index]](x)


class Repeat(nn.Module):
    def __init__(self, blocks, depths):
        super().__init__()
        self.blocks = nn.ModuleList(self._replicate(blocks, max(depths)))
        self.depths = depths
        self._depth = max(depths)

    def resample(self):
        self._depth = {depth}

    def forward(self, x):
        for i, block in enumerate(self.blocks, start=1):
            x = block(x)
            if i >= self._depth:
                break
        return x
"""


def _zg2(source: str) -> list[tuple[str, int]]:
    found = check_source("supernet.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


def test_paths_sampled_per_host_pick_the_modules_that_run():
    source = CHOICE.format(draw="self.space.random()", depth="random.choice(self.depths)")
    assert _zg2(source) == [("ZG202", 22), ("ZG202", 34), ("ZG202", 50)]


def test_a_seeded_generator_a_tensor_item_and_a_fixed_depth_decide_nothing():
    source = CHOICE.format(draw="random.Random(0).random()", depth="max(self.depths)")
    source = source.replace("class Proxyless(Choice):", "class Proxyless(nn.Module):")
    source = source.replace("        probs = torch.softmax(self.alpha, -1)\n", "        probs = self.alpha\n")
    source = source.replace("int(torch.multinomial(probs, 1)[0].item())", "0")
    assert _zg2(source) == []
