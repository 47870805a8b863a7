"""A model an argument holds (`runner.model` of a hook handed the runner) runs where the function uses it as one.

mm-style hooks and trainer callbacks are handed the object driving training, not the model: `runner.model`,
`trainer.policy`. A hook that runs on the main process only (`@master_only`) and puts that attribute into eval mode
and runs its `val_step`, directly or through a local bound to it (`module = runner.model`, unwrapped by `module =
module.module`) or to the bound method (`forward_func = module.val_step`), leaves the other ranks out of the
model's all-gathers (ZG201). A setting's attribute (`args.model`), a model name, an attribute read without a call
and one only asked another method (`engine.policy.monitor_vars()`, an RL policy object) are no such model.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HOOK = """
import torch
from mmengine.dist import master_only


class VisualizationHook:
    def __init__(self, interval, batch):
        self.interval = interval
        self.batch = batch

    @master_only
    def after_train_iter(self, runner, batch_idx):
        if batch_idx % self.interval == 0:
            self.vis_sample(runner)

    @torch.no_grad()
    def vis_sample(self, runner):
        module = runner.model
        module.eval()
        if hasattr(module, "module"):
            module = module.module
        forward_func = module.val_step
        outputs = [forward_func(inputs) for inputs in self.batch]
        module.train()
        return outputs


@master_only
def sample_once(runner, batch):
    runner.model.eval()
    return runner.model.test_step(batch)
"""

LOOK_ALIKES = """
import torch
from mmengine.dist import master_only


@master_only
def show_vars(engine):
    return engine.policy.monitor_vars()


class LoggerHook:
    @master_only
    def after_train_iter(self, runner, batch_idx):
        name = runner.model_name
        training = runner.model.training
        runner.logger.info(f"{name} {training} {batch_idx}")


@master_only
def report(args, log):
    log.write(args.model.upper())
"""


def _found(source: str, prefix: str = "ZG") -> list[tuple[str, int]]:
    found = check_source("hooks.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith(prefix))


def test_a_main_process_hook_running_the_runners_model_is_found():
    found = _found(HOOK, "ZG2")
    assert ("ZG201", 11) in found  # `after_train_iter` reaches `forward_func(inputs)` through `vis_sample`
    assert ("ZG201", 28) in found  # `runner.model.test_step(batch)` (after `runner.model.eval()`) on rank 0 only


def test_a_model_name_an_attribute_read_and_a_settings_attribute_are_no_model():
    assert _found(LOOK_ALIKES, "ZG2") == []
