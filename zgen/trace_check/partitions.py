"""Which parameters ZeRO-3 holds partitioned at a point of the run, and which of them are gathered now.

DeepSpeed's `zero.Init` partitions a module's own parameters when its
`__init__` returns (`partition`); `deepspeed.initialize` partitions every
parameter of the model it is given (`partition_model`). From then on a
parameter has its values only while it is gathered:

* while a module that holds it runs its forward through `__call__` (the
  pre-forward hook gathers `module.parameters(recurse=False)`), or a module
  it was registered with by `deepspeed.zero.register_external_parameter`;
* inside `deepspeed.zero.GatheredParameters`;
* during the build, while `nn.Module.apply(fn)` calls `fn` on its module
  (DeepSpeed's `zero.Init` wraps `apply` so), see `zero_init`;
* always, after the build, when it has at most `stage3_param_persistence_threshold`
  elements (DeepSpeed keeps those gathered; `numel <= threshold`, as the planner).

Parameters are found by storage: `p.data`, `p.detach()`, a slice or a view
of a partitioned parameter is that parameter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

import torch
from torch import nn

__all__ = ["Partitions", "storage_key"]


def storage_key(t: torch.Tensor) -> int | None:
    """The identity of a tensor's storage (shared by its views, `.data` and `.detach()`), or None."""
    storage = _storage(t)
    return None if storage is None else storage._cdata


def _storage(t: torch.Tensor):
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError, AttributeError, TypeError):
        return None


class Partitions:
    """Partitioned parameters, their owners, and what gathers them right now (see the module docstring).

    `running` is the stack of modules whose forward runs through `__call__`
    (kept by the caller's hooks); `gathers` gathers only after the build
    (`hooks_installed`): under `zero.Init` no hook gathers anything yet.
    """

    def __init__(self, persistence_threshold: int) -> None:
        self.threshold = persistence_threshold
        self._params: dict[int, nn.Parameter] = {}
        self._owners: dict[int, list[nn.Module]] = {}
        self._by_storage: dict[int, int] = {}
        self._storages: list[object] = []
        self._explicit: Counter[int] = Counter()  # GatheredParameters depth per parameter
        self.running: list[nn.Module] = []
        self.hooks_installed = False
        self.names: dict[int, str] = {}  # id(param) -> qualified name, once the model is known
        self.module_names: dict[int, str] = {}

    # -- partitioning ------------------------------------------------------------------------

    def partition(self, module: nn.Module) -> None:
        """Partition a module's own parameters (its `__init__` returned under `zero.Init`)."""
        for p in module._parameters.values():
            if isinstance(p, torch.Tensor):
                self._add(p, module)

    def partition_model(self, model: nn.Module) -> None:
        """Partition every parameter of `model` (`deepspeed.initialize`), and learn the names to report."""
        for mname, m in model.named_modules(remove_duplicate=False):
            self.module_names.setdefault(id(m), mname)
            for pname, p in m._parameters.items():
                if isinstance(p, torch.Tensor):
                    self._add(p, m)
                    self.names.setdefault(id(p), f"{mname}.{pname}" if mname else pname)
        self.hooks_installed = True

    def _add(self, p: torch.Tensor, owner: nn.Module) -> None:
        key = id(p)
        if key not in self._params:
            self._params[key] = p  # kept alive, so ids stay unique
            self._owners[key] = []
        self._know_storage(p)
        if not any(o is owner for o in self._owners[key]):
            self._owners[key].append(owner)

    def _know_storage(self, p: torch.Tensor) -> None:
        """Map `p`'s current storage to it. The storage is kept alive, so its address is never reused by
        another tensor while the map holds it (`p.data = t` gives `p` a new storage: mapped when seen)."""
        storage = _storage(p)
        if storage is not None and storage._cdata not in self._by_storage:
            self._by_storage[storage._cdata] = id(p)
            self._storages.append(storage)

    # -- lookups -----------------------------------------------------------------------------

    def param_of(self, t: torch.Tensor) -> nn.Parameter | None:
        """The partitioned parameter `t` is (or is a view or `.data` of), or None."""
        if not self._by_storage:
            return None
        same = self._params.get(id(t))
        if same is not None:
            self._know_storage(same)
            return same
        skey = storage_key(t)
        pid = self._by_storage.get(skey) if skey is not None else None
        return None if pid is None else self._params[pid]

    def hits(self, args: tuple, kwargs: dict) -> Iterator[tuple[int, nn.Parameter]]:
        """(position, parameter) for each argument of an op that is a partitioned parameter; position 0 is `self`."""
        if not self._by_storage:
            return
        pos = 0
        for a in _flat(args, kwargs):
            if isinstance(a, torch.Tensor):
                p = self.param_of(a)
                if p is not None:
                    yield pos, p
            pos += 1

    def owners(self, p: torch.Tensor) -> list[nn.Module]:
        return self._owners.get(id(p), [])

    def is_persistent(self, p: torch.Tensor) -> bool:
        """Kept gathered after the build: at most `threshold` elements (DeepSpeed's `numel <= threshold`)."""
        return self.hooks_installed and p.numel() <= self.threshold

    def name(self, p: torch.Tensor) -> str:
        return self.names.get(id(p)) or _describe_owner(self, p)

    def module_name(self, m: nn.Module) -> str:
        name = self.module_names.get(id(m))
        if name is None:
            return type(m).__name__
        return name or "<model>"

    # -- gathering ---------------------------------------------------------------------------

    def gather(self, params: Iterable[torch.Tensor]) -> list[int]:
        """`GatheredParameters` entered: these stay gathered until `release`."""
        keys = [id(p) for p in params if id(p) in self._params]
        self._explicit.update(keys)
        return keys

    def release(self, keys: list[int]) -> None:
        self._explicit.subtract(keys)

    def gathered(self, p: torch.Tensor) -> bool:
        """Whether `p` has its values now (not counting `apply` during the build, which `zero_init` knows)."""
        key = id(p)
        if key not in self._params or self._explicit[key] > 0 or self.is_persistent(p):
            return True
        if not self.hooks_installed:
            return False
        owners = self._owners[key]
        for m in self.running:
            if any(m is o for o in owners):
                return True
            external = getattr(m, "_external_params", None)
            if isinstance(external, dict) and key in external:
                return True
        return False


def _flat(args: tuple, kwargs: dict) -> Iterator[object]:
    """An op's arguments, one level into lists and tuples (`torch.cat([a, b])`)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _describe_owner(parts: Partitions, p: torch.Tensor) -> str:
    for owner in parts.owners(p):
        for name, q in owner._parameters.items():
            if q is p:
                return f"{type(owner).__name__}.{name}"
    return f"a parameter of shape {tuple(p.shape)}"
