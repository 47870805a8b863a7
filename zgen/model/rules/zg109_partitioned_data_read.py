"""ZG109: the values of a partitioned parameter are read where no hook gathers them."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.access import READ, ParamAccess, Reach, Scope
from ..analysis.calls import handed_read
from ..analysis.flow import flat_of
from ..analysis.scopes import param_accesses
from ..program import known
from ..program.index import ModelIndex
from ..program.members import Kind, Member, facts, has_params
from ..program.tree import call_name, code_of, cst
from .rule import Report, Rule


class PartitionedDataRead(Rule):
    """The values of a partitioned parameter are read where no hook gathers them.

    ## What it does
    Flags reads of a parameter's values (`.data`, slicing, `.clone()`,
    `.float()`, arithmetic, passing it to a tensor function) in two places
    where ZeRO-3 has partitioned it and nothing gathers it: methods a
    training loop calls on the built model (neither `forward` nor `__init__`
    reaches them: `fuse_lora`, `crop_block_size`, `set_input_size`,
    re-parameterisation helpers, and what they share with initialisers;
    the module's own parameters count there too, also walked: `sum((p ** 2).sum() for p in
    self.parameters())` in a penalty the loop adds to the loss), and `__init__` after the owning submodule
    was built (or for a module passed in, built by the caller); and helpers
    a training loop hands the built model's parameters to (an EMA's
    `store(model.parameters())` cloning them). Reads inside
    `GatheredParameters`, of small parameters ZeRO-3 keeps gathered, and of
    only dtype, device or `requires_grad` are not flagged. Writes are ZG101
    and ZG103, size queries ZG102; reads inside `forward` are ZG301.

    ## Why is this bad under ZeRO-3?
    Outside a module's forward, ZeRO-3 holds only this rank's slice of each
    parameter and leaves an empty placeholder in its place. No hook fetches
    it on access there: the read returns an empty tensor, and whatever is
    computed from it (a fused kernel, a cropped embedding, statistics for an
    initialisation) is silently wrong or fails with a shape error.

    ## Example
    ```python
    def fuse(self):
        w = torch.cat([self.q.weight.data, self.k.weight.data])  # two empty placeholders
        self.qk = nn.Linear(self.dim, 2 * self.dim)
        self.qk.weight.data.copy_(w)
    ```

    ## Use instead
    ```python
    def fuse(self):
        with deepspeed.zero.GatheredParameters([self.q.weight, self.k.weight]):
            w = torch.cat([self.q.weight.data, self.k.weight.data])
        ...
    ```
    or do it before the model is partitioned (before `deepspeed.initialize`, outside `zero.Init`).
    """

    code = "ZG109"
    name = "partitioned-data-read"

    VALID = (
        # Gathered first; and only the dtype in another helper.
        """
import deepspeed
import torch
from torch import nn

class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x):
        return self.q(x) + self.k(x)

    def fused(self):
        with deepspeed.zero.GatheredParameters([self.q.weight, self.k.weight]):
            return torch.cat([self.q.weight.data, self.k.weight.data])

    def dtype(self):
        return self.q.weight.dtype
""",
        # Tying in __init__ binds the parameter object; no values are read.
        """
from torch import nn

class LM(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight
""",
    )
    INVALID = (
        # Snapshot of the parameters handed in, taken outside any gather.
        """
class Ema:
    def store(self, parameters):
        self.saved = [p.detach().cpu().clone() for p in parameters]
""",
        """
import torch
from torch import nn

class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x):
        return self.q(x) + self.k(x)

    def fuse(self):
        return torch.cat([self.q.weight.data, self.k.weight.data])
""",
        # Statistics of an embedding passed in, in __init__.
        """
from torch import nn

class Expanded(nn.Module):
    def __init__(self, orig, extra):
        super().__init__()
        self.orig = orig
        mean = orig.weight.mean(dim=0)
        self.extra = nn.Embedding(extra, mean.numel())
""",
        # Slicing a child's parameter in a method called on the built model.
        """
from torch import nn

class GPT(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.wpe = nn.Embedding(n, d)

    def forward(self, pos):
        return self.wpe(pos)

    def crop(self, n):
        self.wpe.weight = nn.Parameter(self.wpe.weight[:n])
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for access in param_accesses(index, Scope.ENTRY, Scope.INIT, Scope.HANDED):
            if access.use == READ and _reads_values(index, access):
                if access.scope is Scope.ENTRY and handed_read(index, access) is not None:
                    continue  # handed to a submodule's call: read in that module's forward (ZG301)
                if access.scope is Scope.HANDED and access.op.startswith(".grad"):
                    yield self.finding(index, access.snippet, access.node, _grad_message(access), _GRAD_HELP)
                    continue
                yield self.finding(index, access.snippet, access.node, _message(access), _HELP)


def _reads_values(index: ModelIndex, access: ParamAccess) -> bool:
    """A read of one parameter's values (handed helpers' reads are judged where they are found): an operation on
    it (`.data`, `[...]`, `.float()`), or the bare parameter computed with (in `__init__`: handed to a torch
    tensor function). The items of a walk of `self.parameters()` count in a method run on the built model when
    computed with (a penalty, a norm); in forward the walk is ZG301's."""
    if access.scope is Scope.HANDED:
        return True
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


def _grad_message(access: ParamAccess) -> str:
    return (
        f"`{code_of(access.node)}{access.op}` reads the gradient of a parameter of a built model handed to "
        f"`{access.where}` (from `{access.owner}`); ZeRO-3 keeps gradients in its own partitioned buffers and "
        "leaves `.grad` None on the module's parameters, so this fails or measures nothing"
    )


def _message(access: ParamAccess) -> str:
    what = code_of(access.node) + access.detail
    if access.scope is Scope.HANDED and access.via.reach is Reach.MODULE:
        return (
            f"`{code_of(access.node)}` reads every parameter of `{access.owner}`, a built model used in "
            f"`{access.where}` outside any forward and any gather; ZeRO-3 keeps them partitioned there, so "
            "it reads empty placeholders"
        )
    if access.scope is Scope.HANDED:
        return (
            f"`{what}` reads the values of a parameter of a built model handed to `{access.where}` (from "
            f"`{access.owner}`), outside any forward and any gather; ZeRO-3 keeps it partitioned there, so this "
            "reads an empty placeholder"
        )
    if access.via.reach is Reach.PASSED:
        return (
            f"`{code_of(access.node)}`{access.detail} in `{access.where}`, which runs on the built model outside any "
            "forward; ZeRO-3 keeps them "
            "partitioned there, so it reads empty placeholders"
        )
    where = (
        f"`{access.where}`, which runs on the built model outside any forward"
        if access.scope is Scope.ENTRY
        else f"`__init__` after the children `{access.via.name}` walks were built" if access.via_parameters
        else f"`__init__` after `{access.owner}` was built"
    )
    owner = "parameters that include submodules'" if access.via_parameters else f"a parameter of `{access.owner}`"
    return (
        f"`{what}` reads the values of {owner} in {where}; "
        "ZeRO-3 keeps it partitioned there, so this reads an empty placeholder"
    )


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


_GRAD_HELP = (
    "read the gradient with `deepspeed.utils.safe_get_full_grad(p)` on every rank, or the norm with "
    "`engine.get_global_grad_norm()`"
)
_HELP = (
    "read it inside `with deepspeed.zero.GatheredParameters(<params>):`, "
    "or do this before the model is partitioned"
)
