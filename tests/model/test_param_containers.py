"""A built model's parameters moved into a container that a call of unknown effect made from the model
(`analysis/provenance.py`'s `Container`): `TensorDict.from_module(model)`, `make_functional(model)`,
`OrderedDict(model.named_parameters())`, a mapping of parts taken by `getattr` with computed names. Its
items, values, subscripts, leaves and a function its `.apply` runs are still the partitioned parameters;
next to look-alikes that must stay clean: a container of plain tensors, an optimizer's parameter groups,
a call handed data beside the model, a container made and used inside a gather, the container's own
bookkeeping (keys, locking, selecting)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source
from zgen.model.analysis.provenance import Container, Param, Union, item_of

HEAD = """
from collections import OrderedDict

import deepspeed
import torch
from tensordict import TensorDict
from torch import nn
from mylib import make_functional, Lion, Tracker, evaluate
"""


def _found(body: str) -> list[tuple[str, int]]:
    """(code, line relative to `body`) of the ZG1 findings."""
    start = len(textwrap.dedent(HEAD).splitlines())
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return sorted((f.code, f.line - start) for f in check_source("m.py", src, None) if f.code.startswith("ZG1"))


def test_a_container_yields_its_parameters_when_walked() -> None:
    made = Container("TensorDict.from_module()")
    leaf = item_of(made)
    assert isinstance(leaf, Union) and Param("TensorDict.from_module()", walked=True) in leaf.options


def test_a_target_updater_reading_sources_gathered_by_computed_names() -> None:
    # the updater holds the loss module; its sources are the loss module's parts named at run time
    found = _found("""
class TargetUpdater:
    def __init__(self, loss_module: nn.Module, names):
        self.loss_module = loss_module
        self.names = names

    @property
    def sources(self):
        return TensorDict({n: getattr(self.loss_module, n) for n in self.names}, [])

    def step(self, targets):
        for key, source in self.sources.items(True, True):
            targets[key].data.lerp_(source.data, 0.005)
""")
    assert ("ZG109", 13) in found


def test_from_module_items_written_and_reduced() -> None:
    found = _found("""
def refresh(net: nn.Module, fresh):
    params = TensorDict.from_module(net, as_module=True)
    params.data.update_(fresh)
    for key, p in params.items(True, True):
        lo = p.data.min().item()
""")
    assert ("ZG101", 4) in found and ("ZG109", 6) in found


def test_functional_params_cloned_and_saved() -> None:
    found = _found("""
def snapshot(model: nn.Module):
    fmodel, params = make_functional(model)
    targets = [p.detach().clone() for p in params]
    table = OrderedDict(model.named_parameters())
    torch.save(table["fc.weight"], "w.pt")
    return targets
""")
    assert ("ZG109", 4) in found and any(line == 6 for _code, line in found)


def test_a_function_of_the_file_run_by_apply_on_each_leaf() -> None:
    found = _found("""
def shrink(t):
    t.data.mul_(0.5)
    return t


def after_train_iter(runner):
    params = TensorDict.from_module(runner.model)
    params.apply(shrink)
""")
    assert ("ZG101", 3) in found


def test_lookalikes_stay_clean() -> None:
    assert _found("""
def shrink(t):
    t.data.mul_(0.5)
    return t


def plain(model: nn.Module, batch, names):
    params = TensorDict({"w": torch.zeros(4096)}, [])
    for key, p in params.items(True, True):
        p.data.mul_(0.5)
    params.apply(shrink)
    opt = Lion(model.parameters(), lr=1e-4)
    for group in opt.param_groups:
        group["lr"] = group["lr"] * 0.5
    out = evaluate(model, batch)
    for key, value in out.items():
        total = value.item() + 1
    made = TensorDict.from_module(model)
    for key in made.keys(True, True):
        print(key)
    made.lock_()
    kept = made.select(*names)
    tracker = Tracker(model)
    tracker.ema_model.step()
    score = tracker.history.mean()
    with deepspeed.zero.GatheredParameters(list(model.parameters())):
        inside = TensorDict.from_module(model)
        for key, p in inside.items(True, True):
            p.data.mul_(0.5)
    return kept
""") == []


def test_an_updater_whose_subclasses_override_the_step_and_whose_sources_property_has_a_setter() -> None:
    # the loss class is imported inside the constructor (its bases unreadable): the argument is a module by use;
    # `self._step(...)` in the base runs each subclass's override; the property's setter defined after the getter
    found = _found("""
class Updater:
    def __init__(self, loss_module: "LossModule"):
        from pkg.losses import LossModule

        self.names = [name for name, _ in loss_module.named_children()]
        self.loss_module = loss_module

    @property
    def _sources(self):
        return TensorDict({n: getattr(self.loss_module, n) for n in self.names}, [])

    @_sources.setter
    def _sources(self, value):
        self.__dict__["_sources_val"] = value

    def step(self, targets):
        for key, param in self._sources.items():
            self._step(param, targets[key])

    def _step(self, p_source, p_target):
        raise NotImplementedError


class Soft(Updater):
    def _step(self, p_source, p_target):
        p_target.lerp_(p_source.data, 0.01)
""")
    assert ("ZG109", 27) in found


def test_an_identity_check_of_storage_is_no_read() -> None:
    assert _found("""
def same(model: nn.Module, target):
    params = TensorDict.from_module(model)
    for key, p in params.items(True, True):
        if target.is_set_to(p.data):
            return True
""") == []


def test_a_parameter_the_owner_class_keeps_small_is_read_freely() -> None:
    # read from a handed model of a known class: its class token (1 x 1 x dim) stays gathered, its table does not
    found = _found("""
class Backbone(nn.Module):
    def __init__(self, dim=768, tokens=196):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, tokens, dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


def snapshot(vit: Backbone):
    held = [vit]
    first = held[0].cls_token.data.clone()
    table = held[0].pos_embed.data.clone()
    return first, table
""")
    assert ("ZG109", 16) in found and not any(line == 15 for _code, line in found)
