"""Reads of a partitioned parameter's gradient: `p.grad.data.norm(2)`, `p.grad.clone()`, `torch.norm(p.grad)`.

Under ZeRO-3 the engine reduce-scatters each gradient into its own partitioned buffers and leaves `p.grad`
`None` on the module's parameters: code outside the engine that computes with `p.grad` (a logged gradient norm,
a gradient snapshot, a hand-written clip) fails on `None` or, behind an `if p.grad is not None` filter, silently
measures nothing. Only a read of the gradient's values counts: a test of its presence, the gradient reset
(`p.grad = None`, `p.grad.zero_()`), its metadata (`.shape`, `.dtype`, `.device`) and the gradient bound to a
name alone are not reads; the name's later uses are (`grads = p.grad.detach().data` ... `grads.norm(p=2)`).

Nor does the engine read what code writes there: `p.grad = delta` (a gradient computed by hand, an evolution
strategy's estimate), `p.grad += g`, `p.grad.copy_(g)`, `p.grad.mul_(s)` set a gradient its optimizer never
steps from, since it steps from its own buffers (`gradient_write`). Clearing it (`p.grad = None`,
`p.grad.zero_()`) is a reset the engine does itself, no write; but clearing the gradients of some parameters only,
chosen in the walk over them (`if "last_layer" in n: p.grad = None`, a freeze), means to keep those out of the
update, which the engine, stepping from its own buffers, never sees (`gradient_cancelled`).
"""

from __future__ import annotations

from ..program import known
from ..program.index import ModelIndex
from ..program.tree import call_name, code_of, cst, walk
from .flow import Ctx, Flat

__all__ = ["gradient_read", "gradient_write", "gradient_cancelled"]

# Steps that keep the gradient's values (`p.grad.data`, `p.grad.detach()`): the read is judged past them.
_PASS_THROUGH = frozenset({"data", "detach"})
# Methods of a tensor that answer about its storage or shape, not its values.
_NOT_VALUES = frozenset(
    {"size", "dim", "ndim", "ndimension", "numel", "nelement", "shape", "dtype", "device", "is_cuda", "is_sparse",
     "data_ptr", "stride", "is_contiguous", "element_size", "type", "layout", "storage_offset", "untyped_storage"}
)  # fmt: skip
# In-place methods of the gradient that clear it rather than set it.
_RESETS = frozenset({"zero_", "detach_", "requires_grad_"})


def gradient_read(index: ModelIndex, flat: Flat, grad: cst.Attribute) -> str | None:
    """How the code reads the values of the gradient `grad` (an `X.grad` attribute node), as text
    (`.grad.data.norm()`), or None when it only tests, resets, sizes or binds it."""
    return _read_from(index, flat, grad, ".grad", True)


def _read_from(index: ModelIndex, flat: Flat, node: cst.CSTNode, text: str, follow: bool) -> str | None:
    """How the code reads the values of the gradient `node` holds (the `.grad` attribute itself or, with `follow`
    false, a use of a local bound to it), as text; None when it only tests, resets, sizes or binds it."""
    while True:
        parent = flat.parent.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.value is node:
            attr = parent.attr.value
            if attr in _PASS_THROUGH:
                call = flat.parent.get(id(parent))
                node = call if isinstance(call, cst.Call) and call.func is parent else parent
                text += f".{attr}()" if node is not parent else f".{attr}"
                continue
            if attr in _NOT_VALUES or attr in known.METADATA_ATTRS or attr.endswith("_"):
                return None  # its metadata, or the gradient written in place (reset, scaled: not a read)
            call = flat.parent.get(id(parent))
            if isinstance(call, cst.Call) and call.func is parent:
                return f"{text}.{attr}()"
            return None
        if isinstance(parent, cst.Subscript) and parent.value is node:
            holder = flat.parent.get(id(parent))
            if isinstance(holder, cst.AssignTarget):
                return None
            return f"{text}[...]"
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            return text
        if isinstance(parent, cst.Arg):
            call = flat.parent.get(id(parent))
            name = call_name(call) if isinstance(call, cst.Call) else None
            if name and index.qualify(name).startswith("torch.") and ".utils." not in name:
                return text  # handed to a torch function (`torch.norm(p.grad)`; `torch.cat([...])` is a list, not this)
            return None
        if follow and isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1 \
                and isinstance(parent.targets[0].target, cst.Name):
            return _bound_read(index, flat, parent, text)  # `grads = p.grad.detach().data` ... `grads.norm(p=2)`
        return None


def _bound_read(index: ModelIndex, flat: Flat, binding: cst.Assign, text: str) -> str | None:
    """The first read of the values of a gradient bound to a local (`grads = p.grad.detach().data`), in the uses of the
    local after the binding, while no other binding of it comes between."""
    name = binding.targets[0].target.value  # type: ignore[attr-defined]
    start = flat.position.get(id(binding), 0)
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Name or node.value != name or flat.position.get(id(node), 0) <= start:
            continue
        parent = flat.parent.get(id(node))
        if parent is binding.targets[0]:
            continue  # (the binding's own target)
        if isinstance(parent, cst.AssignTarget):
            return None  # bound again: what follows reads another value
        found = _read_from(index, flat, node, "", False)
        if found is not None:
            return f"{text}; {name}{found}"  # (`p.grad.detach().data; grads.norm()`)
    return None


def gradient_write(flat: Flat, grad: cst.Attribute) -> str | None:
    """How the code sets the gradient `grad` (an `X.grad` attribute node) to values of its own, as text
    (`.grad = ...`, `.grad.data.copy_()`), or None when it reads, clears (`= None`, `.zero_()`) or sizes it."""
    node: cst.CSTNode = grad
    text = ".grad"
    parent = flat.parent.get(id(node))
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "data":
        node, text, parent = parent, ".grad.data", flat.parent.get(id(parent))
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        statement = flat.parent.get(id(parent))
        value = getattr(statement, "value", None)
        if value is None or isinstance(value, cst.Name) and value.value == "None":
            return None
        return f"{text} = ..."
    if isinstance(parent, cst.AugAssign) and parent.target is node:
        return f"{text} {code_of(parent.operator).strip()} ..."
    if isinstance(parent, cst.Attribute) and parent.value is node:
        call = flat.parent.get(id(parent))
        method = parent.attr.value
        if isinstance(call, cst.Call) and call.func is parent and method.endswith("_") and not method.startswith("_"):
            return None if method in _RESETS else f"{text}.{method}()"
    return None


def gradient_cancelled(flat: Flat, grad: cst.Attribute, ctx: Ctx) -> str | None:
    """`p.grad = None` under a test, inside the loop walking the parameters, that picks some of them by what they
    are (`if "prototypes" in name`), not by their gradient or flags (`if p.grad is not None`, `if p.requires_grad`:
    every gradient cleared, a `zero_grad` by hand): the chosen parameters' update cancelled, as text."""
    parent = flat.parent.get(id(grad))
    statement = flat.parent.get(id(parent)) if isinstance(parent, cst.AssignTarget) and parent.target is grad else None
    value = getattr(statement, "value", None)
    if not (isinstance(value, cst.Name) and value.value == "None") or not ctx.loops or not ctx.conds:
        return None
    if ctx.depths[-1] != len(ctx.loops):
        return None  # the test encloses the loop (`if epoch < freeze:`), it picks no parameter
    loop = ctx.loops[-1]
    target = getattr(loop, "target", None)
    bound = {n.value for n in walk(target) if isinstance(n, cst.Name)} if target is not None else set()
    test = ctx.conds[-1]
    if any(isinstance(n, cst.Attribute) and n.attr.value in ("grad", "requires_grad") for n in walk(test)):
        return None
    if not any(isinstance(n, cst.Name) and n.value in bound for n in walk(test)):
        return None
    return ".grad = None (for the parameters a test picks)"
