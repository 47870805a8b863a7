"""Inputs walked a batch at a time, and models whose base we cannot read.

`for start in range(0, len(sentences), batch_size): self(sentences[start:start + batch_size])` runs the model once per
batch of the call's input: as many times as this rank's input is long (ZG204). Reading one step of an input at a time
(`sigmas[i]`, `sigmas[i + 1]`) is a schedule the caller chose, the same on every rank. So is a model run per piece of
an input split apart (`re.split(pattern, text)`, or the input whole), where the pieces of a setting are not data.

A class derived from a library class no file we read defines (`class Instructor(SentenceTransformer)`) that switches
itself to evaluation and runs its own forward is a module, though it defines no `forward` itself.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


HAZARDS = """
import torch
from torch import nn
from tqdm import trange
from sentence_transformers import SentenceTransformer


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))

    def forward(self, features):
        return self.net(features)

    def encode(self, sentences, batch_size=32):
        out = []
        for start in range(0, len(sentences), batch_size):
            out.extend(self(torch.stack(sentences[start:start + batch_size])))
        return out


class Instructor(SentenceTransformer):
    def encode(self, sentences, batch_size=32):
        self.eval()
        out = []
        for start in trange(0, len(sentences), batch_size, disable=True):
            features = self.tokenize(sentences[start:start + batch_size])
            with torch.no_grad():
                out.extend(self.forward(features))
        return out
"""


def test_a_model_run_per_batch_of_its_input_runs_as_often_as_the_input_is_long():
    assert _found(HAZARDS) == [("ZG204", 18), ("ZG204", 27)]


LOOK_ALIKES = """
import torch
from torch import nn
from sentence_transformers.evaluation import SentenceEvaluator


class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))

    def forward(self, x, sigma):
        return self.net(x) * sigma

    def sample(self, x, sigmas):
        for i in range(len(sigmas) - 1):
            x = x + (sigmas[i + 1] - sigmas[i]) * self(x, sigmas[i])
        return x


class Scorer(SentenceEvaluator):
    def __call__(self, model, sentences, batch_size=32):
        self.eval()
        return [self.score(sentences[s:s + batch_size]) for s in range(0, len(sentences), batch_size)]

    def score(self, batch):
        return len(batch)
"""


def test_a_schedule_stepped_through_and_an_evaluator_of_a_library_run_no_model_per_batch():
    assert _found(LOOK_ALIKES) == []


PIECES = """
import re

import torch
from torch import nn


class Voice(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))

    def forward(self, x):
        return self.net(x)


class Pipeline:
    def __init__(self, model: Voice, template: str):
        self.model = model
        self.template = template

    def encode(self, text):
        return torch.zeros(len(text), 1024)

    def __call__(self, text, split_pattern=r"\\n+"):
        text = re.split(split_pattern, text.strip()) if split_pattern else [text]
        for piece in text:
            yield self.model(self.encode(piece))

    def prompt(self):
        parts = re.split(r"\\|", self.template)
        return [self.model(self.encode(p)) for p in parts]
"""


def test_a_model_run_per_piece_of_a_split_input_but_not_per_piece_of_a_setting():
    assert _found(PIECES) == [("ZG204", 26)]
