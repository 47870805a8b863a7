"""ZG103: weights initialised after ZeRO-3 has partitioned them."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.access import INIT, WRITE, ParamAccess, Reach, Scope
from ..analysis.effects import REPLACED, argument_effects, usage, writes_module_params
from ..analysis.flow import flat_of, loop_items
from ..analysis.handed import built_holder
from ..analysis.loaded import built_then_initialised, built_where
from ..analysis.scopes import param_accesses
from ..analysis.param_lists import parameter_list_writes
from ..analysis.script import WRAP_TRIGGER, script_scopes
from ..program import known
from ..program.index import ClassInfo, ModelIndex
from ..program.tree import access_path, call_name, code_of, cst, dotted, walk
from .rule import Report, Rule


_APPLY_CALL = re.compile(r"\bself(?:\.\w+)*\.apply\(")  # `self.apply(`, `self.backbone.apply(`


class InitAfterPartition(Rule):
    """Weights are initialised after ZeRO-3 has partitioned them.

    ## What it does
    Flags initialisation of parameters that are already partitioned: in a
    module's `__init__` (or a helper it calls), `nn.init.*_(self.child.weight)`
    (or any in-place initialiser named with PyTorch's trailing underscore that
    takes the parameter first, such as timm's `trunc_normal_`),
    `self.child.weight.data.normal_()` or `self.child.bias.zero_()` after
    `self.child` was built; in a training script, `model.apply(init_fn)` or
    `nn.init.*_` on the model after `deepspeed.initialize`. Sites inside
    `GatheredParameters(..., modifier_rank=0)` or an
    `is_deepspeed_zero3_enabled()` branch are not flagged, nor is
    `self.apply(fn)` in `__init__`, which `deepspeed.zero.Init` wraps to
    gather each module's parameters; but a function run by `apply` that
    writes a *child* of the visited module (`module.q_proj.weight` when
    visiting the attention block) is flagged: `apply` gathers only the
    visited module's own parameters. Outside construction the wrap is gone:
    `self.apply(init_fn)` in an initialiser that neither `__init__` nor
    `forward` reaches (`init_weights` a runner calls on the built model, a
    `reinit`) writes placeholders. A function that is given a built model
    and walks it (`def initialize(model): for p in model.parameters(): ...`)
    initialises partitioned parameters too.

    ## Why is this bad under ZeRO-3?
    Under `deepspeed.zero.Init` each submodule is partitioned as soon as its
    own `__init__` returns. When the parent then initialises the child's
    weights, it writes into an empty placeholder: nothing happens, no error
    is raised, and the model trains from the child's default initialisation.
    After `deepspeed.initialize` the same holds for every parameter.

    ## Example
    ```python
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg.d, cfg.d)
        nn.init.zeros_(self.proj.weight)  # zeroes a placeholder
    ```

    ## Use instead
    ```python
    def __init__(self, cfg):
        super().__init__()
        self.proj = nn.Linear(cfg.d, cfg.d)
        with deepspeed.zero.GatheredParameters(self.proj.weight, modifier_rank=0):
            nn.init.zeros_(self.proj.weight)
    ```
    or initialise inside the child's own `__init__` / `reset_parameters`, or with `self.apply(fn)`.
    """

    code = "ZG103"
    name = "init-after-partition"

    VALID = (
        # Through apply, the visited module's own parameters: gathered by zero.Init's apply.
        """
from torch import nn

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            module.bias.data.zero_()
""",
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(4, 4))
        nn.init.xavier_uniform_(self.weight)  # own parameter: not partitioned yet
        self.proj = nn.Linear(4, 4)
        self.apply(self._init)  # wrapped by zero.Init to gather

    def _init(self, module):
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)
""",
        """
import deepspeed
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        with deepspeed.zero.GatheredParameters(self.proj.weight, modifier_rank=0):
            nn.init.zeros_(self.proj.weight)
""",
        # The module's own parameters (no submodules): not partitioned during its own __init__.
        """
import math
import torch
from torch import nn

class Cell(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.empty(n, n))
        self.weight_hh = nn.Parameter(torch.empty(n, n))
        self.reset_parameters()

    def reset_parameters(self):
        for weight in self.parameters():
            nn.init.uniform_(weight, -1 / math.sqrt(4), 1 / math.sqrt(4))
""",
        # An underscore method of another tensor only reads the parameter it is given.
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("start", torch.empty(4))
        with torch.no_grad():
            self.start.copy_(self.proj.bias)
""",
    )
    INVALID = (
        # Through apply: the visited module's child is not gathered.
        """
from torch import nn

class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj = nn.Linear(d, d)

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attn(d)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, Attn):
            nn.init.normal_(module.q_proj.weight, std=0.02)
""",
        """
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        nn.init.zeros_(self.proj.weight)
        self.proj.bias.data.fill_(0.1)
""",
        # Through a helper called from __init__.
        """
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self._reset()

    def _reset(self):
        for layer in self.layers:
            nn.init.normal_(layer.weight, std=0.02)
        nn.init.zeros_(self.layers[0].bias)
""",
        """
import deepspeed

def main(model, cfg, init_weights):
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    engine.module.apply(init_weights)
""",
        # A library's own in-place initialiser (trailing underscore, the parameter first), as timm's.
        """
from timm.layers import trunc_normal_
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
        trunc_normal_(self.head.weight, std=0.02)
""",
        # A function given the built model (it walks its parameters) initialises them.
        """
from torch import nn

def initialize(model):
    for p in model.parameters():
        nn.init.xavier_uniform_(p.data)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        yield from self._applied_to_children(index)
        yield from self._applied_on_the_built_model(index)
        yield from self._applied_to_a_model_built_here(index)
        for method, node, local in built_then_initialised(index):
            message = (
                f"`{code_of(node)}` initialises the parameters of `{local}`, a model built "
                f"{built_where(method, local)}; "
                f"under `deepspeed.zero.Init` `{local}` was partitioned when its constructor returned, so the writes "
                "land in empty placeholders and are lost"
            )
            yield self.finding(index, method.snippet, node, message, _HELP)
        for write in parameter_list_writes(index):
            verb = "initialises" if write.use == INIT else "writes"
            code = code_of(write.node)
            what = f"{write.op[:-2]}({code})" if write.use == INIT and write.op.endswith("()") else code + write.op
            message = (
                f"`{what}` {verb} a parameter of `{write.list_name}` in `{write.method.name}`"
                " after a parameter list child was built there; under `deepspeed.zero.Init` a `ParameterList`/"
                "`ParameterDict` is partitioned when its own `__init__` returns, so the write to the placeholder "
                "is lost"
            )
            yield self.finding(index, write.method.snippet, write.node, message, _LIST_HELP)
        for access in param_accesses(index, Scope.INIT, Scope.BUILT, Scope.LATE):
            # late: a child's, or its own where no constructor of the file runs the method (a subclass's `__init__`
            # calling `self.init_weights()` writes before the object is partitioned, when the outermost returns) and
            # it is no `reset_parameters` (torch's re-initialiser: a runtime building on `meta` calls it on the
            # materialised module, and torch's layer constructors on the one they build)
            child = access.scope is not Scope.LATE or access.owner not in ("", "self") or (
                access.where not in known.TORCH_INITIALISERS
                and not _run_by_a_constructor(index, access.cls, access.where))
            if access.use in _WRITES[access.scope] and child and not _written_fresh(access):
                yield self.finding(index, access.snippet, _writing_call(access), _message(access), _HELP)
        for scope in script_scopes(index, WRAP_TRIGGER):
            for node, ctx in scope.flat.nodes:
                if type(node) is not cst.Call or ctx.guarded:
                    continue
                name = call_name(node)
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value == "apply" and node.args:
                    if scope.wrapped_name(func.value, node):
                        message = (
                            f"`{code_of(func)}(...)` initialises the model after ZeRO-3 partitioned it; "
                            "the function sees empty placeholders and its writes are lost"
                        )
                        yield self.finding(index, scope.snippet, node, message, _HELP)
                elif name and index.qualify(name).startswith(known.INIT_PREFIXES) and node.args:
                    root = node.args[0].value
                    while isinstance(root, (cst.Attribute, cst.Subscript)):
                        root = root.value
                    if isinstance(root, cst.Name) and scope.wrapped_name(root, node):
                        message = (
                            f"`{name}(...)` initialises a parameter after ZeRO-3 partitioned the model; "
                            "the write to the placeholder is lost"
                        )
                        yield self.finding(index, scope.snippet, node, message, _HELP)


    def _applied_to_a_model_built_here(self, index: ModelIndex) -> Iterator[Report]:
        """`netG = Generator(); netG.apply(weights_init)` in a training script: under `deepspeed.zero.Init` the model
        was partitioned when its constructor returned, and `apply` gathers only while that context is open."""
        if ".apply(" not in index.source:
            return
        for scope in script_scopes(index, _APPLY_TEXT):
            built = scope.built_models
            if not built:
                continue
            for node, ctx in scope.flat.nodes:
                if type(node) is not cst.Call or ctx.guarded or not node.args:
                    continue
                func = node.func
                if not (isinstance(func, cst.Attribute) and func.attr.value == "apply"):
                    continue
                if not (isinstance(func.value, cst.Name) and func.value.value in built):
                    continue
                if scope.wrapped_name(func.value, node):
                    continue  # (after `deepspeed.initialize`: the script rule's own finding)
                if writes_module_params(index, scope.flat, node.args[0].value) is None:
                    continue
                message = (
                    f"`{code_of(func)}(...)` initialises `{func.value.value}`, a model built above; under "
                    f"`deepspeed.zero.Init` it was partitioned when its constructor returned, and `apply` gathers "
                    "only while that context is open, so the callback writes empty placeholders and the writes "
                    "are lost"
                )
                yield self.finding(index, scope.snippet, node, message, _HELP)

    def _applied_on_the_built_model(self, index: ModelIndex) -> Iterator[Report]:
        """`self.apply(partial(init_fn, std=s))` in an initialiser neither `__init__` nor `forward` reaches (`reinit`,
        `init_weights` a runner calls on the built model): `zero.Init` gathers each visited module's parameters for
        `apply` only while its context is open, during construction; afterwards the callback writes empty
        placeholders. (In an entry point, `perturb`, the write is ZG101's.)"""
        if ".apply(" not in index.source:
            return
        seen: set[int] = set()
        for _cls, method in index.methods("late", _APPLY_CALL):
            flat = flat_of(method)
            if flat is None or id(method) in seen:
                continue
            seen.add(id(method))
            for node, ctx in flat.nodes:
                if type(node) is not cst.Call or ctx.guarded or not node.args:
                    continue
                func = node.func
                if not isinstance(func, cst.Attribute) or func.attr.value != "apply":
                    continue
                path = access_path(func.value)
                if path is None or path.root != "self":
                    continue  # (a module argument's `apply` is `effects`' APPLIES, reported where it is handed)
                receiver = code_of(func.value)
                if writes_module_params(index, flat, node.args[0].value) is None:
                    continue
                message = (
                    f"`{code_of(func)}(...)` initialises the parameters of every module under `{receiver}` in "
                    f"`{method.name}`, which runs on the built model; `zero.Init` gathers them for `apply` only while "
                    "the model is being constructed, so here the callback writes empty placeholders and the "
                    "writes are lost"
                )
                yield self.finding(index, method.snippet, node, message, _HELP)

    def _applied_to_children(self, index: ModelIndex) -> Iterator[Report]:
        """`def _init_weights(self, module): module.child.weight.normal_()`, run through `apply`: zero.Init's
        `apply` gathers only the visited module's own parameters, not its children's."""
        found = _APPLIED.findall(index.source) if "apply(" in index.source else []
        applied = {name for own, name in found if own} | {"_init_weights"}
        # `self.apply(init_fn)`, `model.apply(partial(init_fn, std=0.02))`: a function of this file as the callback
        functions = [index.function_info(name) for own, name in found if not own]
        targets = [(m, 0) for m in dict.fromkeys(functions) if m is not None and _touches_child(m.text)]
        for cls in index.module_classes():
            for name in applied:
                method = cls.method(name)
                if method is not None and method.owner is cls and _touches_child(method.text):
                    targets.append((method, 1))
        for method, first in targets:
            yield from self._child_writes(index, method, first)
        # `self.apply(init_bert_params)` of a function another file defines: reported at this file's `apply`
        for name in dict.fromkeys(name for own, name in found if not own and index.function_info(name) is None):
            external = index.external_function(index.qualify(name)) if name in index.imports else None
            if external is None or external[1] is None or not _touches_child(external[1].text):
                continue
            written = next(iter(self._child_writes(external[0], external[1], 0)), None)
            if written is None:
                continue
            for method, call in _apply_calls(index, name):
                message = (
                    f"`{code_of(call)}` runs `{name}`, which writes parameters of the visited module's children "
                    f"(`{code_of(written.node)}`); under `deepspeed.zero.Init` `apply` gathers only the visited "
                    "module's own parameters, so those writes go to placeholders and are lost"
                )
                yield self.finding(index, method.snippet, call, message, _HELP)

    def _child_writes(self, index: ModelIndex, method, first: int) -> Iterator[Report]:
        """The writes of an `apply` callback (`first`: the position of its visited-module parameter) to parameters
        of the visited module's children."""
        node, flat = method.node, flat_of(method)
        params = [p.name.value for p in node.params.params] if node is not None else []
        if flat is None or len(params) <= first:
            return
        visited = params[first]
        for n, ctx in flat.nodes:
            if type(n) is cst.For and not ctx.guarded:
                yield from self._walked_parameters_written(index, method, flat, n, visited)
                continue
            if type(n) is cst.Call and not ctx.guarded:
                yield from self._child_handed_to_writer(index, method, flat, n, visited)
                continue
            if type(n) is not cst.Attribute or ctx.guarded:
                continue
            path = access_path(n)
            if path is None or path.root != visited or len(path.parts) < 2 or "[]" in path.parts:
                continue
            if path.parts[-1] not in index.param_names:
                continue
            use, _detail = usage(index, flat, n)
            if use in (INIT, WRITE):
                message = (
                    f"`{code_of(n)}` is initialised through `apply`, which under `deepspeed.zero.Init` "
                    f"gathers only the parameters of the visited `{visited}`, not those of its child "
                    f"`{visited}.{'.'.join(path.parts[:-1])}`: the write goes to a placeholder and is lost"
                )
                yield self.finding(index, method.snippet, n, message, _HELP)


    def _walked_parameters_written(
        self, index: ModelIndex, method, flat, loop: cst.For, visited: str,
    ) -> Iterator[Report]:
        """`for name, p in module.named_parameters(): init_(p)` in an `apply` callback, writing what only a visit
        of an ANCESTOR reaches: the walk recurses into the visited module's children, whose parameters `apply` did
        not gather. A walk run for every module writes each parameter again at its owner's own (gathered) visit, so
        only two shapes lose writes: the loop runs for classes with children (`if isinstance(module, Block):`),
        or the write is chosen by a child's path (`if name == "out_proj.weight":`)."""
        for target, iterable in loop_items(loop.target, loop.iter):
            if not (isinstance(target, cst.Name) and _walks_children_parameters(iterable, visited)):
                continue
            typed = _guarding_layer_kind(index, flat, loop, visited)
            if typed == "leaf":
                return
            named = _loop_name(loop, target)
            for n, ctx in flat.nodes:
                if type(n) is not cst.Name or n.value != target.value or ctx.guarded or not flat.within(n, loop.body):
                    continue
                use, _detail = usage(index, flat, n)
                if use not in (INIT, WRITE):
                    continue
                if typed != "parent" and not _chosen_by_child_path(index, flat, n, loop, named):
                    continue
                message = (
                    f"`{code_of(n)}`, a parameter `{code_of(iterable)}` yields, is initialised through `apply`, "
                    f"which under `deepspeed.zero.Init` gathers only the visited `{visited}`'s own parameters; "
                    f"the walk also yields those of `{visited}`'s children, still partitioned: the write goes to "
                    "a placeholder and is lost"
                )
                yield self.finding(index, method.snippet, n, message, _HELP)
                return

    def _child_handed_to_writer(
        self, index: ModelIndex, method, flat, call: cst.Call, visited: str,
    ) -> Iterator[Report]:
        """`linear_init_(module.fc1)` in an `apply` callback, with a helper (nested, of this file or another) that
        initialises or writes the parameters of the module it is handed: the child's, not gathered by `apply`."""
        for position, effects in argument_effects(index, flat, call):
            if INIT not in effects and WRITE not in effects:
                continue
            arg = call.args[position].value
            path = access_path(arg)
            if path is None or path.root != visited or not path.parts or "[]" in path.parts:
                continue
            if path.parts[-1] in index.param_names:
                continue  # (a parameter handed on: `init(module.weight)` is the direct case's)
            message = (
                f"`{code_of(call.func)}(...)` initialises the parameters of `{code_of(arg)}` through `apply`, which "
                f"under `deepspeed.zero.Init` gathers only the parameters of the visited `{visited}`, not those of "
                "its child: the writes go to placeholders and are lost"
            )
            yield self.finding(index, method.snippet, arg, message, _HELP)


def _apply_calls(index: ModelIndex, name: str) -> Iterator[tuple[object, cst.Call]]:
    """The `X.apply(name)` calls (also `apply(partial(name, ...))`) of this file's methods and functions."""
    for _cls, method in index.methods("all", _APPLY_CALL):
        flat = flat_of(method)
        for node, ctx in flat.nodes if flat is not None else ():
            if type(node) is not cst.Call or ctx.guarded or not node.args:
                continue
            if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "apply"):
                continue
            arg = node.args[0].value
            if isinstance(arg, cst.Call) and (call_name(arg) or "").rsplit(".", 1)[-1] == "partial" and arg.args:
                arg = arg.args[0].value
            if isinstance(arg, cst.Name) and arg.value == name:
                yield method, node


def _touches_child(text: str) -> bool:
    """Text pre-filter: a child's weight or bias named (`module.fc.weight`), a child handed to a call
    (`init_(module.fc1)`), or a walk of parameters (`module.named_parameters()`)."""
    return any(p.search(text) is not None for p in (_CHILD_WRITE, _CHILD_HANDED, _PARAMETER_WALK))


def _walks_children_parameters(iterable: cst.BaseExpression, visited: str) -> bool:
    """`module.parameters()`, `module.named_parameters()` of the visited module, recursing (the default)."""
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)):
        return False
    func = iterable.func
    if func.attr.value not in ("parameters", "named_parameters"):
        return False
    if not (isinstance(func.value, cst.Name) and func.value.value == visited):
        return False
    for arg in iterable.args:
        if arg.keyword is not None and arg.keyword.value == "recurse":
            return not (isinstance(arg.value, cst.Name) and arg.value.value == "False")
    return not any(arg.keyword is None for arg in iterable.args)  # a positional `prefix`/`recurse`: unread


def _guarding_layer_kind(index: ModelIndex, flat, loop: cst.For, visited: str) -> str:
    """"leaf" when the loop sits in the body of `if isinstance(visited, <torch layers without children>)`,
    "parent" when in the body of `if isinstance(visited, <other classes>)`, "" when no such test guards it."""
    node = flat.parent.get(id(loop))
    while node is not None:
        if isinstance(node, cst.If) and flat.within(loop, node.body):
            kind = _tested_layer_kind(index, node.test, visited)
            if kind:
                return kind
        node = flat.parent.get(id(node))
    return ""


def _loop_name(loop: cst.For, target: cst.Name) -> str:
    """`name` of `for name, p in module.named_parameters()`."""
    if isinstance(loop.target, cst.Tuple) and len(loop.target.elements) == 2:
        first = loop.target.elements[0].value
        if isinstance(first, cst.Name) and loop.target.elements[1].value is target:
            return first.value
    return ""


def _chosen_by_child_path(index: ModelIndex, flat, node: cst.CSTNode, loop: cst.For, name: str) -> bool:
    """Is the write under a test that picks the parameter by a path only a child's parameter has
    (`name == "c_proj.weight"`, `name in ["out_proj.weight"]`, `"c_proj" in name`)? A literal that is a
    parameter's own name (`"bias" in name`) and a negated test pick nothing of the kind."""
    if not name:
        return False
    current = flat.parent.get(id(node))
    while current is not None and current is not loop:
        if isinstance(current, cst.If) and flat.within(node, current.body):
            test = current.test
            if not isinstance(test, cst.UnaryOperation) and _names_child_path(index, test, name):
                return True
        current = flat.parent.get(id(current))
    return False


def _names_child_path(index: ModelIndex, test: cst.BaseExpression, name: str) -> bool:
    mentions = any(isinstance(n, cst.Name) and n.value == name for n in walk(test))
    if not mentions or any(isinstance(c, cst.NotIn) or isinstance(c, cst.NotEqual) for c in _operators(test)):
        return False
    for literal in walk(test):
        if isinstance(literal, cst.SimpleString):
            text = literal.evaluated_value if isinstance(literal.evaluated_value, str) else ""
            if text and ("." in text.strip(".") or text not in index.param_names and text not in ("weight", "bias")):
                return True
    return False


def _operators(test: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    for n in walk(test):
        if isinstance(n, cst.ComparisonTarget):
            yield n.operator


def _tested_layer_kind(index: ModelIndex, test: cst.BaseExpression, visited: str) -> str:
    """"leaf" for `isinstance(visited, (nn.Linear, nn.Conv2d))`, "parent" for any other classes, else ""."""
    if not (isinstance(test, cst.Call) and call_name(test) == "isinstance" and len(test.args) == 2):
        return ""
    subject, classes = test.args[0].value, test.args[1].value
    if not (isinstance(subject, cst.Name) and subject.value == visited):
        return ""
    names = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    qualified = [index.qualify(code_of(n)) for n in names]
    leaf = all(
        q.startswith("torch.nn.") and (q.rsplit(".", 1)[-1] in _LEAF_LAYERS or _RNN_LAYER.match(q.rsplit(".", 1)[-1]))
        for q in qualified
    )
    return "leaf" if leaf else "parent"


def _run_by_a_constructor(index: ModelIndex, owner: ClassInfo | None, name: str) -> bool:
    """Does an `__init__` of the class, of a base or of a subclass in the file call `self.<name>(...)` (a constructor
    initialising what it or its base built, before the object is partitioned)? Unknown (`owner` None): yes."""
    needle = f"self.{name}("
    if owner is None:
        return True
    if needle not in index.source:
        return False
    return any(
        (owner in cls.mro or cls in owner.mro) and any(needle in m.text for m in cls.init_methods)
        for cls in index.classes.values())


# What initialises where: in code walking a module it was handed or built, writes are ZG101's.
_WRITES = {Scope.INIT: (INIT, WRITE), Scope.BUILT: (INIT,), Scope.LATE: (INIT, WRITE)}


def _message(access: ParamAccess) -> str:
    what = code_of(access.node)
    if access.via.reach is Reach.METHOD and isinstance(access.node, cst.Call):  # `self.reset_parameters()` of a base
        return (
            f"`{what}`, a method of a base class in another file, initialises the parameters of `{access.owner}` in "
            f"`__init__`, after the base's constructor built `{access.owner}`; under `deepspeed.zero.Init` they are "
            "partitioned by then and the writes are lost"
        )
    if access.via.reach is Reach.METHOD:
        where = (
            f"`{access.where}`, which runs on the built module (its own `__init__` does not call it)"
            if access.scope is Scope.LATE else "`__init__`"
        )
        return (
            f"`{what}.{access.via.name}()` initialises the parameters of `{what}` in {where}, after `{what}` was "
            "built; under `deepspeed.zero.Init` they are partitioned by then and the writes are lost"
        )
    if access.scope is Scope.BUILT:
        return (
            f"`{what}` is initialised as a parameter of {built_holder(access)}; under `deepspeed.zero.Init` it is "
            "partitioned already and the write is lost"
        )
    if access.scope is Scope.LATE and access.via.reach is Reach.PASSED:
        return (
            f"`{what}`{access.detail} in `{access.where}`, which runs on the built module (its own `__init__` does "
            f"not call it); under `deepspeed.zero.Init` `{what}` is partitioned by then and the writes are lost"
        )
    if access.scope is Scope.LATE and access.owner in ("", "self"):
        return (
            f"{_written(access)} initialises a parameter of the module itself in `{access.where}`, which runs on the "
            "built module (no `__init__` calls it); under `deepspeed.zero.Init` the module is partitioned by then and "
            "the write is lost"
        )
    if access.scope is Scope.LATE:
        return (
            f"{_written(access)} initialises a parameter of child `{access.owner}` in `{access.where}`, which runs on the "
            f"built module (its own `__init__` does not call it); under `deepspeed.zero.Init` `{access.owner}` is "
            "partitioned by then and the write is lost"
        )
    if access.via.reach is Reach.WALK and access.scope is Scope.INIT:  # `init_weights(self)`, `named_apply(fn, self)`
        return (
            f"`{access.via.name}(...)` walks `{what}` in `__init__` and initialises the parameters of the children "
            f"built before it; under `deepspeed.zero.Init` each child is partitioned once built and the writes are lost"
        )
    if access.via.reach is Reach.PASSED and (isinstance(access.node, cst.Call) or _built_local(access)):
        # `zero_init(nn.Linear(d, d))`, `normal_init(conv)` of a local `conv = nn.Conv2d(...)` built there
        return (
            f"`{access.via.name}()` initialises the parameters of `{what}` right after it was built in `__init__`; "
            f"under `deepspeed.zero.Init` `{what}` is partitioned as soon as its own `__init__` returns, so the "
            "write is lost"
        )
    if access.via_parameters:
        return (
            f"`{what}` is initialised in `__init__` while iterating parameters that include submodules'; under "
            "`deepspeed.zero.Init` those are already partitioned and the write is lost"
        )
    if access.op == REPLACED:  # `self.linear.weight = nn.Parameter(w)`
        return (
            f"`{what}` is replaced by a new `nn.Parameter` in `__init__` after `{access.owner}` was built; under "
            f"`deepspeed.zero.Init` `{access.owner}` is already partitioned: a value made from the old parameter "
            "(`ones_like`, `.clone()`, its shape) copies the empty placeholder, and any new tensor stays whole on "
            "every rank until `deepspeed.initialize` converts it, keeping rank 0's values"
        )
    return (
        f"`{what}` is initialised in `__init__` after `{access.owner}` was built; under `deepspeed.zero.Init` "
        f"`{access.owner}` is already partitioned and the write is lost"
    )


def _written_fresh(access: ParamAccess) -> bool:
    """Is the child's parameter written one the method put there itself, earlier, as a new `nn.Parameter` made from
    no old value of the child (`self.v.pos_embed = nn.Parameter(torch.zeros(1, n, d))`, or a local bound to one)?
    `zero.Init` partitioned the child's own parameters when its constructor returned, not one set on it later: the
    initialiser writes a whole tensor, which `deepspeed.initialize` partitions."""
    if access.scope is not Scope.INIT or access.op == REPLACED or not isinstance(access.node, cst.Attribute):
        return False
    path = dotted(access.node)
    flat = flat_of(access.method) if access.method is not None and path else None
    if flat is None:
        return False
    at = flat.position.get(id(access.node), 0)
    fresh: set[str] = set()  # locals bound to a new parameter
    replaced = False
    for node, _ctx in flat.nodes:
        if flat.position.get(id(node), 0) >= at:
            break
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target, value = node.targets[0].target, node.value
        new = isinstance(value, cst.Call) and (call_name(value) or "").rsplit(".", 1)[-1] == "Parameter" and (
            path not in code_of(value, limit=1000))
        if type(target) is cst.Name:
            fresh.discard(target.value)
            if new:
                fresh.add(target.value)
        elif dotted(target) == path:
            replaced = new or type(value) is cst.Name and value.value in fresh
    return replaced


def _built_local(access: ParamAccess) -> bool:
    """Is the module handed over a local of the method bound to a construction (`conv = nn.Conv2d(...)`), not a loop
    variable over submodules nor an alias of a child?"""
    flat = flat_of(access.method) if access.method is not None and isinstance(access.node, cst.Name) else None
    name = access.node.value if flat is not None else None  # type: ignore[union-attr]
    return flat is not None and any(
        type(node) is cst.Assign and isinstance(node.value, cst.Call)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)
        for node, _ctx in flat.nodes
    )


def _writing_call(access: ParamAccess) -> cst.CSTNode:
    """Where the write is: the initialiser call the parameter is handed to (`nn.init.kaiming_normal_(` over lines,
    `m.weight` on the next), else the parameter's own expression."""
    flat = flat_of(access.method) if access.method is not None else None
    parent = flat.parent.get(id(access.node)) if flat is not None else None
    if isinstance(parent, cst.Subscript) and parent.value is access.node:  # `nn.init.normal_(lin.weight[0], ...)`
        parent = flat.parent.get(id(parent))  # type: ignore[union-attr]
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    if isinstance(call, cst.Call) and access.use == INIT and call.args and call.args[0] is parent \
            and access.via.reach is not Reach.PASSED and (call_name(call) or "").endswith("_"):
        return call
    # (a helper handed a child, `init_layer(self.conv1)`, is reported at what it is handed; over the whole call when
    # the call starts on an earlier line: `layer_init(` on one, `nn.Linear(d, n))` on the next)
    if isinstance(call, cst.Call) and access.via.reach is Reach.PASSED and access.via.name == call_name(call) \
            and access.snippet.span(call)[0] < access.snippet.span(access.node)[0]:
        return call
    return access.node


def _written(access: ParamAccess) -> str:
    """`nn.init.zeros_(self.w)` or `self.w.data.copy_()`: how a late initialiser writes the parameter."""
    what, detail = code_of(access.node), access.detail
    called = access.use == INIT and detail.endswith("()") and not detail.startswith(" ")
    handed = re.match(r" passed to `([^`]+)\(\)`", detail)  # ` passed to `self._normalize()`, which writes it...`
    if handed:
        return f"`{handed.group(1)}({what})`"
    return f"`{detail[:-2]}({what})`" if called else f"`{what}{detail}`"


# `self.apply(self._init)`, `model.apply(self._init)`: methods run on every submodule.
# The callback `apply` is given: `self.apply(self._init)`, `apply(init_fn)`, `apply(partial(self._init, ...))`
# (`\bapply(`, word first: `program/trigger.py`).
_APPLY_TEXT = re.compile(r"\w\.apply\(")
_APPLIED = re.compile(r"apply(?<!\wapply)\(\s*(?:(?:functools\.)?partial\(\s*)?(self\.)?(\w+)\s*[,)]")
_CHILD_WRITE = re.compile(r"\b\w+\.\w+\.(?:weight|bias)\b")
_CHILD_HANDED = re.compile(r"\(\s*\w+\.\w+\s*[,)]")  # `init_(module.fc1)`, `init_(m.proj, std)`
_PARAMETER_WALK = re.compile(r"\b\w+\.(?:named_)?parameters\(")
# torch layers whose parameters are all their own (`MultiheadAttention` holds an `out_proj` child)
_LEAF_LAYERS = frozenset(known.TORCH_PARAMS) - {"MultiheadAttention"}
_RNN_LAYER = re.compile(r"(?:RNN|LSTM|GRU)(?:Cell)?$")

_LIST_HELP = (
    "initialise the tensors before wrapping them (`ParameterList([init(Parameter(t)) for t in ...])`), or inside "
    "`with deepspeed.zero.GatheredParameters(list(self.<list>.parameters()), modifier_rank=0):`"
)
_HELP = (
    "initialise inside `with deepspeed.zero.GatheredParameters(params, modifier_rank=0):`, "
    "in the child's own `__init__`, or through `self.apply(fn)` before partitioning"
)
