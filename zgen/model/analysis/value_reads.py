"""Does a parameter access read the parameter's values, not only its size, dtype or identity?

ZG109 reports such reads where nothing gathers the parameter; ZG303 reports those in a method run on the built
model outside forward as the hook bypass they are too. A read of the values is an operation on the parameter
(`.data`, `[...]`, `.float()`), the bare parameter computed with (an operand, an argument, a local bound to it and
computed with later) or, in `__init__`, handed to a torch tensor function.
"""

from __future__ import annotations

from ..program import known
from ..program.index import ModelIndex
from ..program.members import Kind, Member, facts, has_params
from ..program.tree import call_name, cst
from .access import ParamAccess, Reach, Scope
from .flow import flat_of

__all__ = ["reads_values"]


def reads_values(index: ModelIndex, access: ParamAccess) -> bool:
    """A read of one parameter's values (handed helpers' reads are judged where they are found): an operation on
    it (`.data`, `[...]`, `.float()`), or the bare parameter computed with (in `__init__`: handed to a torch
    tensor function). The items of a walk of `self.parameters()` count in a method run on the built model when
    computed with (a penalty, a norm); in forward the walk is ZG301's."""
    if access.scope is Scope.HANDED:
        return True
    if access.scope is Scope.SCRIPT:
        # a training script after the engine partitioned the model: an operation on a parameter it walks or names
        # (`p.data.norm()`, `ema_p.add_(p.data)`, `p.grad.norm()`) reads what the rank holds, a placeholder
        return bool(access.op) or bool(access.detail)
    if access.via.reach is Reach.PASSED:
        return access.scope is Scope.ENTRY  # a helper reading the values of the child it is handed on the built model
    if access.via_parameters:
        # `torch.cat([p.data.view(-1) for p in self.actor.parameters()])`, `sum((p ** 2).sum() for p in
        # self.parameters())` on the built model: the values; a bare item handed on or its gradient (ZG107's) is not
        # (in `__init__`, a walk reaching a child built before it, `sum(p.data.sum() for p in
        # self.nets.parameters())`: zero.Init partitioned that child when its own `__init__` returned)
        if access.op.startswith(".grad") or access.scope is not Scope.ENTRY and not (
                access.scope is Scope.INIT and _walks_built_child(index, access)
                and not _source_of_write(access.method, access.node)):
            return False
        return bool(access.op) or _operand(access.method, access.node)
    if access.detail:
        return True
    if access.scope is Scope.INIT:
        return _tensor_function_arg(index, access.method, access.node)
    return _computed_with(access.method, access.node)


def _walks_built_child(index: ModelIndex, access: ParamAccess) -> bool:
    """Does the walk `access` reads an item of, in `__init__` or a helper it calls, reach a child with parameters
    built before the read: `self.nets.parameters()` of a member, or `self.parameters()` after one was built? The
    module's own parameters alone are whole until its `__init__` returns."""
    cls, method = access.cls, access.method
    if cls is None or method is None or not access.via.name.startswith("self."):
        return False
    rank = next((i for i, m in enumerate(cls.init_methods) if m is method), None)
    if rank is None:
        return False
    members = facts(index, cls).members
    child = access.via.name.split(".")[1]
    if child in members:
        return _may_hold_parameters(index, members[child])
    return any(m.order < (rank, access.order) and _may_hold_parameters(index, m) for m in members.values())


def _may_hold_parameters(index: ModelIndex, member: Member) -> bool:
    """A child module of a class that may own parameters, or a container of modules of no class we read
    (`Sequential(*convnet.children())`): walking its parameters yields them."""
    if member.kind == Kind.CONTAINER and not member.classes:
        return True
    return member.kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in member.classes)


def _tensor_function_arg(index: ModelIndex, method, node: cst.CSTNode) -> bool:
    """Is the bare parameter an argument of a torch tensor function (`torch.std_mean(w)`), which reads its
    values? Handing it to a constructor or a module (tying it) does not."""
    flat = flat_of(method)
    parent = flat.parent.get(id(node)) if flat is not None else None
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    if not name:
        return False
    qualified = index.qualify(name)
    last = qualified.rsplit(".", 1)[-1]
    tying = qualified.startswith("torch.nn.") and not qualified.startswith("torch.nn.functional.")
    return qualified.startswith("torch.") and not tying and last[:1].islower()


def _computed_with(method, node: cst.CSTNode) -> bool:
    """Is the bare parameter an operand or an argument of a computation, directly or through the local
    it is bound to (`kernel = branch.conv.weight` ... `kernel * t`)?"""
    flat = flat_of(method)
    parent = flat.parent.get(id(node)) if flat is not None else None
    if _computing(parent):
        return True
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or flat is None:
        return False
    target = parent.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    after = flat.position.get(id(parent), 0)
    block = _block(flat, parent)
    for other, _ctx in flat.nodes[after + 1 :]:
        if type(other) is cst.Name and other.value == target.value:
            holder = flat.parent.get(id(other))
            if isinstance(holder, cst.AssignTarget):
                if holder is parent.targets[0]:
                    continue  # this very assignment
                if _block(flat, holder) is block:
                    return False  # surely rebound before any computation (not in another branch)
                continue
            if _computing(holder) or _tensor_method(flat, holder, other):
                return True
    return False


def _tensor_method(flat, holder: cst.CSTNode | None, name: cst.Name) -> bool:
    """`w.transpose(0, 1)`, `w.t()` of the local bound to the parameter: a method computing with its values (not
    its size, dtype or device)."""
    if not isinstance(holder, cst.Attribute) or holder.value is not name:
        return False
    attr = holder.attr.value
    if attr in known.METADATA_ATTRS or attr in known.SIZE_ATTRS or attr in known.SIZE_METHODS or attr.startswith("_"):
        return False
    call = flat.parent.get(id(holder))
    return isinstance(call, cst.Call) and call.func is holder


def _source_of_write(method, node: cst.CSTNode) -> bool:
    """Is `node` read as what an in-place method or initialiser writes elsewhere (`k.data.copy_(q.data)`)? The
    write is reported (ZG101, ZG103) on the line."""
    flat = flat_of(method)
    current = flat.parent.get(id(node)) if flat is not None else None
    while current is not None and not isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        if isinstance(current, cst.Arg):
            call = flat.parent.get(id(current))
            name = call_name(call) if isinstance(call, cst.Call) else None
            if name and name.endswith("_") and not name.endswith("__"):
                return True
        current = flat.parent.get(id(current))
    return False


def _operand(method, node: cst.CSTNode) -> bool:
    """Is the bare item of a parameter walk computed with: an operand (`p ** 2`), or an argument of a torch
    function (`torch.norm(p)`)? Not an item kept in a list (`wd.append(p)`) or grouped for an optimizer."""
    flat = flat_of(method)
    parent = flat.parent.get(id(node)) if flat is not None else None
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    return name is not None and name.split(".", 1)[0] in _TORCH_NAMESPACES


_TORCH_NAMESPACES = frozenset({"torch", "F", "functional"})


def _computing(node: cst.CSTNode | None) -> bool:
    """Is `node` an operand, an argument or a list element: a place where a value is computed with?"""
    return isinstance(node, (cst.Arg, cst.Element, cst.BinaryOperation, cst.UnaryOperation))


def _block(flat, node: cst.CSTNode) -> cst.CSTNode | None:
    """The block of statements holding `node`."""
    current = flat.parent.get(id(node))
    while current is not None and not isinstance(current, (cst.IndentedBlock, cst.Module)):
        current = flat.parent.get(id(current))
    return current
