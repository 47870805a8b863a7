"""Optional inputs deciding what a trainer or a step function runs of a model it is handed (issue 20; the ZG2
matrix's trainer and function cells).

A trainer holding a model of no class the file shows (`self.model = model`) that runs `self.model.vision(images)`
only when the step was given images, and a module-level step function handed the model (`def step(model, x,
ctx=None)`) that runs `model.context(ctx)` only when given a context, make ranks with different batches run different
parts of the model (ZG205). Look-alikes: the same tests around a move of the model (`model.to(device)`), and around
arithmetic on the input alone.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def train_step(self, x, images=None):
        h = self.model.text(x)
        if images is not None:
            {trainer_branch}
        loss = h.float().mean()
        loss.backward()
        return loss


def step(model, x, ctx=None):
    h = model.text(x)
    if ctx is not None:
        {function_branch}
    return h.mean()
"""


def _zg205(trainer_branch: str, function_branch: str) -> list[int]:
    source = textwrap.dedent(TRAINER).replace("{trainer_branch}", trainer_branch)
    source = source.replace("{function_branch}", function_branch)
    return [f.line for f in check_source("trainer.py", source) if f.code == "ZG205"]


def test_a_part_of_a_handed_model_run_only_on_a_given_input_diverges():
    assert _zg205("h = h + self.model.vision(images)", "h = h + model.context(ctx)") == [12, 21]


def test_moving_the_model_or_adding_the_input_runs_nothing_of_it():
    assert _zg205("self.model.to(self.device)", "h = h + ctx") == []
