"""Modules a module builds in its constructor and keeps out of its module tree, and where its forward runs them.

`self.vgg = [vgg]`, `self.nets = (Net(d),)`, `self.aux = {"net": nn.Linear(d, d)}`, `self.layers = []` filled by
`self.layers.append(nn.Linear(d, d))`: a plain list, tuple or dict is no module, so `nn.Module.__setattr__` registers
nothing and the modules it holds are no submodules. Under `zero.Init` each was partitioned when its own `__init__`
returned; the engine installs its gather hooks on the model's module tree only, so nothing ever gathers them, and
calling one computes with empty placeholders. A container whose items are also registered (`self.order =
[self.enc, self.dec]`), rebound to a module container (`self.layers = nn.ModuleList(self.layers)`), or holding what
the constructor was handed (a module of the caller, maybe registered elsewhere) is left out, and so are modules that
gather nothing (no parameters, a norm, a small layer: `persistence.member_gathers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Kind, Member, classify, facts_of
from ..program.tree import access_path, call_name, cst
from ..program.trigger import Trigger
from .flow import Flat, bound_names, flat_of, loop_items
from .persistence import member_gathers

__all__ = ["Unregistered", "hidden_modules", "stashed_modules", "stashed_runs", "unregistered_runs"]

# A plain container set on `self`, or filled there: the text without which nothing is kept out of the tree.
_TRIGGER = Trigger("= [", "= (", "= {", ".append(", ".extend(", "] =")


@dataclass(frozen=True, slots=True)
class Unregistered:
    """A call in a method of `cls` that runs a module kept out of its module tree: in the plain container
    `self.<attr>` (a forward's call), or in the instance dictionary under `attr` (any method's)."""

    cls: ClassInfo
    method: MethodInfo
    node: cst.Call
    attr: str

    @property
    def snippet(self):
        return self.method.snippet


@memoised
def hidden_modules(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes of `self` that the constructor sets to a plain list, tuple or dict of modules it builds there (or
    fills with them) and never registers: their modules are in no module tree."""
    members = facts_of(cls).members
    forward = "".join(m.text for m in cls.forward_methods)
    init = "".join(m.text for m in cls.init_methods)
    if not any(
        member.call is None and f"self.{name}" in forward and _kept_plainly(init, f"self.{name}")
        for name, member in members.items()
    ):
        return frozenset()  # (the text of no member set to a plain container and read by the forward)
    built: dict[str, bool] = {}  # attribute -> every item seen is a module built here that gathers
    filled: set[str] = set()  # ... and some item was put in it
    rebound: set[str] = set()
    escaped: set[str] = set()
    for method in cls.init_methods:
        flat = flat_of(method)
        if flat is None:
            continue
        local: dict[str, Member] = {}  # locals bound to a module built here
        for node, _ctx in flat.nodes:
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name):
                    item = _built(index, cls, node.value, local)
                    if item is not None:
                        local[target.value] = item
                    else:
                        local.pop(target.value, None)
                    continue
                attr = _self_attribute(target)
                if attr is not None:
                    items = _literal_items(node.value)
                    if items is None:
                        rebound.add(attr)  # `self.layers = nn.ModuleList(self.layers)`, or any other value
                    else:
                        _add(built, filled, attr, [_gathers(index, cls, v, local) for v in items])
                elif isinstance(target, cst.Subscript):
                    attr = _self_attribute(target.value)
                    if attr is not None and attr in built:  # `self.aux["net"] = nn.Linear(d, d)`
                        _add(built, filled, attr, [_gathers(index, cls, node.value, local)])
            elif isinstance(node, cst.Attribute) and _escapes(flat, node):
                escaped.add(node.attr.value)  # `nn.ModuleList(self.blocks_list)`: the items may be registered there
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                attr = _self_attribute(node.func.value)
                if attr is None or attr not in built or node.func.attr.value not in ("append", "extend", "insert"):
                    continue
                values = [a.value for a in node.args[-1:]]
                if node.func.attr.value == "extend":
                    values = (_literal_items(values[0]) if values else None) or []
                    if not values:
                        built[attr] = False  # `self.layers.extend(make_layers(d))`: items it does not show
                _add(built, filled, attr, [_gathers(index, cls, v, local) for v in values])
    return frozenset(
        attr for attr, ok in built.items()
        if ok and attr in filled and attr not in rebound and attr not in escaped
        and (members.get(attr) is None or members[attr].call is None)  # (not built by a module container's call)
    )


def _escapes(flat: Flat, node: cst.Attribute) -> bool:
    """Is `node`, an attribute of `self`, handed whole to a call (`nn.ModuleList(self.x)`, `nn.Sequential(
    *self.x)`, `enumerate(self.x)`) or bound to another name (`self.y = self.x`)?"""
    if _self_attribute(node) is None:
        return False
    parent = flat.parent.get(id(node))
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        parent = flat.parent.get(id(parent))  # `[*self.x]`, `(self.x,)`
        return isinstance(parent, (cst.List, cst.Tuple))
    return isinstance(parent, cst.Arg) or isinstance(parent, cst.Assign) and parent.value is node


def _kept_plainly(init: str, attr: str) -> bool:
    """Text pre-filter: does the constructor set `attr` to a literal container or add items to it?"""
    return any(f"{attr}{tail}" in init for tail in (" = [", " = (", " = {", ".append(", ".extend(", "[")) and (
        _TRIGGER.search(init)
    )


def _add(built: dict[str, bool], filled: set[str], attr: str, gathering: list[bool]) -> None:
    """Record items put in `self.<attr>`: it stays a candidate while every item is a module built here that gathers."""
    built[attr] = built.get(attr, True) and all(gathering)
    if gathering:
        filled.add(attr)


def _self_attribute(expr: cst.BaseExpression) -> str | None:
    path = access_path(expr)
    return path.parts[0] if path is not None and path.root == "self" and len(path.parts) == 1 else None


def _literal_items(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The items of a list, tuple or dict literal (or the element of a comprehension); None for anything else."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return [e.value for e in value.elements if isinstance(e, cst.Element)]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return [value.elt]
    if isinstance(value, cst.DictComp):
        return [value.value]
    return None


def _built(index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression, local: dict[str, Member]) -> Member | None:
    """The module `value` builds here (a constructor or factory call), or the one a local names."""
    if isinstance(value, cst.Name):
        return local.get(value.value)
    if not isinstance(value, cst.Call):
        return None
    kind, classes = classify(index, value, resolve=True, cls=cls)
    if kind != Kind.MODULE or not classes:
        return None
    return Member("", Kind.MODULE, classes, (0, 0), call=value)


def _gathers(index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression, local: dict[str, Member]) -> bool:
    """Is `value` a module built here whose call would gather parameters (not `self.enc`, not an argument)?"""
    item = _built(index, cls, value, local)
    return item is not None and member_gathers(index, item)


@memoised
def unregistered_runs(index: ModelIndex) -> tuple[Unregistered, ...]:
    """Calls in the forward of a module class that run a module of one of its `hidden_modules`: `self.nets[0](x)`,
    `for layer in self.layers: layer(x)`, `vgg, = self.vgg` ... `map(vgg, xs)`."""
    found: list[Unregistered] = []
    for cls in index.module_classes():
        hidden = hidden_modules(index, cls)
        if not hidden:
            continue
        for method in cls.forward_methods:
            if not any(f"self.{attr}" in method.text for attr in hidden):
                continue
            flat = flat_of(method)
            if flat is not None:
                found += [Unregistered(cls, method, call, attr) for call, attr in _runs(flat, hidden)]
    return tuple(found)


def _runs(flat: Flat, hidden: frozenset[str]) -> list[tuple[cst.Call, str]]:
    items: dict[str, str] = {}  # locals bound to an item of a hidden container -> the container
    found: list[tuple[cst.Call, str]] = []
    for node, _ctx in flat.nodes:
        if isinstance(node, (cst.For, cst.CompFor)):
            for part, source in loop_items(node.target, node.iter):
                attr = _container(source, hidden)
                if attr is not None and isinstance(part, cst.Name):
                    items[part.value] = attr
        elif isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            # `net = self.nets[0]`, `vgg, = self.vgg`: an item (a name bound to the whole container is not one)
            attr = _container(node.value, hidden) if isinstance(node.value, cst.Subscript) or not isinstance(
                target, cst.Name) else None
            if attr is None and isinstance(node.value, cst.Call) and isinstance(node.value.func, cst.Attribute):
                receiver = node.value.func.value  # `vgg = vgg.to(device)`: the same module
                attr = items.get(receiver.value) if isinstance(receiver, cst.Name) else None
            for name in bound_names(target):
                if attr is not None:
                    items[name] = attr
                else:
                    items.pop(name, None)
        elif isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
                func = func.value
            attr = _container(func, hidden) if isinstance(func, cst.Subscript) else None
            if attr is None and isinstance(func, cst.Name):
                attr = items.get(func.value)
            if attr is None and isinstance(func, cst.Name) and func.value == "map" and node.args:
                first = node.args[0].value
                attr = items.get(first.value) if isinstance(first, cst.Name) else None
            if attr is not None:
                found.append((node, attr))
    return found


def _container(expr: cst.BaseExpression, hidden: frozenset[str]) -> str | None:
    """The hidden container `expr` takes items of: `self.nets[0]`, `self.vgg` (unpacked, or walked by a loop),
    `self.aux.values()` walked."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "values":
        expr = expr.func.value
    attr = _self_attribute(expr)
    return attr if attr in hidden else None


# --- modules stashed in the instance dictionary ------------------------------------------------------------------
#
# `self.__dict__["t5"] = t5` and `object.__setattr__(self, "t5", t5)` bypass `nn.Module.__setattr__` on purpose (to
# keep a frozen encoder out of the state dict and `parameters()`): the module is no submodule. Under `zero.Init` it
# was partitioned when it was built (or loaded), the engine installs no hook on it, so every run of it, in whatever
# method, computes with placeholders.

# The text without which a constructor stashes nothing.
_STASH_TRIGGER = Trigger("__dict__[", "__setattr__(self", pattern=r"__dict__\[|object\.__setattr__\(\s*self\s*,")
# Calls that hand back the module they are called on (`t5.to(device)`, `model.eval()`).
_SAME_MODULE = frozenset({"to", "eval", "train", "cuda", "cpu", "half", "float", "bfloat16", "requires_grad_"})
# Loaders and factories whose result is a model (`T5EncoderModel.from_pretrained(name)`, `pretrained.get_model(n)`).
_LOADERS = ("from_pretrained", "get_model", "load_model", "build_model", "create_model")
# Classes by what they are named after: a tokenizer or a processor stashed beside the model is no module.
_NOT_A_MODULE_CLASS = ("Tokenizer", "Processor", "FeatureExtractor", "Config")
# Methods of a stashed module that run nothing of it (moving it, reading its settings or its parameters' list).
_NOT_RUNS = _SAME_MODULE | {"parameters", "named_parameters", "state_dict", "modules", "children", "zero_grad"}


@memoised
def stashed_modules(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes of `self` that the constructor of module class `cls` sets to a module it builds or loads through
    the instance dictionary (`self.__dict__["t5"] = t5.to(device)`), never registering it."""
    if not any(_STASH_TRIGGER.search(m.text) for m in cls.init_methods):
        return frozenset()
    found: set[str] = set()
    for method in cls.init_methods:
        flat = flat_of(method)
        if flat is None:
            continue
        local: dict[str, bool] = {}  # locals bound to a module built or loaded here
        for node, _ctx in flat.nodes:
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name):
                    local[target.value] = _model_value(index, cls, node.value, local)
                    continue
                attr = _stash_key(target)
                if attr is not None and _model_value(index, cls, node.value, local):
                    found.add(attr)
            elif isinstance(node, cst.Call) and (call_name(node) or "") == "object.__setattr__" and len(node.args) == 3:
                first, key, value = (a.value for a in node.args)
                name = key.evaluated_value if isinstance(key, cst.SimpleString) else None
                if isinstance(first, cst.Name) and first.value == "self" and isinstance(name, str):
                    if _model_value(index, cls, value, local):
                        found.add(name)
    return frozenset(found)


def _stash_key(target: cst.BaseExpression) -> str | None:
    """`self.__dict__["t5"]`: the attribute name a write into the instance dictionary sets."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return None
    holder = access_path(target.value)
    key = target.slice[0].slice
    if holder is None or holder.root != "self" or holder.parts != ("__dict__",) or not isinstance(key, cst.Index):
        return None
    value = key.value.evaluated_value if isinstance(key.value, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _model_value(index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression, local: dict[str, bool]) -> bool:
    """Is `value` a module built or loaded here: a constructor or factory the members read as one, a loader
    (`X.from_pretrained(name)`), a local bound to one, or one of those moved (`t5.to(device)`)?"""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _SAME_MODULE:
        value = value.func.value
    if isinstance(value, cst.Name):
        return local.get(value.value, False)
    if not isinstance(value, cst.Call):
        return False
    name = call_name(value) or ""
    if any(word in name for word in _NOT_A_MODULE_CLASS):
        return False
    if name.rsplit(".", 1)[-1] in _LOADERS:
        return True
    kind, classes = classify(index, value, resolve=True, cls=cls)
    return kind == Kind.MODULE and bool(classes)


@memoised
def stashed_runs(index: ModelIndex) -> tuple[Unregistered, ...]:
    """Runs, in any method of a module class, of a module its constructor stashed in the instance dictionary: a call
    of it (`self.t5(**inputs)`), of one of its methods (`self.clap.get_text_embedding(t)`), or the module handed to
    a function that runs it (`apply_model(self.demucs, wav)`)."""
    found: list[Unregistered] = []
    for cls in index.module_classes():
        stashed = stashed_modules(index, cls)
        if not stashed:
            continue
        for method in cls.later_methods:
            if not any(f"self.{attr}" in method.text for attr in stashed):
                continue
            flat = flat_of(method)
            for node, _ctx in flat.nodes if flat is not None else ():
                if type(node) is cst.Call and (attr := _stash_run(node, stashed)) is not None:
                    found.append(Unregistered(cls, method, node, attr))
    return tuple(found)


def _stash_run(call: cst.Call, stashed: frozenset[str]) -> str | None:
    func = call.func
    attr = _self_attribute(func)
    if attr in stashed:
        return attr  # `self.t5(**inputs)`
    if isinstance(func, cst.Attribute) and func.attr.value not in _NOT_RUNS:
        attr = _self_attribute(func.value)
        if attr in stashed:
            return attr  # `self.clap.get_text_embedding(text)`
    name = call_name(call) or ""
    if name in ("isinstance", "getattr", "hasattr", "len", "type", "id", "print", "setattr"):
        return None
    for arg in call.args:
        attr = _self_attribute(arg.value) if arg.keyword is None else None
        if attr in stashed:
            return attr  # `apply_model(self.demucs, wav)`
    return None

