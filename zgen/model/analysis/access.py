"""A parameter access: one expression that reaches a parameter, and how the code uses it.

The uses (`READ`, `SIZE`, `WRITE`, ...) are what the ZG1xx rules filter on;
`effects.usage` decides the use of an expression from its surroundings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..program.members import Member
from ..program.tree import cst
from .flow import Ctx

__all__ = ["Access", "READ", "SIZE", "WRITE", "INIT", "META", "CHECK", "ASSIGN", "GUARD"]

READ = "read"  # used for computation
SIZE = "size"  # .shape / .size() / .numel() / len()
WRITE = "write"  # .data = ..., .data.copy_(), .fill_(), p[...] = ...
INIT = "init"  # torch.nn.init.*(p)
META = "meta"  # .dtype / .device / .requires_grad
CHECK = "check"  # `p is None`, isinstance(p, ...), hasattr
ASSIGN = "assign"  # `self.child.weight = ...` (replacing or tying the parameter object)
GUARD = "guard"  # passed to register_external_parameter / GatheredParameters


@dataclass(frozen=True, slots=True)
class Access:
    """One expression that reaches a parameter owned by a submodule."""

    node: cst.CSTNode  # the expression naming the parameter
    ctx: Ctx
    owner: str  # the owning submodule as written, e.g. `self.embed` ("" when via .parameters())
    param: str  # parameter name, e.g. `weight`
    first: Member | None  # the member of `self` the path starts with
    use: str  # one of READ, SIZE, WRITE, INIT, META, CHECK, ASSIGN, GUARD
    detail: str  # the operation, e.g. `.shape`, `.data.copy_()`, `torch.nn.init.normal_()`
    order: int  # pre-order position of the node in its method
    via_parameters: bool = False
    owner_classes: tuple[str, ...] = ()  # classes the owning submodule may have
    local: bool = False  # owned by a module built in this method (`lin = nn.Linear(...)`)
    given: bool = False  # the parameter itself was handed to this constructor (`Head(cfg, self.embed.weight)`)
