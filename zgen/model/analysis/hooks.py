"""What a hook a class registers on a module keeps of the module's run: its input or output, this rank's data.

`register_forward_hook(self.keep)` (or the function a method of the class makes and returns,
`register_forward_hook(self.store_wrapper())`) hands the hook the hooked module's input and output on every call.
What the hook keeps on the object (`self.last = out`, `self.acts["x"] = out.detach()`, or an item of a dict the
method making the hook bound from `self`: `gg = self.gg` ... `gg["act"] = output`) is the output of this rank's
forward, so a decision of another method on it (`while abs(self.gg["act"].std() - 1) > tol: model(data)`, an
initialisation that runs the model until the activations are scaled) differs per rank like the output itself.
"""

from __future__ import annotations

from ..program.index import ClassInfo, ModelIndex, memoised
from ..program.tree import code_of, cst, walk
from .flow import bound_names, flat_of, targets_of

__all__ = ["hook_kept"]

# torch's registrations of a hook on a module: the hook is called with (module, input[, output]).
_REGISTRATIONS = frozenset(
    {
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_backward_hook",
        "register_full_backward_pre_hook",
    }
)


@memoised
def hook_kept(index: ModelIndex, cls: ClassInfo) -> dict[str, str]:
    """What the hooks `cls` registers keep of a module's run, by attribute (`last`) or attribute item (`acts['x']`,
    the key as its source text), with the write as text."""
    if "register_" not in cls.text or "hook" not in cls.text:
        return {}
    found: dict[str, str] = {}
    for method in cls.all_methods():
        if "register_" not in method.text:
            continue
        flat = flat_of(method)
        for node, _ctx in flat.nodes if flat is not None else ():
            if not (
                type(node) is cst.Call and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in _REGISTRATIONS and node.args
            ):
                continue
            hook = node.args[0].value
            if _on_self(hook):  # `register_forward_hook(self.keep)`
                target = cls.method(hook.attr.value)
                if target is not None and target.node is not None:
                    _kept(target.node, {}, 2, found)
            elif isinstance(hook, cst.Call) and not hook.args and _on_self(hook.func):  # `self.store_wrapper()`
                maker = cls.method(hook.func.attr.value)
                if maker is not None and maker.node is not None:
                    aliases = _aliases(maker.node)
                    for inner in walk(maker.node.body):
                        if isinstance(inner, cst.FunctionDef):
                            _kept(inner, aliases, 1, found)
    return found


def _on_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


def _aliases(func: cst.FunctionDef) -> dict[str, str]:
    """Locals bound to an attribute of `self` (`gg = self.gg`): writes into them write into the attribute."""
    found = {}
    for node in walk(func.body):
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if _on_self(node.value):
                found[node.targets[0].target.value] = node.value.attr.value
    return found


def _kept(func: cst.FunctionDef, aliases: dict[str, str], skip: int, found: dict[str, str]) -> None:
    """Record what `func`, a hook, keeps of the values it is handed (its parameters after the first `skip`: `self`
    and the module) on `self` or on an aliased attribute of it."""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)][skip:]
    derived = set(params)
    if not derived:
        return
    for node in walk(func.body):
        targets, value = targets_of(node)
        if value is None or not any(type(n) is cst.Name and n.value in derived for n in walk(value)):
            continue
        for target in targets:
            derived.update(bound_names(target))
            key = _kept_key(target, aliases)
            if key is not None:
                found.setdefault(key, code_of(node))


def _kept_key(target: cst.BaseExpression, aliases: dict[str, str]) -> str | None:
    """`self.last` -> `last`; `self.acts["x"]`, `gg["x"]` for `gg = self.acts` -> `acts["x"]` (the item's key as
    `item_key` writes it)."""
    if _on_self(target):
        return target.attr.value
    if isinstance(target, cst.Subscript) and (key := item_key(target)) is not None:
        base = target.value
        if _on_self(base):
            return f"{base.attr.value}[{key}]"
        if isinstance(base, cst.Name) and base.value in aliases:
            return f"{aliases[base.value]}[{key}]"
    return None


def item_key(node: cst.Subscript) -> str | None:
    """The constant key of `x["act"]` / `x[KEY]` as text (a string by its value), else None."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.SimpleString):
        return repr(value.evaluated_value)
    if isinstance(value, (cst.Name, cst.Attribute, cst.Integer)):
        return code_of(value)
    return None
