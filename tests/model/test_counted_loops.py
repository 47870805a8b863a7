"""Loops whose trip count is a length of this rank's data (`analysis/counts.py`, ZG204): chunks of a signal,
windows of a batch, a padded length; against loops over a configured count or that run no module."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NET = """
import torch
from torch import nn


class Chunked(nn.Module):
    def __init__(self, n_layers, hop):
        super().__init__()
        self.net = nn.Linear(256, 256)
        self.blocks = nn.ModuleList([nn.Linear(256, 256) for _ in range(n_layers)])
        self.n_layers = n_layers
        self.hop = hop

    def make_windows(self, batch):
        return batch["signal"].unfold(-1, 256, self.hop)

    def forward(self, x, batch):
        out = []
{body}
        return out
"""


def codes(body: str) -> list[str]:
    source = NET.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return [f.code for f in check_source("m.py", source)]


def test_a_loop_over_the_chunks_of_the_input_runs_the_module_per_chunk():
    assert codes("""
        unfolded = torch.nn.functional.unfold(x.unsqueeze(-1), kernel_size=(256, 1), stride=(self.hop, 1))
        n_chunks = unfolded.shape[-1]
        for i in range(n_chunks):
            out.append(self.net(unfolded[..., i]))
    """) == ["ZG204"]
    assert codes("""
        for start in range(0, x.shape[-1], self.hop):
            out.append(self.net(x[..., start:start + 256]))
    """) == ["ZG204"]
    assert codes("""
        for piece in torch.split(x, 256, dim=-1):
            out.append(self.net(piece))
    """) == ["ZG204"]
    assert codes("""
        chunks = x.chunk(self.hop, dim=1)  # fewer pieces when the sequence is shorter than `hop`
        out = [self.net(c) for c in chunks]
    """) == ["ZG204"]


VALIDATE = NET.format(body="        out.append(self.net(x))") + """
    def validate(self, batch, size):
        windows = self.make_windows(batch)
        n_batches = int((len(windows) + size - 1) // size)
        losses = []
        for i in range(n_batches):
            losses.append(self(windows[i * size:(i + 1) * size], batch))
        return losses
"""


def test_a_loop_over_windows_a_method_made_from_the_batch_runs_the_model_per_window_batch():
    assert [f.code for f in check_source("m.py", VALIDATE)] == ["ZG204"]
    assert [f.code for f in check_source("m.py", VALIDATE.replace("len(windows)", "size * 4"))] == []


def test_a_decoding_loop_to_the_longest_length_of_the_batch():
    assert codes("""
        lengths = batch["lengths"]
        h = x
        for t in range(int(max(lengths))):
            h = self.net(h)
            out.append(h)
    """) == ["ZG204"]


def test_loops_over_a_configured_count_or_the_blocks_are_the_same_on_every_rank():
    assert codes("""
        h = x
        for i in range(self.n_layers):
            h = self.blocks[i](h)
        for blk in self.blocks:
            h = blk(h)
        for i in range(len(self.blocks)):
            h = self.blocks[i](h)
        out.append(h)
    """) == []


def test_a_loop_over_the_input_that_runs_no_module_is_only_tensor_maths():
    assert codes("""
        h = self.net(x)
        for start in range(0, x.shape[-1], self.hop):
            out.append(h[..., start:start + 256].sum(-1))
    """) == []


# An exit on this host's files before the model runs (a per-rank output that already exists), through helpers.
SEPARATE = """
import os
import torch


def run(model, wav):
    fn = getattr(model, "forward_wav", model)
    return fn(wav)


def separate_array(model, wav):
    return run(model, torch.as_tensor(wav))


def separate_file(model, filename, out_dir):
    out = os.path.join(out_dir, os.path.basename(filename))
    if os.path.isfile(out){extra}:
        {leave}
    wav = torch.load(filename)
    est = separate_array(model, wav)
    torch.save(est, out)
"""


def test_a_return_on_an_existing_output_file_skips_the_model_on_that_rank():
    found = check_source("m.py", SEPARATE.format(extra="", leave="return"))
    assert [f.code for f in found] == ["ZG204"]


def test_a_missing_input_file_that_raises_leaves_every_rank_the_same_way():
    assert check_source("m.py", SEPARATE.format(extra="", leave="raise FileExistsError(out)")) == []


# A training loop that runs while this host has no stop file: through a flag, or tested in the `while` itself.
STOP_FILE = """
import os


def train(model, batch, stop, steps):
{body}
"""


def _while_codes(body: str) -> list[str]:
    return [f.code for f in check_source("m.py", STOP_FILE.format(body=textwrap.indent(textwrap.dedent(body), "    ")))]


def test_a_while_loop_on_a_flag_set_from_this_hosts_files():
    assert _while_codes("""
        if_train = True
        while if_train:
            model(batch).mean().backward()
            if_train = not os.path.exists(stop)
    """) == ["ZG204"]


def test_a_while_loop_testing_this_hosts_files_itself():
    assert _while_codes("""
        while not os.path.exists(stop):
            model(batch).mean().backward()
    """) == ["ZG204"]


def test_a_file_test_beside_a_counted_while_loop_decides_no_exit():
    assert _while_codes("""
        resume = os.path.exists(stop)
        n = 0
        while n < steps:
            if os.path.exists(stop + ".log"):
                print("logged", resume)
            model(batch).mean().backward()
            n += 1
        while not os.path.exists(stop):
            pass
    """) == []
