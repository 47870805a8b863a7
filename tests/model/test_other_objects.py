"""Models reached through another object: the attribute a hook's framework object or a callback's trainer holds the
model in (`runner.model`, `self.trainer.network`), or an item of a collection the code tests to be a module; and
helpers (of any file) that read every parameter of what they are given, reported at the call that hands them
such a model (issue 20, h-g3z1: blind5's plugin, hook, callback and checkpoint misses as one typing fact)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, path: str = "hooks.py") -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source(path, textwrap.dedent(source))]


HOOKS = """
import copy
import torch


class AverageHook:
    def before_run(self, runner):
        self.shadow = copy.deepcopy(runner.model)

    def after_train_epoch(self, runner):
        torch.save(runner.model.module.state_dict(), "last.pt")

    def after_val_epoch(self, runner, metrics=None):
        runner.model.forward(metrics)


class EarlyStop:
    def set_trainer(self, trainer):
        self.trainer = trainer

    def on_epoch_end(self, epoch, logs=None):
        self.best = copy.deepcopy(self.trainer.network.state_dict())

    def on_train_end(self, logs=None):
        self.trainer.network.load_state_dict(self.best)
"""


def test_a_model_held_by_the_object_a_hook_or_callback_is_handed_is_built():
    # whatever the framework object's class, its module-named attribute is the built (partitioned) model
    assert _found(HOOKS) == [("ZG105", 8), ("ZG108", 11), ("ZG302", 14), ("ZG108", 22), ("ZG108", 25)]


HOOKS_SAFE = """
import copy
import deepspeed
import torch


class ConfigHook:
    def before_run(self, runner):
        self.spec = copy.deepcopy(runner.cfg.model)

    def after_train_epoch(self, runner):
        with deepspeed.zero.GatheredParameters(list(runner.model.parameters()), modifier_rank=None):
            torch.save(runner.model.state_dict(), "last.pt")

    def describe(self, runner):
        return summarize(runner.model.hidden_dim, runner.model.num_layers)


def summarize(*sizes):
    total = 0
    for s in sizes:
        total = total + s
    return total
"""


def test_settings_sizes_and_gathered_state_of_a_handed_object_stay_clean():
    assert _found(HOOKS_SAFE) == []


OBJECTS = """
import torch
from torch import nn


def load_objects(to_load, checkpoint):
    for name, obj in to_load.items():
        if isinstance(obj, nn.Module):
            obj.load_state_dict(checkpoint[name])
        else:
            obj.load_state_dict(checkpoint[name])


def collect(to_save):
    out = {}
    for name, obj in to_save.items():
        if isinstance(obj, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            obj = obj.module
        out[name] = obj.state_dict()
    return out


def restore_optimizers(objs, checkpoint):
    for name, obj in objs.items():
        if isinstance(obj, torch.optim.Optimizer):
            obj.load_state_dict(checkpoint[name])
"""


def test_an_item_tested_to_be_a_module_is_a_built_model_only_where_the_test_holds():
    # the `else` of the module test and an optimizer's state are no module's
    assert _found(OBJECTS, "checkpoints.py") == [("ZG108", 9), ("ZG108", 19)]


UTILS = """
def copy_params(model):
    out = {}
    for name, p in model.named_parameters():
        out[name] = p.data.clone()
    return out


def param_names(model):
    return [name for name, _ in model.named_parameters()]
"""

PLUGIN = """
from .utils import copy_params, param_names


class Regulariser:
    def after_training_exp(self, strategy, **kwargs):
        self.saved = copy_params(strategy.model)
        self.names = param_names(strategy.model)
"""


def test_a_helper_of_another_file_reading_every_parameter_is_reported_where_it_is_handed_the_model(tmp_path):
    pkg = tmp_path / "plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(textwrap.dedent(UTILS))
    plugin = pkg / "regulariser.py"
    plugin.write_text(textwrap.dedent(PLUGIN))
    # copying each parameter's values reads placeholders; listing the names reads nothing
    assert [(f.code, f.line) for f in check_source(str(plugin), plugin.read_text())] == [("ZG109", 7)]


AVERAGES = """
import itertools


class Averager:
    def __init__(self, average):
        self.average = average

    def after_iter(self, runner):
        self.average.update_parameters(runner.model)

    def swap(self, runner, with_buffers):
        own = (
            itertools.chain(self.average.module.parameters(), self.average.module.buffers())
            if with_buffers
            else self.average.module.parameters()
        )
        for p_avg, p_src in zip(own, runner.model.parameters()):
            p_avg.data.copy_(p_src.data)

    def log(self, runner):
        self.average.update(runner.cfg.model)
        self.average.update(runner.loss)
"""


def test_an_average_updated_from_a_model_reads_it_and_a_conditional_chain_of_parameters_is_walked():
    # any object's average update handed a built model reads every parameter of it; a parameter list chosen by a
    # conditional expression or chained with the buffers is still the model's parameters
    found = _found(AVERAGES, "averager.py")
    assert ("ZG109", 10) in found and ("ZG101", 19) in found
    assert not any(line > 19 for _, line in found)  # a setting and a loss value are no models


CLIPPER = """
import torch


class OptimWrapper:
    def __init__(self, optimizer, accelerator, clip_grad=None):
        self.optimizer = optimizer
        self.accelerator = accelerator
        self.extra = [torch.zeros(3)]
        if clip_grad is not None:
            self.clip_func = torch.nn.utils.clip_grad_norm_

    def step_clipped(self):
        params = []
        for group in self.optimizer.param_groups:
            params.extend(group["params"])
        params = list(filter(lambda p: p.grad is not None, params))
        self.clip_func(params, max_norm=1.0)

    def clip_all(self, max_norm):
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        torch.nn.utils.clip_grad_norm_(params, max_norm)

    def clip_first(self):
        torch.nn.utils.clip_grad_value_(self.optimizer.param_groups[0]["params"], 0.5)

    def clip_by_engine(self):
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        self.accelerator.clip_grad_norm_(params, 1.0)

    def clip_extra(self):
        self.clip_func(self.extra, max_norm=1.0)

    def scale_lr(self, factor):
        for group in self.optimizer.param_groups:
            group["lr"] = group["lr"] * factor
"""


def test_clipping_the_parameters_of_an_optimizers_groups_clips_the_models_gradients():
    # the groups' "params" are the model's parameters, however collected; a name bound to torch's clipping clips;
    # the engine's own clipping, plain tensors and the groups' settings are no hazard
    assert _found(CLIPPER, "wrapper.py") == [("ZG107", 18), ("ZG107", 22), ("ZG107", 25)]


WALKER = """
import deepspeed
import torch
from torch import nn


def load_into(module, state_dict):
    def load(mod, prefix=""):
        mod._load_from_state_dict(state_dict, prefix, {}, True, [], [], [])
        for name, child in mod._modules.items():
            if child is not None:
                load(child, prefix + name + ".")

    load(module)


class Trainer:
    def __init__(self, model):
        self.model = model

    def restore(self, path):
        load_into(self.model, torch.load(path))

    def snapshot(self):
        dest = {}
        self.model._save_to_state_dict(dest, "", False)
        return dest

    def restore_gathered(self, path):
        with deepspeed.zero.GatheredParameters(list(self.model.parameters()), modifier_rank=0):
            load_into(self.model, torch.load(path))


class Scaled(nn.Linear):
    def _load_from_state_dict(self, state_dict, prefix, *args):
        super()._load_from_state_dict(state_dict, prefix, *args)
"""


def test_a_hand_written_state_walker_loads_and_saves_like_the_state_dict_api():
    # torch's per-module halves of load_state_dict/state_dict, called by a nested walker or directly on a held
    # model, load or read every parameter; inside a gather, and torch's own hook during a load, they do not
    found = _found(WALKER, "walker.py")
    assert ("ZG108", 22) in found and ("ZG108", 26) in found
    assert not any(line > 26 for _, line in found)
