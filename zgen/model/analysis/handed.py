"""Parameters of a built model handed to code outside the model classes.

A training loop hands a built model, or its parameters, to helpers that are
not modules themselves: an EMA object's `copy_to(model.parameters())`, a
trainer holding `self.model`, a function `convert_to_fp16(model)`. Under
ZeRO-3 the model is partitioned by then, and nothing gathers its
parameters in those helpers: no module's forward runs, and
`nn.Module.apply` gathers only inside `zero.Init`.

`handed_accesses` finds, in module-level functions and in methods of
classes that are not modules, every use of such a parameter:

* parameters from an argument that is a parameter iterable (annotated with
  `Parameter`, as in `Iterable[torch.nn.Parameter]`, or named `parameters`);
* parameters from `X.parameters()` / `X.named_parameters()` of a model
  argument (annotated as a module or model, or named `model` / `ema_model`),
  or of `self.X` that `__init__` set from such an argument (a trainer);
* `X.apply(fn)` on such a model, where `fn` writes its module's parameters.

Initialisers by name, (de)serialisation and gather helpers are left out, as
for a module's entry methods; uses inside `GatheredParameters` (or under a
ZeRO-3 test) are not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..program.index import ModelIndex, entry_name, memoised
from ..program.skeleton import FunctionSpan
from ..program.tree import Snippet, access_path, call_name, cst, dotted
from .access import CHECK, INIT, READ, SIZE, WRITE
from .effects import usage, writes_module_params
from .flow import Flat, bound_names, flatten, loop_items, same_items
from .script import WRAP_TRIGGER

__all__ = ["Handed", "handed_accesses"]

# Text without which a function cannot reach a handed model's parameters.
_TRIGGER = re.compile(r"\.(?:named_)?parameters\(|Parameter\b|\.apply\(|\bparameters\s*[:,)=]")
_MODEL_NAME = re.compile(r"^(?:\w+_)?model$")
_PARAMS_NAME = re.compile(r"^(?:\w+_)?parameters$")
_MODEL_TYPE = re.compile(r"\bModule\b|Model\b")
_NOT_AN_INSTANCE = re.compile(r"Config|Type|Callable|type\[")  # a class, a config or a factory, not a model
_OWNS_STORAGE = re.compile(r"(?:Parameter|Tensor|Optimizer)$")


@dataclass(frozen=True, slots=True)
class Handed:
    """One use of a handed model's parameter: where, how, and in which function."""

    snippet: Snippet
    node: cst.CSTNode
    use: str  # READ, SIZE, WRITE or INIT
    detail: str
    function: str  # the function or method it is in
    source: str  # what the parameters came from, as written (`parameters`, `self.model.parameters()`)


@memoised
def handed_accesses(index: ModelIndex) -> list[Handed]:
    """Every unguarded use of a handed model's parameters in the file (computed once per file)."""
    return list(_find(index))


def _find(index: ModelIndex) -> Iterator[Handed]:
    spans: list[tuple[FunctionSpan, frozenset[str]]] = [(s, frozenset()) for s in index.skeleton.functions.values()]
    for cls in index.classes.values():
        if cls.is_module or any(_OWNS_STORAGE.search(base) for base in cls.span.bases):
            continue  # a parameter or tensor subclass, an optimizer: handed the storage itself by design
        text = cls.text
        holders = _holders(index, cls) if ".parameters()" in text or "named_parameters(" in text else frozenset()
        spans.extend((span, holders) for span in cls.span.methods.values())
    for span, holders in spans:
        if span.name != "__init__" and not entry_name(span.name):
            continue
        text = index.skeleton.text(span.start, span.end)
        if not _TRIGGER.search(text) or WRAP_TRIGGER.search(text):
            continue  # a function that partitions the model itself: the script rules know what runs before
        snippet = index.parse(span)
        node = snippet.node if snippet is not None else None
        if not isinstance(node, cst.FunctionDef):
            continue
        models, iterables = _seeds(node)
        models |= {f"self.{h}" for h in holders}
        if models or iterables:
            yield from _uses(index, snippet, node, flatten(node), models, iterables)


def _seeds(node: cst.FunctionDef) -> tuple[set[str], set[str]]:
    """Arguments holding a built model, and arguments that are parameter iterables."""
    models: set[str] = set()
    iterables: set[str] = set()
    for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
        name = param.name.value
        note = _annotation(param)
        if "Parameter" in note or (not note and _PARAMS_NAME.match(name)):
            iterables.add(name)
        elif _MODEL_NAME.match(name) or (_MODEL_TYPE.search(note) and not _NOT_AN_INSTANCE.search(note)):
            if name not in ("self", "cls"):
                models.add(name)
    return models, iterables


def _annotation(param: cst.Param) -> str:
    if param.annotation is None:
        return ""
    return cst.Module([]).code_for_node(param.annotation.annotation)


def _holders(index: ModelIndex, cls) -> frozenset[str]:
    """Attributes `__init__` of a non-module class sets from a model argument (`self.model = model`)."""
    span = cls.span.methods.get("__init__")
    snippet = index.parse(span) if span is not None else None
    node = snippet.node if snippet is not None else None
    if not isinstance(node, cst.FunctionDef):
        return frozenset()
    models, _ = _seeds(node)
    found = set()
    for stmt in node.body.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value in models:
                for target in small.targets:
                    path = access_path(target.target)
                    if path is not None and path.root == "self" and len(path.parts) == 1:
                        found.add(path.parts[0])
    return frozenset(found)


def _uses(index, snippet, func, flat: Flat, models: set[str], iterables: set[str]) -> Iterator[Handed]:
    aliases: dict[str, str] = {}  # loop variable -> the parameters it walks

    def source_of(expr: cst.BaseExpression) -> str | None:
        """What `expr` iterates, when it yields the handed model's parameters."""
        expr = same_items(expr)
        if isinstance(expr, cst.Name) and expr.value in iterables:
            return expr.value
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in ("parameters", "named_parameters") and dotted(expr.func.value) in models:
                if not any(a.keyword is not None and a.keyword.value == "recurse" for a in expr.args):
                    return cst.Module([]).code_for_node(expr)
        return None

    for node, ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                for bound in bound_names(target.target):
                    aliases.pop(bound, None)  # `p = output_dir / name`: no longer a parameter
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                name = node.targets[0].target.value
                if source_of(node.value) is not None or _selects(node.value, source_of):
                    iterables.add(name)  # `parameters = list(parameters)`, `[p for p in ps if p.requires_grad]`
            continue
        if kind is cst.For or kind is cst.CompFor:
            _bind_loop(node.target, node.iter, source_of, aliases)
            continue
        if kind is cst.Call and not ctx.guarded and isinstance(node.func, cst.Attribute):
            if node.func.attr.value == "apply" and dotted(node.func.value) in models and node.args:
                fn = dotted(node.args[0].value)
                if fn and writes_module_params(index, flat, fn):
                    detail = f" runs `{fn}`, which writes each module's parameters,"
                    yield Handed(snippet, node, WRITE, detail, func.name.value, dotted(node.func.value) or "")
            continue
        if kind is not cst.Name or node.value not in aliases or ctx.guarded:
            continue
        parent = flat.parent.get(id(node))
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
            continue
        if isinstance(parent, (cst.Tuple, cst.Param, cst.AssignTarget)):
            continue
        use, detail = usage(index, flat, node)
        if use == READ:
            use, detail = _written_in_bulk(flat, node, detail)
        if detail.startswith(".grad") or use == CHECK:
            continue  # gradients are ZG107's concern; `is None` and isinstance only look at the object
        if use == READ and not detail and not _computed(index, flat, parent):
            continue  # bound, collected or handed on (`groups.append(p)`), not computed with
        if use in (READ, SIZE, WRITE, INIT):
            yield Handed(snippet, node, use, detail, func.name.value, aliases[node.value])


def _computed(index: ModelIndex, flat: Flat, parent: cst.CSTNode | None) -> bool:
    """An operand, or an argument of a torch function (`torch.allclose(p, q)`), not of a container method."""
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    return bool(name) and index.qualify(name).startswith("torch.") and ".utils." not in name


def _selects(value: cst.BaseExpression, source_of) -> bool:
    """`[p for p in parameters if ...]`: a list of the parameters themselves."""
    if not isinstance(value, cst.ListComp) or not isinstance(value.elt, cst.Name):
        return False
    comp = value.for_in
    return comp.inner_for_in is None and any(
        isinstance(part, cst.Name) and part.value == value.elt.value and source_of(items) is not None
        for part, items in loop_items(comp.target, comp.iter)
    )


def _written_in_bulk(flat: Flat, node: cst.CSTNode, detail: str) -> tuple[str, str]:
    """`torch._foreach_copy_([p.data for p in params], src)`: the listed tensors are the in-place call's target."""
    current = flat.parent.get(id(node))
    if isinstance(current, cst.Attribute) and current.value is node and current.attr.value == "data":
        node, current = current, flat.parent.get(id(current))
    if not isinstance(current, (cst.ListComp, cst.GeneratorExp)) or current.elt is not node:
        return READ, detail
    arg = flat.parent.get(id(current))
    call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    if name and call.args[0] is arg and re.match(r"^[a-z_]\w*[a-z0-9]_$", name.rsplit(".", 1)[-1]):
        return WRITE, f"{detail} (the target of `{name}()`)"
    return READ, detail


def _bind_loop(target, iterable, source_of, aliases: dict[str, str]) -> None:
    """`for p in parameters`, `for n, p in model.named_parameters()`, `for s, p in zip(shadow, parameters)`."""
    for bound in bound_names(target):
        aliases.pop(bound, None)  # the name now walks something else
    for part, items in loop_items(target, iterable):
        source = source_of(items)
        if source is not None and isinstance(part, cst.Name):
            aliases[part.value] = source
