"""Children a configuration builds (issue 20, blind28's torchtitan misses).

`self.wqkv = config.wqkv.build()` makes a layer of a class the file does not name: it may own parameters, as a
child handed in does. A fused forward that passes its weight straight to an autograd function without calling the
child reads a partition (ZG301). Look-alike: the child called normally, its weight read only for its dtype. A model
a factory makes (`timm.create_model(name)`, `instantiate(cfg.encoder)`) is a module too: run only with an optional
input, it is ZG205; a tokenizer the same factory makes is none.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

FUSED = """
import torch
import torch.nn.functional as F
from torch import nn


class GatheredLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.flatten(0, -2).t() @ x.flatten(0, -2), None


class FusedQKV(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wqkv = config.wqkv.build()

    def forward(self, x):
        {body}
"""


def _zg3(body: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(FUSED).replace("{body}", body)
    return [(f.code, f.line) for f in check_source("fused.py", source) if f.code.startswith("ZG3")]


def test_a_weight_of_a_configured_child_passed_by_hand_is_read_ungathered():
    # (the bias too: the child never runs, so no hook ever gathered it, small as it is)
    assert _zg3("return GatheredLinear.apply(x, self.wqkv.weight, self.wqkv.bias)") == [("ZG301", 25), ("ZG301", 25)]


def test_the_configured_child_called_as_a_module_is_gathered_by_its_hooks():
    assert _zg3("return self.wqkv(x.to(self.wqkv.weight.dtype))") == []


FACTORIES = """
import timm
from hydra.utils import instantiate
from torch import nn


class Captioner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = timm.create_model(cfg.name, pretrained=True)
        self.encoder = instantiate(cfg.encoder)
        self.tokenizer = instantiate(cfg.tokenizer)

    def forward(self, x, extra=None, text=None):
        h = self.backbone(x)
        if extra is not None:
            h = h + self.encoder(extra)
        if text is not None:
            h = h + self.tokenizer(text)
        return h
"""


def test_a_model_a_factory_makes_is_a_module_an_optional_input_may_skip():
    found = [(f.code, f.line) for f in check_source("captioner.py", textwrap.dedent(FACTORIES)) if f.code.startswith("ZG2")]
    assert found == [("ZG205", 16)]
