"""A generator keeps its decoding state in an object of a class of the program.

`state.step(predicted_ids=...)` hands the state what the model predicted, and `if state.is_finished: return` leaves
the decoding loop on this rank's own sequences (ZG204). The state class stores its mask reshaped by a tensor method
(`bool_mask.view([batch, 1, 1, n])`): a tensor, not a model, so calling the state's methods runs no model. The same
loop leaving after a fixed number of steps decides nothing.
"""

from __future__ import annotations

from package_check import found_in_package

STATE = """
import torch


class Mask:
    def __init__(self, bool_mask: torch.Tensor):
        if bool_mask.dim() == 2:
            batch, n = bool_mask.shape
            self.bool_mask = bool_mask.view([batch, 1, 1, n])
        else:
            self.bool_mask = bool_mask

    def keep(self, kept):
        return Mask(self.bool_mask.int()[kept] > 0)


class State:
    def __init__(self, *, mask: Mask, ids):
        self.mask = mask
        self.positions = mask.bool_mask.int().cumsum(-1) - 1
        self.seq_ids = torch.arange(0, ids.shape[0])

    def step(self, *, predicted_ids):
        done = predicted_ids.view(-1) == 0
        self.seq_ids = self.seq_ids[~done]
        self.mask = self.mask.keep(~done)
        return self.seq_ids

    @property
    def is_finished(self):
        return len(self.seq_ids) == 0
"""

GENERATOR = """
from torch import nn

from .state import Mask, State


class Generator:
    def __init__(self, model: nn.Module):
        self.model = model

    def generate(self, ids, mask: Mask, max_steps):
        state = State(mask=mask, ids=ids)
        steps = 0
        while True:
            output = self.model(ids)
            seq_ids = state.step(predicted_ids=output.argmax(-1))
            steps += 1
            if {exit}:
                return
"""


def _found(tmp_path, exit_test: str) -> list[tuple[str, int]]:
    files = {"state.py": STATE, "generator.py": GENERATOR.format(exit=exit_test)}
    return found_in_package(tmp_path, files, "generator.py", prefix="ZG2")


def test_a_decoding_loop_leaving_on_the_state_of_its_own_sequences(tmp_path):
    assert _found(tmp_path, "state.is_finished") == [("ZG204", 18)]


def test_a_decoding_loop_leaving_after_a_fixed_count(tmp_path):
    assert _found(tmp_path, "steps >= max_steps") == []
