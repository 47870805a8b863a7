"""A training script hands the partitioned model (after `deepspeed.initialize` or `accelerator.prepare`, also
through an unwrapping call, `accelerator.unwrap_model(policy)`, and by keyword) to a helper of another file that
saves it (`policy.save_pretrained(d)`), pickles it whole (`torch.save(model, p)`, `pickle.dump`), loads into it or
deep-copies it: ZG108/ZG105 at the argument (`effects.module_arg_effects`, `script._handed_model`). Against a
config handed to the same kind of helper and a model handed to one that only logs its type."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
from torch import nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)


def make_net(d):
    return Net(d)
"""

HELPERS = """
import copy
import pickle
import torch


def save_checkpoint(checkpoint_dir, step, cfg, policy, optimizer=None):
    policy.save_pretrained(checkpoint_dir)
    if optimizer is not None:
        torch.save(optimizer.state_dict(), f"{checkpoint_dir}/opt.pt")


def dump_model(model, path):
    torch.save(model, path)


def pickle_net(net, f):
    pickle.dump(net, f)


def make_ema(model):
    return copy.deepcopy(model).eval()


def save_config(cfg, path):
    torch.save(cfg, path)


def log_model(model, logger):
    logger.info(str(type(model)))
"""

TRAIN = """
import deepspeed
from accelerate import Accelerator
from .nets import make_net
from .helpers import save_checkpoint, dump_model, pickle_net, make_ema, save_config, log_model


def train(cfg):
    accelerator = Accelerator()
    policy = make_net(cfg.d)
    optimizer = None
    policy, optimizer = accelerator.prepare(policy, optimizer)
    for step in range(cfg.steps):
        if accelerator.is_main_process:
            save_checkpoint(
                checkpoint_dir="out",
                step=step,
                cfg=cfg,
                policy=accelerator.unwrap_model(policy),
                optimizer=optimizer,
            )
    dump_model(policy, "m.pt")
    save_config(cfg, "cfg.pt")
    log_model(policy, None)


def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    pickle_net(engine.module, open("f", "wb"))
    ema = make_ema(engine.module)
    return ema
"""


def test_a_partitioned_model_handed_to_a_helper_that_saves_pickles_or_copies_it(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "helpers.py": HELPERS, "train.py": TRAIN}, "train.py",
                             prefix="ZG1")
    assert ("ZG108", 19) in found  # by keyword, unwrapped, to a helper calling `save_pretrained`
    assert ("ZG108", 22) in found  # to a helper that `torch.save`s it whole
    assert ("ZG108", 29) in found  # to a helper that pickles it
    assert ("ZG105", 30) in found  # to a helper that deep-copies it


def test_a_config_saved_and_a_model_only_logged_stay_clean(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "helpers.py": HELPERS, "train.py": TRAIN}, "train.py",
                             prefix="ZG1")
    assert [f for f in found if f[1] in (23, 24)] == []
