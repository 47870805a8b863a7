"""DeepSpeed's ZeRO-3 API as the simulated ranks answer it.

User code talks to ZeRO-3 through a few calls, and the trace honours them:

* `deepspeed.zero.GatheredParameters(params)`: the parameters are gathered
  inside the `with` block (`Partitions.gather`); `fwd_module=` registers them
  as external parameters of that module, as DeepSpeed does;
* `deepspeed.zero.register_external_parameter(module, p)`: `p` is gathered
  while `module` runs. DeepSpeed records it in `module._external_params`,
  which is where `Partitions` looks, so the real function needs no patch;
* `deepspeed.zero.Init(...)` around a build: the trace simulates it itself
  (`zero_init`), so it is a no-op here;
* `deepspeed.comm.get_rank()` and friends answer as `torch.distributed` does
  for the simulated rank.

Where DeepSpeed is installed and imported by the user's code, its classes are
patched for the duration of a run and restored after. Where it is not
installed nothing stands in for it: code that imports it fails as it would
under plain Python (a stand-in in `sys.modules` has no import spec and no
package metadata, and libraries that probe for DeepSpeed, transformers and
diffusers among them, fail on it or take it for installed).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from .partitions import Partitions

__all__ = ["GatheredParameters", "register_external_parameter", "unregister_external_parameter", "honoured"]

_active: list[Partitions] = []


def _init(self, params: Any, modifier_rank: int | None = None, fwd_module: Any = None, enabled: bool = True) -> None:
    self.enabled = enabled
    if isinstance(params, torch.Tensor):
        params = [params]
    self._zgen_params = [p for p in (params or ()) if isinstance(p, torch.Tensor)]
    self._zgen_keys: list[int] = []
    if fwd_module is not None:
        for p in self._zgen_params:
            register_external_parameter(fwd_module, p)


def _enter(self) -> None:
    if getattr(self, "enabled", True) and _active:
        self._zgen_keys = _active[-1].gather(getattr(self, "_zgen_params", ()))


def _exit(self, *exc: object) -> None:
    if _active and getattr(self, "_zgen_keys", None):
        _active[-1].release(self._zgen_keys)
        self._zgen_keys = []


class GatheredParameters:
    """`deepspeed.zero.GatheredParameters` of the stub package: gathers `params` inside the block."""

    __init__ = _init
    __enter__ = _enter
    __exit__ = _exit


def register_external_parameter(module: torch.nn.Module, parameter: torch.nn.Parameter) -> None:
    """Gather `parameter` whenever `module` runs (recorded where DeepSpeed records it)."""
    if not isinstance(parameter, torch.nn.Parameter):
        raise RuntimeError("Parameter is not a torch.nn.Parameter")
    if not hasattr(module, "_external_params"):
        module._external_params = {}
    module._external_params[id(parameter)] = parameter


def unregister_external_parameter(module: torch.nn.Module, parameter: torch.nn.Parameter) -> None:
    """Undo `register_external_parameter`."""
    external = getattr(module, "_external_params", None)
    if not isinstance(external, dict) or id(parameter) not in external:
        raise RuntimeError("Parameter is not a registered external parameter of module.")
    del external[id(parameter)]


class _NoInit:
    """`deepspeed.zero.Init(...)`: the trace simulates the partitioning itself."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> _NoInit:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _comm_functions() -> dict[str, Any]:
    return {
        "get_rank": lambda group=None: dist.get_rank(group),
        "get_world_size": lambda group=None: dist.get_world_size(group),
        "get_local_rank": lambda: int(__import__("os").environ.get("LOCAL_RANK", 0)),
        "is_initialized": dist.is_initialized,
        "barrier": lambda *a, **k: dist.barrier(),
        "all_reduce": dist.all_reduce,
        "broadcast": dist.broadcast,
        "all_gather": dist.all_gather,
        "ReduceOp": dist.ReduceOp,
    }


@contextlib.contextmanager
def honoured(partitions: Partitions) -> Iterator[None]:
    """While active, GatheredParameters (real or stub) gathers into `partitions`; the real DeepSpeed is patched."""
    _active.append(partitions)
    undo: list[tuple[object, str, object]] = []

    def patch(owner: object, name: str, value: object) -> None:
        undo.append((owner, name, owner.__dict__.get(name, _MISSING) if isinstance(owner, type)
                     else getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    for gp in _real_classes("GatheredParameters"):
        patch(gp, "__init__", _init)
        patch(gp, "__enter__", _enter)
        patch(gp, "__exit__", _exit)
    for init in _real_classes("Init"):
        patch(init, "__init__", _NoInit.__init__)
        patch(init, "__enter__", _NoInit.__enter__)
        patch(init, "__exit__", _NoInit.__exit__)
        patch(init, "__del__", lambda self: None)
    for name in ("deepspeed.comm", "deepspeed.comm.comm"):
        comm = sys.modules.get(name)
        if comm is not None and not getattr(comm, "_zgen_stub", False):
            for fname, fn in _comm_functions().items():
                if hasattr(comm, fname):
                    patch(comm, fname, fn)
    try:
        yield
    finally:
        for owner, name, old in reversed(undo):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        _active.pop()


_MISSING = object()


def _real_classes(name: str) -> list[type]:
    """DeepSpeed's class `name` of `deepspeed.zero`, wherever the imported package exposes it (once each)."""
    found: list[type] = []
    ds = sys.modules.get("deepspeed")
    places = [getattr(ds, "zero", None), sys.modules.get("deepspeed.zero"),
              sys.modules.get("deepspeed.runtime.zero.partition_parameters")]
    for place in places:
        cls = getattr(place, name, None) if place is not None and not getattr(place, "_zgen_stub", False) else None
        if isinstance(cls, type) and cls not in found:
            found.append(cls)
    return found
