"""Functions that run a module they are given by hand: its parameters computed with data, the module never called.

A function outside the model classes (a free function, or a method of a class
that is not a module) handed a module -- an argument annotated with a module
class, or named or used as one (`holds.module_arguments`) -- and a tensor
input, that brings a parameter of that module and the input together in one
operation (`F.conv2d(x, conv.weight * s, conv.bias)`, `x @ lin.weight.t()`,
`conv._conv_forward(x, w, b)` with `w` derived from `conv.weight`) computes
the module's output without the module running. Wherever it runs -- called
from a parent's forward, spliced into a traced graph, installed as a module's
forward -- no hook of that module gathers what it reads: ZeRO-3 hands it the
partition. `hand_runs` lists the reads of such parameters (ZG301) and the
calls of the module's own methods given values derived from them (ZG303).

A module-level function written to be installed as some module's forward
(`def lce_forward(self, input_ids, labels=None)`, `holds.patched_forward`)
runs on a module of a class the file does not show: its `self` is that
module, every argument but a literal setting is its input, and a child's
weight it computes with before that child ran (`fused_loss(h,
self.lm_head.weight)`) is a hand-run of the child (not a norm's vector, not a
depthwise filter squeezed of its one input channel).

Not a hand-run: a function with no tensor input (a fuser that computes new
weights from old ones, an initialiser), reads of sizes, dtypes or `is None`,
reads inside `GatheredParameters`, and parameters ZeRO-3 keeps gathered (a
bias of a torch layer, the weight of a batch norm, known by its running
statistics).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..program.holds import module_arguments, patched_forward
from ..program.index import ModelIndex, entry_name, memoised
from ..program.members import UNKNOWN_CLASS
from ..program.tree import Snippet, access_path, code_of, cst, walk
from .access import READ, ParamAccess
from .effects import usage
from .flow import Flat, bound_names
from .handed import outside_functions
from .persistence import is_persistent
from .script import function_scope

__all__ = ["HandRun", "hand_runs"]

# An argument that holds the input a layer computes on: annotated as a tensor, or named as inputs are.
_TENSOR_ANNOTATION = re.compile(r"Tensor(?<!\wTensor)\b")
_INPUT_NAME = re.compile(r"^(?:x|xs|x_\w+|\w+_x|inp|inputs?|\w+_inputs?|hidden(?:_states?)?|h|feats?|features?|z|emb)$")
# Methods of a module that are bookkeeping, not a computation of its output.
_NOT_A_COMPUTATION = frozenset({"forward", "__call__", "register_forward_hook", "register_forward_pre_hook", "apply"})


@dataclass(frozen=True, slots=True)
class HandRun:
    """One site of a hand-run: a parameter read (`method` empty) or a method of the module given what was read."""

    node: cst.CSTNode  # the parameter expression (`conv.weight`) or the call (`conv._conv_forward(x, w, b)`)
    snippet: Snippet
    module: str  # the argument holding the module (`conv`)
    param: str  # the parameter read (`weight`), or the one the method's argument derives from
    function: str  # the function it is in
    method: str = ""  # the module's method called (`_conv_forward`), for a call site
    patched: bool = False  # in a forward written for some module (`module` is then the child read, `self.lm_head`)


@memoised
def hand_runs(index: ModelIndex) -> list[HandRun]:
    """Every site, in the file's functions outside the model classes, where a module handed in is run by hand."""
    found: list[HandRun] = []
    params = index.param_names
    if not params:
        return found
    mention = re.compile(r"\w\.(?:" + "|".join(map(re.escape, sorted(params))) + r")\b")
    for span, cls in outside_functions(index):
        maybe_patched = cls is None and "forward" in span.name and span.name in index.skeleton.functions
        if span.name == "__init__" or not (entry_name(span.name) or maybe_patched):
            continue  # an initialiser, a loader, a hook: not a computation on data
        text = index.skeleton.text(span.start, span.end)
        if not mention.search(text):
            continue
        scope = function_scope(index, span)
        if scope is None or not isinstance(scope.node, cst.FunctionDef):
            continue
        patched = maybe_patched and patched_forward(scope.node)
        if not patched and not entry_name(span.name):
            continue
        found += _in_function(index, scope.node, scope.flat, scope.snippet, text, patched)
    return found


def _in_function(
    index: ModelIndex, func: cst.FunctionDef, flat: Flat, snippet: Snippet, text: str, patched: bool = False
) -> list[HandRun]:
    modules = module_arguments(index, func)
    if patched:
        modules = {**modules, "self": (UNKNOWN_CLASS,)}
    inputs = _inputs(func, modules, patched)
    if not modules or not inputs:
        return []
    # Parameter reads of each module argument, and which locals derive from them or from the inputs.
    reads: list[tuple[cst.Attribute, str, str]] = []
    derived: dict[str, set[str]] = {}  # local -> the module arguments whose parameters it derives from
    data = set(inputs)
    called: set[str] = set()  # children of a patched forward's `self` called so far (`self.lm_head(h)`)
    for node, ctx in flat.nodes:
        if patched and type(node) is cst.Call:
            callee = access_path(node.func)
            if callee is not None and callee.root == "self":
                called.add(".".join(("self", *callee.parts)))
        if type(node) is cst.Attribute:
            path = access_path(node)
            if path is None or path.root not in modules or not path.parts or path.parts[-1] not in index.param_names:
                continue
            if ctx.guarded or "[]" in path.parts:
                continue
            if patched and path.root == "self" and not _child_of_patched(path.parts, called, flat, node):
                continue
            use, _op = usage(index, flat, node)
            if use != READ:
                continue
            owner = ".".join((path.root, *path.parts[:-1]))
            classes = modules[path.root] if len(path.parts) == 1 else (UNKNOWN_CLASS,)
            if len(path.parts) == 1 and _batch_norm(text, path.root):
                continue  # a batch norm's per-channel weight and bias stay gathered
            probe = ParamAccess(node=node, ctx=ctx, use=use, op="", owner=owner, param=path.parts[-1],
                                owner_classes=classes)
            if is_persistent(index, probe):
                continue
            reads.append((node, path.root, path.parts[-1]))
        elif type(node) is cst.Assign:
            sources = _sources(node.value, modules, derived, index)
            takes_data = _mentions(node.value, data)
            for target in node.targets:
                for name in bound_names(target.target):
                    if sources:
                        derived[name] = derived.get(name, set()) | sources
                    if takes_data:
                        data.add(name)
    if not reads:
        return []
    run = _run_modules(flat, modules, derived, data, index)
    found = [
        HandRun(node, snippet, _owner(node) if patched and module == "self" else module, param, func.name.value,
                patched=patched and module == "self")
        for node, module, param in reads if module in run
    ]
    for call, module in _method_calls(flat, modules, derived, index):
        if module in run and not (patched and module == "self"):  # (a patched forward's own methods: its own)
            param = next((p for n, m, p in reads if m == module), "")
            found.append(HandRun(call, snippet, module, param, func.name.value, call.func.attr.value))  # type: ignore[union-attr]
    return found


def _inputs(func: cst.FunctionDef, modules: dict[str, tuple[str, ...]], patched: bool = False) -> set[str]:
    """Arguments that hold a tensor input: annotated as a tensor, or named as inputs are; of a patched forward,
    every argument but settings with a literal default (`logits_to_keep=0`)."""
    found = set()
    params = func.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        name = param.name.value
        if name in ("self", "cls") or name in modules:
            continue
        if patched and not isinstance(param.default, (cst.Integer, cst.Float, cst.SimpleString)) and not (
                isinstance(param.default, cst.Name) and param.default.value in ("True", "False")):
            found.add(name)
            continue
        if param.annotation is not None:
            if _TENSOR_ANNOTATION.search(code_of(param.annotation.annotation, limit=200)):
                found.add(name)
        elif _INPUT_NAME.match(name):
            found.add(name)
    return found


def _owner(node: cst.Attribute) -> str:
    """`self.lm_head` of `self.lm_head.weight`."""
    return code_of(node.value, limit=200)


def _child_of_patched(parts: tuple[str, ...], called: set[str], flat: Flat, node: cst.Attribute) -> bool:
    """Is `self.<parts>` in a patched forward a parameter of a child that did not run before it (`self.lm_head.weight`
    handed to a fused loss)? Not `self.weight` (its own, gathered by its hook), not a child called earlier, not a
    norm's weight (a vector kept gathered), not a filter squeezed of its one input channel (`self.conv1d.weight
    .squeeze(1)`: a depthwise convolution's, one short filter per channel, kept gathered)."""
    if len(parts) < 2:
        return False
    owner = ".".join(("self", *parts[:-1]))
    if owner in called or _NORM_CHILD.search(parts[-2]):
        return False
    parent = flat.parent.get(id(node))
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Attribute) and parent.attr.value == "squeeze" else None
    return not (isinstance(call, cst.Call) and len(call.args) == 1 and isinstance(call.args[0].value, cst.Integer)
                and call.args[0].value.value == "1")


# A child named as a normalisation layer (`self.norm`, `self.ln_f`, `self.final_layernorm`): its weight is a vector.
_NORM_CHILD = re.compile(r"(?:^|_)(?:ln|bn|gn|\w*norm)(?:_?\w)?$", re.IGNORECASE)


def _batch_norm(text: str, name: str) -> bool:
    """Does the function read `<name>.running_var`/`.running_mean`? Then `<name>` is a batch norm."""
    return f"{name}.running_var" in text or f"{name}.running_mean" in text


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    return any(type(n) is cst.Name and n.value in names for n in walk(expr))


def _sources(expr: cst.CSTNode, modules, derived: dict[str, set[str]], index: ModelIndex) -> set[str]:
    """The module arguments whose parameters `expr` computes with (directly or through a derived local)."""
    found: set[str] = set()
    for node in walk(expr):
        if type(node) is cst.Name and node.value in derived:
            found |= derived[node.value]
        elif type(node) is cst.Attribute:
            path = access_path(node)
            if path is not None and path.root in modules and path.parts and path.parts[-1] in index.param_names:
                found.add(path.root)
    return found


def _run_modules(flat, modules, derived, data: set[str], index: ModelIndex) -> set[str]:
    """Module arguments whose parameters meet a tensor input in one call or arithmetic operation."""
    run: set[str] = set()
    for node, _ctx in flat.nodes:
        if type(node) is cst.Call:
            parts: list[cst.CSTNode] = [a.value for a in node.args]
            func = node.func
            if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value in modules):
                parts.append(func.value)  # `x.matmul(w)`: the receiver is an operand (not a module's method)
        elif type(node) is cst.BinaryOperation:
            parts = [node.left, node.right]
        else:
            continue
        sources: set[str] = set()
        takes_data = False
        for part in parts:
            sources |= _sources(part, modules, derived, index)
            takes_data = takes_data or _mentions(part, data)
        if sources and takes_data:
            run |= sources
    return run


def _method_calls(flat, modules, derived, index: ModelIndex):
    """`conv._conv_forward(x, w, b)`: a method of a module argument given a value derived from its parameters."""
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
            continue
        owner = node.func.value
        if not isinstance(owner, cst.Name) or owner.value not in modules:
            continue
        if node.func.attr.value in _NOT_A_COMPUTATION:
            continue
        if any(owner.value in _sources(a.value, modules, derived, index) for a in node.args):
            yield node, owner.value
