"""Operations on a built model as a whole, and on its gradients, in code a training loop hands it to
(`analysis/provenance.py`, `analysis/grads.py`): the model pickled whole (`pickle.dump`, a pipe's `send`), a plain
object keeping it copied or pickled (`copy.deepcopy(agent)`, `torch.save(self)`), a parameter's gradient read
(`p.grad.data.norm()`); next to look-alikes that must stay clean: the same operations on an object that holds no
model, a gradient only tested, reset or sized, a model built in the same function."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import copy
import pickle

import torch
from torch import nn
"""


def _found(body: str) -> list[tuple[str, int]]:
    """(code, line relative to `body`) of the ZG1 findings."""
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG1"))


def test_a_model_pickled_or_sent_whole() -> None:
    body = """
    def ship(model: nn.Module, pipe, fh):
        pickle.dump(model, fh)
        pipe.send(model)
    """
    assert _found(body) == [("ZG108", 3), ("ZG108", 4)]


def test_an_object_without_a_model_pickled_or_sent_is_clean() -> None:
    body = """
    def ship(opt: torch.optim.Optimizer, pipe, fh, model: nn.Module):
        pickle.dump(opt, fh)
        pipe.send(opt.state_dict())
        pipe.send(model, fh)
        local = nn.Linear(4096, 4096)
        pipe.send(local)
    """
    assert _found(body) == []


def test_a_plain_object_keeping_a_built_model_copied_or_pickled_whole() -> None:
    body = """
    class Agent:
        def __init__(self, net: nn.Module, gamma=0.99):
            self.net = net
            self.gamma = gamma

        def snapshot(self, path):
            torch.save(self, path)
            return copy.deepcopy(self)


    def ship(model: nn.Module, fh):
        agent = Agent(model)
        pickle.dump(agent, fh)
    """
    assert _found(body) == [("ZG105", 9), ("ZG108", 8), ("ZG108", 14)]


def test_a_plain_object_keeping_settings_copied_or_pickled_is_clean() -> None:
    body = """
    class Settings:
        def __init__(self, lr: float):
            self.lr = lr

        def snapshot(self, path):
            torch.save(self, path)
            return copy.deepcopy(self)


    def ship(model: nn.Module, fh):
        settings = Settings(0.1)
        pickle.dump(settings, fh)
        model.eval()
    """
    assert _found(body) == []


def test_a_gradient_read_for_its_values() -> None:
    body = """
    def log_grad_norm(model: nn.Module, stats):
        stats.norm = sum(p.grad.data.norm(2).item() ** 2 for p in model.parameters() if p.grad is not None) ** 0.5
        for p in model.parameters():
            snapshot = p.grad.detach().clone()
            total = torch.norm(p.grad)
    """
    assert _found(body) == [("ZG109", 3), ("ZG109", 5), ("ZG109", 6)]


def test_a_gradient_tested_reset_or_sized_is_clean() -> None:
    body = """
    def reset(model: nn.Module):
        for p in model.parameters():
            if p.grad is not None:
                p.grad = None
            p.grad.zero_()
            shape = p.grad.shape
            g = p.grad
        local = nn.Linear(4096, 4096)
        n = local.weight.grad.norm()
    """
    assert _found(body) == []


def test_a_model_handed_to_a_module_constructor_loaded_there() -> None:
    body = """
    class Wrapper(nn.Module):
        def __init__(self, model: nn.Module, path):
            super().__init__()
            model.load_state_dict(torch.load(path))
            self.model = model

        def forward(self, x):
            return self.model(x)
    """
    assert _found(body) == [("ZG108", 5)]


def test_a_model_handed_to_a_module_constructor_loaded_inside_a_gather_is_clean() -> None:
    body = """
    import deepspeed


    class Wrapper(nn.Module):
        def __init__(self, model: nn.Module, path):
            super().__init__()
            with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=0):
                model.load_state_dict(torch.load(path))
            self.model = model

        def forward(self, x):
            return self.model(x)
    """
    assert _found(body) == []


SAVED_PROPERTY = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)

    @property
    def state_dict_with_args(self):
        return dict(version=1, state={STATE})

    def save(self, path):
        torch.save(dict(model=self.state_dict_with_args), path)
"""


def test_a_property_a_save_method_reads_takes_the_state_dict() -> None:
    assert _found(SAVED_PROPERTY.replace("{STATE}", "self.state_dict()")) == [("ZG108", 12)]


def test_a_property_a_save_method_reads_for_the_state_dict_keys_is_clean() -> None:
    assert _found(SAVED_PROPERTY.replace("{STATE}", "list(self.state_dict().keys())")) == []


CLIPPING_AGENT = """
class Agent:
    def __init__(self, net: nn.Module, lr: float):
        self.act = net
        self.extra = [torch.zeros(4, requires_grad=True)]

    def update(self, optimizer: torch.optim.Optimizer):
        {CLIP}
        optimizer.step()
"""


def test_clipping_handed_by_keyword() -> None:
    for clip in ('torch.nn.utils.clip_grad_norm_(parameters=optimizer.param_groups[0]["params"], max_norm=3.0)',
                 "torch.nn.utils.clip_grad_norm_(max_norm=3.0, parameters=self.act.parameters())"):
        assert _found(CLIPPING_AGENT.replace("{CLIP}", clip)) == [("ZG107", 8)], clip


def test_clipping_by_keyword_of_plain_tensors_or_by_the_engine_is_clean() -> None:
    for clip in ("torch.nn.utils.clip_grad_norm_(parameters=self.extra, max_norm=3.0)",
                 "self.accelerator.clip_grad_norm_(parameters=self.act.parameters(), max_norm=3.0)"):
        assert _found(CLIPPING_AGENT.replace("{CLIP}", clip)) == [], clip


def test_a_model_argument_annotated_with_the_nn_package_is_a_model() -> None:
    body = """
    class Evaluator:
        def __init__(self, cwd):
            self.cwd = cwd

        def evaluate_and_save(self, actor: torch.nn, steps: int):
            torch.save(actor, self.cwd)
    """
    assert _found(body) == [("ZG108", 7)]


def test_a_setting_annotated_with_a_package_and_a_method_handed_the_model_are_clean() -> None:
    body = """
    class Evaluator:
        def __init__(self, cwd):
            self.cwd = cwd
            self.rollout = self.rollout_single

        def rollout_single(self, actor):
            return torch.tensor([[1.0, 2.0]])

        def evaluate_and_save(self, actor: nn.Module, lr: torch.optim):
            table = self.rollout(actor)
            returns = table[:, 0]
            avg = returns.mean().item()
            torch.save(lr, self.cwd)
    """
    assert _found(body) == []


def test_a_model_argument_annotated_any_is_judged_by_its_name() -> None:
    body = """
    from typing import Any

    class Agent:
        def __init__(self, models):
            self.models = models
            self.checkpoint_modules = {}

        def _get_internal_value(self, _module: Any) -> Any:
            return _module.state_dict() if hasattr(_module, "state_dict") else _module
    """
    assert _found(body) == [("ZG108", 10)]


def test_settings_annotated_any_and_a_gathered_module_annotated_any_are_clean() -> None:
    body = """
    from typing import Any
    import deepspeed

    class Agent:
        def __init__(self, models):
            self.models = models

        def _get_internal_value(self, _module: Any) -> Any:
            with deepspeed.zero.GatheredParameters(list(_module.parameters())):
                return {k: v.clone() for k, v in _module.state_dict().items()}

        def write(self, optimizer: Any, scheduler: object, path: str) -> None:
            torch.save({"opt": optimizer.state_dict(), "sched": scheduler.state_dict()}, path)
    """
    assert _found(body) == []


def test_a_model_taken_from_a_mapping_of_models_is_held() -> None:
    body = """
    class Agent:
        def __init__(self, models, cfg):
            self.policy = models["policy"]
            self.value = models.get("value", None)

        def load(self, path):
            self.policy.load_state_dict(torch.load(path))

        def save(self, path):
            torch.save(self.value.state_dict(), path)
    """
    assert _found(body) == [("ZG108", 8), ("ZG108", 11)]


def test_entries_of_mappings_of_optimizers_or_settings_are_clean() -> None:
    body = """
    class Agent:
        def __init__(self, optimizers, cfg):
            self.policy_opt = optimizers["policy"]
            self.scale = cfg.get("scale", 1.0)

        def save(self, path):
            torch.save({"opt": self.policy_opt.state_dict(), "scale": self.scale}, path)
    """
    assert _found(body) == []
