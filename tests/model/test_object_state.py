"""Per-rank values handed to objects (`analysis/state.py`): a decoding strategy advanced with the model's output, a
tracker updated with it, a flag object given a random draw, an attribute of `self` written only on some ranks; against
values all-reduced first, objects that only count or log, objects placed on the rank's device, and attributes every
rank sets."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import random

import torch
import torch.distributed as dist
from torch import nn


def exists(v):
    return v is not None


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)
"""


def codes(body: str) -> list[str]:
    text = HEAD + textwrap.dedent(body)
    return sorted(f.code for f in check_source("m.py", text) if f.code.startswith("ZG2"))


def test_a_decoding_loop_leaves_on_the_state_of_the_strategy_it_advanced():
    assert codes("""
        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.step = Block()

            def generate(self, x, strategy):
                for _ in range(strategy.max_length):
                    out = self.step(x)
                    strategy.advance(out)
                    if strategy.done:
                        break
                return strategy.predictions
    """) == ["ZG204"]


def test_a_trainer_loops_while_a_tracker_given_the_logits_is_not_finished():
    assert codes("""
        class Sampler:
            def __init__(self, model):
                self.model = model

            def sample(self, x, tracker):
                while not tracker.finished():
                    logits = self.model(x)
                    tracker.update(logits)
                return x
    """) == ["ZG204"]


def test_an_output_written_on_an_object_decides_the_exit():
    assert codes("""
        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.step = Block()

            def generate(self, x, state):
                for _ in range(64):
                    state.last = self.step(x)
                    if state.last.argmax() == 0:
                        break
                return x
    """) == ["ZG204"]


def test_a_random_draw_handed_to_an_object_gates_a_block():
    assert codes("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.extra = Block()

            def forward(self, x, coin):
                coin.flip(random.random())
                if coin.heads:
                    x = self.extra(x)
                return x
    """) == ["ZG202"]


def test_an_attribute_set_after_an_early_return_on_the_rank_picks_the_generator():
    assert codes("""
        class Trainer:
            def __init__(self, generator, ema_generator):
                self.G = generator
                self.G_ema = ema_generator
                self.has_ema = False

            def create_ema(self):
                if dist.get_rank() != 0:
                    return
                self.has_ema = True

            def generate(self, x):
                if self.has_ema:
                    return self.G_ema(x)
                return self.G(x)
    """) == ["ZG201"]


def test_a_submodule_built_only_on_rank_zero_is_run_where_it_exists():
    assert codes("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = Block()
                self.probe = Block() if dist.get_rank() == 0 else None

            def forward(self, x):
                if exists(self.probe):
                    x = self.probe(x)
                return self.body(x)
    """) == ["ZG201"]


def test_safe_a_tracker_given_an_all_reduced_value():
    assert codes("""
        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.step = Block()

            def generate(self, x, tracker):
                for _ in range(64):
                    loss = self.step(x).mean()
                    dist.all_reduce(loss)
                    tracker.update(loss)
                    if tracker.done:
                        break
                return x
    """) == []


def test_safe_a_meter_given_the_outputs_only_decides_logging():
    assert codes("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.step = Block()

            def run(self, xs, meter):
                for x in range(16):
                    out = self.step(xs)
                    meter.update(out)
                    if meter.count % 10 == 0:
                        print(meter.avg)
                return xs
    """) == []


def test_safe_an_object_placed_on_the_ranks_device():
    assert codes("""
        class Runner:
            def __init__(self, model):
                self.model = model

            def run(self, x):
                self.model.to(f"cuda:{dist.get_rank()}")
                if self.model.training:
                    x = self.model(x)
                return x
    """) == []


def test_safe_a_writer_kept_only_on_rank_zero_gates_logging():
    assert codes("""
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.writer = object() if dist.get_rank() == 0 else None

            def step(self, x):
                loss = self.model(x).mean()
                if self.writer is not None:
                    print(loss.item())
                return loss
    """) == []


def test_safe_an_attribute_every_rank_sets():
    assert codes("""
        class Trainer:
            def __init__(self, generator, ema_generator):
                self.G = generator
                self.G_ema = ema_generator
                self.has_ema = False

            def create_ema(self):
                if dist.get_rank() == 0:
                    print("making the EMA copy")
                self.has_ema = True

            def generate(self, x):
                if self.has_ema:
                    return self.G_ema(x)
                return self.G(x)
    """) == []


def test_a_generator_chosen_by_an_attribute_only_rank_zero_sets():
    assert codes("""
        class Trainer(nn.Module):
            def __init__(self, generator):
                super().__init__()
                self.G = generator
                self.has_ema = False

            def create_ema(self):
                if dist.get_rank() != 0:
                    return
                self.G_ema = Block()
                self.has_ema = True

            def generate(self, x):
                model = self.G_ema if self.has_ema else self.G
                model.eval()
                return model(x)
    """) == ["ZG201"]


def test_safe_a_module_chosen_by_a_setting():
    assert codes("""
        class Net(nn.Module):
            def __init__(self, use_alt=False):
                super().__init__()
                self.a = Block()
                self.b = Block()
                self.use_alt = use_alt

            def forward(self, x):
                block = self.a if self.use_alt else self.b
                return block(x)
    """) == []
