"""What an op does to a parameter it is given: reads its values, writes them, initialises them, asks its size, or
only looks at its metadata.

A `TorchFunctionMode` (`AccessWatch`) sees every torch function and tensor
method the model calls, properties included (`p.shape` arrives as
`Tensor.shape.__get__`). `kind_of` sorts one call by its name and by where the
parameter sits among the arguments:

* metadata, which a partitioned parameter answers correctly: `dtype`,
  `device`, `requires_grad`, `is_leaf`, `grad`, `.data` itself (an alias; what
  is done with it is seen next), `requires_grad_()`, hooks; `x.to(p)`,
  `x.type_as(p)`, `p.new_zeros(n)` use only dtype and device;
* a size query (ZG102): `p.shape`, `p.size()`, `p.numel()`, `p.dim()`,
  `len(p)`, `torch.zeros_like(p)`, `x.view_as(p)`: a placeholder's size is 0;
* an initialisation (ZG103): `torch.nn.init.*` and in-place random fills of it;
* a write (ZG101): an in-place op on it (`copy_`, `add_`, `p[i] = v`,
  `p.data = t`, `out=p`);
* a read (ZG109 and ZG3xx): everything else.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from typing import Any

from torch.overrides import TorchFunctionMode

from .partitions import Partitions

__all__ = ["Access", "kind_of", "AccessWatch"]


class Access(enum.Enum):
    META = "metadata"
    GRAD = "gradient"  # `p.grad`: metadata, except to a gradient clipper (ZG107)
    SIZE = "size query"
    INIT = "initialisation"
    WRITE = "write"
    READ = "read"


_META = frozenset({
    "dtype", "device", "requires_grad", "is_leaf", "grad_fn", "grad", "_grad", "layout", "is_cuda", "is_meta",
    "is_cpu", "is_sparse", "is_quantized", "is_mkldnn", "is_nested", "names", "is_floating_point", "is_complex",
    "is_signed", "element_size", "itemsize", "data_ptr", "get_device", "requires_grad_", "register_hook",
    "register_post_accumulate_grad_hook", "retain_grad", "retains_grad", "is_contiguous", "__hash__", "_is_view",
    "untyped_storage", "storage_offset", "_version", "is_shared", "share_memory_", "data", "type", "is_inference",
    "_base", "output_nr", "is_pinned", "dim_order", "__class__", "__dict__", "_cdata", "__getstate__",
    "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "new_empty_strided", "is_tensor", "typename",
})
_SIZE = frozenset({"size", "shape", "numel", "dim", "ndim", "nelement", "ndimension", "__len__", "stride", "nbytes"})
_SIZE_OF_ARGUMENT = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
                               "randint_like", "expand_as", "view_as", "reshape_as", "broadcast_to"})
# Ops that take a tensor only for its dtype/device when it is not `self`: `x.to(p)`, `x.type_as(p)`.
_DTYPE_OF_ARGUMENT = frozenset({"to", "type_as", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
_RANDOM_FILLS = frozenset({"normal_", "uniform_", "bernoulli_", "exponential_", "geometric_", "cauchy_",
                           "log_normal_", "random_"})
_INPLACE_DUNDERS = frozenset({"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
                              "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                              "__setitem__", "__imatmul__"})


def op_name(func: Any) -> str:
    """The name a user wrote: `size`, `normal_`, or the property (`shape`, `data`) for a property access."""
    name = getattr(func, "__name__", "")
    if name in ("__get__", "__set__", "__delete__"):
        prop = getattr(getattr(func, "__self__", None), "__name__", "")
        return f"{prop}.{name}"
    return name


def kind_of(func: Any, position: int, kwargs: dict, param: Any) -> Access:
    """What `func` does to the parameter at argument `position` (0: `self` of a method)."""
    name = op_name(func)
    if name.endswith((".__get__", ".__delete__")):
        prop = name.partition(".")[0]
        return Access.SIZE if prop in _SIZE else Access.GRAD if prop in ("grad", "_grad") else Access.META
    if name.endswith(".__set__"):
        return Access.WRITE if name.startswith("data.") and position == 0 else Access.META
    if getattr(func, "__module__", "") == "torch.nn.init":
        return Access.INIT
    if name in _META:
        return Access.META
    if name in _SIZE:
        return Access.SIZE
    if position > 0 and name in _DTYPE_OF_ARGUMENT:
        return Access.META
    if name in _SIZE_OF_ARGUMENT and (position > 0 or not name.endswith("_as")):
        return Access.SIZE
    if any(v is param for v in kwargs.values()) and kwargs.get("out") is param:
        return Access.WRITE
    if position == 0:
        if name in _RANDOM_FILLS:
            return Access.INIT
        if name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("__")):
            return Access.WRITE
    return Access.READ


class AccessWatch(TorchFunctionMode):
    """Calls `on_access(kind, param, op, frame, new)` for every non-metadata use of a partitioned parameter
    (`frame`: the Python frame that called the op; `new`: the tensor a write puts there, when it is one
    whole tensor: `p.data = t`, `p.copy_(t)`, else None).

    `on_tolist(tensor)`, when given, answers `Tensor.tolist()` (a decision on
    values below the dispatcher, so the dispatch-level recorder cannot see it).
    """

    def __init__(self, partitions: Partitions, on_access: Callable[..., None] | None,
                 on_tolist: Callable[[Any, Callable[[], Any]], Any] | None = None) -> None:
        super().__init__()
        self.partitions = partitions
        self.on_access = on_access
        self.on_tolist = on_tolist

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.on_access is not None:
            for position, param in self.partitions.hits(args, kwargs):
                kind = kind_of(func, position, kwargs, param)
                if kind is not Access.META:
                    name = op_name(func)
                    new = args[1] if kind is Access.WRITE and position == 0 and len(args) == 2 and \
                        name in ("data.__set__", "copy_") else None
                    self.on_access(kind, param, name, sys._getframe(1), new)
        if self.on_tolist is not None and getattr(func, "__name__", "") == "tolist" and args:
            return self.on_tolist(args[0], lambda: func(*args, **kwargs))
        return func(*args, **kwargs)
