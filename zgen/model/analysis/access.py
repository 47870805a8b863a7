"""A parameter access: one expression that reaches a parameter, where it runs and how the code uses it.

Every analysis that finds parameters (`params` in module methods, `scopes`
placing them in a module's life, `handed` in code a built model is handed
to, `script` after the model was partitioned) produces `ParamAccess`
records; the ZG1xx/ZG3xx rules are filters over them. The uses (`READ`,
`SIZE`, `WRITE`, ...) come from `effects.usage`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..program.tree import cst
from .flow import Ctx

if TYPE_CHECKING:
    from ..program.index import ClassInfo, MethodInfo
    from ..program.members import Member
    from ..program.tree import Snippet

__all__ = [
    "ParamAccess", "Scope", "Reach", "Via", "READ", "SIZE", "WRITE", "INIT", "META", "CHECK", "ASSIGN", "GUARD", "COPY",
    "STATE", "GRAD",
]

READ = "read"  # used for computation
SIZE = "size"  # .shape / .size() / .numel() / len()
WRITE = "write"  # .data = ..., .data.copy_(), .fill_(), p[...] = ...
INIT = "init"  # torch.nn.init.*(p)
META = "meta"  # .dtype / .device / .requires_grad
CHECK = "check"  # `p is None`, isinstance(p, ...), hasattr
ASSIGN = "assign"  # `self.child.weight = ...` (replacing or tying the parameter object)
GUARD = "guard"  # passed to register_external_parameter / GatheredParameters
COPY = "copy"  # the module deep-copied (`copy.deepcopy(model)`, an averaging helper's copy of it)
STATE = "state"  # its state dict read or loaded (`model.state_dict()`, `model.load_state_dict(sd)`)
GRAD = "grad"  # the gradients of its parameters clipped or measured (`clip_grad_norm_(model.parameters())`)


class Scope(enum.Enum):
    """Where an access runs, and so what ZeRO-3 has partitioned there."""

    FORWARD = "forward"  # a module's forward and what it calls: its own parameters gathered, its children's not
    INIT = "init"  # `__init__` and its helpers: under zero.Init a child is partitioned once built
    ENTRY = "entry"  # a method a training loop calls on the built model: everything partitioned
    LATE = "late"  # an initialiser someone else runs on the built module: every child built
    HANDED = "handed"  # code outside the model that a training loop hands the built model or its parameters
    BUILT = "built"  # a function given a built module it walks, or building modules while an `__init__` runs
    SCRIPT = "script"  # training-script code after `deepspeed.initialize` or under `zero.Init`


class Reach(enum.Enum):
    """How an expression reaches the parameter."""

    PATH = "path"  # `self.embed.weight`, `layer.weight`, `model.fc.weight`, a parameter handed in
    PARAMETERS = "parameters"  # an item of `X.parameters()` or of a parameter iterable
    OWN = "own"  # the module's own parameter (`self.weight` in a method run on the built model)
    HELPER = "helper"  # a property, stored lambda or helper method that reads it (`name`)
    PASSED = "passed"  # a module handed to the function `name`, which writes or sizes its parameters
    WALK = "walk"  # `self` handed to `name`, which runs a function on every submodule without gathering
    APPLY = "apply"  # `model.apply(name)` outside zero.Init, `name` writing each module's parameters
    METHOD = "method"  # the module's own method `name` (`reset_parameters()`), which writes or sizes its parameters
    MODULE = "module"  # the module as a whole, used by `name` (`state_dict`, `copy.deepcopy`, `clip_grad_norm_`)


@dataclass(frozen=True, slots=True)
class Via:
    """How an access reaches its parameter: the way, and the helper or function it goes through."""

    reach: Reach = Reach.PATH
    name: str = ""


# What a function a module is passed to does with its parameters, by use.
_PASSED = {
    INIT: "initialises its parameters", WRITE: "writes its parameters", SIZE: "reads the sizes of its parameters",
    READ: "reads the values of its parameters",
}


@dataclass(frozen=True, slots=True)
class ParamAccess:
    """One expression that reaches a parameter (or hands over a module holding some), and its use."""

    node: cst.CSTNode  # the expression naming the parameter, or the module handed on
    ctx: Ctx  # its conditions, loops and gather guards in its function
    use: str  # READ, SIZE, WRITE, INIT, META, CHECK, ASSIGN or GUARD
    op: str  # the operation as written: `.shape`, `.data.copy_()`, `torch.nn.init.normal_()` ("" for a bare use)
    via: Via = Via()
    owner: str = ""  # the owning module as written (`self.embed`; "self"; "" for a parameter list; the holder)
    param: str = ""  # the parameter's name (`weight`), or what the parameters came from (`model.parameters()`)
    scope: Scope | None = None  # None until `scopes` places an access of a module method
    where: str = ""  # the method or function it is in
    snippet: Snippet | None = None  # the parsed code it is in, where a finding is placed
    cls: ClassInfo | None = None  # for module methods: the class whose members the method was read with
    method: MethodInfo | None = None
    first: Member | None = None  # the member of `self` (or the local) the path starts with
    owner_classes: tuple[str, ...] = ()  # classes the owning module may have
    order: int = 0  # pre-order position of the node in its method
    local: bool = False  # owned by a module built in this method (`lin = nn.Linear(...)`), so not partitioned
    given: bool = False  # reached through what the caller handed in (a parameter, a module), built before
    holder: str = ""  # a whole use of a plain object holding a built model: the attribute that holds it
    effect: str = ""  # a whole use a helper's summary told: the effect that chose `use` (`effects.WHOLE_ORDER`)

    @property
    def via_parameters(self) -> bool:
        return self.via.reach is Reach.PARAMETERS

    @property
    def walks_handed_model(self) -> bool:
        """A forward walking the parameters of a model it is handed (`def forward(self, model): m_param =
        dict(model.named_parameters())`, an average's update run after the step): that model's own pass is not running,
        so what it reads is partitioned data outside any gather (ZG1), not another module's weight in a pass (ZG3)."""
        if self.scope is not Scope.FORWARD or self.via.reach is not Reach.PARAMETERS or self.method is None:
            return False
        root = self.via.name.partition(".")[0]
        node = self.method.node
        return root not in ("", "self") and node is not None and any(
            p.name.value == root for p in (*node.params.params, *node.params.kwonly_params))

    @property
    def detail(self) -> str:
        """How it is reached and used, as a message continues the expression (`.data.copy_()`, ` passed to ...`)."""
        reach, name = self.via.reach, self.via.name
        if reach is Reach.HELPER:
            return f" (through `{name}`, which reads `{self.owner}.{self.param}`){self.op}"
        if reach is Reach.PASSED:
            return f" passed to `{name}()`, which {_PASSED[self.use]}"
        if reach is Reach.WALK:
            return f" passed to `{name}()`, which runs a function on every submodule without gathering them"
        if reach is Reach.APPLY:
            return f" runs `{name}`, which writes each module's parameters,"
        if reach is Reach.METHOD:
            return f".{name}(), which {_PASSED[self.use]}"
        if reach is Reach.MODULE:
            return f" (`{name}`)"
        return self.op
