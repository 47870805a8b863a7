"""Which parameters ZeRO-3 keeps gathered, and which module calls gather any.

`zgen.zero_policy` states the rule (a parameter of at most
`stage3_param_persistence_threshold` elements stays gathered everywhere);
this module applies it to the checked code, where sizes are rarely known:
a layer's size from its constructor call (`program/size.py`), a norm's
weight, a bias (one element per output feature), a 1-D or scalar
`nn.Parameter`, a batch norm recognised by its running statistics. A call
of a module whose parameters all stay gathered gathers nothing.
"""

from __future__ import annotations

import re

from zgen.zero_policy import stays_gathered

from ..program import known
from ..program.index import ClassInfo, ModelIndex, memoised
from ..program.members import UNKNOWN_CLASS, constructors_in, facts_of, has_params, member_param, torch_base
from ..program.size import param_numel
from .access import ParamAccess

__all__ = ["gathers", "persistent_param", "is_persistent"]

# `nn.Parameter(torch.ones(dim))`: the argument of each Parameter(...) call, one level of parentheses.
_PARAM_CALL = re.compile(r"Parameter\(((?:[^()]|\([^()]*\))*)\)")
# A vector, also shaped with leading singleton dimensions (`torch.zeros(1, 1, dim)`, a class token).
_VECTOR_PARAM = re.compile(
    r"\s*torch\.(?:ones|zeros|empty|full|randn|rand)\(\s*(?:1\s*,\s*)*[\w.]+\s*(?:,\s*\w+\s*=\s*[\w.]+\s*)*\)\s*$"
)
_SCALAR_PARAM = re.compile(r"\s*torch\.tensor\((?:[^(),\[]|\([^()]*\))*\)\s*$")
# More vectors: a length that is a call's value (`torch.zeros(w.size(0))`, `len(vocab)`; not `w.size()`), singleton
# dimensions around it (`torch.ones(dim, 1, 1)`), and a scale in front (`init_values * torch.ones(dim)`, a layer scale).
_SIZED_VECTOR = re.compile(
    r"\s*(?:[\w.+-]+\s*\*\s*)?torch\.(?:ones|zeros|empty|full|randn|rand)\(\s*(?:1\s*,\s*)*"
    r"[\w.]+(?:\([\w.]+\))?\s*(?:,\s*1\s*)*\)\s*\)"
)


@memoised(cycle=True)
def gathers(index: ModelIndex, ref: str) -> bool:
    """Does calling a module of class `ref` (possibly) all-gather parameters?

    False for modules without parameters and for norm layers, whose 1-D
    parameters stay gathered under ZeRO-3's default persistence threshold
    (`stage3_param_persistence_threshold`, 1e5 elements).
    """
    if has_params(index, ref) is False:
        return False
    local = index.classes.get(ref)
    if local is None:
        external = index.external(ref)
        if external is not None:
            return gathers(external[0], external[1].name)
    if local is not None:
        text = "".join(method.text for method in local.init_methods)
        params = _PARAM_CALL.findall(text)
        return not (params and all(_VECTOR_PARAM.match(p) for p in params) and not _builds_gathering(index, local, text))
    return ref.rsplit(".", 1)[-1] not in known.NORMS


def persistent_param(index: ModelIndex, ref: str, name: str) -> bool:
    """Is parameter `name` of class `ref` small enough that ZeRO-3 keeps it gathered (a norm
    weight, a 1-D vector, a scalar)? Judged from how `__init__` creates it."""
    local = index.classes.get(ref)
    if local is None:
        external = index.external(ref)
        if external is not None:
            return persistent_param(external[0], external[1].name, name)
        return ref.rsplit(".", 1)[-1] in known.NORMS
    if not gathers(index, ref):
        return True
    base = torch_base(local)
    if base is not None and name not in facts_of(local).members:
        # a torch layer's own parameter (`class Linear(nn.Linear)`): its bias and a norm's weight are vectors
        return base in known.NORMS or name.startswith("bias")
    text = "".join(method.text for method in local.init_methods)
    match = re.search(r"self\." + re.escape(name) + r"\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?Parameter\(", text)
    if match is None:
        return False
    inner = _PARAM_CALL.match(text, match.end() - len("Parameter("))
    vector = bool(inner) and bool(_VECTOR_PARAM.match(inner.group(1)) or _SCALAR_PARAM.match(inner.group(1)))
    return vector or bool(_SIZED_VECTOR.match(text, match.end()))


def _builds_gathering(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    for written in constructors_in(text):
        if written in index.classes and written != cls.name and index.classes[written].is_module:
            if gathers(index, written):
                return True
        elif written[:1].isupper() or "." in written:
            qualified = index.qualify(written)
            if known.is_torch_module_class(qualified) and known.torch_has_params(qualified):
                if qualified.rsplit(".", 1)[-1] not in known.NORMS:
                    return True
            elif index.external(qualified) is not None and index.is_module_base(qualified):
                if gathers(index, qualified):
                    return True
    return False


def is_persistent(index: ModelIndex, access: ParamAccess) -> bool:
    """Is the accessed parameter below the persistence threshold, so ZeRO-3 keeps it gathered everywhere?"""
    return _persistent(index, access)


def _persistent(index: ModelIndex, access: ParamAccess) -> bool:
    """Below the persistence threshold: a norm weight, a vector, or a layer whose built size is known small."""
    first = access.first
    if first is not None and first.call is not None and access.owner == f"self.{first.name}" and first.classes:
        last = first.classes[0].rsplit(".", 1)[-1]
        numel = param_numel(last, access.param, first.call, first.env or {})
        if numel is not None and len(first.classes) == 1:
            return stays_gathered(numel, index.persistence_threshold)
    return _layer_bias(index, access) or _persistent_by_class(index, access)


def _layer_bias(index: ModelIndex, access: ParamAccess) -> bool:
    """A bias of a torch layer, or of a module we cannot see: one element per output feature.

    Like `nn.Parameter(torch.zeros(n))` (see `ModelIndex.persistent_param`), a vector of unknown
    length counts as below the threshold; a size known from the constructor call was decided before.
    """
    if not access.param.endswith("bias") or not access.owner_classes:
        return False
    return all(
        ref == UNKNOWN_CLASS or known.is_torch_module_class(ref) or _inherits_torch_param(index, ref, access.param)
        for ref in access.owner_classes
    )


def _persistent_by_class(index: ModelIndex, access: ParamAccess) -> bool:
    # Only the classes that have the parameter (`nn.Identity()` in the other branch has none).
    classes = [ref for ref in access.owner_classes if member_param(index, ref, access.param) is not False]
    return bool(classes) and all(persistent_param(index, ref, access.param) for ref in classes)


def _inherits_torch_param(index: ModelIndex, ref: str, name: str, depth: int = 0) -> bool:
    """Does class `ref` (this file or another) get parameter `name` from a torch layer base, unchanged?

    `class Conv2dSame(nn.Conv2d)` has nn.Conv2d's `bias` unless its own `__init__` assigns `self.bias`.
    """
    found = (index, index.classes[ref]) if ref in index.classes else index.external(ref)
    if found is None or depth > 4:
        return False
    owner, info = found
    if re.search(r"\bself\." + re.escape(name) + r"\s*=", "".join(m.text for m in info.init_methods)):
        return False
    for cls in info.mro:
        for base in cls.qualified_bases:
            if known.is_torch_module_class(base) and known.torch_params(base.rsplit(".", 1)[-1], name):
                return True
        for base_index, base_info in cls.external_bases:
            if _inherits_torch_param(base_index, base_info.name, name, depth + 1):
                return True
    return False
