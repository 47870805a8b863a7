"""Loop counts that come from this rank's data through a caller or a loop variable (`analysis/counts.py`, ZG204):
a method's `range(seq_length)` for a `seq_length` its class's calls read from the input, a base class of another
file looping over a count its subclass hands it, a length read from each item of a list of batches; against counts
handed from settings, constants and the model's own structure."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found_in_package

RNN = """
import torch
from torch import nn


class Base(nn.Module):
    def run(self, x, n):
        for t in range(n):
            x = self.cell(x)
        return x


class RNN(Base):
    def __init__(self, steps):
        super().__init__()
        self.cell = nn.Linear(8, 8)
        self.cells = nn.ModuleList([nn.GRUCell(8, 8) for _ in range(2)])
        self.steps = steps
        self.sizes = [1, 2, 3]

    def forward(self, x, lengths):
        out = x
{body}
        return out

    def forward_layer(self, x, cell, seq_length):
        h = x[0]
        hs = []
        for t in range(seq_length):
            h = cell(x[t], h)
            hs.append(h)
        return torch.stack(hs)

    def fill(self, out, n):
        for i in range(n):
            out[i] = 0
        return out
"""


def codes(body: str) -> list[tuple[str, str]]:
    """(code, the reported line's text) of the ZG2 findings."""
    source = RNN.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    lines = source.splitlines()
    return [(f.code, lines[f.line - 1].strip()) for f in check_source("m.py", source) if f.code.startswith("ZG2")]


def test_a_count_parameter_the_class_hands_a_length_of_its_input_counts_the_loop():
    # the loop is reported where it is counted, in the method the length was handed to
    assert codes("""
        seq_length = x.shape[0]
        for cell in self.cells:
            out = self.forward_layer(out, cell, seq_length)
    """) == [("ZG204", "for t in range(seq_length):")]
    assert codes("""
        out = self.forward_layer(out, self.cells[0], seq_length=int(lengths.max()))
    """) == [("ZG204", "for t in range(seq_length):")]
    # an inherited helper, handed the length through a second local
    assert codes("""
        n = x.shape[0]
        m = n
        out = self.run(out, m)
    """) == [("ZG204", "for t in range(n):")]


def test_a_count_parameter_handed_a_setting_a_constant_or_the_models_size_counts_no_data():
    assert codes("""
        for cell in self.cells:
            out = self.forward_layer(out, cell, self.steps)
            out = self.forward_layer(out, cell, len(self.sizes))
            out = self.forward_layer(out, cell, seq_length=4)
        out = self.run(out, len(self.cells))
    """) == []
    # a helper whose loop runs no submodule, handed this rank's batch size
    assert codes("""
        out = self.fill(out, x.shape[0])
    """) == []


STRATEGY = RNN.replace("{body}", "{body}\n\n    def decode(self, x, strategy):\n"
                       "        for t in range(strategy.max_length):\n            x = self.cell(x)\n        return x")


def test_an_object_built_with_a_length_hands_its_settings_not_that_length():
    # `strategy.max_length` is the setting it was built with; only its batch size is read from the input
    source = STRATEGY.format(body=textwrap.indent(textwrap.dedent("""
        strategy = Strategy(batch_size=len(lengths), max_length=self.steps)
        out = self.decode(out, strategy)
    """), " " * 8))
    assert [f.code for f in check_source("m.py", source) if f.code.startswith("ZG2")] == []


TRAINER = """
class Trainer:
    def __init__(self, model, trunc_size):
        self.model = model
        self.trunc_size = trunc_size

    def accumulate(self, true_batches):
        for k, batch in enumerate(true_batches):
{body}
"""


def trainer_codes(body: str) -> list[str]:
    source = TRAINER.format(body=textwrap.indent(textwrap.dedent(body), " " * 12))
    return [f.code for f in check_source("t.py", source) if f.code.startswith("ZG2")]


def test_a_length_read_from_an_item_of_the_batches_counts_the_loop():
    # truncated back-propagation through time: one forward per chunk of this batch's target length
    assert trainer_codes("""
        target_size = batch["tgt"].size(1)
        for j in range(0, target_size - 1, self.trunc_size):
            out = self.model(batch["src"], batch["tgt"][:, j : j + self.trunc_size])
            out.sum().backward()
    """) == ["ZG204"]


def test_an_index_of_the_batches_or_a_setting_read_per_batch_counts_no_data():
    assert trainer_codes("""
        for j in range(k):
            out = self.model(batch["src"])
        for j in range(self.trunc_size):
            out = self.model(batch["src"])
    """) == []


BASE = """
from torch import nn


class Base(nn.Module):
    def decode_autoregressive(self, decode_one, first, n_decoder_steps, n_samples=1):
        out = []
        x = first
        for idx in range(n_decoder_steps):
            x = decode_one(idx, x)
            out.append(x)
        return out
"""

MODEL = """
import torch
from torch import nn
from .base import Base


class Model(Base):
    def __init__(self, horizon):
        super().__init__()
        self.rnn = nn.GRUCell(8, 8)
        self.horizon = horizon

    def forward(self, input_vector):
        def decode_one(idx, h):
            return self.rnn(input_vector[:, idx], h)

{body}
"""


def _package_codes(tmp_path, body: str) -> list[tuple[str, int]]:
    files = {"base.py": BASE, "model.py": MODEL.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))}
    return found_in_package(tmp_path, files, "model.py", name="proj", prefix="ZG2")


def test_a_base_class_of_another_file_loops_over_a_length_its_subclass_hands_it(tmp_path):
    # reported at the call: the base class's file does not know who calls it with what
    assert _package_codes(tmp_path, """
        return self.decode_autoregressive(decode_one, input_vector[:, 0], n_decoder_steps=input_vector.size(1))
    """) == [("ZG204", 18)]


def test_a_base_class_of_another_file_handed_a_setting_or_a_callable_running_no_module(tmp_path):
    assert _package_codes(tmp_path, """
        a = self.decode_autoregressive(decode_one, input_vector[:, 0], n_decoder_steps=self.horizon)
        b = self.decode_autoregressive(torch.relu, input_vector[:, 0], n_decoder_steps=input_vector.size(1))
        return a, b
    """) == []
