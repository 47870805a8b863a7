"""A class derived from a library's base class zgen cannot read (`mmengine.model.BaseModule`, not installed beside
the checked file) is a module when it builds torch layers on `self` (or registers a buffer) and defines `forward`:
only a module keeps a layer as a child. Layers of such a library inside a torch container (`nn.Sequential(
ConvModule(8, 32, 7), ...)`) are modules of parameters we cannot tell, so calling the container may gather. A
subclass of an unreadable base that builds no layer, or defines no `forward`, stays a plain object.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn
from mmengine.model import BaseModule
from mmengine.runner import BaseLoop
from mmcv.cnn import ConvModule


class FlowNet(BaseModule):
    def __init__(self):
        super().__init__()
        self.basic = nn.Sequential(ConvModule(8, 32, 7), ConvModule(32, 2, 7))
        self.register_buffer("mean", torch.zeros(1, 3, 1, 1))

    def forward(self, a, b):
        return self.basic(torch.cat([a, b], 1) - self.mean)


class VideoNet(BaseModule):
    def __init__(self):
        super().__init__()
        self.flow = FlowNet()
        self.fusion = nn.Conv2d(128, 64, 3)
        self.mirrored = False

    def check_mirror(self, frames):
        self.mirrored = False
        first, second = torch.chunk(frames, 2, dim=1)
        if torch.norm(first - second.flip(1)) == 0:
            self.mirrored = True

    def forward(self, frames):
        self.check_mirror(frames)
        backward = self.flow(frames[:, :-1], frames[:, 1:])
        if self.mirrored:
            forward = backward.flip(1)
        else:
            forward = self.flow(frames[:, 1:], frames[:, :-1])
        return self.fusion(torch.cat([forward, backward], 1))
"""


def findings(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_a_module_of_an_unreadable_base_gated_on_this_ranks_data():
    assert findings(SOURCE) == [("ZG203", 35)]


def test_a_subclass_of_an_unreadable_base_without_forward_is_a_plain_object():
    plain = SOURCE.replace("    def forward(self, a, b):\n        return", "    def flow_of(self, a, b):\n        return")
    assert findings(plain) == []


def test_a_loop_of_an_unreadable_base_that_builds_no_layer_is_no_module():
    source = SOURCE + """

class EvalLoop(BaseLoop):
    def __init__(self, runner, dataloader):
        super().__init__(runner, dataloader)
        self.best = None

    def forward(self, batch):
        return self.runner.model.val_step(batch)
"""
    # (the loop is no module: its `forward` holds none of its own layers, and no finding comes from it)
    assert [line for _code, line in findings(source) if line > 39] == []
