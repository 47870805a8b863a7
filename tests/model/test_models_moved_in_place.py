"""A model bound again to itself moved (`G_AB = G_AB.cuda()`, `model = model.to(device)`) is the same model: what
the script does to it later is done to the model it built (PyTorch-GAN's CycleGAN loads its checkpoints so)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SCRIPT = """
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(x)


cuda = torch.cuda.is_available()
generator = Generator()
if cuda:
    generator = generator.cuda()
if opt.epoch != 0:
    generator.load_state_dict(torch.load("saved_models/generator_%d.pth" % opt.epoch))
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("cyclegan.py", textwrap.dedent(source))]


def test_a_model_bound_again_to_itself_moved_is_the_model_built():
    assert ("ZG108", 20) in found(SCRIPT)


def test_a_name_bound_again_to_another_value_no_longer_holds_the_model():
    assert ("ZG108", 20) not in found(SCRIPT.replace("generator = generator.cuda()", "generator = make_wrapper()"))
