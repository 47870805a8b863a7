"""A property of a child's class that returns the parameter of an item of one of its containers
(`@property def last_dec_layer(self): return self.decoders[-1].weight`) reads that parameter where it is read: a
parent's forward reading `self.enc_dec.last_dec_layer` reads a grandchild's weight with no hook of it running
(ZG301, `params._helper_reads`; the child's class in the same file: the text pre-filter knows the file's own
properties only). A property handing back the item itself (a module, called), or only the dtype of
an item's weight, is no read of a parameter."""

from __future__ import annotations

from package_check import found_in_package

CHILD = """
from torch import nn


class EncDec(nn.Module):
    def __init__(self, d, c):
        super().__init__()
        self.decoders = nn.ModuleList([nn.Conv2d(d, d, 3) for _ in range(3)] + [nn.Conv2d(d, c, 1)])

    @property
    def last_dec_layer(self):
        return self.decoders[-1].weight

    @property
    def last_layer(self):
        return self.decoders[-1]

    @property
    def dtype(self):
        return self.decoders[0].weight.dtype

    def forward(self, x):
        for d in self.decoders:
            x = d(x)
        return x
"""

HAZARD = CHILD + """
import torch


class VAE(nn.Module):
    def __init__(self, d, c):
        super().__init__()
        self.enc_dec = EncDec(d, c)

    def forward(self, x):
        out = self.enc_dec(x)
        w = self.enc_dec.last_dec_layer
        return out, torch.autograd.grad(out.sum(), w, retain_graph=True)[0]
"""

LOOK_ALIKE = CHILD + """


class Safe(nn.Module):
    def __init__(self, d, c):
        super().__init__()
        self.enc_dec = EncDec(d, c)

    def forward(self, x):
        x = x.to(self.enc_dec.dtype)
        return self.enc_dec.last_layer(self.enc_dec(x))
"""


def test_a_property_returning_a_container_item_s_weight_is_read_in_the_parent_s_forward(tmp_path):
    assert found_in_package(tmp_path, {"model.py": HAZARD}, "model.py", prefix="ZG3") == [("ZG301", 37)]


def test_a_property_returning_the_item_or_its_dtype_stays_clean(tmp_path):
    assert found_in_package(tmp_path, {"model.py": LOOK_ALIKE}, "model.py", prefix="ZG3") == []
