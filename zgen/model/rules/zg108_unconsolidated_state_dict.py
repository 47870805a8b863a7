"""ZG108: state_dict of a partitioned model saved or loaded without consolidation."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.access import STATE, Scope
from ..analysis.loaded import (
    built_then_handed_state, built_then_loaded, built_then_pickled, built_then_read, built_then_saved, built_then_written,
    built_where, constructors_loading, zoo_weights_loaded,
)
from ..analysis.flow import flat_of
from ..analysis.moved import child_state_copies
from ..analysis.own import aliases_of_self, own_state_calls
from ..analysis.scopes import param_accesses
from ..analysis.script import WRAP_TRIGGER, script_scopes
from ..program import known
from ..program.holds import unmoved
from ..program.index import ModelIndex
from ..program.tree import code_of, cst
from .rule import Report, Rule

_METHODS = {"state_dict", "load_state_dict", "save_pretrained"}


class UnconsolidatedStateDict(Rule):
    """A ZeRO-3 model's `state_dict()` is saved or loaded directly.

    ## What it does
    Flags `model.state_dict()`, `model.load_state_dict(...)` and
    `model.save_pretrained(...)` in a training script after
    `deepspeed.initialize`, where `model` is the engine or the module it wraps
    (for example `torch.save(engine.module.state_dict(), path)`), and a model
    zoo's builder asked for pretrained weights where the model is built
    (`torchvision.models.vgg19(pretrained=True)` in a module's `__init__`,
    `timm.create_model(name, pretrained=True)`): it loads them into the model
    its constructor just returned.

    ## Why is this bad under ZeRO-3?
    Every parameter is a per-rank partition behind an empty placeholder, so
    `state_dict()` returns empty tensors (or, with gathering enabled in some
    versions, needs every rank to take part). The saved file loads without
    complaint and contains no weights. `load_state_dict` into placeholders
    fails on shapes or loads nothing.

    ## Example
    ```python
    if dist.get_rank() == 0:
        torch.save(engine.module.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    engine.save_checkpoint("ckpt")                # every rank; sharded, resumable
    engine.save_16bit_model("export")             # with stage3_gather_16bit_weights_on_model_save
    ```
    """

    code = "ZG108"
    name = "unconsolidated-state-dict"

    VALID = (
        """
import deepspeed

def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    engine.save_checkpoint("ckpt")
""",
    )
    INVALID = (
        # A trainer (not a module) saves the model it holds.
        """
import torch
from torch import nn

class Trainer:
    def __init__(self, model: nn.Module, optimizer):
        self.model = model
        self.optimizer = optimizer

    def save(self, path):
        torch.save({"model": self.model.state_dict(), "opt": self.optimizer.state_dict()}, path)
""",
        """
import deepspeed
import torch

def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    torch.save(engine.module.state_dict(), "model.pt")
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for scope in script_scopes(index, WRAP_TRIGGER):
            for node, ctx in scope.flat.nodes:
                if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                    continue
                method = node.func.attr.value
                if method in _METHODS and scope.wrapped_name(node.func.value, node):
                    message = (
                        f"`{code_of(node.func)}()` reads the state of a model whose parameters ZeRO-3 "
                        "partitioned: it sees empty placeholders, not the weights"
                    )
                    yield self.finding(index, scope.snippet, node, message, _HELP)
        for access in param_accesses(index, Scope.SCRIPT):
            if access.use == STATE and not access.ctx.guarded:  # `save_checkpoint(d, policy=unwrap(policy))`
                message = (
                    f"`{code_of(access.node)}` is handed to `{access.via.name}()`, which saves or loads its state, "
                    "after ZeRO-3 partitioned the model: it sees empty placeholders, not the weights"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)
        for access in param_accesses(index, Scope.HANDED):
            if access.use == STATE:
                what = (
                    f"a `{access.holder}` object keeping a built model" if access.holder
                    else f"a built model `{access.where}` is handed or holds"
                )
                message = (
                    f"`{code_of(access.node)}` {_verb(access.via.name, access.owner)}, {what}, whose parameters "
                    "ZeRO-3 partitioned: it sees empty placeholders, not the weights"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)
        for finder, doing, so, help in _BUILT_THEN:
            for method, node, local in finder(index):
                root = local.partition(".")[0]  # (`model` of its part `model.lm_head`)
                built = f"a model built {built_where(method, local)}"
                message = (
                    f"`{code_of(node)}` {doing.format(local=local)}, "
                    + (built if root == local else f"a part of `{root}`, {built}")
                    + f"; under `deepspeed.zero.Init` `{root}` is partitioned once its constructor returns, so {so}"
                )
                yield self.finding(index, method.snippet, node, message, help)
        for method, node, target, source in child_state_copies(index):
            message = (
                f"`{code_of(node)}` reads the state of `self.{source}` to load into `self.{target}` in "
                f"`{method.name}`, a method run on the built model, where ZeRO-3 gathers neither child: both hold "
                "empty placeholders, so nothing is copied"
            )
            yield self.finding(index, method.snippet, node, message, _COPY_HELP)
        for snippet, node, constructor in constructors_loading(index):
            built = code_of(node.func.value)  # type: ignore[attr-defined]
            message = (
                f"`{code_of(node, limit=80)}` builds a `{built}` and then loads a state into it (in "
                f"`{constructor.owner.name}.{constructor.name}`); under `deepspeed.zero.Init` the model is partitioned "
                "once its constructor returns, so the load copies into empty placeholders"
            )
            yield self.finding(index, snippet, node, message, _LOAD_HELP)
        for snippet, node in zoo_weights_loaded(index):
            message = (
                f"`{code_of(node, limit=80)}` builds a model and then loads its pretrained weights into it; under "
                "`deepspeed.zero.Init` the model is partitioned once its constructor returns, so the load copies into "
                "empty placeholders"
            )
            yield self.finding(index, snippet, node, message, _ZOO_HELP)
        for method, node in own_state_calls(index):
            verb = _VERB.get(node.func.attr.value)  # type: ignore[union-attr]
            receiver = unmoved(node.func.value)  # type: ignore[union-attr]
            if isinstance(receiver, cst.Attribute):
                whose = f"`{code_of(receiver)}`, a child of the module"
            elif isinstance(receiver, cst.Name) and receiver.value != "self" and (flat := flat_of(method)) is not None \
                    and receiver.value in aliases_of_self(flat):
                whose = f"`{receiver.value}`, the module itself"  # (`model_to_save = self`)
            elif isinstance(receiver, cst.Name) and receiver.value != "self":
                whose = f"`{receiver.value}`, a child of the module handed to it"
            else:
                whose = "the module itself"
            what = f"{verb} the state of {whose}" if verb else "pickles the module object whole"
            message = (
                f"`{code_of(node)}` {what} in "
                f"`{method.name}`, a method run on the built model, whose parameters ZeRO-3 partitioned: it sees "
                "empty placeholders, not the weights"
            )
            yield self.finding(index, method.snippet, node, message, _HELP)


_COPY_HELP = (
    "copy inside `with deepspeed.zero.GatheredParameters(list(source.parameters()) + list(target.parameters()), "
    "modifier_rank=0):` on every rank"
)
_LOAD_HELP = (
    "load inside `with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=0):`, or build "
    "the model outside `zero.Init` and load before `deepspeed.initialize`"
)
_READ_HELP = (
    "read the state inside `with deepspeed.zero.GatheredParameters(list(model.parameters())):`, or build the model "
    "outside `zero.Init`"
)
_ZOO_HELP = (
    "build it without weights and load them inside `with deepspeed.zero.GatheredParameters(list(model.parameters()), "
    "modifier_rank=0):`, or build it outside `zero.Init`"
)
# What a function does with the state of a model it built (`loaded`), as the message tells it, and the help.
_BUILT_THEN = (
    (built_then_loaded, "loads into `{local}`", "the load copies into empty placeholders", _LOAD_HELP),
    (built_then_saved, "takes the state of `{local}`", "its tensors are empty placeholders", _READ_HELP),
    (built_then_written, "writes into an entry of the state of `{local}`", "the write lands in an empty placeholder",
     _LOAD_HELP),
    (built_then_read, "reads the tensors of the state of `{local}`", "they are empty placeholders", _READ_HELP),
    (built_then_pickled, "pickles `{local}` whole", "its tensors are empty placeholders", _READ_HELP),
    (built_then_handed_state, "hands `{local}` to a function that saves or loads its state",
     "it sees empty placeholders, not the weights", _READ_HELP),
)
_VERB = {
    "state_dict": "reads", "load_state_dict": "loads into",
    "save_pretrained": "serialises (through its state dict)", "push_to_hub": "uploads (through its state dict)",
}


def _verb(name: str, owner: str) -> str:
    """How the call uses the state: read or loaded by the module's own method, or by a helper it is handed to."""
    if name in _VERB:
        return f"{_VERB[name]} the state of `{owner}`"
    if name in known.PICKLERS:
        return f"pickles `{owner}` whole"
    if name.rsplit(".", 1)[-1] in known.PICKLING_SENDS:
        return f"pickles `{owner}` whole for another process"
    return f"hands `{owner}` to `{name}()`, which reads or loads the state of `{owner}`"


_HELP = (
    "use `engine.save_checkpoint(dir)` / `engine.load_checkpoint(dir)` on every rank, or "
    "`engine.save_16bit_model(dir)` with `stage3_gather_16bit_weights_on_model_save: true`"
)
