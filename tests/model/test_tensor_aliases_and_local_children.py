"""A helper writing a parameter through a local bound to its storage, and a class of an unreadable base keeping
modules of this file.

* `def fill_up_weights(up): w = up.weight.data; ...; w[0, 0, i, j] = v` writes `up`'s weight: handing it a
  built child (`for m in self.modules(): fill_up_weights(m)` in an `init_weights` no constructor runs) writes
  placeholders (ZG103). A helper that only reads the local's size (`w.size(2)`) writes nothing.
* A class derived from a library base zgen cannot read (`mmengine.model.BaseModule`) that keeps on `self` an
  instance of a module class of this file (`self.up = Upsample(...)`) and defines `forward` is a module.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NECK = """
import math
from torch import nn
from mmengine.model import BaseModule


def fill_up_weights(up):
    w = up.weight.data
    f = math.ceil(w.size(2) / 2)
    for i in range(w.size(2)):
        w[0, 0, i, 0] = 1 - math.fabs(i / f - 1)


def kernel_size(up):
    w = up.weight.data
    return w.size(2)


class Upsample(BaseModule):
    def __init__(self, channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(channels, channels, 4, stride=2, groups=channels)

    def forward(self, x):
        return self.deconv(x)


class Neck(BaseModule):
    def __init__(self, channels=64):
        super().__init__()
        self.up = Upsample(channels)

    def init_weights(self):
        for m in self.modules():
            if isinstance(m, nn.ConvTranspose2d):
                fill_up_weights(m)

    def forward(self, x):
        return self.up(x)
"""


def _zg1(source: str) -> list[tuple[str, int]]:
    found = check_source("neck.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_a_helper_writing_through_a_local_bound_to_the_weight():
    assert _zg1(NECK) == [("ZG103", 36)]


def test_a_helper_reading_only_the_locals_size_writes_nothing():
    sized = NECK.replace("                fill_up_weights(m)", "                print(kernel_size(m))")
    assert [f for f in _zg1(sized) if f[0] == "ZG103"] == []


def test_a_class_keeping_only_plain_objects_on_an_unread_base_is_no_module():
    plain = NECK.replace("self.up = Upsample(channels)", "self.up = dict(channels=channels)").replace(
        "return self.up(x)", "return x")
    assert _zg1(plain) == []
