"""ZG106: parameters or submodules created or replaced while forward runs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.flow import flat_of
from ..program import known
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Kind, classify, facts_of, has_params
from ..program.tree import access_path, call_name, code_of, cst
from ..program.trigger import line_matches, word_first
from .rule import Report, Rule

_REGISTER = {"self.register_parameter", "self.add_module", "self.register_module"}


class CreatedInForward(Rule):
    """A parameter or a submodule with parameters is created or replaced inside forward.

    ## What it does
    Flags, in `forward`, the methods it calls and methods registered as
    forward hooks (a lazy layer materialised in a pre-hook): `nn.Parameter(...)`;
    constructing a module that owns parameters (`nn.Linear(...)`, a model
    class of the file); assigning to an attribute that `__init__` made a
    parameter or submodule (`self.proj = ...`, lazy `if self.proj is None:
    self.proj = nn.Linear(...)`); `register_parameter`/`add_module`; and
    replacing a parameter's storage (`self.weight.data = t`). Modules without
    parameters (`nn.Dropout(p)`, activations) and buffers are fine.

    ## Why is this bad under ZeRO-3?
    ZeRO-3 partitions parameters once, when the model is built and wrapped,
    and the optimizer holds only those partitions. A parameter created
    during forward is a full, unpartitioned tensor on every rank that no
    optimizer updates and no gradient reduction covers, and a replaced
    parameter detaches the module from the partition ZeRO-3 keeps for it:
    training silently stops updating it, or ranks diverge.

    ## Example
    ```python
    def forward(self, x):
        if self.head is None:
            self.head = nn.Linear(x.shape[-1], self.n_out)  # built lazily on first call
        return self.head(x)
    ```

    ## Use instead
    ```python
    def __init__(self, d_in, n_out):
        super().__init__()
        self.head = nn.Linear(d_in, n_out)  # every parameter exists before wrapping
    ```
    """

    code = "ZG106"
    name = "created-in-forward"

    VALID = (
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("cache", torch.zeros(4), persistent=False)

    def forward(self, x, p):
        self.cache = x.mean(0)  # a buffer
        drop = nn.Dropout(p)  # no parameters
        return drop(self.proj(x))
""",
    )
    INVALID = (
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, n_out):
        super().__init__()
        self.head = None
        self.n_out = n_out

    def forward(self, x):
        if self.head is None:
            self.head = nn.Linear(x.shape[-1], self.n_out)
        return self.head(x)
""",
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        self.scale = nn.Parameter(x.std(0))
        return x * self.scale
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls, method, node, message in _in_forward(index):
            if method.name == "forward" or not any(m is method for m in cls.init_methods):
                yield self.finding(index, method.snippet, node, message, _HELP)
                continue
            # a helper `__init__` runs as well, where the parameter is made before partitioning: told at the calls
            # forward makes of it (`if seq_len > self.weights.size(0): self.make_weights(n, d)`)
            for caller, call in _forward_calls(cls, method):
                told = f"`{code_of(call.func)}(...)` in `{caller.name}` runs `{method.name}`, where " + message
                yield self.finding(index, caller.snippet, call, told, _HELP)


def _forward_calls(cls: ClassInfo, helper: MethodInfo) -> Iterator[tuple[MethodInfo, cst.Call]]:
    """The calls `self.<helper>(...)` in the methods forward runs that `__init__` does not."""
    for caller in cls.forward_methods:
        if caller is helper or any(m is caller for m in cls.init_methods) or f"self.{helper.name}(" not in caller.text:
            continue
        flat = flat_of(caller)
        for node, _ctx in flat.nodes if flat is not None else ():
            if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == helper.name \
                    and type(node.func.value) is cst.Name and node.func.value.value == "self":
                yield caller, node


def _in_forward(index: ModelIndex) -> Iterator[tuple[ClassInfo, MethodInfo, cst.CSTNode, str]]:
    """(class, method, node, message) of each creation or replacement in a method forward (or a hook) runs."""
    for cls, method in (*index.methods("forward", None), *index.methods("hook", None)):
        if not (_creates(index, method.text) or _replaces(index, cls, method.text)):
            continue
        flat = flat_of(method)
        if flat is None:
            continue
        for node, _ctx in flat.nodes:
            kind = type(node)
            if kind is cst.Call:
                message = _creation(index, cls, node) or _creation_through_local(index, cls, flat, node)
                if message:
                    yield cls, method, node, message
            elif kind is cst.AssignTarget:
                path = access_path(node.target)
                if path is None or path.root != "self" or not path.parts or not _replaces(index, cls, method.text):
                    continue
                member = facts_of(cls).members.get(path.parts[0])
                if member is None:
                    continue
                if _same_object(node, path.parts[0], flat):
                    continue  # `self.head = self.head.to(dtype)`: Module.to returns the module itself
                if len(path.parts) == 1 and member.kind in (Kind.PARAM, Kind.MODULE, Kind.CONTAINER):
                    what = "parameter" if member.kind == Kind.PARAM else "submodule"
                    message = f"`{code_of(node.target)} = ...` in forward replaces a {what} registered in `__init__`"
                    yield cls, method, node.target, message
                elif path.parts[1:] == ("data",) and member.kind == Kind.PARAM:
                    message = f"`{code_of(node.target)} = ...` replaces the storage of a parameter during forward"
                    yield cls, method, node.target, message


def _same_object(target: cst.AssignTarget, name: str, flat) -> bool:
    assign = flat.parent.get(id(target))
    value = getattr(assign, "value", None)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        path = access_path(value.func.value)
        return path is not None and path.root == "self" and path.parts == (name,)
    return False


def _creation(index: ModelIndex, cls: ClassInfo, call: cst.Call) -> str | None:
    written = call_name(call) or ""
    if written in _REGISTER:
        return f"`{written}(...)` registers a new parameter or submodule during forward"
    if written.startswith("."):
        return None
    if written.startswith("self.") and written.count(".") == 1 and written[5:] in facts_of(cls).members:
        return None  # `self.Embedding(x)`: calls the member `__init__` built, whatever class its name spells
    qualified = index.qualify(written)
    if qualified.rsplit(".", 1)[-1] == "Parameter":
        return f"`{written}(...)` creates a parameter during forward"
    kind, classes = classify(index, call)
    if kind == Kind.MODULE and classes and all(has_params(index, ref) for ref in classes):
        return f"`{written}(...)` builds a module with parameters during forward"
    if kind == Kind.CONTAINER and not known.is_torch_module_class(qualified) and any(has_params(index, ref) for ref in classes):
        # a factory returning `nn.Sequential(nn.Linear(...), ...)`; torch's own containers wrap modules built in
        # their arguments, each reported where it is built
        return f"`{written}(...)` builds modules with parameters during forward"  # `MLP(d, n)` -> `nn.Sequential`
    return None


def _creation_through_local(index: ModelIndex, cls: ClassInfo, flat, call: cst.Call) -> str | None:
    """`make = MLP if simple else DeepMLP` ... `make(d, n)`: a local bound to one of several module factories or
    classes, called; the call builds whatever each alternative builds."""
    if not isinstance(call.func, cst.Name):
        return None
    name = call.func.value
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not isinstance(target, cst.Name) or target.value != name:
            continue
        value, choices = node.value, []
        while isinstance(value, cst.IfExp):
            choices.append(value.body)
            value = value.orelse
        choices.append(value)
        for choice in choices:
            if isinstance(choice, (cst.Name, cst.Attribute)) and _creation(index, cls, call.with_changes(func=choice)):
                return f"`{name}(...)` builds a module with parameters during forward (`{name}` is `{code_of(choice)}`)"
    return None


_CREATION = re.compile(r"Parameter\(|register_parameter|add_module|register_module")
# `make = MLP if simple else DeepMLP`: a callable chosen into a local (what calling it builds is read from the parse).
# (Only when the local is then called: `x = a if cond else b` is common in a forward.)
_CHOSEN_CALLABLE = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*[\w.]+[ \t]+if[ \t].+[ \t]else[ \t]+[\w.]+[ \t]*$", re.MULTILINE)
_CONSTRUCTOR_CALL = re.compile(r"\b(?:nn\.|torch\.nn\.)?([A-Z]\w*)\s*\(")


def _creates(index: ModelIndex, text: str) -> bool:
    """Does `text` create a parameter, register one, or construct a torch.nn or in-file module class?"""
    chosen = (m.group(1) for m in line_matches(_CHOSEN_CALLABLE, text, "else"))  # (`f = a if t else b`)
    if _CREATION.search(text) or any(re.search(word_first(name, r"[\w.]") + r"\(", text) for name in chosen):
        return True
    for match in _CONSTRUCTOR_CALL.finditer(text):
        name = match.group(1)
        local = index.classes.get(name)
        if (local is not None and local.is_module) or (
            match.group(0).startswith(("nn.", "torch.nn.")) and name not in known.PARAMLESS
        ):
            return True
    return False


_SELF_ASSIGN = re.compile(r"self(?<!\wself)\.(\w+)(?:\.data)?\s*=[^=]")  # `\bself`, the word first (10x faster)
_MEMBER_DEF = re.compile(r"self(?<!\wself)\.(\w+)\s*(?::[^=\n]*)?=\s*[\w.]*?(?:Parameter|[A-Z]\w*)\s*\(")


def _replaces(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    """Does `text` assign `self.<x>` for an `x` that `__init__` builds as a parameter or module (by its text)?"""
    assigned = set(_SELF_ASSIGN.findall(text))
    if not assigned:
        return False
    return bool(assigned & _built_in_init(index, cls))


@memoised
def _built_in_init(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    return frozenset(_MEMBER_DEF.findall("".join(m.text for m in cls.init_methods)))


_HELP = "create every parameter and submodule in `__init__`, before the model is partitioned"
