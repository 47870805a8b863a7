"""A plain class's method that hands back a model it holds, used where the model would be.

The GAN zoo's `BaseGAN` keeps `self.netG` and reaches it through `getOriginalG()`, which returns
`self.netG.module` when the network is wrapped and `self.netG` otherwise; it deep-copies and saves what that
getter returns. Both see the partitioned placeholders, as with `self.netG` itself. A method returning something
else is no such getter.
"""

from __future__ import annotations

from zgen.model import check_source

from tests.model.package_check import TINY_NET

GAN = """
import copy

import torch
from torch import nn


""" + TINY_NET + """

class GAN:
    def __init__(self):
        self.netG = Net()
        self.steps = 0

    def getOriginalG(self):
        if isinstance(self.netG, nn.DataParallel):
            return self.netG.module
        return self.netG

    def get_steps(self):
        return self.steps

    def build_average(self):
        self.avgG = copy.deepcopy(self.getOriginalG())

    def state(self):
        return {"netG": self.getOriginalG().state_dict(), "steps": copy.deepcopy(self.get_steps())}
"""


def test_what_a_getter_hands_back_is_the_held_model():
    found = [(f.code, f.line) for f in check_source("gan.py", GAN) if f.code.startswith("ZG1")]
    assert found == [("ZG105", 31), ("ZG108", 34)]
