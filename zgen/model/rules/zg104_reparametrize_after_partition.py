"""ZG104: weight_norm / spectral_norm / parametrizations applied to a built submodule."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.built import calls_on_built_modules
from ..analysis.effects import REPARAMETRIZES
from ..program import known
from ..program.index import ModelIndex
from ..program.tree import code_of
from ..program.trigger import Trigger
from .rule import Report, Rule

_TRIGGER = Trigger("weight_norm", "spectral_norm", "parametriz", "orthogonal")


class ReparametrizeAfterPartition(Rule):
    """`weight_norm`, `spectral_norm` or a parametrization is applied to a submodule ZeRO-3 already partitioned.

    ## What it does
    Flags, in a module's `__init__` (or a helper it calls), a call of
    `nn.utils.weight_norm`, `nn.utils.spectral_norm`,
    `nn.utils.parametrizations.*`, `parametrize.register_parametrization` or
    `remove_weight_norm` on a module that is already built: a submodule
    assigned earlier (`weight_norm(self.conv)`), a module built inline
    (`weight_norm(nn.Conv1d(...))`) or a local built before. Sites inside
    `GatheredParameters` or an `is_deepspeed_zero3_enabled()` branch are fine.

    ## Why is this bad under ZeRO-3?
    These functions read the module's current weight to derive the new
    parameters (`weight_g`, `weight_v`, the spectral-norm vectors). Under
    `deepspeed.zero.Init` the module was partitioned when its constructor
    returned, so they read an empty placeholder: the call fails on shapes,
    or creates parameters from nothing that the checkpoint loader then
    cannot match.

    ## Example
    ```python
    self.conv = nn.Conv1d(c, c, k, groups=16)
    self.conv = nn.utils.weight_norm(self.conv, dim=2)
    ```

    ## Use instead
    ```python
    self.conv = nn.Conv1d(c, c, k, groups=16)
    with deepspeed.zero.GatheredParameters(self.conv.weight, modifier_rank=0):
        self.conv = nn.utils.weight_norm(self.conv, dim=2)
    ```
    """

    code = "ZG104"
    name = "reparametrize-after-partition"

    VALID = (
        """
import deepspeed
from torch import nn
from transformers.integrations import is_deepspeed_zero3_enabled

class PosConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3)
        if is_deepspeed_zero3_enabled():
            with deepspeed.zero.GatheredParameters(self.conv.weight, modifier_rank=0):
                self.conv = nn.utils.weight_norm(self.conv, dim=2)
        else:
            self.conv = nn.utils.weight_norm(self.conv, dim=2)
""",
        # A helper that is not called from __init__ (applied by the user before partitioning).
        """
from torch import nn

class Vocoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3)

    def apply_weight_norm(self):
        nn.utils.weight_norm(self.conv)
""",
    )
    INVALID = (
        """
from torch import nn

class PosConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3)
        self.conv = nn.utils.weight_norm(self.conv, dim=2)
""",
        """
from torch import nn
from torch.nn.utils import parametrizations

class Disc(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.convs = nn.ModuleList([parametrizations.spectral_norm(nn.Conv2d(c, c, 3)) for _ in range(3)])
""",
        # Through a helper whose body re-parametrises the module it is given.
        """
from torch import nn
from torch.nn.utils import weight_norm

def apply_norm(module, norm):
    return weight_norm(module) if norm == "weight_norm" else module

class NormConv(nn.Module):
    def __init__(self, c, norm="none"):
        super().__init__()
        self.conv = apply_norm(nn.Conv1d(c, c, 3), norm)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for method, node, module, helper in calls_on_built_modules(index, _TRIGGER, known.REPARAMETRIZE, REPARAMETRIZES):
            how = f"`{code_of(node.func)}` re-parametrises (`weight_norm`/`spectral_norm`) and so" if helper else (
                f"`{code_of(node.func)}`"
            )
            message = (
                f"{how} derives new parameters from the weights of `{code_of(module)}`, "
                "which is already built; under `deepspeed.zero.Init` those weights are an empty placeholder"
            )
            yield self.finding(index, method.snippet, node, message, _HELP)


_HELP = (
    "apply it inside `with deepspeed.zero.GatheredParameters(module.weight, modifier_rank=0):`, "
    "or inside the submodule's own `__init__`"
)
