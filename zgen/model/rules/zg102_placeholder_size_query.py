"""ZG102: the size of a parameter read while it is a partitioned placeholder."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.access import SIZE, ParamAccess, Reach, Scope
from ..analysis.handed import built_holder
from ..analysis.params import handoff_origins
from ..analysis.scopes import param_accesses
from ..program.index import ModelIndex
from ..program.tree import code_of
from .rule import Report, Rule


class PlaceholderSizeQuery(Rule):
    """The size of a parameter is read where ZeRO-3 has partitioned it.

    ## What it does
    Flags `.shape`, `.size()`, `.numel()`, `.nelement()`, `.dim()`, `.ndim`
    and `len()` of a parameter that is partitioned at that point: a
    submodule's parameter in the parent's `__init__` after the submodule was
    built, or in `forward`; parameters from iterating `self.parameters()`
    (which include every submodule's); and the model's parameters in a
    script after `deepspeed.initialize` (`sum(p.numel() for p in
    model.parameters())`), also in helpers handed the built model (a
    trainer's `self.model`, a function's `model` argument); the parameters of a model a function is given
    and walks (`def initialize(model): if p.dim() > 1: ...`), and of a module
    a construction helper (called from a module's `__init__`) built; and a
    parameter handed into a constructor (`Head(cfg, self.embed.weight)`, or
    an argument annotated `nn.Parameter`), sized in that `__init__`.
    Reading `.dtype`, `.device` or `.requires_grad`
    is fine and not flagged.

    ## Why is this bad under ZeRO-3?
    A partitioned parameter is an empty placeholder on every rank: its
    `numel()` is 0 and its shape `torch.Size([0])`. Parameter counts come out
    as 0, and shapes used to build layers or reshape activations are wrong.
    Under `deepspeed.zero.Init` a submodule is partitioned as soon as its own
    `__init__` returns, so the parent's `__init__` already sees placeholders.
    (During the engine's forward DeepSpeed fetches such a parameter on
    access: the size is right, but a whole all-gather was spent to read it.)

    ## Example
    ```python
    n_params = sum(p.numel() for p in engine.module.parameters())  # 0
    ```

    ## Use instead
    ```python
    n_params = sum(getattr(p, "ds_numel", p.numel()) for p in engine.module.parameters())
    ```
    or take sizes from the config (`config.hidden_size`) instead of from weights.
    """

    code = "ZG102"
    name = "placeholder-size-query"

    VALID = (
        # Script: a model built on the meta device has shapes but no storage; nothing is partitioned.
        """
import torch

def merge(fabric, config, GPT):
    with fabric.init_module(), torch.device("meta"):
        model = GPT(config)
    print(sum(p.numel() for p in model.parameters()))
""",
        # Own parameter, and dtype of a submodule's parameter.
        """
import torch
from torch import nn

class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        x = x.to(self.proj.weight.dtype)
        return self.proj(x)[..., : self.weight.shape[0]]
""",
        # Counting before partitioning.
        """
import deepspeed

def main(model, cfg):
    n = sum(p.numel() for p in model.parameters())
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    return n
""",
        # The size read before the child is built.
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, emb):
        super().__init__()
        d = 8
        self.proj = nn.Linear(d, d)
""",
    )
    INVALID = (
        # Script: accelerate's `prepare` hands the model to DeepSpeed (ZeRO-3 plugin).
        """
def main(accelerator, model, optimizer):
    model, optimizer = accelerator.prepare(model, optimizer)
    print(sum(p.numel() for p in model.parameters()))
""",
        # Script: the partitioned model handed to a helper that counts its parameters.
        """
import deepspeed

def count(module):
    return sum(p.numel() for p in module.parameters())

def main(model, cfg):
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    print(f"{count(engine):,} parameters")
""",
        # A trainer counts the parameters of the model it holds.
        """
from torch import nn

class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def trainable(self):
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)
""",
        # The child was just built (and partitioned under zero.Init).
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.head = nn.Linear(self.embed.weight.shape[1], vocab)
""",
        """
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.proj(x).view(-1, self.proj.weight.shape[0])
""",
        """
import deepspeed

def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    print(sum(p.numel() for p in engine.parameters()))
""",
        # A construction helper, called from a module's `__init__`, counts a module it built.
        """
from torch import nn

def make_stage(d):
    m = nn.Linear(d, d)
    m.np = sum(x.numel() for x in m.parameters())
    return m

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.stage = make_stage(d)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        scopes = (Scope.INIT, Scope.FORWARD, Scope.ENTRY, Scope.LATE, Scope.HANDED, Scope.BUILT, Scope.SCRIPT)
        told: set[int] = set()
        for access in param_accesses(index, *scopes):
            if access.use == SIZE and not access.ctx.guarded:
                yield self.finding(index, access.snippet, access.node, _message(access), _HELP)
                if access.scope is Scope.INIT and access.given and access.cls is not None:
                    # the call that hands the child's parameter in (`BertPreTrainingHeads(config,
                    # self.bert.embeddings.word_embeddings.weight)`), where the fault is
                    for edge in handoff_origins(index, access.cls.name, access.owner):
                        if id(edge.arg) not in told and edge.method.snippet is not None:
                            told.add(id(edge.arg))
                            message = (
                                f"`{code_of(edge.arg)}`, a parameter of a child built before it, is handed to "
                                f"`{edge.callee}`, whose constructor reads its size (`{code_of(access.node)}{access.detail}` in "
                                f"`{access.cls.name}`); under `deepspeed.zero.Init` it is a placeholder of size 0"
                            )
                            yield self.finding(index, edge.method.snippet, edge.arg, message, _HANDED_HELP)


def _message(access: ParamAccess) -> str:
    what, detail = code_of(access.node), access.detail
    if detail.endswith("()") and detail[:1].isalpha():  # `len(self.w)`, `torch.zeros_like(p)`, not `self.wlen()`
        what, detail = f"{detail[:-2]}({what})", ""
    if access.scope is Scope.HANDED and access.via.reach is Reach.MODULE:  # `count_parameters(self.model)`
        return (
            f"`{what}` hands to `{access.via.name}`, which reads the sizes of the parameters of `{access.owner}`, a "
            f"built model `{access.where}` is handed or holds; ZeRO-3 keeps them partitioned there: placeholders "
            "have size 0"
        )
    if access.scope is Scope.HANDED:
        return (
            f"`{what}{detail}` reads the size of a parameter of a built model handed to `{access.where}` (from "
            f"`{access.owner}`); ZeRO-3 keeps it partitioned there: placeholders have size 0"
        )
    if access.scope is Scope.BUILT:
        return (
            f"`{what}{detail}` reads the size of a parameter of {built_holder(access)}; under `deepspeed.zero.Init` "
            "it is a placeholder of size 0"
        )
    if access.scope is Scope.SCRIPT:
        if access.via.reach is Reach.PASSED:
            return f"`{what}`{detail}, after ZeRO-3 partitioned the model: placeholders have size 0"
        return (
            f"`{what}{detail}` reads the size of a parameter after ZeRO-3 partitioned the model: placeholders have "
            "size 0"
        )
    if access.via.reach is Reach.METHOD:
        return (
            f"`{what}.{access.via.name}()` reads the sizes of the parameters of `{what}` outside its forward, where "
            "ZeRO-3 has partitioned them: placeholders have size 0"
        )
    if access.via.reach is Reach.WALK and access.scope is Scope.INIT:  # `count_parameters(self)` in `__init__`
        return (
            f"`{access.via.name}(self)` reads the sizes of the parameters of the children built before it in "
            "`__init__`; under `deepspeed.zero.Init` each child is partitioned once built: placeholders have size 0"
        )
    if access.via.reach is Reach.WALK:  # `model_info(self)` in a method run on the built model
        return (
            f"`{access.via.name}(self)` reads the sizes of this module's parameters in `{access.where}`, which runs on "
            "the built model outside its forward; ZeRO-3 keeps them partitioned there: placeholders have size 0"
        )
    if access.via.reach is Reach.PASSED:  # handed to a helper: ` passed to `fan_in()`, ...`
        return f"`{what}`{detail}, and ZeRO-3 has partitioned them there: placeholders have size 0"
    if access.via_parameters:
        return (
            f"`{what}{detail}` reads the size of parameters that include submodules', which ZeRO-3 has partitioned "
            "here: placeholders have size 0"
        )
    if access.owner == "self":
        return (
            f"`{what}{detail}` reads the size of this module's own parameter in `{access.where}`, which runs on the "
            "built model outside its forward; ZeRO-3 keeps it partitioned there"
        )
    if access.given:
        return (
            f"`{what}{detail}` reads the size of `{access.owner}`, a parameter of a module the caller built and "
            "handed in; under `deepspeed.zero.Init` it is a placeholder of size 0"
        )
    if access.scope is Scope.INIT:
        return (
            f"`{what}{detail}` reads the size of a parameter of `{access.owner}` after `{access.owner}` was built; "
            "under `deepspeed.zero.Init` it is a placeholder of size 0"
        )
    return (
        f"`{what}{detail}` reads the size of a parameter of submodule `{access.owner}` outside `{access.owner}`'s "
        "forward, where ZeRO-3 keeps it partitioned"
    )


_HANDED_HELP = (
    "hand the sizes from the config instead (`nn.Linear(config.hidden_size, config.vocab_size)`) and tie the weight "
    "by assignment (`self.decoder.weight = embedding_weight`), which reads nothing"
)
_HELP = "take the size from the config, or use `ds_shape`/`ds_numel` when present (`getattr(p, 'ds_numel', p.numel())`)"
