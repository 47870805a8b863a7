"""Values a distributed training loop holds alike on every rank, though the rank or this rank's data touched them.

* A progress bar wrapped around the loader on the main rank only (`if rank == 0: pbar = tqdm(pbar)`) hands out the
  same batches; a loader or sampler built for this rank's shard (`create_dataloader(path, bs, rank=LOCAL_RANK)`,
  `get_shard(n, rank, world)`) holds as many batches on every rank.
* `a, b = x, y` binds each name to its own value: a setting unpacked beside a list the function measures is no
  length of this rank's data. A setting handed over by keyword (`restore(dir, train_size=len(x))`) makes no count.
* A reduction of a model's buffer (`int(model.stride.max())`) is the same on every rank.
* An early-stop flag broadcast from rank 0 and read back on the others (`box = [stop if rank == 0 else None]`,
  `dist.broadcast_object_list(box, 0)`, `if rank != 0: stop = box[0]`) is every rank's.
* Of a setup function answering a tuple (`using_ddp, rank, is_main = setup()`), only the places holding the rank
  decide on it.
* A function nested in the loop's function that broadcasts its value hands back every rank's value; rebound to
  it, a local forgets what this rank computed before.
* A tensor drawn when none was given (`if not exists(t): t = torch.rand(b)`) is always there: a presence test of it
  decides nothing at random.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MODEL = """
import os
import random

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from tqdm import tqdm

from .data import create_dataloader, restore, take

RANK = int(os.getenv("RANK", -1))
LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("stride", torch.tensor([8.0, 16.0]))

    def forward(self, x):
        return self.fc(x)
"""


def codes(body: str) -> list[str]:
    return [f.code for f in check_source("train.py", MODEL + textwrap.dedent(body)) if f.code.startswith("ZG2")]


def test_a_progress_bar_on_the_main_rank_and_a_loader_for_this_ranks_shard_hand_out_as_many_batches():
    assert codes("""
        def train(opt, path):
            model = Net()
            loader = create_dataloader(path, opt.batch_size, rank=LOCAL_RANK, shuffle=True)
            for epoch in range(opt.epochs):
                pbar = enumerate(loader)
                if RANK in {-1, 0}:
                    pbar = tqdm(pbar, total=len(loader))
                for i, x in pbar:
                    model(x).sum().backward()
    """) == []


def test_batches_a_helper_takes_by_the_rank_still_decide():
    assert codes("""
        def train(opt, path):
            model = Net()
            loader = create_dataloader(path, opt.batch_size, rank=LOCAL_RANK, shuffle=True)
            for i, x in enumerate(take(loader, count=LOCAL_RANK + 1)):
                model(x).sum().backward()
    """) == ["ZG201"]


def test_a_setting_unpacked_beside_a_measured_list_and_a_model_buffer_reduced_make_no_count():
    assert codes("""
        def train(opt, loader):
            epochs, freeze = opt.epochs, opt.freeze
            freeze = [f"model.{x}." for x in (freeze if len(freeze) > 1 else range(freeze[0]))]
            model = Net()
            grid = max(int(model.stride.max()), 32)
            start = restore(opt.output_dir, train_size=len(loader))
            for epoch in range(start, epochs // grid + 1):
                for x in loader:
                    model(x).sum().backward()
    """) == []


def test_a_length_unpacked_from_this_ranks_batch_still_counts_the_steps():
    assert codes("""
        def train(opt, batch):
            steps, lr = len(batch), opt.lr
            model = Net()
            for i in range(steps):
                model(batch[i]).sum().backward()
    """) == ["ZG204"]


EARLY_STOP = """
    def train(opt, loader):
        model = Net()
        stop = False
        for epoch in range(opt.epochs):
            for x in loader:
                model(x).sum().backward()
            if RANK in {-1, 0}:
                stop = model(x).mean().item() < opt.target
            {share}
            if stop:
                break
"""


def test_an_early_stop_broadcast_from_the_main_rank_is_every_ranks():
    share = textwrap.indent(textwrap.dedent("""
        if RANK != -1:
            box = [stop if RANK == 0 else None]
            dist.broadcast_object_list(box, 0)
            if RANK != 0:
                stop = box[0]
    """), "        ").strip()
    assert codes(EARLY_STOP.replace("{share}", share)) == []


def test_an_early_stop_the_main_rank_keeps_to_itself_decides():
    assert codes(EARLY_STOP.replace("{share}", "pass")) != []


SETUP = """
    def _setup(device):
        if not dist.is_initialized():
            return False, 0, device, True
        local_rank = int(os.environ["LOCAL_RANK"])
        return True, local_rank, f"cuda:{local_rank}", local_rank == 0


    def train(loader, device):
        model = Net()
        using_ddp, local_rank, device, is_main = _setup(device)
        for x in loader:
            loss = model(x).sum()
            if {test}:
                dist.all_reduce(loss)
                model(x)
"""


def test_of_a_setup_functions_answers_only_the_rank_places_decide_on_the_rank():
    assert codes(SETUP.replace("{test}", "using_ddp")) == []
    assert codes(SETUP.replace("{test}", "is_main")) == ["ZG201"]


NESTED = """
    class Trainer:
        def __init__(self, model: Net):
            self.model = model

        def fit(self, loader, using_ddp, epochs):
            def _share(metric):
                if not using_ddp:
                    return metric
                t = torch.tensor([metric])
                {collective}
                return float(t.item())

            best, patience = 0.0, 0
            for epoch in range(epochs):
                for x in loader:
                    self.model(x).sum().backward()
                best = _share(self.model(x).mean().item())
                if not np.isnan(best) and best > 1.0:
                    patience += 1
                if patience >= 3:
                    break
"""


def test_a_nested_function_broadcasting_its_value_hands_back_every_ranks():
    assert codes(NESTED.format(collective="dist.broadcast(t, src=0)")) == []


def test_a_nested_function_without_a_collective_hands_back_this_ranks_value():
    assert "ZG204" in codes(NESTED.format(collective="t = t * 2"))


DRAWN = """
    class Flow(nn.Module):
        def __init__(self):
            super().__init__()
            self.time_mlp = nn.Linear(1, 8)
            self.net = nn.Linear(8, 8)

        def forward(self, x, times):
            {draw}
            h = self.net(x)
            if times is not None:
                h = h + self.time_mlp(times[:, None])
            return h
"""


def test_a_tensor_drawn_when_none_was_given_is_always_there():
    found = codes(DRAWN.format(draw="times = torch.rand(x.shape[0]) if times is None else times"))
    assert "ZG202" not in found


def test_a_value_a_random_draw_may_leave_unset_decides_at_random():
    assert "ZG202" in codes(DRAWN.format(draw="times = torch.rand(x.shape[0]) if random.random() < 0.5 else None"))
