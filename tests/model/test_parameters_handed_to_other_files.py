"""A module handing its children's parameters to a helper of another file of the program (an EMA keeper's
constructor and methods, a free function) that reads or writes their values: the helper is read in its own file, so
the hazard is reported at the call, in `__init__` once the child was built and in methods the training loop runs."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

EMA = '''
import torch


class ExponentialMovingAverage:
    def __init__(self, parameters, decay):
        self.decay = decay
        self.shadow = [p.clone().detach() for p in parameters if p.requires_grad]

    def update(self, parameters):
        with torch.no_grad():
            for s, p in zip(self.shadow, parameters):
                s.sub_((1 - self.decay) * (s - p))

    def copy_to(self, parameters):
        for s, p in zip(self.shadow, parameters):
            p.data.copy_(s.data)


def blend(shadow, parameters, decay):
    for s, p in zip(shadow, parameters):
        s.mul_(decay).add_(p, alpha=1 - decay)
'''

MODEL = '''
import itertools

import torch
from torch import nn

from . import ema
from .ema import blend


class Backbone(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class Diffusion(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.backbone = Backbone(d)
        self.noise = Backbone(d)
        self.ema = ema.ExponentialMovingAverage(
            itertools.chain(self.backbone.parameters(), self.noise.parameters()), decay=0.999)
        self.shadow = [torch.zeros(d, d)]

    def forward(self, x):
        return self.backbone(x) + self.noise(x)

    def optimizer_step(self):
        self.ema.update(itertools.chain(self.backbone.parameters(), self.noise.parameters()))
        blend(self.shadow, self.parameters(), 0.9)

    def on_validation_epoch_start(self):
        self.ema.copy_to(self.backbone.parameters())
'''

# The look-alikes: the average kept before any child is built, and updated from a layer the method builds itself.
SAFE = '''
from torch import nn

from .ema import ExponentialMovingAverage


class Probe(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ema = ExponentialMovingAverage([], decay=0.9)
        self.head = nn.Linear(d, d)

    def forward(self, x):
        return self.head(x)

    def calibrate(self, d):
        scratch = nn.Linear(d, d)
        self.ema.update(scratch.parameters())
'''


def test_a_childs_parameters_handed_to_another_files_helper_are_reported_at_the_call(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"ema.py": EMA, "model.py": MODEL}, "model.py", prefix="ZG1")
    assert ("ZG109", 25) in found  # the average's constructor clones the built backbone's placeholders
    assert ("ZG109", 33) in found  # its update, from a method the training loop runs
    assert ("ZG109", 34) in found  # a free function of the other file, handed every parameter of the module
    assert ("ZG101", 37) in found  # copy_to writes the averages into the partitioned parameters


def test_parameters_handed_before_any_child_was_built_or_of_a_local_layer_are_not(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"ema.py": EMA, "probe.py": SAFE}, "probe.py", prefix="ZG1") == []


REGULARIZE = '''
import torch


def embedded_dropout(embed, words, dropout=0.1):
    mask = embed.weight.new_empty((embed.weight.size(0), 1)).bernoulli_(1 - dropout)
    return torch.nn.functional.embedding(words, mask * embed.weight, embed.padding_idx)


def padded(embed, words):
    return words.masked_fill(words == embed.padding_idx, 0)
'''

LM = '''
from torch import nn

from .regularize import embedded_dropout, padded


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, words):
        emb = embedded_dropout(self.encoder, padded(self.encoder, words))
        return self.decoder(emb)
'''


def test_a_child_handed_in_forward_to_another_files_function_computing_with_its_weight(tmp_path: Path) -> None:
    # `padded` reads only the table's `padding_idx`, a setting: no parameter
    found = found_in_package(tmp_path, {"regularize.py": REGULARIZE, "lm.py": LM}, "lm.py", prefix="ZG3")
    assert found == [("ZG301", 14)]


ACT = '''
import torch


def continuous_act(decoder, x):
    return decoder(x) + decoder.log_std.exp()
'''

POLICY = '''
import torch
from torch import nn

from .act import continuous_act


class Decoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.head = nn.Linear(d, d)
        log_std = torch.ones({shape})
        self.log_std = nn.Parameter(log_std)

    def forward(self, x):
        return self.head(x)


class Policy(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.decoder = Decoder(d)

    def forward(self, x):
        return continuous_act(self.decoder, x)
'''


def test_a_parameter_made_from_a_local_vector_stays_gathered(tmp_path: Path) -> None:
    # `log_std = torch.ones(d)` then `nn.Parameter(log_std)`: a vector, kept gathered; a matrix is not
    files = {"act.py": ACT, "policy.py": POLICY.format(shape="d")}
    assert found_in_package(tmp_path, files, "policy.py", prefix="ZG3") == []
    found = found_in_package(tmp_path, {"act.py": ACT, "policy.py": POLICY.format(shape="d, 4096")}, "policy.py",
                             prefix="ZG3")
    assert found == [("ZG301", 25)]
