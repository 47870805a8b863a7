"""A helper that lists a module's parameters (`named_params_and_buffers(module)`) hands them to whoever walks its
result: copying a checkpoint into them writes placeholders of a model built under `zero.Init` (EDM's resume through
`misc.copy_params_and_buffers(src_module=..., dst_module=net)`, handed by keyword)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

TRAIN = """
import torch
from torch import nn


def named_params_and_buffers(module):
    return list(module.named_parameters()) + list(module.named_buffers())


def copy_params_and_buffers(src_module, dst_module, require_all=False):
    src_tensors = dict(named_params_and_buffers(src_module))
    for name, tensor in named_params_and_buffers(dst_module):
        if name in src_tensors:
            tensor.copy_(src_tensors[name])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)


def training_loop(resume):
    net = Net()
    copy_params_and_buffers(src_module=resume["ema"], dst_module=net, require_all=False)
    return net
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("train.py", textwrap.dedent(source))]


def test_a_copy_into_what_a_listing_helper_hands_back_writes_placeholders():
    assert ("ZG103", 28) in found(TRAIN)


def test_a_listing_helper_of_buffers_alone_hands_back_no_parameter():
    source = TRAIN.replace("return list(module.named_parameters()) + list(module.named_buffers())",
                           "return list(module.named_buffers())")
    assert ("ZG103", 28) not in found(source)
