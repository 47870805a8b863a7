"""A loop counted by a length of this rank's data, walked through a pass-through wrapper (`analysis/counts.py`,
ZG204): a progress bar, a local bound to one or to the identity, `trange`; against a wrapped configured count."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
from torch import nn
from tqdm import tqdm, trange
from rich.progress import track


class LM(nn.Module):
    def __init__(self, depth=4):
        super().__init__()
        self.net = nn.Linear(512, 512)
        self.depth = depth

    def forward(self, x):
        return self.net(x)

"""


def codes(code: str) -> list[str]:
    source = HEAD + textwrap.indent(textwrap.dedent(code), "    ")
    return sorted(f.code for f in check_source("m.py", source) if f.code.startswith("ZG2"))


def test_decoding_steps_set_by_the_prompt_length_behind_a_progress_bar():
    assert codes("""
        def generate(self, prompt, seq_len):
            out = prompt
            steps = max(1, seq_len - prompt.shape[-1])
            for _ in tqdm(range(steps), desc="sampling"):
                out = torch.cat([out, self(out)[:, -1:]], -1)
            return out
    """) == ["ZG204"]


def test_a_local_wrapper_that_is_a_progress_bar_or_the_identity():
    assert codes("""
        def generate(self, prompt, seq_len, verbose=False):
            out = prompt
            wrap = tqdm if verbose else (lambda it: it)
            for _ in wrap(range(seq_len - prompt.shape[-1])):
                out = torch.cat([out, self(out)[:, -1:]], -1)
            return out
    """) == ["ZG204"]


def test_trange_and_track_over_a_length_of_the_batch():
    assert codes("""
        def refine(self, x):
            for _ in trange(len(x)):
                x = self.net(x)
            return x
    """) == ["ZG204"]
    assert codes("""
        def refine(self, x):
            for start in track(range(0, x.shape[-1], 64)):
                x = self.net(x)
            return x
    """) == ["ZG204"]


def test_a_configured_count_behind_a_progress_bar_is_the_same_everywhere():
    assert codes("""
        def refine(self, x):
            for _ in tqdm(range(self.depth), desc="refining"):
                x = self.net(x)
            for _ in trange(self.depth):
                x = self.net(x)
            return x
    """) == []


def test_a_schedule_walked_one_step_at_a_time_is_the_callers_choice():
    # `sigmas` is only read step by step and handed to the model beside the data, never as the data itself
    assert codes("""
        def sample(self, x, sigmas):
            for i in trange(len(sigmas) - 1):
                denoised = self.net(x * sigmas[i])
                x = x + (sigmas[i + 1] - sigmas[i]) * denoised
            return x
    """) == []
    # a sequence whose steps are the model's input is this rank's data
    assert codes("""
        def decode(self, tokens):
            out = []
            for t in trange(len(tokens)):
                out.append(self.net(tokens[t]))
            return out
    """) == ["ZG204"]
