"""Decisions a rank takes on its own input that make it run the model a different number of times than its peers:
one value of a batch field, a key the caller may not have put into the input mapping, an input with no keypoints,
the batches a loader kept on the tester hands out, a prediction this host cached, a stop flag an imported
callback sets on the validation loss. Each is a hazard under ZeRO-3, where every call all-gathers with all ranks;
the same shapes on settings, on the module's own attributes or on a cache the call fills are not."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model.package_check import TINY_NET, found


def _found(tmp_path: Path, source: str, prefix: str = "ZG2") -> list[tuple[str, int]]:
    path = tmp_path / "model.py"
    path.write_text(source)
    return found(path, prefix)


def test_one_value_of_a_batch_field_tested_against_a_number(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.stride = (2, 2)

    def forward(self, batch):
        x = batch["feat"]
        offset = batch["offset"]
        if offset[-1] > 0:
            x = self.proj(x)
        if self.stride[0] > 1:
            x = self.proj(x)
        return x
"""
    assert _found(tmp_path, source) == [("ZG203", 15)]


def test_an_input_without_keypoints_returns_before_the_encoder(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.kenc = nn.Linear(4, 4)

    def forward(self, data):
        desc0, desc1 = data["descriptors0"], data["descriptors1"]
        kpts0, kpts1 = data["keypoints0"], data["keypoints1"]
        if kpts0.shape[1] == 0 or kpts1.shape[1] == 0:
            return {"matches0": kpts0.new_full(kpts0.shape[:-1], -1)}
        return self.kenc(desc0) + self.kenc(desc1)
"""
    assert _found(tmp_path, source) == [("ZG204", 14)]


def test_a_key_the_caller_may_not_have_put_runs_the_text_encoder(tmp_path: Path) -> None:
    # the call writes another key of the same mapping (`y["mask"]`): still the caller's input, not a cache; the
    # encoder runs through an attribute the constructor bound to one of the class's methods
    source = """
import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.embed_text = nn.Linear(4, 4)
        if kind == "clip":
            self.encode_text = self.clip_encode_text
        else:
            self.encode_text = self.bert_encode_text

    def clip_encode_text(self, text):
        return self.embed_text(text)

    def bert_encode_text(self, text):
        return self.embed_text(text) * 2

    def forward(self, x, y=None):
        y["mask"] = y["mask"].bool()
        if "text_embed" in y.keys():
            enc_text = y["text_embed"]
        else:
            enc_text = self.encode_text(y["text"])
        return x + enc_text


class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_text = nn.Linear(4, 4)

    def forward(self, x, cache):
        if "text" not in cache.keys():
            cache["text"] = self.embed_text(x)
        return x + cache["text"]
"""
    assert _found(tmp_path, source) == [("ZG203", 23)]


def test_children_walked_through_the_module_table_skipped_on_an_empty_input(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class PointSequential(nn.Module):
    def __init__(self, *args):
        super().__init__()
        for idx, module in enumerate(args):
            self.add_module(str(idx), module)

    def forward(self, input):
        for k, module in self._modules.items():
            if input.indices.shape[0] != 0:
                input = input.replace_feature(module(input.features))
        return input
"""
    assert _found(tmp_path, source) == [("ZG203", 14)]


TESTER = """
import os
import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class Tester:
    def __init__(self, loader, names):
        self.model = Net()
        self.test_loader = loader
        self.names = names

    def fragments(self):
        for idx, data_dict in enumerate(self.test_loader):
            fragment_list = data_dict.pop("fragment_list")
            for i in range(len(fragment_list)):
                self.model(fragment_list[i])

    def cached(self, save_path):
        for data in self.test_loader:
            if os.path.isfile(os.path.join(save_path, data["name"] + ".npy")):
                continue
            self.model(data["x"])

    def every_name(self):
        for name in self.names:
            for i in range(4):
                self.model(torch.zeros(4))
"""


def test_the_batches_a_loader_kept_on_the_tester_hands_out(tmp_path: Path) -> None:
    assert _found(tmp_path, TESTER) == [("ZG204", 26), ("ZG204", 31)]


EARLY_STOPPING = """
import numpy as np
import torch


class EarlyStopping:
    def __init__(self, patience=7):
        self.patience = patience
        self.counter = 0
        self.best_score = None
        self.early_stop = False

    def __call__(self, val_loss, model, path):
        score = -val_loss
        if self.best_score is None:
            self.best_score = score
        elif score < self.best_score:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True
        else:
            self.best_score = score
            self.counter = 0
"""

EXPERIMENT = """
import numpy as np
import torch
from torch import nn
from utils.tools import EarlyStopping


""" + TINY_NET + """

class Exp:
    def __init__(self, args):
        self.model = Net()

    def vali(self, loader, criterion):
        total_loss = []
        for batch_x, batch_y in loader:
            total_loss.append(criterion(self.model(batch_x).detach(), batch_y))
        return np.average(total_loss)

    def train(self, train_loader, vali_loader, criterion, path):
        early_stopping = EarlyStopping(patience=3)
        for epoch in range(10):
            for batch_x, batch_y in train_loader:
                criterion(self.model(batch_x), batch_y).backward()
            vali_loss = self.vali(vali_loader, criterion)
            early_stopping(vali_loss, self.model, path)
            if early_stopping.early_stop:
                break
"""


def test_a_stop_flag_a_callback_of_a_sibling_folder_sets_on_the_validation_loss(tmp_path: Path) -> None:
    # `exp/` and `utils/` hold no `__init__.py`: the project's entry script above them runs both
    for folder, name, source in (("utils", "tools.py", EARLY_STOPPING), ("exp", "exp_main.py", EXPERIMENT)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text(textwrap.dedent(source))
    (tmp_path / "run.py").write_text("from exp.exp_main import Exp\n")
    assert found(tmp_path / "exp" / "exp_main.py", "ZG204") == [("ZG204", 34)]


def test_the_whole_dataset_a_loader_holds_is_every_ranks(tmp_path: Path) -> None:
    # a distributed sampler splits the indices a loader hands out, not its dataset: every rank encodes all texts
    source = """
import torch


@torch.no_grad()
def evaluation(model, data_loader):
    texts = data_loader.dataset.text
    num_text = len(texts)
    for i in range(0, num_text, 256):
        model.text_encoder(texts[i: min(num_text, i + 256)])
    for i in range(len(data_loader.dataset)):
        model.text_encoder(i)
    for batch in data_loader:
        for j in range(len(batch["captions"])):
            model.text_encoder(batch["captions"][j])
"""
    assert _found(tmp_path, source) == [("ZG204", 14)]
