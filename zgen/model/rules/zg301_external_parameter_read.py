"""ZG301: forward reads a parameter that belongs to a submodule."""

from __future__ import annotations

import re
from collections.abc import Iterator

from zgen.findings import Severity

from ..analysis.by_hand import hand_runs
from ..analysis.effects import COMPUTES, argument_effects, resolve_function
from ..analysis.flow import flat_of
from ..analysis.persistence import member_gathers, persistent_param
from ..analysis.access import GUARD, READ, ParamAccess, Reach, Scope
from ..analysis.calls import handed_read
from ..analysis.params import accesses
from ..analysis.scopes import inherited_walks, param_accesses
from ..analysis.typed_reads import typed_reads
from ..program import known
from ..program.index import MethodInfo, ModelIndex
from ..program.members import Kind, Member, facts_of
from ..program.tree import call_name, code_of, cst, dotted
from .rule import Report, Rule


class ExternalParameterRead(Rule):
    """A forward reads a parameter owned by a submodule without that submodule running.

    ## What it does
    Flags, in `forward` and the methods it calls, an expression that uses a
    parameter of a submodule for computation: `F.linear(h, self.embed.weight)`,
    `self.pos_embed.weight.unsqueeze(0)`, `self.conv.weight.view(...)` passed
    to a kernel, or parameters taken from `self.parameters()` (which include
    every submodule's). Reading only `.dtype`, `.device` or `.requires_grad`,
    checking `is None`, a module's own parameters, buffers, and parameters
    registered with `deepspeed.zero.register_external_parameter` or read
    inside `GatheredParameters` are not flagged. Tied weights are fine as
    long as the module holding them is called (`self.lm_head(h)`). Reads
    through a property, a stored lambda (`self.to_logits = lambda t: t @
    self.emb.weight.t()`) or a helper of a base class in another file are
    reported where `forward` uses them; modules passed in as arguments
    count as submodules, of the class their annotation names when it can be
    read (`vit: VisionTransformer`: a wrapper that runs the ViT's parts one
    by one and adds `self.vit.pos_embed` reads it ungathered), also from a
    method that a base class in another file calls (`preprocess` ->
    `add_pos_embed`). A child handed in forward to a function of another
    file of the program that computes with its weight
    (`embedded_dropout(self.encoder, words)`) is reported at that call. A
    child whose class cannot be read (its package is not
    installed) is not assumed to own what it holds: `self.vit.pos_embed` may
    be a buffer; install the package so that its class is read. A function
    outside the model classes handed a module and a tensor input that
    computes with the module's parameter and the input together
    (`F.conv2d(x, conv.weight * s)`, `x @ lin.weight.t()`) runs the module
    by hand: its reads are flagged wherever it is called from (a parent's
    forward, a traced graph, a forward it replaces). A helper or property
    computing with a wrapped module's weight (`self.wrapped.weight * mask`)
    is reported at each use in forward as well as in its body. The tensors
    of a `ParameterList`/`ParameterDict` the module holds (`self.weights[k]`,
    `for w in self.weights`), a module nobody calls, are read the same way,
    small or not (no hook ever gathers them, so persistence never keeps
    them), and so is a parameter handed to a submodule's call from a method run on
    the built model (`self.criterion(out, w=self.model.head.weight)` in a
    training step): that module computes with it in its forward.

    ## Why is this bad under ZeRO-3?
    ZeRO-3 gathers a module's parameters just before that module's forward
    and frees them right after; outside it, the parameter is a partition.
    DeepSpeed's engine notices the access during forward and all-gathers the
    whole tensor on the spot, blocking, outside any prefetch (and registers
    it for later steps); a runtime without that fallback computes with an
    empty tensor. Either way the schedule does not know about the fetch.
    Parameters below `stage3_param_persistence_threshold` (the config's value
    when one is checked with the model, DeepSpeed's default 1e5 otherwise)
    are not flagged, since ZeRO-3 keeps them gathered once a hook of their
    module gathered them: norm weights, 1-D vectors, depthwise convolutions
    (one small filter per channel), and layers whose size `__init__` shows
    (literals and defaults, `nn.Embedding(nq, hd)` with `nq=300, hd=256`,
    also after a clamp such as `if nq > n: nq = n`). A child the class never
    runs (only its `.weight` read, handed to a fused kernel) was gathered by
    no hook: its reads are flagged whatever their size. Using only a parameter's
    dtype and device (`x.to(p)`, `p.new_zeros(...)`) is not a read.

    ## Example
    ```python
    def forward(self, ids):
        h = self.blocks(self.embed(ids))
        return F.linear(h, self.embed.weight)  # embed's weight is partitioned here
    ```

    ## Use instead
    ```python
    def __init__(self, cfg):
        ...
        deepspeed.zero.register_external_parameter(self, self.embed.weight)

    def forward(self, ids):
        h = self.blocks(self.embed(ids))
        return F.linear(h, self.embed.weight)
    ```
    or call a module that holds the tied weight (`self.lm_head.weight = self.embed.weight`
    in `__init__`, then `self.lm_head(h)`).
    """

    code = "ZG301"
    name = "external-parameter-read"
    severity = Severity.WARNING

    VALID = (
        # Tied weights, both modules called.
        """
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.lm_head = nn.Linear(8, 10, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, ids):
        h = self.embed(ids)
        if h.dtype != self.lm_head.weight.dtype:
            h = h.to(self.lm_head.weight.dtype)
        return self.lm_head(h)
""",
        # Own parameter and a buffer.
        """
import torch
from torch import nn

class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.register_buffer("scale", torch.ones(d))
        self.inner = nn.Linear(d, d)

    def forward(self, x):
        return self.inner(x) * self.weight * self.scale
""",
        # Registered as an external parameter.
        """
import deepspeed
import torch.nn.functional as F
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        deepspeed.zero.register_external_parameter(self, self.embed.weight)

    def forward(self, ids):
        return F.linear(self.embed(ids), self.embed.weight)
""",
        # Below the persistence threshold (300 x 256 elements with the constructor's defaults), and run by the
        # class (`lookup`): once its hook gathered the table, ZeRO-3 keeps it gathered, so reading it is free.
        """
from torch import nn

class Decoder(nn.Module):
    def __init__(self, nq=300, hd=256):
        super().__init__()
        self.query = nn.Embedding(nq, hd)
        self.proj = nn.Linear(hd, hd)

    def forward(self, x):
        return self.proj(x + self.query.weight)

    def lookup(self, ids):
        return self.query(ids)
""",
    )
    INVALID = (
        # The same small table, run nowhere: no hook ever gathered it, so persistence has nothing to keep.
        """
from torch import nn

class Decoder(nn.Module):
    def __init__(self, nq=300, hd=256):
        super().__init__()
        self.query = nn.Embedding(nq, hd)
        self.proj = nn.Linear(hd, hd)

    def forward(self, x):
        return self.proj(x + self.query.weight)
""",
        """
import torch.nn.functional as F
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32000, 512)

    def forward(self, ids):
        return F.linear(self.embed(ids), self.embed.weight)
""",
        # Through a helper method, and a child class defined in the file.
        """
import torch
from torch import nn

class Patch(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(1, 16, 8))

class Vit(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = Patch()

    def forward(self, x):
        return self.add_pos(x)

    def add_pos(self, x):
        return x + self.patch.pos
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for access in (*param_accesses(index, Scope.FORWARD), *typed_reads(index)):
            if access.use == READ and not access.walks_handed_model and not _registered(index, access):
                yield self.finding(index, access.snippet, access.node, _message(access), _HELP)
        for access in param_accesses(index, Scope.ENTRY):
            # handed to a submodule's call from a method run on the built model: read in that module's forward
            runner = handed_read(index, access)
            if runner is not None and not _registered(index, access):
                message = (
                    f"`{code_of(access.node)}`, a parameter of submodule `{access.owner}`, is handed to `{runner}`, "
                    f"which computes with it in its forward; no hook of `{access.owner}` gathers it there, so "
                    "ZeRO-3 must fetch it on access, blocking and outside the prefetch schedule"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)
        for call, _cls, method, access in inherited_walks(index):
            name = code_of(call.func)
            walked = access.via.name.removesuffix(".parameters()").replace(".[]", "[...]")
            message = (
                f"`{name}()`, defined by a base class in another file, computes here in forward with the parameters "
                f"of `{walked}` (`{code_of(access.node)}`); no hook of those submodules gathered them, so ZeRO-3 "
                "must fetch each on access, blocking and outside the prefetch schedule"
            )
            yield self.finding(index, method.snippet, call, message, _HELP)
        for method, call, child, param, helper in _children_handed_on(index):
            message = (
                f"`{code_of(call, limit=60)}` hands `{child}` to `{helper}()` of another file, which computes with "
                f"its parameter `{param}` without `{child}` running; no hook of `{child}` gathers it, so ZeRO-3 must "
                "fetch it on access, blocking and outside the prefetch schedule"
            )
            yield self.finding(index, method.snippet, call, message, _HAND_HELP)
        for run in hand_runs(index):
            if run.patched:
                message = (
                    f"`{run.function}`, written to be installed as a module's forward, computes with "
                    f"`{code_of(run.node)}` without `{run.module}` running; no hook of `{run.module}` gathers it, so "
                    "ZeRO-3 must fetch it on access, blocking and outside the prefetch schedule"
                )
                yield self.finding(index, run.snippet, run.node, message, _HELP)
            elif not run.method:
                message = (
                    f"`{code_of(run.node)}` is computed with `{run.function}`'s tensor input without `{run.module}` "
                    f"running: `{run.function}` runs `{run.module}` by hand, so no hook of it gathers the parameter; "
                    "ZeRO-3 must fetch it on access, blocking and outside the prefetch schedule"
                )
                yield self.finding(index, run.snippet, run.node, message, _HAND_HELP)


def _message(access: ParamAccess) -> str:
    what = code_of(access.node)
    if access.via_parameters and what != access.param:
        return (  # `weights = self._get_weights()`, then handed on (`graph(x, *weights)`)
            f"`{what}` collects parameters of `{access.via.name.rsplit('.', 1)[0]}` as `{access.param}`, which is "
            "handed to a call that runs no hook of that module; they are partitioned here, since ZeRO-3 gathers each "
            "only while its own module runs"
        )
    if access.via_parameters:
        return (
            f"`{what}` iterates parameters that include submodules'; they are partitioned here, "
            "since ZeRO-3 gathers each only while its own module runs"
        )
    if access.via.reach is Reach.PASSED:  # `update_module(module, updates)` in a forward handed `module`
        return (
            f"`{what}` is handed to `{access.via.name}()`, which computes with its parameters here, outside "
            f"`{what}`'s forward; no hook of `{what}` gathered them, so ZeRO-3 must fetch each on access, blocking "
            "and outside the prefetch schedule"
        )
    if access.via.reach is Reach.HELPER:
        return (
            f"`{what}` reads `{access.owner}.{access.param}`, a parameter of submodule `{access.owner}`, outside "
            f"`{access.owner}`'s forward; ZeRO-3 must fetch it on access, blocking and outside the prefetch schedule"
        )
    return (
        f"`{what}` is a parameter of submodule `{access.owner}`, read outside `{access.owner}`'s forward; ZeRO-3 "
        "must fetch it on access, blocking and outside the prefetch schedule"
    )


def _children_handed_on(index: ModelIndex) -> Iterator[tuple[MethodInfo, cst.Call, str, str, str]]:
    """(method, call, child, parameter, helper) for each call in a forward (and what it runs) handing a child
    module to a function of another file of the program that computes with one of the child's parameters, large
    enough to be partitioned (`embedded_dropout(self.encoder, words)` computing with `embed.weight`): no hook of the
    child runs, and the helper's own lines are in its file. A helper of this file is judged in its body."""
    if not _HANDS_CHILD_ON.search(index.source):
        return
    for cls in index.module_classes():
        members = facts_of(cls).members
        for method in cls.forward_methods:
            if method.index is not index or not _HANDS_CHILD_ON.search(method.text):
                continue
            flat = flat_of(method)
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not node.args:
                    continue
                name = call_name(node)
                if not name or name.startswith(("self.", ".")) or name in known.PYTHON_BUILTINS:
                    continue  # (`isinstance(self.x, ...)`, `len(self.layers)`)
                handed = {}  # argument position -> (the child's path, its member)
                for position, arg in enumerate(node.args):
                    path = dotted(arg.value) or ""
                    member = members.get(path[5:]) if path.startswith("self.") and path.count(".") == 1 else None
                    if member is not None and member.kind == Kind.MODULE and member_gathers(index, member):
                        handed[position] = (path, member)
                found = resolve_function(index, flat, name) if handed else None
                if found is None or found[0] is index:
                    continue
                for position, done in argument_effects(index, flat, node, calls=True):
                    if position not in handed:
                        continue
                    path, member = handed[position]
                    computed = [e[len(COMPUTES):].split(".", 1)[0] for e in done if e.startswith(COMPUTES)]
                    param = next((p for p in computed if _partitioned_param(index, member, p)), None)
                    if param is not None and f"{path[5:]}.{param}" not in facts_of(cls).external:
                        yield method, node, path, param, name
                        break


def _partitioned_param(index: ModelIndex, member: Member, name: str) -> bool:
    """Is `name` a parameter the child `member`'s class registers that ZeRO-3 does not keep gathered (a torch
    layer's weight, not its bias or a norm's)?"""
    for ref in member.classes:
        last = ref.rsplit(".", 1)[-1]
        if known.is_torch_module_class(ref):
            if name in known.TORCH_PARAMS.get(last, ()) and not name.startswith("bias") and last not in known.NORMS:
                return True
        elif name in _own_parameters(index, ref) and not persistent_param(index, ref, name):
            return True
    return False


def _own_parameters(index: ModelIndex, ref: str) -> frozenset[str]:
    """The parameters a class of the program registers on itself, by name."""
    local = index.classes.get(ref)
    found = (index, local) if local is not None else index.external(ref)
    if found is None:
        return frozenset()
    return frozenset(n for n, m in facts_of(found[1]).members.items() if m.kind == Kind.PARAM)


# `embedded_dropout(self.encoder, words)`: a child handed to a function (a plain name first: word first, trigger.py).
_HANDS_CHILD_ON = re.compile(r"(?<![\w.])[a-z_]\w*\(\s*self\.\w+\s*[,)]")


def _registered(index: ModelIndex, access: ParamAccess) -> bool:
    """Registered with `register_external_parameter` in `__init__`, or handed to it (or to a gather) in the method."""
    cls, method = access.cls, access.method  # a forward access: of a module's method, or a plain holder's
    if cls is None or not cls.is_module:
        return False
    if code_of(access.node, limit=200).removeprefix("self.") in facts_of(cls).external:  # type: ignore[arg-type]
        return True
    return any(
        a.use == GUARD and code_of(a.node, limit=200) == code_of(access.node, limit=200)
        for a in accesses(index, cls, method)  # type: ignore[arg-type]
    )


_HAND_HELP = (
    "call the module (`module(x)`) so its hooks gather its parameters, or gather them around the call with "
    "`deepspeed.zero.GatheredParameters(module.parameters())`"
)
_HELP = (
    "call the submodule instead, or register the parameter in `__init__` with "
    "`deepspeed.zero.register_external_parameter(self, <param>)`"
)
