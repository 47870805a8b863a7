"""ZG105: copy.deepcopy of a module whose parameters are partitioned."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.access import COPY, Scope
from ..analysis.built import calls_on_built_modules
from ..analysis.effects import DEEPCOPIES
from ..analysis.flow import flat_of
from ..analysis.loaded import built_then_copied, built_where
from ..analysis.own import child_copies
from ..analysis.scopes import param_accesses
from ..analysis.script import WRAP_TRIGGER, script_scopes
from ..program import known
from ..program.holds import RETURNS_MODULE, averager, module_arguments
from ..program.index import MethodInfo, ModelIndex
from ..program.tree import call_name, code_of, cst
from ..program.trigger import Trigger
from .rule import Report, Rule

_TRIGGER = Trigger("deepcopy")
# What copies a module in `__init__`: `deepcopy`, a weight average built over it (`EMA(model)`), and torch's stacks
# of copies of a layer (`nn.TransformerEncoder(layer, n)`), by a call's last name.
_BUILT_COPIES = frozenset(
    {"deepcopy", *known.AVERAGER_NAMES, *(name.rsplit(".", 1)[-1] for name in known.CLONING_STACKS)}
)
_BUILT_COPY_TRIGGER = Trigger(*sorted(_BUILT_COPIES))
_COPY_TRIGGER = Trigger("copy")  # `vae.copy_for_eval()`: a method of a module handed in that may copy it


class DeepcopyAfterPartition(Rule):
    """`copy.deepcopy` of a module whose parameters ZeRO-3 has partitioned.

    ## What it does
    Flags `copy.deepcopy(m)` where `m` is a module that is already built in
    `__init__` (`copy.deepcopy(self.class_embed)`, `[copy.deepcopy(layer) for _ in
    range(n)]` after `layer = Block(cfg)`), a module passed into the
    constructor (built by the caller), also through a helper of this or
    another file that deep-copies what it is given (`_get_clones(layer, n)`),
    the model in a training script after `deepspeed.initialize` (the usual
    way to start an EMA copy), or a model that code outside the model holds
    (an RL agent's `self.target = deepcopy(policy)`, a trainer handing its
    model to a weight-averaging helper such as `EMA(model)`, which keeps a
    deep copy). Copying configs and other values is fine.

    ## Why is this bad under ZeRO-3?
    A partitioned parameter is an empty placeholder plus ZeRO-3 bookkeeping
    (its partition id and the rank's slice). `deepcopy` duplicates the
    placeholder and that bookkeeping, not the weights: the copy's
    parameters are never gathered, or alias the original's partition, so
    the copy computes with empty tensors or silently shares state with the
    original.

    ## Example
    ```python
    layer = DecoderLayer(cfg)
    self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(cfg.n_layers)])
    ```

    ## Use instead
    ```python
    self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg.n_layers)])
    ```
    """

    code = "ZG105"
    name = "deepcopy-after-partition"

    VALID = (
        """
import copy
from torch import nn

class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        enc_config = copy.deepcopy(config)
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
""",
    )
    INVALID = (
        # An agent (not a module) copies the policy it is handed to make its target network.
        """
import copy
from torch import nn

class Agent:
    def __init__(self, policy: nn.Module, tau: float = 0.005):
        self.policy = policy
        self.target = copy.deepcopy(policy)
""",
        """
import copy
from torch import nn

class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        layer = nn.Linear(4, 4)
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])
""",
        """
import copy
import deepspeed

def main(model, cfg):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    ema = copy.deepcopy(engine.module)
""",
        # A module passed in, cloned by a helper.
        """
import copy
from torch import nn

def clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])

class Decoder(nn.Module):
    def __init__(self, decoder_layer, n):
        super().__init__()
        self.layers = clones(decoder_layer, n)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        built = calls_on_built_modules(index, _BUILT_COPY_TRIGGER, _BUILT_COPIES, DEEPCOPIES)
        for method, node, module, helper in built:
            message = _built_copy(index, node, module, helper)
            if message is not None:
                yield self.finding(index, method.snippet, node, message, _HELP)
        for scope in script_scopes(index, WRAP_TRIGGER):
            for node, ctx in scope.flat.nodes:
                if _is_deepcopy(index, node) and not ctx.guarded and scope.wrapped_name(node.args[0].value, node):
                    message = (
                        f"`copy.deepcopy({code_of(node.args[0].value)})` copies the model after ZeRO-3 "
                        "partitioned it: the copy holds placeholders, not weights"
                    )
                    yield self.finding(index, scope.snippet, node, message, _HELP)
                elif _averages(index, node) and not ctx.guarded:
                    model = node.args[0].value
                    if isinstance(model, cst.Call) and model.args and (call_name(model) or "")[-1:].islower():
                        model = model.args[0].value  # `EMA(accelerator.unwrap_model(model))`: the model unwrapped
                    if scope.wrapped_name(model, node):
                        message = (
                            f"`{code_of(node)}` copies `{code_of(model)}` into a weight average after ZeRO-3 "
                            "partitioned it: the copy holds placeholders, not weights"
                        )
                        yield self.finding(index, scope.snippet, node, message, _HELP)
        for cls, method in index.methods("entry", _TRIGGER):
            # `def copy_for_eval(self): return copy.deepcopy(self.cpu())`: run by the training loop on the built model
            for node in _copies_of_self(index, method):
                message = (
                    f"`{code_of(node)}` copies the module in `{method.name}`, which runs on the built model "
                    "outside any forward; under ZeRO-3 it holds partitioned placeholders, which the copy duplicates"
                )
                yield self.finding(index, method.snippet, node, message, _HELP)
        for method, node in child_copies(index):
            # `copy.deepcopy(self.base_estimator_)` in a builder `fit` calls: a child is never gathered for its parent
            message = (
                f"`{code_of(node)}` copies `{code_of(node.args[0].value)}`, a child of the module, in "
                f"`{method.name}`; ZeRO-3 gathers a child's parameters only for the child's own forward, so they are "
                "partitioned placeholders here, which the copy duplicates"
            )
            yield self.finding(index, method.snippet, node, message, _HELP)
        for cls, method in index.methods("init", _COPY_TRIGGER):
            # `self.vae = vae.copy_for_eval()` in `__init__`: a method of the module handed in that copies itself
            arguments = module_arguments(index, method.node) if method.node is not None else {}
            flat = flat_of(method) if arguments else None
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                    continue
                owner = node.func.value
                if not isinstance(owner, cst.Name) or owner.value not in arguments:
                    continue
                if _method_copies_itself(index, arguments[owner.value], node.func.attr.value):
                    message = (
                        f"`{code_of(node)}` runs `{node.func.attr.value}` of `{owner.value}`, a module built by the "
                        "caller, which deep-copies it; under `deepspeed.zero.Init` it holds partitioned placeholders, "
                        "which the copy duplicates"
                    )
                    yield self.finding(index, method.snippet, node, message, _HELP)
        for method, node, local in built_then_copied(index):
            message = (
                f"`{code_of(node)}` copies `{local}`, a model built {built_where(method, local)}; under "
                f"`deepspeed.zero.Init` `{local}` is partitioned once its constructor returns, so the copy duplicates "
                "its placeholders"
            )
            yield self.finding(index, method.snippet, node, message, _HELP)
        for access in param_accesses(index, Scope.SCRIPT):
            if access.use == COPY and not access.ctx.guarded:  # `ema = make_ema(model)` of a helper deep-copying it
                message = (
                    f"`{code_of(access.node)}` is handed to `{access.via.name}()`, which deep-copies it, after ZeRO-3 "
                    "partitioned the model: the copy holds placeholders, not weights"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)
        for access in param_accesses(index, Scope.HANDED):
            if access.use == COPY:
                how = "copies" if access.via.name == "copy.deepcopy" else f"hands to `{access.via.name}`, which copies"
                what = (
                    f"a `{access.holder}` object keeping a built model" if access.holder
                    else f"a built model `{access.where}` is handed or holds"
                )
                message = (
                    f"`{code_of(access.node)}` {how} `{access.owner}`, {what}; under ZeRO-3 it holds partitioned "
                    "placeholders, which the copy duplicates"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)


def _built_copy(index: ModelIndex, node: cst.Call, module: cst.BaseExpression, helper: bool) -> str | None:
    """What `node`, in `__init__` or a helper of it, copies of `module`, built before it, as a message; None when it
    copies nothing: `copy.deepcopy(m)`, a helper whose summary deep-copies `m`, a weight average built over it
    (`ExponentialMovingAverage(nn.Sequential(self.backbone, self.neck))`), or torch's stack of copies of a layer
    (`nn.TransformerEncoder(layer, n)`)."""
    built = "a module that is already built; under `deepspeed.zero.Init` it holds partitioned placeholders, which"
    if helper:
        return f"`{code_of(node.func)}(...)` deep-copies `{code_of(module)}`, so it copies {built} the copy duplicates"
    if _is_deepcopy(index, node):
        return f"`copy.deepcopy({code_of(module)})` copies {built} the copy duplicates"
    what = f"`{code_of(node.func)}(...)`"
    if _averages(index, node):  # `self.encoder_k = ExponentialMovingAverage(nn.Sequential(self.backbone, ...))`
        return f"{what} copies `{code_of(module)}` into a weight average, {built} the copy duplicates"
    if index.qualify(call_name(node) or "") in known.CLONING_STACKS:  # `nn.TransformerEncoder(layer, n)`
        return f"{what} deep-copies `{code_of(module)}` once per layer, {built} every copy duplicates"
    return None


def _averages(index: ModelIndex, node: cst.CSTNode) -> bool:
    """A library's weight-averaging helper built over a model (`EMA(model)`), which deep-copies it."""
    return type(node) is cst.Call and bool(node.args) and averager(index, index.qualified_call(node) or "")


def _copies_of_self(index: ModelIndex, method: MethodInfo) -> list[cst.Call]:
    """Unguarded `copy.deepcopy(self)` (also of `self.cpu()`, `self.to(d)`: the module itself) in a method."""
    flat = flat_of(method)
    found = []
    for node, ctx in flat.nodes if flat is not None else ():
        if not _is_deepcopy(index, node) or ctx.guarded:
            continue
        copied = node.args[0].value
        while isinstance(copied, cst.Call) and isinstance(copied.func, cst.Attribute):
            if copied.func.attr.value not in RETURNS_MODULE:
                break
            copied = copied.func.value  # `self.cpu()`, `self.to(device)`: the module itself
        if isinstance(copied, cst.Name) and copied.value == "self":
            found.append(node)
    return found


def _method_copies_itself(index: ModelIndex, classes: tuple[str, ...], name: str) -> bool:
    """Does the method `name` of one of the module classes (of this file or another) deep-copy its module?"""
    for ref in classes:
        local = index.classes.get(ref)
        found = (index, local) if local is not None else index.external(ref)
        if found is None or "deepcopy" not in found[1].text:
            continue
        method = found[1].inherited_method(name)
        if method is not None and _copies_of_self(method.index, method):  # read in the file that defines it
            return True
    return False


def _is_deepcopy(index: ModelIndex, node: cst.CSTNode) -> bool:
    return (
        type(node) is cst.Call
        and bool(node.args)
        and (index.qualified_call(node) or "") in known.DEEP_COPY
    )


_HELP = "construct a new module instead of copying a built one, or copy inside `GatheredParameters`"
