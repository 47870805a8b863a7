"""Parameters reached through an optimizer's groups, a class's static helpers and initialisers by name (issue 20,
blind27/28 misses).

* A helper that yields the parameters of an optimizer's groups (`master_params(optimizer)`, a wrapper's `params`
  property) hands the model's parameters to what clips them: the trainer clips nothing under ZeRO-3 (ZG107).
  Look-alike: a helper yielding the groups' learning rates, only logged.
* A callback that collects the parameters of the trainer's optimizers' groups when training starts
  (`parameters.extend(group["params"])`, kept as `self.parameters`) and clips them before each step through a
  function it keeps (`self.clip_fun = clip_grad_norm_`) clips nothing under ZeRO-3 (ZG107). Look-alike: the same
  callback keeping the groups' learning rates.
* A training pipeline that keeps the named parameters of the models it holds (`self.model_parameters = [(n, p) for
  n, p in self.enc.named_parameters()] + [...]`) and clips `[p for n, p in self.model_parameters]` after the backward
  clips nothing (ZG107). Look-alike: the same clip over a list of plain tensors it made.
* A trainer's `save_model` serialising the model it is handed through `save_pretrained(output_dir)` writes its
  placeholders (ZG108). Look-alikes: the same call given a gathered `state_dict=`, and the tokenizer's save.
* A static or class method of a class in another file, handed the model's parameters, reads their data (an fp16
  optimizer flattening them into fp32 master weights): ZG109 at the call. Look-alike: the same helper handed plain
  tensors the trainer made.
* An optimizer whose constructor calls a method that broadcasts `p.data` of its groups reads the placeholders it
  was handed (ZG109). Look-alike: its `step`, which ZeRO-3 runs on the partitions, reading the same groups.
* A trainer calling an initialiser of the model it holds (`self.model.init_weights()`, an abstract
  `init_model_randomly` its subclasses override) writes every parameter of it after partitioning (ZG101).
  Look-alike: a method named like one whose every definition sets no parameter (`reset_model_state` zeroing a
  counter).
"""

from __future__ import annotations

from pathlib import Path

from zgen.model import check_source

from tests.model.package_check import found_in_package


def _found(source: str, prefix: str = "ZG1") -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("trainer.py", source) if f.code.startswith(prefix)]


GROUP_HELPERS = """
import torch


def master_params(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            yield p


def learning_rates(optimizer):
    for group in optimizer.param_groups:
        yield group["lr"]


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def step(self, x):
        loss = self.model(x).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(master_params(self.optimizer), 1.0)
        print(list(learning_rates(self.optimizer)))
        self.optimizer.step()


class FairOptimizer:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    @property
    def params(self):
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                yield p

    def clip_grad_norm(self, max_norm):
        return torch.nn.utils.clip_grad_norm_(self.params, max_norm)
"""


def test_a_helper_yielding_the_groups_parameters_hands_them_to_the_clip():
    assert _found(GROUP_HELPERS) == [("ZG107", 24), ("ZG107", 40)]


FP16 = """
import torch


class MasterOptimizer:
    def __init__(self, params, fp32_params, inner):
        self.params = params
        self.fp32_params = fp32_params
        self.inner = inner

    @staticmethod
    def build_fp32_params(params):
        return torch.cat([p.data.view(-1) for p in params])

    @classmethod
    def build(cls, params, lr):
        flat = cls.build_fp32_params(params)
        return cls(params, flat, torch.optim.Adam([flat], lr=lr))
"""

TRAINER = """
from .fp16 import MasterOptimizer


class Trainer:
    def __init__(self, model):
        self.model = model

    def build_optimizer(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = MasterOptimizer.build(params, 1e-3)

    def build_buffers(self, sizes):
        tensors = [p for p in self.scratch(sizes)]
        self.flat = MasterOptimizer.build_fp32_params(tensors)

    def scratch(self, sizes):
        return [torch.zeros(n) for n in sizes]
"""


def test_a_static_helper_of_another_files_class_reads_the_parameters_it_is_handed(tmp_path: Path):
    found = found_in_package(tmp_path, {"fp16.py": FP16, "trainer.py": TRAINER}, "trainer.py", prefix="ZG1")
    assert found == [("ZG109", 11)]


SYNCED = """
import torch
import torch.distributed as dist


class Synced(torch.optim.Optimizer):
    def __init__(self, params, inner):
        self.inner = inner
        super().__init__(params, {})
        self.sync_parameters()

    def sync_parameters(self, root=0):
        for group in self.param_groups:
            for p in group["params"]:
                dist.broadcast(p.data, src=root)

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad.data.mul_(0.5)
        self.inner.step()
"""


def test_an_optimizer_broadcasting_its_groups_from_its_constructor_reads_placeholders():
    assert _found(SYNCED) == [("ZG109", 15)]


INITIALISERS = """
import torch
from torch import nn


class Base(nn.Module):
    def init_model_randomly(self, config):
        ...

    def reset_model_state(self):
        self.steps = 0


class Trainer:
    def __init__(self, model: Base):
        self.model = model

    def setup(self, config):
        self.model.init_model_randomly(config=config)
        self.model.reset_model_state()

    def restart(self):
        self.model.init_weights()
"""


def test_an_initialiser_called_on_a_held_model_writes_its_parameters():
    assert _found(INITIALISERS) == [("ZG101", 19), ("ZG101", 23)]


CALLBACK = """
import torch
from torch.nn.utils import clip_grad_norm_


class GradClip:
    def __init__(self, max_norm):
        self.max_norm = max_norm
        self.clip_fun = clip_grad_norm_
        self.parameters = None

    def on_train_begin(self, trainer):
        kept = []
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                kept.extend({what})
        self.parameters = kept

    def on_before_optimizer_step(self, trainer):
        self.clip_fun(self.parameters, self.max_norm)
"""


def test_a_callback_clipping_the_groups_parameters_it_kept_clips_nothing():
    assert _found(CALLBACK.replace("{what}", 'group["params"]')) == [("ZG107", 20)]
    assert _found(CALLBACK.replace("{what}", '[group["lr"]]')) == []


PIPELINE = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(512, 512)

    def forward(self, x):
        return self.fc(x)


class Pipeline:
    def __init__(self):
        self.enc = Encoder()
        self.head = Encoder()
        self.model_parameters = [(n, p) for n, p in self.enc.named_parameters()] + \\
                                [(n, p) for n, p in self.head.named_parameters()]
        self.scales = [("s", torch.ones(4, requires_grad=True))]

    def train(self, batches):
        for x in batches:
            self.head(self.enc(x)).sum().backward()
            torch.nn.utils.clip_grad_norm_([p for n, p in {kept}], 1.0)
"""


def test_a_pipeline_clipping_the_named_parameters_it_kept_clips_nothing():
    assert _found(PIPELINE.replace("{kept}", "self.model_parameters")) == [("ZG107", 26)]
    assert _found(PIPELINE.replace("{kept}", "self.scales")) == []


SAVER = """
class Trainer:
    def __init__(self, model, tokenizer, accelerator):
        self.model = model
        self.tokenizer = tokenizer
        self.accelerator = accelerator

    def save_model(self, output_dir, model=None):
        model_to_save = model.module if hasattr(model, "module") else model
        {save}
        self.tokenizer.save_pretrained(output_dir)
"""


def test_a_trainer_saving_the_model_through_save_pretrained_writes_placeholders():
    assert _found(SAVER.replace("{save}", "model_to_save.save_pretrained(output_dir)")) == [("ZG108", 10)]
    gathered = "model_to_save.save_pretrained(output_dir, state_dict=self.accelerator.get_state_dict(model))"
    assert _found(SAVER.replace("{save}", gathered)) == []
