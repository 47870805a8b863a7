"""Models a training function builds through a constructor that takes the class by name (NVIDIA's dnnlib
`construct_class_by_name`, latent diffusion's `instantiate_from_config`): partitioned once built under `zero.Init`,
so a deep copy of one is a copy of placeholders, and a rank-0-only forward of one leaves the other ranks behind.
And a loop over a zip walks as many items as its shortest iterable: one as long on every rank sets the count."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in check_source("training_loop.py", textwrap.dedent(source))}


STYLEGAN = """
import copy
import torch
import dnnlib
from torch_utils import misc

def training_loop(rank, G_kwargs, batch_gpu, device):
    G = dnnlib.util.construct_class_by_name(**G_kwargs).train().requires_grad_(False).to(device)
    G_ema = copy.deepcopy(G).eval()
    if rank == 0:
        z = torch.empty([batch_gpu, G.z_dim], device=device)
        G(z)
    return G_ema
"""


def test_a_model_built_by_class_name_is_copied_after_it_was_partitioned():
    assert ("ZG105", 9) in found(STYLEGAN)


def test_a_model_built_by_class_name_run_on_rank_zero_alone():
    assert ("ZG201", 10) in found(STYLEGAN)


def test_a_record_built_by_its_fields_is_no_model():
    source = STYLEGAN.replace("dnnlib.util.construct_class_by_name(**G_kwargs).train().requires_grad_(False).to(device)",
                              "dnnlib.EasyDict(**G_kwargs)")
    assert ("ZG105", 9) not in found(source)


LDM = """
import copy
from ldm.util import instantiate_from_config

def main(config):
    model = instantiate_from_config(config.model)
    ema = copy.deepcopy(model)
    return model, ema
"""


def test_a_model_instantiated_from_its_config_is_copied_after_it_was_partitioned():
    assert ("ZG105", 7) in found(LDM)


ZIPPED = """
import torch

def train(model, make_phase, batch_size, opt):
    phases = [make_phase(name) for name in ("main", "reg")]
    all_z = [torch.randn(batch_size, 8) for _ in phases]
    for phase, z in zip(phases, all_z):
        model(z).sum().backward()
        opt.step()
"""


def test_a_zip_with_an_iterable_as_long_on_every_rank_walks_as_many_items():
    assert not any(code.startswith("ZG2") for code, _ in found(ZIPPED))


def test_a_zip_of_this_ranks_data_alone_walks_as_many_items_as_the_data():
    source = ZIPPED.replace("zip(phases, all_z)", "zip(all_z, all_z)").replace(
        "[torch.randn(batch_size, 8) for _ in phases]", "torch.randn(batch_size, 8).nonzero()")
    assert any(code.startswith("ZG2") for code, _ in found(source))
