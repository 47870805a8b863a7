"""ZG101: an in-place write to a parameter that is partitioned at that point."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.access import INIT, WRITE, ParamAccess, Reach, Scope
from ..analysis.effects import REPARAMETRIZES, REPLACED
from ..analysis.handed import METHOD_WRITE, built_holder
from ..analysis.scopes import param_accesses
from ..program.index import ModelIndex
from ..program.tree import code_of
from .rule import Report, Rule


class PartitionedDataWrite(Rule):
    """An in-place write to a parameter that ZeRO-3 has partitioned at that point.

    ## What it does
    Flags writes to a parameter's storage (`p.data = t`, `p.data.copy_(t)`,
    `p.fill_(0)`, `p[:, 0] = 1`, `p.data.mul_(s)`) when the parameter is
    partitioned there: a parameter of a submodule written in `forward` (or a
    method it calls), or a parameter of the model in a training script
    after `deepspeed.initialize` (or built under `deepspeed.zero.Init`),
    in helpers a training loop hands the built model or its parameters
    to (`ema.copy_to(model.parameters())`, `convert_to_fp16(model)` running
    `model.apply(fn)` outside `zero.Init`, where `apply` gathers nothing),
    and a parameter of a built model a function is given and walks
    (`for m in model.modules(): m.weight.data.normal_()`).
    Writes inside `with deepspeed.zero.GatheredParameters(..., modifier_rank=0)`
    are fine and not flagged, and so are writes into a module the same method
    has just rebuilt (`self.conv = nn.Conv2d(...)`), into a copy a helper made
    of its argument (`b = b.clone()`), and `detach_()`. Initialisation in
    `__init__` is ZG103.

    ## Why is this bad under ZeRO-3?
    Each rank holds only a slice of the parameter. Outside the module's own
    forward the tensor you write to is an empty placeholder, or a gathered
    copy that ZeRO-3 throws away when it re-partitions: the write is lost
    without an error, and every rank keeps training the old values.

    ## Example
    ```python
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    for p in engine.module.parameters():
        p.data.clamp_(-1, 1)  # clamps empty placeholders
    ```

    ## Use instead
    ```python
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    params = list(engine.module.parameters())
    with deepspeed.zero.GatheredParameters(params, modifier_rank=0):
        for p in params:
            p.data.clamp_(-1, 1)  # rank 0's result is broadcast and re-partitioned
    ```
    """

    code = "ZG101"
    name = "partitioned-data-write"

    VALID = (
        # Own parameter in own forward: gathered there.
        """
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))
        self.inner = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            self.weight.clamp_(0, 1)
        return self.inner(x) * self.weight
""",
        # Gathered with a modifier rank.
        """
import deepspeed

def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    params = list(engine.module.parameters())
    with deepspeed.zero.GatheredParameters(params, modifier_rank=0):
        for p in params:
            p.data.mul_(0.5)
""",
        # Before the engine exists the model is a plain module.
        """
import deepspeed

def main(model, cfg):
    for p in model.parameters():
        p.data.mul_(0.5)
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
""",
        # Re-parameterisation that first rebuilds the conv: the write goes to the new, unpartitioned module.
        """
from torch import nn

class Rep(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)
        self.c = c

    def forward(self, x):
        return self.conv(x)

    def fuse(self, kernel):
        self.conv = nn.Conv2d(self.c, self.c, 3)
        self.conv.weight.data = kernel
        for p in self.parameters():
            p.detach_()
""",
    )
    INVALID = (
        # An EMA helper copies into the parameters it is handed.
        """
from typing import Iterable

import torch

class Ema:
    def copy_to(self, parameters: Iterable[torch.nn.Parameter]):
        for shadow, param in zip(self.shadow, parameters):
            param.data.copy_(shadow)
""",
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            self.proj.weight.data.clamp_(-1, 1)
        return self.proj(x)
""",
        """
import deepspeed

def main(model, cfg):
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    for p in engine.module.parameters():
        p.data.mul_(0.5)
""",
        """
import deepspeed

def main(model, cfg, table):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    model.embed.weight.data.copy_(table)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for access in param_accesses(index, Scope.FORWARD, Scope.ENTRY, Scope.HANDED, Scope.BUILT, Scope.SCRIPT):
            if access.use in _WRITES[access.scope] and not access.ctx.guarded:
                yield self.finding(index, access.snippet, access.node, _message(access), _HELP)


# What counts as a write where: an initialiser given the parameter too, except in code that walks a module it
# built or was handed (ZG103 reports initialisation there) and in training scripts.
_WRITES = {
    Scope.FORWARD: (WRITE, INIT), Scope.ENTRY: (WRITE, INIT), Scope.HANDED: (WRITE, INIT),
    Scope.BUILT: (WRITE,), Scope.SCRIPT: (WRITE,),
}


def _message(access: ParamAccess) -> str:
    what, detail = code_of(access.node), access.detail
    if access.scope is Scope.HANDED:
        if access.via.reach is Reach.MODULE and access.effect == METHOD_WRITE:
            return (
                f"`{what}` runs a method of `{access.owner}` that writes its parameters (a built model used in "
                f"`{access.where}`), outside any forward and any gather; ZeRO-3 keeps them partitioned there, so "
                "the writes are lost"
            )
        if access.via.reach is Reach.MODULE and access.effect == REPARAMETRIZES:
            return (
                f"`{what}` re-parametrises `{access.owner}`, a built model used in `{access.where}`, recomputing its "
                "weights from their parts outside any forward and any gather; ZeRO-3 keeps them partitioned there, "
                "so it computes with placeholders"
            )
        if access.via.reach is Reach.MODULE:
            return (
                f"`{what}` writes every parameter of `{access.owner}`, a built model used in `{access.where}`, "
                "outside any forward and any gather; ZeRO-3 keeps them partitioned there, so the writes are lost"
            )
        if access.via.reach is Reach.APPLY:
            return (
                f"`{what}`{detail} on the built model handed to `{access.where}`; outside `zero.Init`, `apply` "
                "gathers nothing, so each write goes to a partitioned placeholder and is lost"
            )
        return (
            f"{_subject(access)} writes to a parameter of a built model handed to `{access.where}` (from "
            f"`{access.owner}`), outside any forward and any gather; ZeRO-3 keeps it partitioned there, so the "
            "write is lost"
        )
    if access.scope is Scope.BUILT:
        return (
            f"{_subject(access)} writes to a parameter of {built_holder(access)}; under `deepspeed.zero.Init` it is "
            "partitioned already, so the write changes a placeholder and is lost"
        )
    if access.scope is Scope.SCRIPT:
        if access.via.reach is Reach.PASSED:
            return (
                f"`{what}`{detail}, after ZeRO-3 partitioned the model; each write changes an empty placeholder and "
                "is lost"
            )
        return (
            f"{_subject(access)} writes to a parameter of the model after ZeRO-3 partitioned it; the write changes "
            "an empty placeholder and is lost"
        )
    if access.via.reach is Reach.PASSED:
        return (
            f"`{what}`{detail} in `{access.where}`, outside `{what}`'s forward, where ZeRO-3 keeps them "
            "partitioned; the writes are lost"
        )
    if access.via.reach is Reach.METHOD:
        return (
            f"`{what}.{access.via.name}()` writes the parameters of submodule `{what}` in `{access.where}`, outside "
            f"`{what}`'s forward, where ZeRO-3 keeps them partitioned; the writes are lost"
        )
    if access.owner == "self":
        return (
            f"{_subject(access)} writes to this module's own parameter in `{access.where}`, which runs on the built "
            "model outside its forward, where ZeRO-3 keeps it partitioned; the write is lost"
        )
    if access.via_parameters:
        return (
            f"{_subject(access)} writes to parameters that include submodules', partitioned here by ZeRO-3; the write "
            "is lost"
        )
    return (
        f"{_subject(access)} writes to a parameter of submodule `{access.owner}` outside `{access.owner}`'s forward, "
        "where ZeRO-3 keeps it partitioned; the write is lost"
    )


def _subject(access: ParamAccess) -> str:
    """The write as a message's subject, quoted: `p.data.copy_()`, or the module handed on and how
    (`self` passed to `_load_weights()`, which runs ...), whose detail is a phrase, not a call."""
    if access.detail.startswith(" ") and access.detail != REPLACED:  # (`m.weight = nn.Parameter(...)`: a write)
        return f"`{code_of(access.node)}`{access.detail},"
    return f"`{_written(access)}`"


def _written(access: ParamAccess) -> str:
    """`p.data.copy_()` for a write, `torch.nn.init.zeros_(p)` for an initialiser given the parameter."""
    what = code_of(access.node)
    if access.use == INIT and access.detail.endswith("()"):
        return f"{access.detail[:-2]}({what})"
    return what + access.detail


_HELP = (
    "do the write inside `with deepspeed.zero.GatheredParameters(params, modifier_rank=0):` "
    "(or before the model is partitioned)"
)
