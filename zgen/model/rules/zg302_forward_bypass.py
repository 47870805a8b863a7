"""ZG302: a submodule's forward called directly, bypassing its hooks."""

from __future__ import annotations

from collections.abc import Iterator

from zgen.findings import Severity

from ..analysis.calls import ModuleCalls
from ..analysis.flow import flat_of
from ..program.index import ModelIndex
from ..program.members import Kind, facts_of, has_params
from ..program.tree import code_of, cst
from ..program.trigger import Trigger
from .rule import Report, Rule

_TRIGGER = Trigger(".forward(")


class ForwardBypass(Rule):
    """A submodule's `forward` is called directly instead of calling the module.

    ## What it does
    Flags `self.child.forward(x)` (or `layer.forward(x)` for a layer taken
    from a `ModuleList`) in a model's methods when the submodule owns
    parameters directly. `super().forward(x)` and calling the module itself,
    `self.child(x)`, are fine.

    ## Why is this bad under ZeRO-3?
    ZeRO-3 gathers a module's parameters in a hook that runs when the
    module is *called*; `.forward()` skips it. DeepSpeed's engine then
    fetches each of the module's parameters on first access, blocking and
    outside the prefetch schedule, and a runtime without that fallback
    computes with empty partitions. Other hooks (activation checkpointing,
    profilers) are skipped too.

    ## Example
    ```python
    def forward(self, x):
        return self.backbone.forward(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return self.backbone(x)
    ```
    """

    code = "ZG302"
    name = "forward-bypass"
    severity = Severity.WARNING

    VALID = (
        """
from torch import nn

class Wide(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Wide(4, 4)

    def forward(self, x):
        return self.proj(x)
""",
    )
    INVALID = (
        """
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj.forward(x)
""",
        """
from torch import nn

class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls, method in index.methods("all", _TRIGGER):
            flat = flat_of(method)
            if flat is None:
                continue
            calls = None
            for node, _ctx in flat.nodes:
                if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute):
                    continue
                if node.func.attr.value != "forward":
                    continue
                target = node.func.value
                if isinstance(target, cst.Name) and target.value == "self":
                    continue
                calls = calls or ModuleCalls(index, cls, flat, method.name)
                classes = calls.classes_of(target)
                if classes is None or not any(_owns_params(index, ref) for ref in classes):
                    continue
                message = (
                    f"`{code_of(node.func)}(...)` skips the hooks of `{code_of(target)}`; ZeRO-3 does not "
                    "gather its parameters for this call and must fetch them on access"
                )
                yield self.finding(
                    index, method.snippet, node, message, f"call the module itself: `{code_of(target)}(...)`"
                )


def _owns_params(index: ModelIndex, ref: str) -> bool:
    """Does the module own parameters itself (not only through children, whose hooks still run)?"""
    local = index.class_of(ref)
    if local is not None:
        return any(m.kind == Kind.PARAM for m in facts_of(local).members.values())
    return has_params(index, ref) is not False
