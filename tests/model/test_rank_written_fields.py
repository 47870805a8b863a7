"""What a rank-only write taints: the field written, not the whole object (stylegan3 records timing events on rank 0
into each training phase, then every rank tests each phase's `interval`); a loop rebinding a name on every rank ends
what rank 0 alone bound to it before; and `ddp.no_sync()` is a context that runs no module."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("train.py", textwrap.dedent(source))]


PHASES = """
import torch

def training_loop(rank, G, specs, loader, make_phase):
    phases = [make_phase(name, interval) for name, interval in specs]
    for phase in phases:
        phase.start_event = None
        if rank == 0:
            phase.start_event = torch.cuda.Event(enable_timing=True)
    batch_idx = 0
    for batch in loader:
        for phase in phases:
            if batch_idx % phase.interval != 0:
                continue
            G(batch).sum().backward()
        batch_idx += 1
"""


def test_a_field_written_on_rank_zero_leaves_the_other_fields_alike():
    assert [code for code, _ in found(PHASES) if code.startswith("ZG2")] == []


def test_the_field_written_on_rank_zero_decides_on_rank_zero_alone():
    source = PHASES.replace("if batch_idx % phase.interval != 0:", "if phase.start_event is None:")
    assert ("ZG201", 13) in found(source)


def test_a_method_of_the_object_reads_the_field_written_on_rank_zero():
    source = PHASES.replace("if batch_idx % phase.interval != 0:", "if not phase.timed():")
    assert ("ZG201", 13) in found(source)


REBOUND = """
import torch

def setup(rank, G, D, resume, load, num_gpus):
    if rank == 0 and resume is not None:
        for name, module in [("G", G), ("D", D)]:
            load(resume[name], module)
    for module in [G, D]:
        if module is not None and num_gpus > 1:
            for param in module.parameters():
                torch.distributed.broadcast(param, src=0)
"""


def test_a_loop_rebinding_a_name_on_every_rank_ends_what_rank_zero_bound():
    assert ("ZG201", 9) not in found(REBOUND)


def test_a_name_bound_on_rank_zero_alone_still_decides_after():
    assert ("ZG201", 9) in found(REBOUND.replace("for module in [G, D]:", "for net in [G, D]:"))


MICROBATCHES = """
import functools


class TrainLoop:
    def __init__(self, model, diffusion, ddp_model, microbatch):
        self.model = model
        self.diffusion = diffusion
        self.ddp_model = ddp_model
        self.microbatch = microbatch

    def forward_backward(self, batch):
        for i in range(0, batch.shape[0], self.microbatch):
            micro = batch[i : i + self.microbatch]
            losses = functools.partial(self.diffusion.training_losses, self.ddp_model, micro)
            with self.ddp_model.no_sync():
                losses()["loss"].mean().backward()
"""


def test_no_sync_runs_no_module():
    assert [code for code, _ in found(MICROBATCHES) if code.startswith("ZG2")] == []


def test_the_wrapped_model_run_once_per_microbatch_still_counts():
    source = MICROBATCHES.replace('losses()["loss"]', "self.ddp_model(micro)")
    assert ("ZG204", 13) in found(source)


# stylegan3's training loop: latents drawn on this rank's device, one slice per phase, zipped with the phases.
ZIPPED = """
import torch

def train(rank, G, phases, batch_size, batch_idx):
    device = torch.device("cuda", rank)
    all_z = torch.randn([len(phases) * batch_size, 8], device=device).split(batch_size)
    for phase, z in zip(phases, all_z):
        if batch_idx % phase.interval != 0:
            continue
        G(z).sum().backward()
"""


def test_each_name_of_a_zipped_loop_takes_its_own_iterable_and_a_device_is_no_value():
    assert [code for code, line in found(ZIPPED) if line == 8] == []


def test_the_name_taking_the_random_draws_still_decides_at_random():
    assert ("ZG202", 8) in found(ZIPPED.replace("if batch_idx % phase.interval != 0:", "if z.sum() > 0:"))


def test_a_test_of_the_rank_itself_still_decides_by_rank():
    assert ("ZG201", 8) in found(ZIPPED.replace("if batch_idx % phase.interval != 0:", "if rank == 0:"))


REBOUND_PAIRS = """
import torch

def setup(rank, G, D, resume, load, num_gpus):
    if rank == 0 and resume is not None:
        for name, module in [("G", G), ("D", D)]:
            load(resume[name], module)
    for name, module in [("G", G), ("D", D)]:
        if module is not None and num_gpus > 1:
            for param in module.parameters():
                torch.distributed.broadcast(param, src=0)
"""


def test_a_loop_rebinding_a_pair_on_every_rank_ends_what_rank_zero_bound():
    assert ("ZG201", 9) not in found(REBOUND_PAIRS)


# parlai's agents: an out-of-memory failure of a training step caught and skipped, the backward in a base's helper.
CAUGHT_BACKWARD = """
import torch
from torch import nn


class Agent:
    def __init__(self, model: nn.Module, optimizer):
        self.model = model
        self.optimizer = optimizer

    def backward(self, loss, **kwargs):
        loss.backward(**kwargs)

    def log(self, loss):
        print(float(loss))


class RankerAgent(Agent):
    def train_step(self, batch):
        try:
            loss = self.compute_loss(batch)
            self.backward(loss)
            self.optimizer.step()
        except RuntimeError as e:
            if "out of memory" in str(e):
                return None
            raise
"""


def test_a_caught_failure_of_a_helper_running_the_backward_leaves_the_rank_behind():
    assert ("ZG204", 24) in found(CAUGHT_BACKWARD)


def test_a_caught_failure_of_a_helper_running_no_backward_is_no_divergence():
    assert ("ZG204", 24) not in found(CAUGHT_BACKWARD.replace("self.backward(loss)", "self.log(loss)"))
