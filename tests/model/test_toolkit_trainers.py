"""Handed estimators, counted steps and wrapper collectives in toolkits' own trainers (issue 20, blind26 probes).

* `logF: ScalarEstimator | None` in a constructor, kept as `self.logF` and handed to a helper that calls it under
  `if torch.any(mask):`: the annotation says the argument is a module that owns parameters (of another file too),
  so the helper runs it and a rank whose batch leaves the mask empty skips its all-gather (ZG203). Look-alike: the
  same code with an argument annotated with a module class that owns nothing.
* `policy = cast(PolicyProtocol, pb)` of an estimator argument, then `policy.compute_dist(...)` after `if not
  torch.any(mask): return out`: `typing.cast` hands back what it is given, the estimator (ZG204). Look-alike: the
  same early return on a flag the caller sets.
* `if not has_separator.all(): raise ValueError(...)` before the encoder runs, for `has_separator` read from the
  batch's token ids: the rank whose batch lacks one stops while its peers run the encoder (ZG204). Look-alike: a
  raise on the input's number of dimensions, which the code fixes for every rank.
* `self.scheduler.step(score)` for `score = self.evaluate(dev)`, then a loop that stops once
  `optimizer.param_groups[0]["lr"]` falls below a floor: a plateau scheduler sets the learning rate from this rank's
  own validation score, so ranks stop after different epochs (ZG204). Look-alike: the scheduler stepped on the epoch.
* `steps = reversed(range(len(x))) if reverse else range(len(x))` ... `for t in steps: h = cell(x[t], h)`: the loop
  walks as many steps as this rank's sequence is long (ZG204). Look-alike: `layers = range(self.num_layers)`.
* `self.accelerator.get_state_dict(self.net)` in a helper of a module that trains itself, called only on the main
  process: accelerate gathers the partitioned parameters there with a collective the other ranks never join
  (ZG201). Look-alike: `self.accelerator.print(...)` on the main process.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

ESTIMATORS = """
import torch
from torch import nn


class ScalarEstimator(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, 1)

    def forward(self, states):
        return self.net(states)
"""

BALANCE = """
import torch
from torch import nn

from .estimators import ScalarEstimator


class Scale(nn.Module):
    def forward(self, x):
        return 2 * x


def call_estimator(estimator, states):
    return estimator(states)


class DetailedBalance(nn.Module):
    def __init__(self, logF: ScalarEstimator | None, scale: Scale):
        super().__init__()
        self.logF = logF
        self.scale = scale

    def scores(self, transitions):
        out = torch.zeros(len(transitions.states))
        intermediate = ~transitions.is_terminating
        if torch.any(intermediate):
            out[intermediate] = call_estimator(self.logF, transitions.next_states[intermediate]).squeeze(-1)
        return out

    def scaled(self, transitions):
        out = torch.zeros(len(transitions.states))
        intermediate = ~transitions.is_terminating
        if torch.any(intermediate):
            out[intermediate] = call_estimator(self.scale, transitions.next_states[intermediate]).squeeze(-1)
        return out
"""


def test_a_handed_estimator_named_by_its_annotation_runs_in_the_helper_it_is_handed_to(tmp_path):
    files = {"gfn/__init__.py": "", "gfn/estimators.py": ESTIMATORS, "gfn/balance.py": BALANCE}
    assert found_in_package(tmp_path, files, "gfn/balance.py", prefix="ZG2") == [("ZG203", 26)]


LSTM = """
import torch
from torch import nn


class VariationalLSTM(nn.Module):
    def __init__(self, d, num_layers):
        super().__init__()
        self.num_layers = num_layers
        self.cells = nn.ModuleList([nn.LSTMCell(d, d) for _ in range(num_layers)])

    def layer_forward(self, x, hx, cell, reverse=False):
        output = []
        steps = reversed(range(len(x))) if reverse else range(len(x))
        for t in steps:
            hx = cell(x[t], hx)
            output.append(hx[0])
        return output, hx

    def forward(self, sequence, hx):
        x = torch.split(sequence.data, sequence.batch_sizes.tolist())
        layers = range(self.num_layers)
        for i in layers:
            x, hx = self.layer_forward(x, hx, self.cells[i])
        return x
"""


def test_a_loop_over_a_local_bound_to_a_range_of_the_data_s_length_is_counted_by_it(tmp_path):
    assert found_in_package(tmp_path, {"lstm.py": LSTM}, "lstm.py", prefix="ZG2") == [("ZG204", 15)]


KERAS = """
import torch
from torch import nn
from accelerate import Accelerator


class KerasModel(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.accelerator = Accelerator()

    def save_ckpt(self, path, accelerator=None):
        accelerator = accelerator if accelerator is not None else self.accelerator
        state = accelerator.get_state_dict(self.net)
        accelerator.save(state, path)

    def fit(self, loader, path):
        for epoch in range(3):
            for batch in loader:
                self.net(batch).mean().backward()
            if self.accelerator.is_local_main_process:
                self.accelerator.print(f"epoch {epoch} done")
            if self.accelerator.is_local_main_process:
                self.save_ckpt(path, accelerator=self.accelerator)
"""


def test_a_wrapper_s_gathering_save_on_the_main_process_of_a_module_that_trains_itself(tmp_path):
    assert found_in_package(tmp_path, {"keras.py": KERAS}, "keras.py", prefix="ZG2") == [("ZG201", 24)]


PROBS = """
from typing import Protocol, cast

import torch
from torch import nn


class Estimator(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, d)

    def forward(self, states):
        return self.net(states)

    def compute_dist(self, states):
        return torch.distributions.Categorical(logits=self(states))


class PolicyProtocol(Protocol):
    def compute_dist(self, states): ...


def transition_log_pbs(pb: Estimator, transitions):
    out = torch.zeros(len(transitions.states))
    mask = ~transitions.is_terminating
    if not torch.any(mask):
        return out
    policy = cast(PolicyProtocol, pb)
    return policy.compute_dist(transitions.next_states[mask])


def recomputed_log_pbs(pb: Estimator, transitions, recalculate: bool):
    out = torch.zeros(len(transitions.states))
    if not recalculate:
        return out
    policy = cast(PolicyProtocol, pb)
    return policy.compute_dist(transitions.next_states)
"""


def test_typing_cast_hands_back_the_estimator_it_is_given(tmp_path):
    assert found_in_package(tmp_path, {"probs.py": PROBS}, "probs.py", prefix="ZG2") == [("ZG204", 27)]


PROMPTS = """
import torch
from torch import nn


class LabelsEncoder(nn.Module):
    def __init__(self, d, sep):
        super().__init__()
        self.sep = sep
        self.encoder = nn.Linear(d, d)

    def forward(self, hidden, input_ids, attention_mask):
        has_separator = (input_ids.eq(self.sep) & attention_mask.gt(0)).any(dim=1)
        if not has_separator.all():
            raise ValueError("no separator token in some rows")
        return self.encoder(hidden)


class Checked(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.Linear(d, d)

    def forward(self, hidden):
        if hidden.dim() != 3:
            raise ValueError("expected a batch of sequences")
        return self.encoder(hidden)
"""


def test_a_raise_on_the_batch_s_values_stops_one_rank_before_the_encoder(tmp_path):
    assert found_in_package(tmp_path, {"prompts.py": PROMPTS}, "prompts.py", prefix="ZG2") == [("ZG204", 14)]


ANNEALING = """
import torch
from torch import nn


class ModelTrainer:
    def __init__(self, model, optimizer, scheduler):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler

    def evaluate(self, loader):
        total = 0.0
        for x in loader:
            total += self.model(x).mean().item()
        return total

    def train(self, train_loader, dev_loader, epochs, min_lr):
        for epoch in range(epochs):
            learning_rate = self.optimizer.param_groups[0]["lr"]
            if learning_rate < min_lr:
                break
            for x in train_loader:
                self.model(x).mean().backward()
                self.optimizer.step()
            score = self.evaluate(dev_loader)
            self.scheduler.step(score)

    def train_scheduled(self, train_loader, epochs, min_lr):
        for epoch in range(epochs):
            learning_rate = self.optimizer.param_groups[0]["lr"]
            if learning_rate < min_lr:
                break
            for x in train_loader:
                self.model(x).mean().backward()
                self.optimizer.step()
            self.scheduler.step(epoch)
"""


def test_a_plateau_scheduler_stepped_on_this_rank_s_score_sets_the_rate_a_loop_stops_on(tmp_path):
    assert found_in_package(tmp_path, {"annealing.py": ANNEALING}, "annealing.py", prefix="ZG2") == [("ZG204", 21)]
