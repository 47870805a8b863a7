"""An item of this rank's share of a sequence may be empty where the sequence splits into more parts than it has
items (EDM's `generate.py`: seeds split into batches, `rank_batches = all_batches[rank::world]`): a rank whose item is
empty and skips the sampler leaves the others in its gathers. A wrapper choosing its network class by name with
settings (`globals()[model_type](img_resolution=r, in_channels=c)`) holds one with parameters."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

GENERATE = """
import torch
import torch.distributed as dist
from torch import nn


class Precond(nn.Module):
    def __init__(self, model_type="SongUNet", **model_kwargs):
        super().__init__()
        self.model = globals()[model_type](img_resolution=32, in_channels=3, **model_kwargs)

    def forward(self, x):
        return self.model(x)


def sampler(net, latents, num_steps=18):
    x = latents
    for _ in range(num_steps):
        x = net(x)
    return x


def main(seeds, max_batch_size):
    num_batches = ((len(seeds) - 1) // (max_batch_size * dist.get_world_size()) + 1) * dist.get_world_size()
    all_batches = torch.as_tensor(seeds).tensor_split(num_batches)
    rank_batches = all_batches[dist.get_rank() :: dist.get_world_size()]
    net = Precond()
    for batch_seeds in rank_batches:
        batch_size = len(batch_seeds)
        if batch_size == 0:
            continue
        sampler(net, torch.randn([batch_size, 3, 32, 32]))
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("generate.py", textwrap.dedent(source))]


def test_an_empty_item_of_this_ranks_share_skips_the_sampler():
    assert ("ZG203", 30) in found(GENERATE)


def test_an_empty_item_of_a_sequence_every_rank_walks_whole_is_alike():
    source = GENERATE.replace("all_batches[dist.get_rank() :: dist.get_world_size()]", "all_batches")
    assert ("ZG203", 30) not in found(source)


def test_a_class_chosen_by_name_built_with_one_flag_holds_no_parameters_we_know_of():
    source = GENERATE.replace("globals()[model_type](img_resolution=32, in_channels=3, **model_kwargs)",
                              "globals()[model_type](inplace=True)")
    assert ("ZG203", 30) not in found(source)
