"""Models a function constructs and then loads a state dict into, or deep-copies.

`built_then_loaded(index)` finds, in any function or method of the file,
`model = Net(...)` / `model = cls(...)` (a classmethod of a module class) /
`encoder = EncoderClass(...)` followed by `model.load_state_dict(sd)` (or through a function handing the model
back, `unwrap(model).load_state_dict(sd)`): the
pattern of every `from_pretrained` and `load(path)`. Under
`deepspeed.zero.Init`, which such loaders run in, the model is partitioned as
soon as its constructor returns, so the load copies into empty placeholders.
`built_then_copied(index)` finds `copy.deepcopy(model)` of such a model (`model, _ = configure_model(cfg)` ...
`model_to_save = deepcopy(model)`): the copy duplicates the placeholders; so does a library's weight average built
over such a model or its parameters (`ema = ExponentialMovingAverage(model.parameters(), decay=d)`, `EMA(model)`,
`known.AVERAGERS`), which clones them as its shadow.
What counts as a constructed model is `holds.constructed_models`'.
"""

from __future__ import annotations

from ..program import known
from ..program.holds import averager, constructed_models
from ..program.index import MethodInfo, ModelIndex, memoised
from ..program.tree import cst
from .flow import flat_of
from .effects import returns_argument

__all__ = ["built_then_loaded", "built_then_copied"]


@memoised
def built_then_loaded(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `load_state_dict` call, the local) for each load into a model the same function built."""
    return _built_then(index, (".load_state_dict(",), _loaded)


@memoised
def built_then_copied(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `copy.deepcopy` call or the weight average's construction, the local) for each copy of a model
    the same function built (`model, _ = configure_model(cfg)` ... `deepcopy(model)`, `EMA(model)`): the copy takes
    its placeholders."""
    return _built_then(index, _COPY_TEXTS, _copied, constructors=False)  # (`__init__`'s: `built.py`, ZG105)


# Text one of whose items a function copying a model contains: `deepcopy(` or a weight average's class.
_COPY_TEXTS = ("deepcopy(", *sorted({name.rsplit(".", 1)[-1] + "(" for name in known.AVERAGERS}))


def _loaded(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The model `node` loads a state into (`model.load_state_dict(sd)`)."""
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "load_state_dict":
        return node.func.value
    return None


def _copied(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The value `node` deep-copies (`copy.deepcopy(model)`), or the model whose parameters a library's weight
    average built over it clones (`EMA(model)`, `ExponentialMovingAverage(model.parameters())`)."""
    if not node.args or node.args[0].keyword is not None:
        return None
    qualified = index.qualified_call(node)
    if qualified in known.DEEP_COPY:
        return node.args[0].value
    if averager(index, qualified or ""):
        value = node.args[0].value
        if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "parameters":
            return value.func.value  # `model.parameters()`: the model's own parameters
        return value
    return None


def _built_then(
    index: ModelIndex, texts: tuple[str, ...], used, constructors: bool = True
) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the call, the local) for each call `used` says takes a model the same function built before it;
    only functions whose text holds one of `texts` are read."""
    found: list[tuple[MethodInfo, cst.Call, str]] = []
    if not any(text in index.source for text in texts):
        return found
    functions = [(index.function_info(name), None) for name in index.skeleton.functions]
    for cls in index.classes.values():
        functions += [(m, cls) for m in cls.all_methods() if m.owner is cls]
    for method, owner in functions:
        if method is None or not any(text in method.text for text in texts) or method.node is None:
            continue
        if not constructors and owner is not None and any(m is method for m in owner.init_methods):
            continue
        built = constructed_models(index, method.node, owner)
        flat = flat_of(method) if built else None
        if flat is None:
            continue
        first = {name: flat.position.get(id(call), 0) for name, call in built.items()}
        for node, ctx in flat.nodes:
            if type(node) is not cst.Call or ctx.guarded:
                continue
            target = used(index, node)
            if target is None:
                continue
            while isinstance(target, cst.Call) and returns_argument(index, flat, target):
                target = target.args[0].value  # `unwrap(model).load_state_dict(sd)`: the model handed back
            if not isinstance(target, cst.Name):
                continue
            if target.value in first and first[target.value] < flat.position[id(node)]:
                found.append((method, node, target.value))
    return found
