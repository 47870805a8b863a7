"""Recurrent layers as speech and sequence models build and tend them: the class picked from a dict the class body
keeps (`supported_rnns = {"lstm": nn.LSTM, ...}`), `flatten_parameters()` run in forward, in the constructor after
the layer was built, or in a method the training loop calls on the built model; and a rank kept in a module-level
name that a setup function rebinds (`global rank; rank = dist.get_rank()`), from which a layer picks its experts."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

SPEECH = '''
from torch import nn


class Decoder(nn.Module):
    supported_rnns = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}

    def __init__(self, d, rnn_type="lstm"):
        super().__init__()
        self.embedding = nn.Embedding(1000, d)
        rnn_cell = self.supported_rnns[rnn_type]
        self.rnn = rnn_cell(d, d, batch_first=True)
        self.rnn.flatten_parameters()

    def forward(self, ids, state=None):
        out, state = self.rnn(self.embedding(ids), state)
        return out


class Seq2Seq(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.decoder = Decoder(d)

    def forward(self, ids):
        return self.decoder(ids)

    def flatten_parameters(self):
        self.decoder.rnn.flatten_parameters()
'''


ENCODER = SPEECH.replace("class Decoder", "class Encoder").replace(
    "        out, state = self.rnn(", "        if self.training:\n            self.rnn.flatten_parameters()\n"
    "        out, state = self.rnn(", 1)


def test_flatten_parameters_of_a_recurrent_layer_picked_from_a_dict_of_classes(tmp_path: Path) -> None:
    path = tmp_path / "speech.py"
    path.write_text(SPEECH)
    codes = found(path)
    assert ("ZG109", 13) in codes and ("ZG303", 13) not in codes  # in the constructor, after the layer was built
    assert ("ZG109", 29) in codes  # in a method the training loop calls on the built model
    path = tmp_path / "encoder.py"
    path.write_text(ENCODER)
    assert ("ZG303", 17) in found(path)  # in forward, before the layer's own hook ran


EXPERTS = '''
import torch
import torch.distributed as dist
from torch import nn

world_size = 1
rank = 0


class MoE(nn.Module):
    def __init__(self, d, n_experts):
        super().__init__()
        self.n_local = n_experts // world_size
        self.start = rank * self.n_local
        self.end = self.start + self.n_local
        self.low_rank = 4
        self.experts = nn.ModuleList([nn.Linear(d, d) for _ in range(n_experts)])
        self.adapters = nn.ModuleList([nn.Linear(d, d) for _ in range(self.low_rank)])

    def forward(self, x):
        y = torch.zeros_like(x)
        for i in range(self.start, self.end):
            y = y + self.experts[i](x)
        for i in range(self.low_rank):
            y = y + self.adapters[i](x)
        return y


def setup():
    global world_size, rank
    world_size = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
'''


def test_a_rank_the_setup_rebinds_in_a_module_global_picks_the_experts(tmp_path: Path) -> None:
    path = tmp_path / "moe.py"
    path.write_text(EXPERTS)
    codes = found(path, "ZG2")
    assert ("ZG201", 22) in codes
    assert not any(line == 24 for _code, line in codes)  # a matrix's rank: a setting


GROUPED = '''
from torch import nn


class GroupedGRU(nn.Module):
    def __init__(self, d, groups):
        super().__init__()
        self.layers = nn.ModuleList(nn.GRU(d, d) for _ in range(groups))

    def forward(self, x):
        return [layer(x)[0] for layer in self.layers]

    def flatten_parameters(self):
        for layer in self.layers:
            layer.flatten_parameters()
'''


def test_flatten_parameters_of_each_layer_a_method_walks(tmp_path: Path) -> None:
    path = tmp_path / "grouped.py"
    path.write_text(GROUPED)
    assert ("ZG109", 15) in found(path)


TIMED = '''
import time


class Trainer:
    def __init__(self, model):
        self.model = model

    def train(self, loader, epochs):
        begin = time.time()
        model = self.model
        for epoch in range(epochs):
            model, elapsed = self._train_epoch(model, loader, begin)
            print(epoch, elapsed)

    def _train_epoch(self, model, loader, begin):
        kind = "seq2seq" if model.decoder is not None else "ctc"
        for batch in loader:
            self._forward(model, batch, kind)
        return model, time.time() - begin

    def _forward(self, model, batch, kind):
        if kind == "seq2seq":
            return model(batch).sum().backward()
        return model.encoder(batch).sum().backward()
'''


def test_a_time_handed_to_a_step_of_the_trainer_comes_back_as_a_report(tmp_path: Path) -> None:
    path = tmp_path / "trainer.py"
    path.write_text(TIMED)
    assert found(path, "ZG2") == []  # (the model's kind, not the clock, picks the branch)
