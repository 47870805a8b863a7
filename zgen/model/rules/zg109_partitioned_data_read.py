"""ZG109: the values of a partitioned parameter are read where no hook gathers them."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.access import READ, ParamAccess, Reach, Scope
from ..analysis.calls import handed_read
from ..analysis.loaded import built_then_handed_values, built_where
from ..analysis.own import flattened_outside, forward_parts_outside
from ..analysis.scopes import param_accesses
from ..analysis.value_reads import reads_values
from ..program.index import ModelIndex
from ..program.tree import code_of
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
    `store(model.parameters())` cloning them); and a training script after
    `deepspeed.initialize` reading the engine's parameters (`p.data.norm()`,
    an EMA's `ema_p.add_(p.data)`, `p.grad.norm()`: gradients live in
    ZeRO-3's own buffers, `.grad` is None). Reads inside
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
        scripted: dict[int, tuple[int, ParamAccess]] = {}  # a script's line reading several parameters: one finding
        for access in param_accesses(index, Scope.ENTRY, Scope.INIT, Scope.LATE, Scope.HANDED, Scope.SCRIPT):
            if access.use == READ and reads_values(index, access):
                if access.scope is Scope.LATE and not _late_value_read(access):
                    continue
                if access.scope is Scope.SCRIPT:
                    line, column = access.snippet.span(access.node)[:2]
                    if line not in scripted or column < scripted[line][0]:
                        scripted[line] = (column, access)
                    continue
                if access.scope is Scope.ENTRY and handed_read(index, access) is not None:
                    continue  # handed to a submodule's call: read in that module's forward (ZG301)
                if access.scope in (Scope.HANDED, Scope.SCRIPT) and access.op.startswith(".grad"):
                    yield self.finding(index, access.snippet, access.node, _grad_message(access), _GRAD_HELP)
                    continue
                yield self.finding(index, access.snippet, access.node, _message(access), _HELP)
        for access in param_accesses(index, Scope.FORWARD):
            if access.use == READ and access.walks_handed_model and not access.ctx.guarded:
                message = (
                    f"`{code_of(access.node)}` reads the parameters of `{access.via.name.partition('.')[0]}`, a model "
                    f"handed to `{access.cls.name if access.cls else ''}.forward`, where that model's own pass is not "
                    "running; ZeRO-3 keeps them partitioned there, so it reads empty placeholders"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)
        for _line, (_column, access) in sorted(scripted.items()):
            if access.op.startswith(".grad"):
                yield self.finding(index, access.snippet, access.node, _grad_message(access), _GRAD_HELP)
            else:
                yield self.finding(index, access.snippet, access.node, _message(access), _HELP)
        for cls, method, call in forward_parts_outside(index):  # `self.make_weight()` in `apply_max_norm`
            message = (
                f"`self.{call.func.attr.value}(...)` reads the values of `{cls.name}`'s own parameters (a part of its "
                f"forward) in `{method.name}`, which runs on the built model outside any forward; ZeRO-3 keeps them "
                "partitioned there, so this reads empty placeholders"
            )
            yield self.finding(index, method.snippet, call, message, _HELP)
        for method, call, local in built_then_handed_values(index):  # `update_ema(ema, model.module)`
            root = local.partition(".")[0]
            message = (
                f"`{code_of(call)}` hands `{local}` to a function that computes with the values of its parameters; "
                f"`{root}` is a model built {built_where(method, local)}, and under `deepspeed.zero.Init` it is "
                "partitioned once its constructor returns, so the function reads empty placeholders"
            )
            yield self.finding(index, method.snippet, call, message, _HELP)
        for _cls, method, call, in_init in flattened_outside(index):
            layer = code_of(call.func.value)  # type: ignore[attr-defined]
            where = "after it was built" if in_init else "a method run on the built model outside any forward"
            message = (
                f"`{code_of(call.func)}()` lays out every weight of the recurrent layer `{layer}` again in "
                f"`{method.name}`, {where}; ZeRO-3 keeps them partitioned there, so cuDNN reads empty placeholders"
            )
            help = f"drop the call under ZeRO-3 (`{layer}`'s own forward handles its weights)"
            yield self.finding(index, method.snippet, call, message, help)


def _late_value_read(access: ParamAccess) -> bool:
    """A read of values in an initialiser run on the built model (`b = conv.bias.data.view(3, -1)`): through the
    tensor (`.data`, a method), not a parameter handed to an initialiser as it is (`constant_init(m.bias, 0)`, judged
    as the write it is), and not in `reset_parameters`, which torch's layer constructors run themselves."""
    method = access.method
    return bool(access.detail) and not (method is not None and method.name == "reset_parameters")


def _grad_message(access: ParamAccess) -> str:
    if access.scope is Scope.SCRIPT:
        return (
            f"`{code_of(access.node)}{access.op}` reads the gradient of a parameter of the model after ZeRO-3 "
            "partitioned it; ZeRO-3 keeps gradients in its own partitioned buffers and leaves `.grad` None on the "
            "module's parameters, so this fails or measures nothing"
        )
    return (
        f"`{code_of(access.node)}{access.op}` reads the gradient of a parameter of a built model handed to "
        f"`{access.where}` (from `{access.owner}`); ZeRO-3 keeps gradients in its own partitioned buffers and "
        "leaves `.grad` None on the module's parameters, so this fails or measures nothing"
    )


def _message(access: ParamAccess) -> str:
    what = code_of(access.node) + access.detail
    if access.scope is Scope.SCRIPT:
        return (
            f"`{what}` reads the values of a parameter of the model after ZeRO-3 partitioned it, outside any forward "
            "and any gather, so this reads an empty placeholder"
        )
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
        else f"`{access.where}`, an initialiser run on the built model (no constructor runs it)"
        if access.scope is Scope.LATE
        else f"`__init__` after the children `{access.via.name}` walks were built" if access.via_parameters
        else f"`__init__` after `{access.owner}` was built"
    )
    owner = "parameters that include submodules'" if access.via_parameters else f"a parameter of `{access.owner}`"
    return (
        f"`{what}` reads the values of {owner} in {where}; "
        "ZeRO-3 keeps it partitioned there, so this reads an empty placeholder"
    )


_GRAD_HELP = (
    "read the gradient with `deepspeed.utils.safe_get_full_grad(p)` on every rank, or the norm with "
    "`engine.get_global_grad_norm()`"
)
_HELP = (
    "read it inside `with deepspeed.zero.GatheredParameters(<params>):`, "
    "or do this before the model is partitioned"
)
