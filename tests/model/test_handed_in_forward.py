"""A forward pass run while the module is constructed, through a model its caller handed in.

`self.spiking_model: nn.Module = model` keeps a module the caller built (partitioned under `zero.Init` when its
constructor returned); a probe forward in a helper `__init__` runs (`self(dummy)`) computes with its placeholders
(ZG110). A wrapper handed only settings (`self.input_shape = shape`) has nothing partitioned to run.

`image_generator.apply(weights_init)` in a module's `__init__` runs under `zero.Init` (the model is being built), whose
`apply` gathers each module it visits: no hazard. The same call in a plain trainer's constructor, outside `zero.Init`,
writes placeholders (ZG101).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
import torch
from torch import nn


class Network(nn.Module):
    def __init__(self, model=None, input_shape=None):
        super().__init__()
        self.spiking_model: nn.Module = model
        if input_shape is not None and model is not None:
            self._compute_shapes(input_shape)

    def _compute_shapes(self, input_shape):
        dummy = torch.zeros([1] + list(input_shape))
        self(dummy)

    def forward(self, x):
        return self.spiking_model(x)


class Shaped(nn.Module):
    def __init__(self, shape, scale):
        super().__init__()
        self.input_shape = shape
        self.scale = scale
        self.out_shape = self(torch.zeros(shape)).shape

    def forward(self, x):
        return x * self.scale
"""


def test_a_probe_forward_through_a_handed_in_model_is_found() -> None:
    found = [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(SOURCE)) if f.code.startswith("ZG1")]
    assert found == [("ZG110", 15)]


APPLIED = """
from torch import nn


def weights_init(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0.0, 0.02)


class ImageGAN(nn.Module):
    def __init__(self, image_generator, image_discriminator):
        super().__init__()
        self.generator = image_generator.apply(weights_init)
        self.discriminator = image_discriminator.apply(weights_init)

    def forward(self, z):
        return self.discriminator(self.generator(z))


class Trainer:
    def __init__(self, generator):
        self.generator = generator.apply(weights_init)
"""


def test_apply_in_a_modules_constructor_gathers_but_not_in_a_trainers() -> None:
    found = [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(APPLIED)) if f.code.startswith("ZG1")]
    assert found == [("ZG101", 22)]
