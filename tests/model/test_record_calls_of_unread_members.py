"""A method of a member of no class we read, called by a name that says it keeps or reports its object
(`self.model_config.save_json(path)`, `self.tracker.log_summary(path)`), runs no submodule: a rank-gated save that
only writes a config and a plain state dict is no hang (`runs.records`, read in `HelperRuns` and
`divergence.helper_reaches`). The same member's other methods (`self.decoder.sample_images(p)`,
`self.tracker.decode(p)`) still count as running it."""

from __future__ import annotations

from tests.model.package_check import found_in_package

MODEL = """
import torch
from torch import nn


class AE(nn.Module):
    def __init__(self, model_config, decoder):
        super().__init__()
        self.model_config = model_config
        self.decoder = decoder
        self.enc = nn.Linear(4, 4)

    def forward(self, x):
        return self.decoder(self.enc(x))

    def save(self, dir_path):
        model_dict = {"model_state_dict": self.state_dict()}
        self.model_config.save_json(dir_path, "model_config")
        torch.save(model_dict, dir_path + "/model.pt")
"""

TRAINER = """
import torch.distributed as dist
from .model import AE


class Trainer:
    def __init__(self, model: AE):
        self.model = model
        self.is_main_process = dist.get_rank() == 0

    def save_checkpoint(self, model: AE, dir_path):
        model.save(dir_path)

    def train(self, loader):
        for x in loader:
            self.model(x).sum().backward()
        if self.is_main_process:
            self.save_checkpoint(self.model, "out")
"""

NET = """
import torch.distributed as dist
from torch import nn


class Net(nn.Module):
    def __init__(self, cfg, tracker):
        super().__init__()
        self.cfg = cfg
        self.tracker = tracker
        self.body = nn.Linear(4, 4)

    def _record(self, path):
        self.cfg.save_json(path, "cfg")
        self.tracker.log_summary(path)

    def forward(self, x):
        y = self.body(x)
        if dist.get_rank() == 0:
            self._record("out")
        return y
"""


def test_rank_gated_save_writing_a_config_is_clean(tmp_path):
    files = {"model.py": MODEL, "trainer.py": TRAINER}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG2") == []


def test_rank_gated_save_running_a_member_is_found(tmp_path):
    model = MODEL.replace('self.model_config.save_json(dir_path, "model_config")', "self.decoder.sample_images(dir_path)")
    files = {"model.py": model, "trainer.py": TRAINER}
    assert found_in_package(tmp_path, files, "trainer.py", prefix="ZG2") == [("ZG201", 17)]


def test_rank_gated_helper_reporting_members_is_clean(tmp_path):
    assert found_in_package(tmp_path, {"net.py": NET}, "net.py", prefix="ZG2") == []


def test_rank_gated_helper_running_a_member_is_found(tmp_path):
    net = NET.replace("self.tracker.log_summary(path)", "self.tracker.decode(path)")
    assert found_in_package(tmp_path, {"net.py": net}, "net.py", prefix="ZG2") == [("ZG201", 19)]
