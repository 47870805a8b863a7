"""ZG205: whether a submodule runs depends on whether an optional input was passed."""

from __future__ import annotations

from collections.abc import Iterator

import re

import libcst as cst

from zgen.findings import Severity

from ..flow import ModuleCalls, code_of, flat_of
from ..index import ClassInfo, Kind, MethodInfo, ModelIndex
from ..rule import Report, Rule, Trigger
from ..tree import walk

TRIGGER = Trigger("None")
# `name=None` in a signature, and `if [not] name [is [not] None]` in a body: the text pre-filter.
_OPTIONAL = re.compile(r"\b(\w+)\s*(?::[^=,()]*(?:\[[^\]]*\])?[^=,()]*)?=\s*None\b")
_PRESENCE_IF = re.compile(r"\bif\s+(?:not\s+)?\(?\s*(\w+)(?:\.get\([^)]*\))?(?:\s+is(?:\s+not)?\s+None)?\s*(?:and\b|or\b|:)")
# Optional inputs that are states, caches, masks, ids, labels or flags: they pick values or carry
# what an earlier step computed, and gating on them is the model's calling convention, not a tower.
_NOT_A_TOWER_INPUT = re.compile(
    r"hidden_states|past|cache|mask|position|labels?$|_ids$|^ids$|embeds$|^output_|^return_|^use_|"
    r"^encoder_outputs$|^head_mask$|^kwargs$|token_type|^timestep|^seq_len|^length"
)


class OptionalInputSkipsModule(Rule):
    """A submodule runs only when an optional input of `forward` was given.

    ## What it does
    Flags, in `forward`, an `if` that tests only whether optional inputs
    (parameters defaulting to `None`) were passed, when one branch runs a
    whole tower (a submodule built of submodules with parameters) that the
    other branch does not run, or returns before the towers that follow:
    `if pixel_values is not None: feats = self.vision_tower(pixel_values)`.
    A helper method that runs submodules (`self.encode_text(text)`) counts
    as a tower. A single layer gated on an optional input (an expert
    projection given routing indices) is left alone: that is usually the
    caller's fixed convention. Tests on `self` attributes
    (fixed by the configuration) and branches that run the same submodule
    both ways are not flagged. It is a warning: when every rank always gets
    the same inputs, nothing diverges.

    ## Why is this bad under ZeRO-3?
    Each submodule's forward all-gathers its parameters, a collective every
    rank must join. If the batches of some ranks carry the input (images,
    a text batch, control signals) and others do not, only some ranks enter
    the gather and the job hangs or mixes up later collectives.

    ## Example
    ```python
    def forward(self, input_ids, pixel_values=None):
        h = self.embed(input_ids)
        if pixel_values is not None:
            h = h + self.vision_tower(pixel_values)
        return self.decoder(h)
    ```

    ## Use instead
    ```python
    def forward(self, input_ids, pixel_values=None):
        h = self.embed(input_ids)
        if pixel_values is None:
            pixel_values = self.empty_images(input_ids)  # run the tower on a dummy batch
        image = self.vision_tower(pixel_values)
        h = h + image * has_images
        return self.decoder(h)
    ```
    or make sure every rank's batch carries the same optional inputs.
    """

    code = "ZG205"
    name = "optional-input-skips-module"
    severity = Severity.WARNING

    VALID = (
        # Both branches run the same submodule.
        """
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x, targets=None):
        if targets is not None:
            logits = self.head(x)
        else:
            logits = self.head(x[:, -1:])
        return logits
""",
        # A test on the configuration (`self`), and an optional input that only picks a value.
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.extra = nn.Linear(4, 4) if extra else None
        self.body = nn.Linear(4, 4)

    def forward(self, x, mask=None):
        if self.extra is not None:
            x = self.extra(x)
        if mask is not None:
            x = x * mask
        return self.body(x)
""",
    )
    INVALID = (
        """
from torch import nn

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.out = nn.Linear(4, 4)


class VLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision = Tower()
        self.text = nn.Linear(4, 4)

    def forward(self, ids, pixels=None):
        h = self.text(ids)
        if pixels is not None:
            h = h + self.vision(pixels)
        return h
""",
        # An early return before the text tower, through a helper method.
        """
from torch import nn

class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = nn.Linear(4, 4)
        self.text = nn.Linear(4, 4)

    def encode_text(self, t):
        return self.text(t)

    def forward(self, image, text=None):
        feats = self.visual(image)
        if text is None:
            return feats
        return feats, self.encode_text(text)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls in index.module_classes():
            method = cls.method("forward")
            if method is None or not _may_gate(method.text):
                continue
            if method.node is None:
                continue
            optional = {n for n in _optional_inputs(method.node) if not _NOT_A_TOWER_INPUT.search(n)}
            if optional:
                yield from self._check_forward(index, cls, method, optional)

    def _check_forward(self, index: ModelIndex, cls: ClassInfo, method: MethodInfo, optional: set[str]):
        flat = flat_of(method)
        if flat is None:
            return
        calls = ModuleCalls(index, cls, flat, method.name)
        for node, _ctx in flat.nodes:
            if type(node) is not cst.If or not _presence_test(node.test, optional):
                continue
            body = _runs(index, cls, calls, node.body)
            other = _runs(index, cls, calls, node.orelse) if node.orelse is not None else set()
            skipped = body - other
            if not skipped and _returns(node.body):
                skipped = _runs_after(index, cls, calls, method.node, node) - other
            if skipped:
                names = ", ".join(f"`{s}`" for s in sorted(skipped)[:3])
                message = (
                    f"whether {names} runs depends on `{code_of(node.test)}`, i.e. on which optional inputs "
                    "this call was given; ranks whose batch differs skip its parameter all-gather"
                )
                yield self.finding(index, method.snippet, node.test, message, _HELP)


def _may_gate(text: str) -> bool:
    """Does the text have an `if` on a parameter that defaults to `None` (before parsing anything)?"""
    if "None" not in text:
        return False
    header, _, body = text.partition(")")
    optional = {m.group(1) for m in _OPTIONAL.finditer(text[: text.find(":\n") + 1] or header)}
    optional = {n for n in optional if not _NOT_A_TOWER_INPUT.search(n)}
    return bool(optional) and any(m.group(1) in optional for m in _PRESENCE_IF.finditer(text))


def _optional_inputs(func: cst.FunctionDef) -> set[str]:
    params = func.params
    return {
        p.name.value
        for p in (*params.params, *params.kwonly_params)
        if isinstance(p.default, cst.Name) and p.default.value == "None"
    }


def _presence_test(test: cst.BaseExpression, optional: set[str]) -> bool:
    """A test made only of `x is None` / `x is not None` / `x` / `x.get(k) is not None` on optional inputs."""
    names = {n.value for n in walk(test) if isinstance(n, cst.Name)} - {"None", "not", "get"}
    attribute_names = {
        n.attr.value for n in walk(test) if isinstance(n, cst.Attribute)
    }
    names -= attribute_names
    if not names or not names <= optional:
        return False
    return any(isinstance(n, cst.Comparison) for n in walk(test)) or isinstance(test, (cst.Name, cst.UnaryOperation))


def _runs(index: ModelIndex, cls: ClassInfo, calls: ModuleCalls, block: cst.CSTNode | None) -> set[str]:
    """Submodules (and self-methods that run submodules) called inside `block`."""
    found: set[str] = set()
    if block is None:
        return found
    for node in walk(block):
        if type(node) is not cst.Call:
            continue
        callee = calls.callee(node)
        if callee is not None and callee not in ("self", "self.forward"):
            if _is_tower(index, calls.classes_of(node.func) or ()):
                found.add(callee)
            continue
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and func.attr.value not in ("forward", "__call__")  # the module itself: it already runs
        ):
            if _method_runs_modules(index, cls, func.attr.value):
                found.add(f"self.{func.attr.value}()")
    return found


def _is_tower(index: ModelIndex, classes: tuple[str, ...]) -> bool:
    """A module built of submodules with parameters (an encoder, a tower), not a single layer."""
    for ref in classes:
        local = index.classes.get(ref)
        external = index.external(ref) if local is None else None
        info = local or (external[1] if external else None)
        if info is None:
            continue
        owner = info.index
        for member in info.facts.members.values():
            if member.kind in (Kind.MODULE, Kind.CONTAINER) and any(owner.gathers(c) for c in member.classes):
                return True
    return False


def _method_runs_modules(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    for helper in cls.reachable(name):
        flat = flat_of(helper)
        if flat is None:
            continue
        calls = ModuleCalls(index, cls, flat, helper.name)
        if any(type(n) is cst.Call and calls.callee(n) not in (None, "self", "self.forward") for n, _ in flat.nodes):
            return True
    return False


def _returns(block: cst.CSTNode) -> bool:
    body = getattr(block, "body", ())
    if not body:
        return False
    last = body[-1]
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in last.body)


def _runs_after(index: ModelIndex, cls: ClassInfo, calls: ModuleCalls, func: cst.FunctionDef, stmt: cst.If) -> set[str]:
    """What the statements after `stmt` at the top level of `func` run."""
    body = list(func.body.body)
    if stmt not in body:
        return set()
    found: set[str] = set()
    for later in body[body.index(stmt) + 1 :]:
        found |= _runs(index, cls, calls, later)
    return found


_HELP = "run the submodule on every rank (on a dummy input when this batch lacks it), or give every rank the same inputs"
