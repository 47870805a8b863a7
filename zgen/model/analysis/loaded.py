"""Models a function constructs and then loads a state dict into.

`built_then_loaded(index)` finds, in any function or method of the file,
`model = Net(...)` / `model = cls(...)` (a classmethod of a module class) /
`encoder = EncoderClass(...)` followed by `model.load_state_dict(sd)` (or through a function handing the model
back, `unwrap(model).load_state_dict(sd)`): the
pattern of every `from_pretrained` and `load(path)`. Under
`deepspeed.zero.Init`, which such loaders run in, the model is partitioned as
soon as its constructor returns, so the load copies into empty placeholders.
What counts as a constructed model is `holds.constructed_models`'.
"""

from __future__ import annotations

from ..program.holds import constructed_models
from ..program.index import MethodInfo, ModelIndex, memoised
from ..program.tree import cst
from .flow import flat_of
from .effects import returns_argument

__all__ = ["built_then_loaded"]


@memoised
def built_then_loaded(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `load_state_dict` call, the local) for each load into a model the same function built."""
    found: list[tuple[MethodInfo, cst.Call, str]] = []
    if ".load_state_dict(" not in index.source:
        return found
    functions = [(index.function_info(name), None) for name in index.skeleton.functions]
    for cls in index.classes.values():
        functions += [(m, cls) for m in cls.all_methods() if m.owner is cls]
    for method, owner in functions:
        if method is None or ".load_state_dict(" not in method.text or method.node is None:
            continue
        built = constructed_models(index, method.node, owner)
        flat = flat_of(method) if built else None
        if flat is None:
            continue
        first = {name: flat.position.get(id(call), 0) for name, call in built.items()}
        for node, ctx in flat.nodes:
            if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                continue
            target = node.func.value
            if node.func.attr.value != "load_state_dict":
                continue
            while isinstance(target, cst.Call) and returns_argument(index, flat, target):
                target = target.args[0].value  # `unwrap(model).load_state_dict(sd)`: the model handed back
            if not isinstance(target, cst.Name):
                continue
            if target.value in first and first[target.value] < flat.position[id(node)]:
                found.append((method, node, target.value))
    return found
