"""What a module's own methods do to its parameters, and calls of such methods on a built module.

A module's parameters are gathered only around its own forward. A method
other than forward that uses them (`reset_parameters()`, `sample()`
resampling noise parameters, `proj_()` clamping a scale in place, a helper
reading `self.weight`) touches partitioned placeholders when someone calls it
on a built module: a parent's `__init__` after the child was built
(`self.gru.reset_parameters()`), a method run on the built model
(`block.attn.norm.proj_()`), a walk over `model.modules()`.

* `method_uses(index, ref, name)`: calling `m.<name>()` on a module of class
  `ref` reads, sizes, writes or initialises which of its own parameters (or
  its children's), read from the method and what it calls on `self` and on
  its children, in this file or another (the items of a parameter list it
  owns through the loop name: `for w in self.weights: w.data.zero_()`
  writes); for torch layers, what torch does
  (`reset_parameters()` initialises every parameter) and `nn.Module`'s own
  (`load_state_dict()` copies into every parameter, for any module).
* `own_state_calls(index)`: `self.state_dict()` / `self.load_state_dict(sd)` in a
  module's methods run on the built model (`broadcast_parameters()`): the module's
  own state, read or loaded outside any gather (keys alone are fine).
* `child_copies(index)`: `copy.deepcopy(self.child)` of a child the module built or
  was handed, in any of its methods but the constructor's (`built` judges those):
  nothing gathers a child's parameters for its parent, so the copy duplicates
  placeholders wherever it runs.
* `method_call_accesses(index, cls, method)`: the calls in a method of a module
  class of a submodule's method that writes, initialises or sizes that
  submodule's parameters, one `ParamAccess` each (`Via(Reach.METHOD, name)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..program import known
from ..program.holds import RETURNS_MODULE, averaged_attributes, held_attributes, unmoved
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised, module_mixin, registered_names
from ..program.members import (
    UNKNOWN_CLASS, Kind, Member, classify, facts_of, has_params, member_of, member_param, parameter_container, torch_base,
)
from ..program.tree import access_path, call_name, code_of, cst, walk
from .access import INIT, READ, SIZE, WRITE, ParamAccess, Reach, Via
from .calls import ModuleCalls, argument_modules
from .effects import (
    CALLS, COMPUTES, DEEPCOPIES, READS, REPARAMETRIZES, STATES, argument_effects, inherited_argument_effects,
    state_keys_only, usage,
)
from .flow import Flat, flat_of, loop_items, runs_gathered
from .params import accesses, listed_submodules, narrowed
from .persistence import is_persistent, optional_param, persistent_param

__all__ = [
    "OwnUse", "method_uses", "method_call_accesses", "calls_child_method", "calls_inherited_method", "answering_classes", "TORCH_INITIALISERS",
    "TORCH_LOADERS", "own_state_calls", "aliases_of_self", "child_copies", "uses_self_whole", "package_module_classes",
    "package_module_methods",
    "package_definers", "SELF_CALL", "forward_parts_outside", "flattened_outside", "NOT_USES",
]

# `nn.Module`'s methods, which every module inherits, that copy values into every parameter it holds.
TORCH_LOADERS = frozenset({"load_state_dict"})
# Methods that never touch parameter values (they run forward, move, or list).
NOT_USES = frozenset(
    {"forward", "__call__", "__init__", "parameters", "named_parameters", "modules", "named_modules", "children",
     "named_children", "state_dict", "train", "eval", "to", "cuda", "cpu", "half", "float",
     "bfloat16", "requires_grad_", "zero_grad", "apply", "register_buffer", "register_parameter", "extra_repr",
     "__repr__", "register_forward_hook", "register_forward_pre_hook", "buffers", "named_buffers",
     "get_input_embeddings", "get_output_embeddings"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class OwnUse:
    """One use a method makes of a parameter its module owns (or a child of it owns)."""

    use: str  # READ, SIZE, WRITE or INIT
    param: str  # as written in the method (`self.weight`, `self.proj.weight`)
    persistent: bool  # small enough that ZeRO-3 keeps it gathered once fetched (in forward reading it is free)
    optional: bool = False  # created only under a test (`nn.Parameter(...) if c else None`; `persistence`)

    @property
    def on_self(self) -> bool:
        """Reached from the module itself (`self.weight`, `self.fc.weight`, `blend(self.target)`), not from a
        local module the method built or a walk's loop name."""
        return self.param.startswith("self.") or "(self" in self.param


def method_uses(index: ModelIndex, ref: str, name: str) -> tuple[OwnUse, ...]:
    """What calling `<module of class ref>.<name>()` does to the parameters the module owns: the first use of each
    kind of a parameter that stays gathered and of one that does not."""
    if name in NOT_USES or name.startswith("__"):
        return ()
    local = index.classes.get(ref)
    if local is not None:
        return _class_uses(index, local, name)
    external = index.external(ref) if ref != UNKNOWN_CLASS else None
    if external is not None:
        return _class_uses(external[0], external[1], name)
    if name in TORCH_LOADERS:
        return (OwnUse(WRITE, "self.weight", False),)  # any module, of a class we cannot read
    if name in known.TORCH_INITIALISERS and ref == UNKNOWN_CLASS:
        return (OwnUse(INIT, "self.weight", False),)  # `layer.reset_parameters()` of a walked module: a layer's
    last = ref.rsplit(".", 1)[-1]
    if name in known.TORCH_INITIALISERS and (ref.startswith("torch.nn.") or last in known.TORCH_PARAMS) and last in _TORCH_LAYERS:
        return (OwnUse(INIT, "self.weight", False),)
    if name == "flatten_parameters" and last in _RECURRENT and (ref.startswith("torch.nn.") or last == ref):
        # `self.lstm.flatten_parameters()`: cuDNN lays the layer's weights out again, reading every one of them
        return (OwnUse(READ, "self.weight_ih_l0", False),)
    return ()


# `super().load_state_dict(`, `super(Net, self).load_state_dict(`: an override handing on to the base's loader.
_HANDS_TO_BASE_LOADER = re.compile(r"\bsuper\([^()]*\)\.load_state_dict\(")
# torch's recurrent layers (`flatten_parameters()` re-lays their weights out).
_RECURRENT = frozenset({"LSTM", "GRU", "RNN"})
# torch layers whose `reset_parameters()` initialises parameters.
_TORCH_LAYERS = frozenset(known.TORCH_PARAMS) | {"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"}


@memoised(cycle=())
def _class_uses(index: ModelIndex, cls: ClassInfo, name: str) -> tuple[OwnUse, ...]:
    method = cls.inherited_method(name)
    if method is None:
        base = torch_base(cls)
        if base is not None and name in known.TORCH_INITIALISERS:
            return (OwnUse(INIT, "self.weight", False),)
        if name in TORCH_LOADERS and has_params(index, cls.name) is not False:
            return (OwnUse(WRITE, "self.weight", False),)  # `nn.Module.load_state_dict`: copies into every parameter
        return ()
    if name in TORCH_LOADERS and _HANDS_TO_BASE_LOADER.search(method.text) and "GatheredParameters" not in method.text \
            and cls.is_module and has_params(index, cls.name) is not False:
        # an override that renames the checkpoint's keys and hands it to `super().load_state_dict(...)`: torch's
        # loader copies into every parameter all the same
        return (OwnUse(WRITE, "self.weight", False),)
    found: dict[tuple, OwnUse] = {}  # the first use of each kind, of a small and a large parameter, of `self` or not
    owner = method.owner if isinstance(method.owner, ClassInfo) else cls
    # what it calls on `self`, dispatched on `cls`: its own methods and those of its bases, of any file
    for reached in cls.reachable(name, inherited=True):
        if reached.name == "__init__":
            continue
        bypassed = reached.name == "forward"
        if bypassed and (name == "forward" or not _FORWARD_CALL.search(owner.text)):
            continue
        for use in _uses_in(index, cls, reached):
            if bypassed and use.param.count(".") != 1:
                continue  # `self.forward(x)` from another method skips only this module's hooks: its own parameters
            found.setdefault((use.use, use.persistent, use.optional, use.on_self), use)
        base = torch_base(cls) if reached.name != "forward" and _SUPER_FORWARD.search(reached.text) else None
        if base is not None:
            # `def embed(self, idxs): return super().forward(idxs)` of an `nn.Embedding`: the torch layer's forward,
            # run on its own weight outside the module's hooks
            use = OwnUse(READ, f"self.{known.TORCH_PARAMS[base][0]}", False)
            found.setdefault((use.use, use.persistent, use.optional, use.on_self), use)
    return tuple(found.values())


# `super().forward(...)` / `super(Codebook, self).forward(...)`: the base class's forward, called by name.
_SUPER_FORWARD = re.compile(r"super(?<!\wsuper)\([^()]*\)\.forward\s*\(")


# `self.forward(...)` called by name: forward runs without the module's hooks.
_FORWARD_CALL = re.compile(r"self(?<!\wself)\.forward\s*\(")


def _uses_in(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[OwnUse]:
    """Parameter uses in one method of `cls`: its own parameters, its children's, and child methods it calls."""
    text = method.text
    # registered by name in the class, or taken from a module it built (`self.pos = text.positional_embedding`)
    own_names = registered_names(cls.text) | {n for n, m in facts_of(cls).members.items() if m.kind == Kind.PARAM}
    reads_own = any(f"self.{name}" in text for name in own_names)
    reads_children = index.mentions_param(text) or "parameters(" in text
    calls_children = (
        calls_child_method(index, text) or bool(_module_method_call(index).search(text))
        or any(f".{name}(" in text for name in _member_methods(index, cls))
    )
    states = bool(_SELF_STATE.search(text))
    handed = bool(_HANDS_SELF.search(text))
    averaged = [name for name in averaged_attributes(index, cls) if f"self.{name}." in text]
    if not (reads_own or reads_children or calls_children or states or handed or averaged):
        return []  # nothing to parse for
    flat = flat_of(method)
    if flat is None:
        return []
    found: list[OwnUse] = []
    members = facts_of(cls).members
    own = {n for n, m in members.items() if m.kind == Kind.PARAM and not m.classes} if reads_own else set()
    if own:
        items: dict[str, str] = {}  # `for weight in self.weights`: the loop name -> the parameter list it walks
        walks: set[int] = set()
        for node, ctx in flat.nodes:
            kind = type(node)
            if kind is cst.For or kind is cst.CompFor:
                for part, walked in loop_items(node.target, node.iter):
                    if isinstance(part, cst.Name):
                        held = _own_attribute(walked, own)
                        if held is not None:
                            items[part.value] = held
                        else:
                            items.pop(part.value, None)
                if _own_attribute(node.iter, own) is not None and isinstance(node.target, cst.Name):
                    walks.add(id(node.iter))  # the walk itself: its items' uses are judged at the loop name
                continue
            held = node.value if kind is cst.Name and node.value in items else None
            if held is not None and not ctx.guarded and not _binds(flat, node):
                use, _op = usage(index, flat, node)
                if use in (READ, SIZE, WRITE, INIT):  # `weight.data.zero_()`: an item of the list written
                    found.append(_own_use(index, cls, use, items[held]))
            if kind is cst.Attribute and node.attr.value in own and not ctx.guarded and id(node) not in walks:
                if isinstance(node.value, cst.Name) and node.value.value == "self":
                    use, _op = usage(index, flat, node)
                    if use in (READ, SIZE, WRITE, INIT):
                        found.append(_own_use(index, cls, use, node.attr.value))
    if reads_children:
        for access in accesses(index, cls, method):
            if access.use in (READ, SIZE, WRITE, INIT) and not access.ctx.guarded and not access.local:
                if access.owner.startswith("self."):
                    found.append(OwnUse(access.use, code_of(access.node), is_persistent(index, access)))
                elif access.via_parameters:
                    # an item of `self.parameters()`, `self.child.parameters()` whose values are used is named by the
                    # walk (`OwnUse.on_self`); a count of its elements (`p.numel()`) or its gradient (`p.grad`) keeps
                    # the loop name: no computation with the module's parameters
                    parent = flat.parent.get(id(access.node))
                    grad = access.op.startswith(".grad") or isinstance(parent, cst.Attribute) and parent.attr.value == "grad"
                    walk = isinstance(parent, cst.Attribute) and parent.attr is access.node  # `self.parameters` itself
                    values = access.use != SIZE and not grad and not walk
                    walked = access.via.name if values and access.via.name.startswith("self") else code_of(access.node)
                    found.append(OwnUse(access.use, walked, is_persistent(index, access)))
    for call, ctx, classes, target, by_name in _module_method_calls(index, cls, method, flat) if calls_children else ():
        if ctx.guarded:
            continue
        name = call.func.attr.value  # type: ignore[union-attr]
        summaries = [method_uses(index, ref, name) for ref in classes]
        if by_name and not all(summaries):
            continue  # a child of no named class: only a use every class defining the method makes (`reads_own_by_name`)
        for uses in summaries:
            for use in uses:
                found.append(OwnUse(use.use, f"{code_of(target)}.{name}()", use.persistent, use.optional))
    if states and has_params(index, cls.name) is not False:  # a module of buffers alone loads no parameter
        found += _own_state_uses(flat)
    if handed:
        found += _handed_uses(index, cls, flat)
    if averaged:
        found += _averager_uses(flat, averaged)
    return found


def _averager_uses(flat: Flat, averaged: list[str]) -> list[OwnUse]:
    """A library weight average the module keeps over a model it holds (`self.ema = EMA(self.model)`,
    `holds.averaged_attributes`) updated or swapped in (`self.ema.update()`, `known.AVERAGER_UPDATES`): the average
    and its copy are the module's children, and the update reads every parameter of the model and writes the
    copy's (a swap, `copy_to()`, writes the model's)."""
    found = []
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
            continue
        path = access_path(node.func.value)
        if path is None or path.root != "self" or len(path.parts) != 1 or path.parts[0] not in averaged:
            continue
        if node.func.attr.value in known.AVERAGER_UPDATES:
            found.append(OwnUse(READ if node.func.attr.value in known.AVERAGER_BLENDS else WRITE, code_of(node), False))
    return found


# `self.state_dict()`, `self.load_state_dict(sd)` (and torch's per-module halves): the module's whole state.
_SELF_STATE = re.compile(r"self(?<!\wself)\.(?:load_|_load_from_|_save_to_)?state_dict\(")  # (word first)
# `blend(self.target, self.online)`, `average(self, other)`, `copy_into(self.parameters(), src)`: a function of the
# program handed the module itself, a child or a parameter walk of either (not a method of `self`).
_HANDS_SELF = re.compile(r"(?<![\w.])(?!self\b)[A-Za-z_][\w.]*\([^()]*(?:\(\)[^()]*)*\bself\b")


def uses_self_whole(text: str) -> bool:
    """Text pre-filter: a method taking or loading its module's own state dict, or handing the module (or a child,
    or a parameter walk of either) to a function, which may then compute with every parameter."""
    return bool(_SELF_STATE.search(text) or _HANDS_SELF.search(text))


def _own_state_uses(flat: Flat) -> list[OwnUse]:
    """The module's own state dict taken (every parameter read) or loaded (every parameter written) in the method;
    keys alone (`self.state_dict().keys()`) name parameters and read none."""
    found = []
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
            continue
        name = node.func.attr.value
        if name not in known.STATE_CALLS or not (isinstance(node.func.value, cst.Name) and node.func.value.value == "self"):
            continue
        if state_keys_only(flat, node):
            continue
        use = READ if name in ("state_dict", "_save_to_state_dict") else WRITE
        found.append(OwnUse(use, f"self.{name}()", False))
    return found


def _handed_uses(index: ModelIndex, cls: ClassInfo, flat: Flat) -> list[OwnUse]:
    """What functions of the program the method hands the module to do with its parameters: `self`, a child
    (`self.target`) or a parameter walk of either (`self.online.parameters()`) given to a helper whose summary
    (`effects.module_arg_effects`, of this file or another) copies, blends, loads or reads them, or computes with
    one of them by name (`def run(m, x): return x @ m.proj.weight.T` given `self`: `effects.COMPUTES`, judged
    here on the class)."""
    found = []
    members = facts_of(cls).members
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded or not node.args:
            continue
        name = call_name(node)
        first, _, rest = (name or "").partition(".")
        if not name or first == "super" or first == "self" and (not rest or "." in rest):
            continue  # (`self.<helper>(self.child)`: a method of the class, read here; `self.child.m(x)`: no helper)
        handed = {i: arg for i, arg in enumerate(node.args) if not arg.star and _of_self(arg.value, members)}
        if not handed:
            continue
        if first == "self":
            called = inherited_argument_effects(cls, node, in_file=True)
        else:
            called = argument_effects(index, flat, node, calls=True)
        for position, effects in called:
            arg = handed.get(position)
            if arg is None:
                continue
            use = next((_EFFECT_USE[e] for e in _EFFECT_ORDER if e in effects), None)
            if use is not None:
                found.append(OwnUse(use, f"{name}({code_of(arg.value)})", False))
                continue
            path = access_path(arg.value)  # `self`, `self.enc` (not a walk: its items' reads are READS above)
            if path is None or path.root != "self" or "[]" in path.parts:
                continue
            computed = sorted(e[len(COMPUTES):] for e in effects if e.startswith(COMPUTES))
            persistent = [_param_persistent(index, cls.name, (*path.parts, *e.split("."))) for e in computed]
            if any(p is not None for p in persistent):
                found.append(OwnUse(READ, f"{name}({code_of(arg.value)})", all(p is not False for p in persistent)))
                continue
            # a method it runs on the module handed (`def run(m, x): return m.inner(x)`), dispatched on its class
            ref = _path_class(index, cls.name, path.parts)
            for called in sorted(e[len(CALLS):] for e in effects if e.startswith(CALLS)) if ref is not None else ():
                uses = [u for u in method_uses(index, ref, called) if u.use == READ]
                if uses:
                    found.append(OwnUse(READ, f"{name}({code_of(arg.value)})", all(u.persistent for u in uses)))
                    break
    return found


def _path_class(index: ModelIndex, ref: str, parts: tuple[str, ...]) -> str | None:
    """The one class the module at `parts` from a module of class `ref` is (`("enc", "proj")`), if known."""
    for part in parts:
        member = member_of(index, ref, part)
        if member is None or member.kind != Kind.MODULE or len(member.classes) != 1:
            return None
        ref = member.classes[0]
    return ref


def _param_persistent(index: ModelIndex, ref: str, parts: tuple[str, ...]) -> bool | None:
    """For the path `parts` from a module of class `ref` (`("proj", "weight")`): None when it names no parameter
    (a setting, a buffer, a child of no readable class), else whether the parameter stays gathered."""
    ref = _path_class(index, ref, parts[:-1])  # type: ignore[assignment]
    if ref is None or member_param(index, ref, parts[-1]) is not True:
        return None
    if parts[-1].startswith("bias") and known.is_torch_module_class(ref):
        return True  # a torch layer's bias: one element per output feature
    return persistent_param(index, ref, parts[-1])


# What a helper does to a module or parameter walk it is given, as a use of the module's own parameters.
_EFFECT_ORDER = (WRITE, INIT, STATES, DEEPCOPIES, READS, REPARAMETRIZES, SIZE)
_EFFECT_USE = {WRITE: WRITE, INIT: INIT, STATES: READ, DEEPCOPIES: READ, READS: READ, REPARAMETRIZES: WRITE, SIZE: SIZE}


def _of_self(value: cst.BaseExpression, members: dict[str, Member]) -> bool:
    """`self`, `self.child` for a child that may hold parameters, or `self[.child].parameters()`."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args:
        if value.func.attr.value not in ("parameters", "named_parameters"):
            return False
        value = value.func.value
    path = access_path(value)
    if path is None or path.root != "self" or "[]" in path.parts:
        return False
    if not path.parts:
        return True
    member = members.get(path.parts[0])
    return member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER)  # a setting (`self.feat_shape`): no


def _own_use(index: ModelIndex, cls: ClassInfo, use: str, name: str) -> OwnUse:
    small = persistent_param(index, cls.name, name)
    return OwnUse(use, f"self.{name}", small, small and optional_param(index, cls.name, name))


def _own_attribute(expr: cst.BaseExpression, own: set[str]) -> str | None:
    """`self.weights` for a parameter list the class owns: its name."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in own and isinstance(expr.value, cst.Name):
        return expr.attr.value if expr.value.value == "self" else None
    return None


def _binds(flat: Flat, node: cst.Name) -> bool:
    """Is `node` the target a loop binds (not a use of it)?"""
    parent = flat.parent.get(id(node))
    while isinstance(parent, (cst.Tuple, cst.List, cst.Element)):
        parent = flat.parent.get(id(parent))
    return isinstance(parent, (cst.For, cst.CompFor)) and parent.target is not None and _within(parent.target, node)


def _within(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    return root is node or any(_within(child, node) for child in root.children)


@memoised
def _member_methods(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Names of the methods (not forward, not dunders) of the classes of other files that `cls`'s members are
    built from (`self.clip = clip` for `clip, _, _ = open_clip.create_model_and_transforms(...)`)."""
    names: set[str] = set()
    for member in facts_of(cls).members.values():
        if member.kind != Kind.MODULE:
            continue
        for ref in member.classes:
            external = index.external(ref) if ref not in index.classes and ref != UNKNOWN_CLASS else None
            if external is not None:
                names.update(m.name for m in external[1].all_methods())
    return frozenset(n for n in names if n not in NOT_USES and not n.startswith("__"))


def _module_method_calls(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat):
    """(call, ctx, classes, module expression, known by the method's name only) for each `<submodule>.<method>(...)`
    call other than its forward."""
    calls = None
    loops: dict[str, tuple[str, ...]] = {}  # `for m in self.modules()`: any submodule
    # `encoder = Encoder(d)` in `__init__` or a helper it calls: under `zero.Init` partitioned once built
    built: dict[str, tuple[str, ...]] | None = {} if any(m is method for m in cls.init_methods) else None
    receivers = set(_RECEIVER.findall(method.text)) if built is not None else set()
    for node, ctx in flat.nodes:
        kind = type(node)
        if built is not None and kind is cst.Assign:
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value in receivers:
                    built.pop(target.target.value, None)
                    made = _built_module(index, node.value)
                    if made and len(node.targets) == 1:
                        built[target.target.value] = made
            continue
        if kind is cst.For or kind is cst.CompFor:
            for part, items in loop_items(node.target, node.iter):
                if isinstance(part, cst.Name) and _walks_modules(items):
                    loops[part.value] = (UNKNOWN_CLASS,)
            continue
        if kind is not cst.Call or not isinstance(node.func, cst.Attribute):
            continue
        name = node.func.attr.value
        if name in NOT_USES or name in known.CONTAINER_METHODS or name.startswith("__"):
            continue
        target = node.func.value
        if isinstance(target, cst.Name) and target.value == "self":
            continue  # the class's own helper: `reachable` follows it
        if isinstance(target, cst.Name) and target.value in loops:
            alias = narrowed(index, Member(target.value, Kind.UNKNOWN, loops[target.value]), ctx)
            if alias is not None:
                yield node, ctx, alias.classes, target, False
            elif name in known.TORCH_INITIALISERS:  # `for layer in net.children(): layer.reset_parameters()`
                yield node, ctx, loops[target.value], target, False
            continue
        if built and isinstance(target, cst.Name) and target.value in built:
            yield node, ctx, built[target.value], target, False  # `encoder.init_weights()` on the local just built
            continue
        calls = calls or ModuleCalls(index, cls, flat, method.name)
        known_classes = calls.classes_of(target)
        classes = answering_classes(index, known_classes, name, cls.name)
        if classes:
            yield node, ctx, classes, target, classes != known_classes


# A name a method is called on (`encoder.init_weights(`): the locals worth classifying in `_module_method_calls`.
_RECEIVER = re.compile(r"(?<![\w.])(\w+)\.\w+\(")


def _built_module(index: ModelIndex, value: cst.BaseExpression) -> tuple[str, ...]:
    """The classes of a module with parameters `value` constructs (`Encoder(256)`, of this file or another)."""
    if not isinstance(value, cst.Call):
        return ()
    kind, classes = classify(index, value)
    if kind == Kind.CONTAINER and _around_members(value):
        # `nn.Sequential(self.down1, self.neck)`: a container of children built, and partitioned, before it
        return classes or (index.qualify(call_name(value) or ""),)
    if kind != Kind.MODULE or not any(has_params(index, c) for c in classes):
        return ()
    return classes


def _around_members(value: cst.Call) -> bool:
    """Is `value` built around modules `self` already holds, and only them (`nn.Sequential(self.down1, self.neck)`)?"""
    return bool(value.args) and all(
        arg.keyword is None and not arg.star and (path := access_path(arg.value)) is not None
        and path.root == "self" and bool(path.parts) for arg in value.args
    )


def answering_classes(
    index: ModelIndex, classes: tuple[str, ...] | None, name: str, caller: str = "", package: bool = False,
    heirs: bool = True,
) -> tuple[str, ...]:
    """The classes a module whose method `name` is called may have: as the calls know them, or, for a module of a
    class we cannot tell (handed in, `self.net = net`, a local, an argument), the module classes of its file that
    define a method of that name, since only they can answer the call (`self.net.forward_with_cond_scale(x)`); with
    `package` (a value held or handed as a model, not any argument kept), where none does, those of the package's
    other files (`package_module_classes`; with `heirs`, a base there standing for its subclasses that inherit
    the method: not for a query that reads the method on each class's own file alone)."""
    if not classes or UNKNOWN_CLASS not in classes or any(ref != UNKNOWN_CLASS for ref in classes):
        return classes or ()  # not a module, or one of classes the calls know
    found = _defining_classes(index, name) or (package_module_classes(index, name, heirs) if package else ())
    # not the calling class: a wrapper delegates to the model it holds by the same name (`self.model.sample(x)`)
    return tuple(ref for ref in found if ref != caller) or classes


@memoised
def _defining_classes(index: ModelIndex, name: str) -> tuple[str, ...]:
    """Module classes of the file, then classes it imports by name from other files, that define method `name`."""
    found = [cls.name for cls in index.module_classes() if name in cls.span.methods]
    found += [ref for ref, info in _imported_module_classes(index) if name in info.span.methods]
    return tuple(found)


@memoised
def package_module_classes(index: ModelIndex, name: str, heirs: bool = True) -> tuple[str, ...]:
    """The module classes of the other files of the file's top-level package that define method `name`: what a
    module handed in untyped may be when the file imports no class answering the call (`def score(model, x):
    return model.lookup(x)`, the model's class in a file of the package this one never imports). Files are named
    by their text (`Project.package_definers`) and then indexed; a name more than `_MAX_DEFINERS` files define is
    a common verb of the package (`update`, `reset`) that tells nothing of which class answers. A class whose
    subclasses in the package inherit the method is taken to be them (`_package_heirs`): a base defining `encode`
    over the `self.proj` its subclasses build."""
    found: list[str] = []
    for module in package_definers(index, name):
        other = _package_index(index, module)
        for cls in other.module_classes() if other else ():
            if name in cls.span.methods:  # a base whose heirs inherit the method stands for them (what is built)
                ref = f"{module}.{cls.name}"
                found += [r for r in (heirs and _package_heirs(index, name, [ref])) or [ref] if r not in found]
    return tuple(found)


def _package_heirs(index: ModelIndex, name: str, bases: list[str]) -> list[str]:
    """The module classes of the package's other files inheriting method `name` from one of the classes `bases`
    (qualified), and their heirs in turn (`class Child(EncBase)` in `nets.py`, where `base.py` defines
    `EncBase.encode`): what builds the parameters the inherited method reads (`Project.package_heirs`)."""
    found: list[str] = []
    stack = list(bases)
    while stack and len(found) < _MAX_HEIRS:
        base = stack.pop(0)
        for module in index.project.package_heirs(index.module, base.rpartition(".")[2]):  # type: ignore[union-attr]
            other = _package_index(index, module)
            for cls in other.module_classes() if other else ():
                ref = f"{module}.{cls.name}"
                if base in cls.qualified_bases and name not in cls.span.methods and ref not in found:
                    found.append(ref)
                    stack.append(ref)
    return found[:_MAX_HEIRS]


_MAX_HEIRS = 12  # classes inheriting one method, looked up for a module of no named class


@memoised
def mixin_heirs(index: ModelIndex, cls: ClassInfo) -> tuple[tuple[ModelIndex, ClassInfo], ...]:
    """The classes deriving from `cls`, a plain class with no `__init__` of its own (a mixin: `class
    CachedLossMixin:` whose methods call `self.model(x)`), in its file and the package's other files
    (`Project.package_heirs`): what its `self` is, and so who sets the attributes its methods read. A mixin of
    modules (`class CodecMixin:` calling `self.modules()`, `index.module_mixin`) is read as a module class, and has heirs too."""
    if cls.is_module and not module_mixin(cls) or "__init__" in cls.span.methods:
        return ()
    found = [(index, other) for other in index.classes.values() if other is not cls and cls in other.mro]
    if index.project is not None and index.module:
        ref = f"{index.module}.{cls.name}"
        for module in index.project.package_heirs(index.module, cls.name):
            other_index = _package_index(index, module)
            for other in other_index.classes.values() if other_index else ():
                if ref in other.qualified_bases:
                    found.append((other_index, other))
    return tuple(found[:_MAX_HEIRS])


def _package_index(index: ModelIndex, module: str) -> ModelIndex | None:
    """The index of another file of the package, None when it does not parse."""
    file = index.project.file(module)  # type: ignore[union-attr]
    if file is None or file.skeleton is None:
        return None
    return ModelIndex.of(file, index.project)  # type: ignore[arg-type]


def package_definers(index: ModelIndex, name: str) -> tuple[str, ...]:
    """The other files of the package defining a method `name`, none when more than `_MAX_DEFINERS` do."""
    if index.project is None or not index.module:
        return ()
    definers = index.project.package_definers(index.module, name)
    return definers if len(definers) <= _MAX_DEFINERS else ()


_MAX_DEFINERS = 6  # files of a package defining one method name, read to learn which module classes answer it


@memoised
def package_module_methods(index: ModelIndex) -> frozenset[str]:
    """Text pre-filter of `package_module_classes`: the names `package_definers` answers with some files for, 1 to
    `_MAX_DEFINERS` other files of the package defining the method (a call of one on a module of no named class may
    run one of theirs); a name it leaves out records no dependency (`Project.package_definer_names`)."""
    if index.project is None or not index.module:
        return frozenset()
    return index.project.package_definer_names(index.module, _MAX_DEFINERS)


@memoised
def _imported_module_classes(index: ModelIndex) -> tuple[tuple[str, ClassInfo], ...]:
    """The module classes the file imports by name from files the program reads (`from .nets import Actor`)."""
    found = []
    for alias in index.imports:
        if alias[:1].isupper():
            external = index.external(index.qualify(alias))
            if external is not None and external[1].is_module:
                found.append((index.qualify(alias), external[1]))
    return tuple(found)


@memoised
def imported_module_methods(index: ModelIndex) -> frozenset[str]:
    """Names of the methods (not dunders) of the module classes the file imports by name: what a call on a module
    whose class nothing names could run besides the file's own classes' methods."""
    return frozenset(n for _ref, info in _imported_module_classes(index) for n in info.method_names if n[:2] != "__")


def _walks_modules(items: cst.BaseExpression) -> bool:
    return (
        isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute)
        and items.func.attr.value in ("modules", "named_modules", "children", "named_children")
    )


# What a write or an initialisation looks like in text (`.data`, `x.clamp_(`, `reset_parameters(`).
_WRITES = re.compile(r"\.data\b|[a-z0-9]_\(|reset_parameters\(")


@memoised
def child_method_trigger(index: ModelIndex) -> re.Pattern[str]:
    """Text without which a method calls no submodule method that could write or size its parameters: a call of
    torch's `reset_parameters()`, of a method of a module class of this file that writes or sizes (`proj_()`), or
    of a method named for setting weights (`init`, `reset`)."""
    names = set(known.TORCH_INITIALISERS) | TORCH_LOADERS
    for cls in index.module_classes():
        for name in cls.span.methods:
            if name not in NOT_USES and not name.startswith("__"):
                if any(_WRITES.search(m.text) for m in cls.reachable(name)):
                    names.add(name)
    alternatives = "|".join(sorted(map(re.escape, names)))
    # not on `self` itself (`self.init_weights()` is the class's own helper) nor a dunder (`super().__init__()`)
    return re.compile(r"\.(?<!\bself\.)(?<!\(\)\.)(?:" + alternatives + r"|(?!__)\w*(?:init|reset)\w*)\(")


@memoised
def _module_method_call(index: ModelIndex) -> re.Pattern[str]:
    """A call, on anything but `self`, of a method a module class of the file defines besides forward and
    dunders (`self.net.forward_with_cond_scale(`): it may compute with that module's own parameters."""
    names = {n for cls in index.module_classes() for n in cls.span.methods if n not in NOT_USES and n[:2] != "__"}
    if not names:
        return re.compile(r"(?!)")
    return re.compile(r"\.(?<!\bself\.)(?<!\(\)\.)(?:" + "|".join(sorted(map(re.escape, names))) + r")\(")


def calls_child_method(index: ModelIndex, text: str) -> bool:
    """The pre-filter of `method_call_accesses`: a call of a method that may write a submodule's parameters, or a
    walk over modules narrowed by class (`for m in model.modules(): if isinstance(m, Noisy): m.sample()`)."""
    return bool(child_method_trigger(index).search(text)) or ("modules()" in text and "isinstance(" in text)


@memoised
def method_call_accesses(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[ParamAccess]:
    """Calls in `method` of a submodule's own method that writes, initialises or sizes its parameters.

    `self.gru.reset_parameters()` in `__init__` after `self.gru` was built, `block.attn.norm.proj_()` in a
    method run on the built model, `m.sample()` for `m` in `self.modules()` narrowed to a noisy layer: the
    access is the module the method is called on, its use what the method does (WRITE/INIT before SIZE).
    """
    flat = flat_of(method)
    if flat is None:
        return []
    members = facts_of(cls).members
    found = []
    for call, ctx, classes, target, _by_name in _module_method_calls(index, cls, method, flat):
        name = call.func.attr.value  # type: ignore[union-attr]
        uses = {u.use for ref in classes for u in method_uses(index, ref, name) if u.use in (WRITE, INIT, SIZE)}
        if not uses:
            continue
        use = WRITE if WRITE in uses else INIT if INIT in uses else SIZE
        path = access_path(target)
        first = members.get(path.parts[0]) if path is not None and path.root == "self" and path.parts else None
        if first is None:
            first = Member(code_of(target), Kind.MODULE, classes, (-1, 0))
        found.append(ParamAccess(
            target, ctx, use, f".{name}()", Via(Reach.METHOD, name), owner=code_of(target), param="parameters",
            where=method.name, snippet=method.snippet, cls=cls, method=method, first=first, owner_classes=classes,
            order=method.order.get(id(target), 0),
        ))
    if any(m is method for m in cls.init_methods) and calls_inherited_method(cls, method.text):
        found += _inherited_init_calls(index, cls, method, flat, members)
    return found


def _inherited_init_calls(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat,
                          members: dict[str, Member]) -> list[ParamAccess]:
    """`self.reset_parameters()` in `__init__` (or a helper of this file it calls) running a method inherited from a
    base class of another file, which initialises or writes the parameters of a child the base's constructor built
    (`super().__init__()` ran first, so zero.Init partitioned the child): the access is that child, reported at the
    call, since the method's own lines are not in this file. The class's own parameters are not partitioned yet."""
    found = []
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute):
            continue
        receiver, name = node.func.value, node.func.attr.value
        if not (isinstance(receiver, cst.Name) and receiver.value == "self") or name.startswith("__"):
            continue
        if cls.method(name) is not None or cls.inherited_method(name) is None:
            continue  # a method of this file: `reachable` follows it and its own lines are reported
        for use in _class_uses(index, cls, name):
            parts = use.param.split(".")
            child = members.get(parts[1]) if use.use in (WRITE, INIT) and len(parts) > 2 and parts[0] == "self" else None
            if child is not None and child.kind == Kind.VALUE and listed_submodules(index, cls, parts[1]):
                child = Member(parts[1], Kind.CONTAINER, (), child.order)  # `self.model_pairs`: a list of submodules
            if child is None or child.kind not in (Kind.MODULE, Kind.CONTAINER):
                continue
            found.append(ParamAccess(
                node, ctx, use.use, f".{name}()", Via(Reach.METHOD, name), owner=f"self.{parts[1]}",
                param="parameters", where=method.name, snippet=method.snippet, cls=cls, method=method, first=child,
                owner_classes=child.classes, order=method.order.get(id(node), 0),
            ))
            break
    return found


# `self.<name>(`: a call of a method of `self`, by its name (word first: `program/trigger.py`).
SELF_CALL = re.compile(r"self(?<!\wself)\.(\w+)\s*\(")


def calls_inherited_method(cls: ClassInfo, text: str) -> bool:
    """The pre-filter of `_inherited_init_calls`: a call `self.<name>(...)` of a method no class of this file
    defines and a base class of another file does."""
    names = {name for name in SELF_CALL.findall(text) if not name.startswith("__")}
    return any(cls.method(name) is None and cls.inherited_method(name) is not None for name in names)


# `self.state_dict()` / `self.load_state_dict(` in a method's text: the trigger to parse it.
# (`.state_dict(` of `self`, a child, a moved child or a module a helper is handed)
_OWN_STATE = re.compile(
    r"\.(?:load_|_load_from_|_save_to_)?state_dict\(|save(?<!\wsave)\(\s*self\b|\.(?:save_pretrained|push_to_hub)\("
)
_STATE_TEXT = re.compile(r"state_dict\(|save\(|\.save_pretrained\(|\.push_to_hub\(")
# A module's own saving and loading methods (`save(path)`, `load_checkpoint(path)`), not the state dict API itself.
_SERIALISER = re.compile(r"^_?(?:save|load)(?:_|$)(?!.*state_dict)")
# A public helper handing the module's state to a caller that saves it (`get_state_dict`, `export_state_dict`): not
# the `state_dict` / `load_state_dict` overrides themselves.
_STATE_HELPER = re.compile(r"(?!load_)[a-z]\w*_state_dict")


@memoised
def own_state_calls(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call]]:
    """Calls of the module's own `state_dict()` or `load_state_dict(...)`, and reads of the state of a child it built
    (`self.model.state_dict()`, also built in a base class's constructor), in methods a training loop runs on the
    built model (`ClassInfo.entry_methods`, and its own `save(path)`/`load(path)` methods, which `__init__` does
    not call), outside a ZeRO-3 guard: every parameter is a partitioned placeholder there. A state dict read only
    for its keys (`self.state_dict().keys()`) names parameters and is left out."""
    found: list[tuple[MethodInfo, cst.Call]] = []
    if not _STATE_TEXT.search(index.source) or index.other_framework:
        return found
    for cls in index.classes.values():
        hub = _hub_mixin(cls)  # `class HubMixin(PyTorchModelHubMixin)`: mixed into module classes
        if not (cls.is_module or hub) or not _OWN_STATE.search(cls.text):
            continue
        init = cls.init_methods
        # `save(path)`, `load_checkpoint(path)`, and an override of `load_state_dict`, which a loader calls on the
        # built model (its `self.state_dict()` holds placeholders there)
        serialisers = [
            m for m in cls.all_methods()
            if (_SERIALISER.match(m.name) or _STATE_HELPER.fullmatch(m.name) or m.name == "load_state_dict")
            and m not in init
        ]
        # a forward gathers the module's own parameters, not a child's: a child's state is a placeholder there too
        forwards = [m for m in cls.forward_methods if m.owner is cls and _CHILD_STATE.search(m.text)]
        # an initialiser run on the built module (`init_from_pretrained(cfg)`: a checkpoint loaded into `self`)
        late = [m for m in cls.late_init_methods if m.owner is cls and ".load_state_dict(" in m.text]
        for method in [*_run_on_built(cls, [*cls.entry_methods, *serialisers, *late]), *forwards]:
            if not _OWN_STATE.search(method.text):
                continue
            in_forward = method in forwards
            flat = flat_of(method)
            selves = aliases_of_self(flat) if flat is not None and "= self\n" in method.text else frozenset({"self"})
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                    continue
                if _pickles_own_module(index, cls, node):
                    found.append((method, node))  # `torch.save(self.model, path)`: the module object pickled
                    continue
                if hub and node.func.attr.value in known.HUB_MIXIN_SAVES and _on_self(node.func.value):
                    found.append((method, node))  # `super().save_pretrained(d)`: the hub mixin saves the state dict
                    continue
                if node.func.attr.value in known.HUB_MIXIN_SAVES and not in_forward and _pretrained_child(cls, node):
                    found.append((method, node))  # `self.model.save_pretrained(path)`: the child's state dict, saved
                    continue
                if node.func.attr.value not in known.STATE_CALLS:
                    continue
                receiver = unmoved(node.func.value)  # (`self.netG.cpu().state_dict()`: the child's, moved)
                # (not `super()` either; `model_to_save = self` ... `model_to_save.state_dict()` is its own)
                if not (isinstance(receiver, cst.Name) and receiver.value in selves):
                    child = _built_child(index, cls, receiver) if node.func.attr.value in _CHILD_STATE_CALLS else None
                    if child is None and node.func.attr.value in _CHILD_STATE_CALLS and isinstance(receiver, cst.Name):
                        child = _handed_child(index, cls, method, receiver.value)
                    if child is None:
                        continue  # (a built child's state read or loaded: `self.model.state_dict()` in a weight swap)
                    if child == _HANDED and node.func.attr.value == "state_dict" and not _pickles(index, flat):
                        continue  # a handed model's state only handed back (`encoder_state()`), not saved here
                    if node.func.attr.value == "load_state_dict" and _copies_child_state(node):
                        continue  # `self.a.load_state_dict(self.b.state_dict())`: `moved.child_state_copies`
                elif in_forward:
                    continue  # the forward's own parameters are gathered
                parent = flat.parent.get(id(node))
                if state_keys_only(flat, node):
                    continue
                if isinstance(parent, cst.Attribute) and parent.attr.value == "items" and _names_only(flat, parent):
                    continue
                found.append((method, node))
    return found


def aliases_of_self(flat: Flat) -> frozenset[str]:
    """`self`, and the locals a method binds to it alone (`model_to_save = self`, never bound again)."""
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            bound.setdefault(node.targets[0].target.value, []).append(node.value)
    return frozenset({"self"} | {
        name for name, values in bound.items()
        if len(values) == 1 and type(values[0]) is cst.Name and values[0].value == "self"
    })


def child_copies(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call]]:
    """Unguarded deep copies of a child the module built or keeps (`copy.deepcopy(self.base_estimator_)`, also of
    `self.enc.cpu()`), in a method other than the constructor and its helpers: a method a training loop runs on the
    built model, a helper or builder a subclass's method calls (`_make_estimator()` from `fit`), even a forward.
    ZeRO-3 gathers a module's parameters for its own forward only, never a child's for its parent, so the child's
    parameters are placeholders there and the copy duplicates them (in the constructor, `built` judges the copy by
    what was built before it)."""
    found: list[tuple[MethodInfo, cst.Call]] = []
    if "deepcopy(self." not in index.source or index.other_framework:
        return found
    for cls in index.module_classes():
        if "deepcopy(self." not in cls.text:
            continue
        init = {id(m) for m in cls.init_methods}
        for method in cls.all_methods():
            if method.owner is not cls or id(method) in init or "deepcopy(self." not in method.text:
                continue
            if runs_gathered(cls, method):
                continue
            flat = flat_of(method)
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not node.args:
                    continue
                if (index.qualified_call(node) or "") not in known.DEEP_COPY:
                    continue
                copied = node.args[0].value
                while isinstance(copied, cst.Call) and isinstance(copied.func, cst.Attribute) \
                        and copied.func.attr.value in RETURNS_MODULE:
                    copied = copied.func.value  # `self.enc.cpu()`: the child itself
                if _built_child(index, cls, copied) is not None:
                    found.append((method, node))
    return found


# A child's state taken or loaded (`self.model.state_dict()`, `self.model.load_state_dict(sd)`).
_CHILD_STATE_CALLS = frozenset({"state_dict", "load_state_dict"})
_CHILD_STATE = re.compile(r"self(?<!\wself)\.\w+\.(?:load_)?state_dict\(")


def _copies_child_state(call: cst.Call) -> bool:
    """`self.a.load_state_dict(self.b.state_dict())`: one child's state copied into another."""
    read = call.args[0].value if call.args else None
    return isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute) and read.func.attr.value == "state_dict" \
        and _on_self_child(read.func.value)


def _on_self_child(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"


_BUILT, _HANDED = "built", "handed"


def _pretrained_child(cls: ClassInfo, call: cst.Call) -> bool:
    """Is `call` a `save_pretrained`/`push_to_hub` of a child the module builds (`self.model =
    AutoModel.from_pretrained(name)`), not of a tokenizer or config it keeps?"""
    value = call.func.value  # type: ignore[attr-defined]
    if not _on_self_child(value):
        return False
    member = facts_of(cls).members.get(value.attr.value)  # type: ignore[attr-defined]
    if member is not None and member.kind is Kind.UNKNOWN and _SAVED_NO_MODEL.search(value.attr.value):  # type: ignore[attr-defined]
        return False  # `self.tokenizer = tokenizer` ... `self.tokenizer.save_pretrained(d)`: no state dict of weights
    return member is not None and member.kind in (Kind.MODULE, Kind.UNKNOWN) and any(
        has_params(cls.index, ref) is not False for ref in member.classes
    )


# What a module keeps, of no class we can tell, that has a `save_pretrained` of its own and no weights: a tokenizer,
# a processor, a feature extractor, a configuration.
_SAVED_NO_MODEL = re.compile(r"(?i)token|processor|extractor|config")


def _built_child(index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression) -> str | None:
    """`_BUILT` when `value` is a child the constructor of `cls` (or of a base, in any file) builds and keeps,
    `self.model`, of a class that owns parameters (not a normaliser of buffers alone, nor a child of a class that
    cannot be read); `_HANDED` when it is a model the module keeps otherwise (`self.model = model`, built before
    the module was: `holds.held_attributes`); else None."""
    if not _on_self_child(value):
        return None
    member = facts_of(cls).members.get(value.attr.value)  # type: ignore[attr-defined]
    if member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER):
        if any(has_params(cls.index, ref) for ref in member.classes):
            return _BUILT
    return _HANDED if value.attr.value in held_attributes(index, cls) else None  # type: ignore[attr-defined]


def _handed_child(index: ModelIndex, cls: ClassInfo, method: MethodInfo, name: str) -> str | None:
    """`_BUILT` when the parameter `name` of `method` is a child the class built, handed by its own calls
    (`self.save_network(self.netG, "G")` for `def save_network(self, network, label)`), else None."""
    if method.owner is not cls and method.owner not in cls.mro:
        return None
    classes = argument_modules(index, cls, method.name, frozenset({name})).get(name)
    return _BUILT if classes and any(has_params(cls.index, ref) for ref in classes) else None


def _pickles(index: ModelIndex, flat: Flat) -> bool:
    """Does the method pickle something (`torch.save(pkg, path)`), or hand a state dict to a save
    (`model.save_pretrained(d, state_dict=sd)`): a state it takes is written out, not handed back."""
    return any(
        type(node) is cst.Call and (
            index.qualify(call_name(node) or "") in known.PICKLERS
            or isinstance(node.func, cst.Attribute) and node.func.attr.value in known.HUB_MIXIN_SAVES
            and any(arg.keyword is not None and arg.keyword.value == "state_dict" for arg in node.args)
        )
        for node, _ctx in flat.nodes
    )


def _hub_mixin(cls: ClassInfo) -> bool:
    """Does `cls` derive from a hub mixin whose save methods serialise the model's state dict?"""
    return any(base in known.HUB_MIXINS for info in cls.mro for base in info.qualified_bases)


def _on_self(value: cst.BaseExpression) -> bool:
    """`self` or `super()`."""
    if isinstance(value, cst.Name):
        return value.value == "self"
    return isinstance(value, cst.Call) and call_name(value) == "super"


def _run_on_built(cls: ClassInfo, roots: list[MethodInfo]) -> list[MethodInfo]:
    """`roots` and the methods of `cls` they reach (`serialize()` from `save(path)`, `get_state_dict()` from
    `serialize()`), whatever their names, leaving out those `__init__` or `forward` runs."""
    taken = {id(m) for m in cls.init_methods} | {id(m) for m in cls.forward_methods}
    found: dict[int, MethodInfo] = {}
    roots = list(roots)
    while roots:
        root = roots.pop(0)
        for method in cls.reachable(root.name) if id(root) not in found else ():
            if id(method) in taken or id(method) in found:
                continue
            found[id(method)] = method
            # a property the method reads (`package = dict(model=self.state_dict_with_init_args)`) runs there too
            for name in dict.fromkeys(_SELF_READ.findall(method.text)):
                read = cls.method(name)
                if read is not None and id(read) not in found and _is_property(read):
                    roots.append(read)
    return list(found.values())


# `self.name` read, not called.
_SELF_READ = re.compile(r"self(?<!\wself)\.(\w+)\b(?!\s*[(=.\w])")


def _is_property(method: MethodInfo) -> bool:
    return "@property" in method.text[: method.text.find("def ")]


def _pickles_own_module(index: ModelIndex, cls: ClassInfo, call: cst.Call) -> bool:
    """`torch.save(self, path)` or `torch.save(self.child, path)` for a child module with parameters: the module
    object is pickled with its parameters as they are, partitioned placeholders under ZeRO-3."""
    if index.qualify(call_name(call) or "") != "torch.save" or not call.args or call.args[0].keyword is not None:
        return False
    path = access_path(call.args[0].value)
    if path is None or path.root != "self" or len(path.parts) > 1:
        return False
    if not path.parts:
        return True
    member = facts_of(cls).members.get(path.parts[0])
    return member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER) or path.parts[0] in held_attributes(
        index, cls
    )


def _names_only(flat: Flat, items: cst.Attribute) -> bool:
    """`for name, tensor in self.state_dict().items():` whose body never uses `tensor`: a walk of the keys."""
    call = flat.parent.get(id(items))
    loop = flat.parent.get(id(call)) if isinstance(call, cst.Call) else None
    if not isinstance(loop, cst.For) or loop.iter is not call or not isinstance(loop.target, cst.Tuple):
        return False
    elements = loop.target.elements
    if len(elements) != 2 or not isinstance(elements[1].value, cst.Name):
        return False
    value = elements[1].value.value
    return not any(isinstance(n, cst.Name) and n.value == value for n in walk(loop.body))


@memoised
def forward_parts_outside(index: ModelIndex) -> list[tuple[ClassInfo, MethodInfo, cst.Call]]:
    """Calls `self.<part>(...)` of a method the module's forward runs (`make_weight`, `forward_on_codes`) that names a
    parameter the module owns itself, made in a method run on the built module outside any forward
    (`apply_max_norm`, `generate`): the part runs without the module's own hooks, so what it reads of the module's
    own parameters are placeholders there, small ones too (nothing fetched them). (class, calling method, call)."""
    found = []
    for cls in index.module_classes():
        parts = {m.name for m in cls.forward_methods if m.name != "forward"}
        if not parts:
            continue
        for method in cls.entry_methods:
            called = {name for name, through_super in method.self_calls if not through_super and name in parts}
            read = {name for name in called if _part_reads_own(index, cls, name)}
            flat = flat_of(method) if read else None
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                    continue
                target = node.func.value
                if isinstance(target, cst.Name) and target.value == "self" and node.func.attr.value in read:
                    found.append((cls, method, node))
    return found


@memoised
def flattened_outside(index: ModelIndex) -> list[tuple[ClassInfo, MethodInfo, cst.Call, bool]]:
    """`self.rnn.flatten_parameters()` (or through a child, `self.encoder.rnn`) in a module's constructor after the
    recurrent layer was built, or in a method run on the built module outside any forward: cuDNN lays every weight
    of the layer out again there, reading placeholders. (class, method, call, in the constructor?)"""
    found: list[tuple[ClassInfo, MethodInfo, cst.Call, bool]] = []
    if "flatten_parameters" not in index.source:
        return found
    for cls in index.module_classes():
        inits = {id(m) for m in cls.init_methods}
        for method in (*cls.init_methods, *cls.entry_methods):
            if ".flatten_parameters(" not in method.text:
                continue
            flat = flat_of(method)
            calls = ModuleCalls(index, cls, flat, method.name) if flat is not None else None
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or type(node.func) is not cst.Attribute \
                        or node.func.attr.value != "flatten_parameters" or node.args:
                    continue
                path = access_path(node.func.value)
                if path is not None and path.root != "self" and not path.parts:
                    path = _walked_from_self(flat, path.root)  # `for layer in self.layers: layer.flatten_...()`
                if path is None or path.root != "self" or not path.parts:
                    continue
                # (a part of a child of a class we cannot tell, `self.encoder.rnn`: only torch's recurrent layers
                # have the method)
                classes = calls.classes_of(node.func.value)  # type: ignore[union-attr]
                if classes and not any(
                        ref == UNKNOWN_CLASS or method_uses(index, ref, "flatten_parameters") for ref in classes):
                    continue
                in_init = id(method) in inits
                if in_init and not _built_before(cls, method, path.parts[0], node):
                    continue
                found.append((cls, method, node, in_init))
    return found


def _walked_from_self(flat: Flat, name: str):
    """The access path of the container of `self` a loop of `flat` walks binding `name` (`self.layers` of `for layer
    in self.layers`), else None."""
    for node, _ctx in flat.nodes:
        if type(node) is cst.For and type(node.target) is cst.Name and node.target.value == name:
            path = access_path(node.iter)
            if path is not None and path.root == "self" and path.parts:
                return path
    return None


def _built_before(cls: ClassInfo, method: MethodInfo, name: str, at: cst.CSTNode) -> bool:
    """Was the child `self.<name>` built before `at`, a node of the constructor `method` (or a helper it calls)?"""
    member = facts_of(cls).members.get(name)
    rank = next((i for i, m in enumerate(cls.init_methods) if m is method), 0)
    return member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER) and member.order < (
        rank, method.order.get(id(at), 0))


def _part_reads_own(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does method `name` of the module (or what it reaches) name a parameter the module owns itself? Small ones
    count: the caller runs outside any forward, where nothing has fetched them."""
    text = "".join(m.text for m in cls.reachable(name, properties=True))
    return any(
        m.kind == Kind.PARAM and not m.classes and not parameter_container(index, cls, member)
        and re.search(rf"\bself\.{re.escape(member)}\b", text) is not None
        for member, m in facts_of(cls).members.items()
    )
