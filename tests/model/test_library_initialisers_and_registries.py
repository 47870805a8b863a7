"""Two library conventions. A weight initialiser of a library the program cannot read, imported by a name that says
so (`trunc_normal_init(self.patch_proj, std=.02)`, `constant_init(m, 0)`), initialises the module it is handed: in
`init_weights`, which a runner calls on the built model, the write is lost (ZG101, or ZG103 where the class is read). A model a plain trainer builds
through a registry named in capitals (`self.generator = MODELS.build(cfg)`) is a model it holds: its state dict saved
there is placeholders (ZG108). Their look-alikes: an imported helper named for something else handed the child
(`bias_init_with_prob(0.01)`, `print_log(self.proj)`), and a registry building a settings object."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
from torch import nn
from mmengine.model import trunc_normal_init, print_log


class MaskHead(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.patch_proj = nn.Linear(dim, dim)
        self.classes_proj = nn.Linear(dim, n)

    def init_weights(self):
        {init}

    def forward(self, x):
        return self.classes_proj(self.patch_proj(x))
"""


def zg1(source: str, **parts: str) -> list[tuple[str, int]]:
    found = check_source("m.py", textwrap.dedent(source.format(**parts)))
    return [(f.code, f.line) for f in found if f.code.startswith("ZG1")]


def test_a_library_initialiser_in_init_weights_writes_the_built_child():
    assert [line for _code, line in zg1(HEAD, init="trunc_normal_init(self.patch_proj, std=0.02)")] == [13]


def test_an_imported_helper_named_for_something_else_writes_nothing():
    assert zg1(HEAD, init="print_log(self.patch_proj)") == []


TRAINER = """
import torch
from mmengine.registry import MODELS, OPTIM_WRAPPERS


class GANTrainer:
    def __init__(self, cfg):
        self.{name} = {registry}.build(cfg)

    def save(self, path):
        torch.save(self.{name}.state_dict(), path)
"""


def test_a_registry_built_model_saved_by_its_trainer():
    assert zg1(TRAINER, name="generator", registry="MODELS") == [("ZG108", 11)]


def test_a_registry_built_settings_object_is_no_model():
    assert zg1(TRAINER, name="optim_wrapper", registry="OPTIM_WRAPPERS") == []
