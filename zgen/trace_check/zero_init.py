"""Simulated `deepspeed.zero.Init`: the factory runs with each module's own parameters partitioned as soon as that
module's `__init__` returns.

How it is watched, and why. DeepSpeed wraps the `__init__` of every
`nn.Module` subclass and partitions after the outermost `__init__` of an
instance returns (a subclass calling `super().__init__()` is one build). The
trace does not rewrite classes: `InitWatcher` is a `sys.settrace` function,
active only while the factory runs, that sees every `__init__` frame whose
`self` is a module and counts them per instance; when the outermost one
returns, the instance's own parameters are partitioned. This sees classes
defined inside the factory too, restores nothing afterwards (no class was
touched), and costs one Python call per function call of the build only
(`sys.monitoring` would be cheaper, but zgen supports Python 3.10 and 3.11).

What gathers during the build (`gathered_in_build`):

* `nn.Module.apply(fn)`: DeepSpeed's `zero.Init` wraps `apply` so that each
  module's own parameters (`parameters(recurse=False)`) are gathered while
  `fn(module)` runs. The same holds here for the recursions libraries write
  under another name (`named_apply` in timm, `smart_apply` in transformers):
  the innermost such frame gathers the module it is calling `fn` on, and
  nothing else. An init function that reaches into that module's children
  (`module.q.weight`, a scaled `c_proj.weight` found by
  `module.named_parameters()`) writes partitioned placeholders, as it does
  under DeepSpeed (a library's `init_weights` called from `__init__` is no
  exception: only its loading path wraps the init in `GatheredParameters`);
* `GatheredParameters`, as everywhere (`deepspeed_api`).

A module called while an `__init__` runs (a shape probe) computes with
partitioned parameters: ZG110 at the call, not one finding per read.
"""

from __future__ import annotations

import sys
from collections import Counter
from types import FrameType
from typing import Any

from torch import nn

from .partitions import Partitions

__all__ = ["InitWatcher", "gathered_in_build"]

# Recursions over modules that call a function on each one, as `nn.Module.apply` does.
_APPLY_LIKE = frozenset({"apply", "named_apply", "smart_apply", "apply_to_modules"})


class InitWatcher:
    """`sys.settrace` function for the factory: partitions each module when its outermost `__init__` returns.

    `inits` is the number of module `__init__` frames running now (a module
    called while it is positive is a forward in `__init__`).
    """

    def __init__(self, partitions: Partitions) -> None:
        self.partitions = partitions
        self.inits = 0
        self._depth: Counter[int] = Counter()

    def __call__(self, frame: FrameType, event: str, arg: Any):
        if event != "call" or frame.f_code.co_name != "__init__" or frame.f_code.co_argcount < 1:
            return None
        obj = frame.f_locals.get(frame.f_code.co_varnames[0])
        if not isinstance(obj, nn.Module):
            return None
        self._depth[id(obj)] += 1
        self.inits += 1
        frame.f_trace_lines = False
        return self._returns(obj)

    def _returns(self, obj: nn.Module):
        def local(frame: FrameType, event: str, arg: Any):
            if event == "return":
                self.inits -= 1
                self._depth[id(obj)] -= 1
                if self._depth[id(obj)] <= 0:
                    del self._depth[id(obj)]
                    self.partitions.partition(obj)
            return local
        return local

    def __enter__(self) -> InitWatcher:
        self._previous = sys.gettrace()
        sys.settrace(self)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)


def gathered_in_build(frame: FrameType | None, param: object) -> bool:
    """Whether `param` is gathered at `frame` of the build by `apply` (on a module holding it now: a weight
    tied after it was partitioned counts for its new holder too)."""
    applying = None
    while frame is not None:
        code = frame.f_code
        if applying is None and code.co_name in _APPLY_LIKE:
            local = frame.f_locals
            for key in code.co_varnames[:code.co_argcount]:  # the module `fn` is called on: an argument
                value = local.get(key)
                if isinstance(value, nn.Module):
                    applying = value
                    break
            if applying is not None and any(p is param for p in applying._parameters.values()):
                return True
        frame = frame.f_back
    return False
