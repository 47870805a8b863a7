"""A loop whose count a training function computes from the length of the dataset it built (`start_epoch =
steps // (len(dataset) // batch)` when resuming): every rank builds the same dataset, which a distributed sampler
splits, so the count is the same on every rank. One built for this rank alone (handed the rank) is not."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import WIDE_NET, found

TRAIN = '''
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler
from data import build_dataset


''' + WIDE_NET + '''

def main(args):
    rank = dist.get_rank()
    model = Net()
    dataset = build_dataset(args)
    loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset))
    steps = torch.load(args.resume)["steps"] if args.resume else 0
    start_epoch = steps // (len(dataset) // args.batch_size)
    for epoch in range(start_epoch, args.epochs):
        for x in loader:
            model(x).sum().backward()
'''


def test_the_length_of_the_dataset_every_rank_builds_counts_alike(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    assert found(path, "ZG2") == []


def test_the_length_of_a_dataset_built_for_this_rank_does_not(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(TRAIN.replace("build_dataset(args)", "build_dataset(args, rank=rank)"))
    assert found(path, "ZG2") == [("ZG204", 25)]
