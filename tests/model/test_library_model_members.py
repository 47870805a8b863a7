"""What is done to models a library builds, and to the model a function builds.

* `self.model = SwinTransformer(...)` of a library zgen cannot read, named as modules are and built from a class
  named as models are, into which `__init__` loads a state it read (`self.model.load_state_dict(sd)`), is a model
  built before: the load writes placeholders (ZG103). An optimizer's state loaded (`self.opt = Lamb(...)`) is none.
* The tensors of the state dict of a model the same function built (`model.state_dict().items()`) are placeholders
  (ZG108); its keys alone (`model.state_dict().keys()`) are whole.
* A library's pretrained model (`lm_q = AutoModel.from_pretrained(path)`, loaded under `zero.Init` where the library
  sets it up) deep-copied in the same function copies placeholders (ZG105); the same model bound twice is no copy.
* torch's post-training quantisation handed a built model (`torch.quantization.quantize_dynamic(model, ...)`) reads
  every weight (ZG109); preparing it (`torch.quantization.prepare`) only inserts observers.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, prefix: str = "ZG1") -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source)) if f.code.startswith(prefix)]


ENCODER = """
import torch
from torch import nn
from timm.models.swin_transformer import SwinTransformer
from timm.optim import Lamb


class SwinEncoder(nn.Module):
    def __init__(self, path, optimizer_path):
        super().__init__()
        self.model = SwinTransformer(img_size=224, num_classes=0)
        self.model.load_state_dict(torch.load(path))
        self.opt = Lamb([torch.zeros(1)])
        self.opt.load_state_dict(torch.load(optimizer_path))

    def forward(self, x):
        return self.model(x)
"""


def test_a_state_loaded_into_a_library_model_built_in_init_writes_placeholders() -> None:
    assert _found(ENCODER) == [("ZG103", 12)]


BUILDER = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        return self.head(self.body(x))


def head_values(d):
    model = Net(d)
    return {k: v.clone() for k, v in model.state_dict().items() if k.startswith("head.")}


def head_keys(d):
    model = Net(d)
    return [k for k in model.state_dict().keys() if k.startswith("head.")]
"""


def test_the_tensors_of_a_just_built_models_state_are_placeholders_but_its_keys_are_not() -> None:
    assert _found(BUILDER) == [("ZG108", 18)]


QUANTISED = """
import torch
from torch import nn


def quantise(model: nn.Module):
    return torch.quantization.quantize_dynamic(model, {nn.Linear}, inplace=False)


def observe(model: nn.Module):
    model.qconfig = torch.quantization.get_default_qconfig("fbgemm")
    return torch.quantization.prepare(model, inplace=False)
"""


def test_post_training_quantisation_reads_every_weight_but_preparing_does_not() -> None:
    assert _found(QUANTISED) == [("ZG109", 7)]


PRETRAINED = """
import copy

from torch import nn
from transformers import AutoModel


class DenseModel(nn.Module):
    def __init__(self, lm_q, lm_p):
        super().__init__()
        self.lm_q = lm_q
        self.lm_p = lm_p

    @classmethod
    def build(cls, path, untie):
        lm_q = AutoModel.from_pretrained(path)
        lm_p = copy.deepcopy(lm_q) if untie else lm_q
        return cls(lm_q, lm_p)

    @classmethod
    def build_tied(cls, path):
        lm_q = AutoModel.from_pretrained(path)
        lm_p = lm_q
        return cls(lm_q, lm_p)

    def forward(self, q, p):
        return self.lm_q(q), self.lm_p(p)
"""


def test_a_pretrained_library_model_deep_copied_in_the_function_that_loaded_it() -> None:
    assert _found(PRETRAINED) == [("ZG105", 17)]
