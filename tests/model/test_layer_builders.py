"""Layers a library's builder makes.

`self.bn = build_norm_layer(cfg, c)[1]`, `self.conv = build_conv_layer(cfg, c, c, 3)` (OpenMMLab's builders,
not installed beside the file) make a layer of a class zgen cannot tell: initialising it in `__init__` after it
was built writes a partitioned child (ZG103). A builder of layers without parameters (`build_activation_layer`,
`build_dropout`) makes none.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

BUILT = """
from mmcv.cnn import build_activation_layer, build_conv_layer, build_norm_layer
from mmengine.model import BaseModule, constant_init


class PointConv(BaseModule):
    def __init__(self, in_channels, out_channels, norm_cfg=None, act_cfg=None):
        super().__init__()
        self.conv = build_conv_layer(None, in_channels, out_channels, 1)
        self.bn = build_norm_layer(norm_cfg, out_channels)[1]
        self.act = build_activation_layer(act_cfg)
        self.init_weights()

    def init_weights(self):
        constant_init(self.bn, val=1, bias=0)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))
"""

def _zg1(source: str) -> list[tuple[str, int]]:
    found = check_source("head.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_a_layer_a_builder_made_initialised_after_it_was_built():
    assert _zg1(BUILT) == [("ZG103", 15)]


def test_a_builder_of_layers_without_parameters_makes_none():
    activation = BUILT.replace("constant_init(self.bn, val=1, bias=0)", "constant_init(self.act, val=1, bias=0)")
    assert _zg1(activation) == []
