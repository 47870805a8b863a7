"""Building a model with its parameters on `meta` and its buffers as the constructor made them.

Under `with torch.device("meta")` every tensor the constructor creates is
empty, buffers included: a BERT's `position_ids` would come out as whatever
fills fresh memory later (zeros), and training would run on. Here the
constructor runs on the default device instead, and `register_parameter` is
wrapped (the technique of accelerate's `init_empty_weights(include_buffers=False)`):

* a parameter above `KEEP_NUMEL` elements moves to `meta` the moment it is
  registered, so the constructor's own initialisation of it runs on `meta`
  and costs nothing;
* a smaller one (biases, norms, tokens, gates, scalars) stays real while the
  constructor runs and moves to `meta` when the factory returns; the value
  the constructor left in it is kept on the meta parameter
  (`constructor_value`), and the runtime starts that parameter from it before
  the model's own initialisation runs (which may or may not rewrite it);
* buffers are never touched: they hold the constructor's values.

The global random state is restored afterwards, so building never shifts the
numbers the initialisation draws next.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch
from torch import nn

__all__ = ["KEEP_NUMEL", "build_on_meta", "constructor_value", "params_on_meta"]

# Parameters up to this many elements keep their constructor values (at most 256 KiB each in fp32).
KEEP_NUMEL = 65_536

_VALUE_ATTR = "_zgen_constructor_value"
_TWIN_ATTR = "_zgen_meta_twin"


def constructor_value(param: torch.Tensor) -> torch.Tensor | None:
    """The value the constructor gave a meta parameter built by `build_on_meta`, or None (too large to keep)."""
    return getattr(param, _VALUE_ATTR, None)


def _to_meta(param: nn.Parameter) -> nn.Parameter:
    """A meta parameter of the same class, `requires_grad` and attributes (HF and timm set some)."""
    meta = param.detach().to("meta")
    try:
        new = type(param)(meta, requires_grad=param.requires_grad)
    except TypeError:
        new = nn.Parameter(meta, requires_grad=param.requires_grad)
    new.__dict__.update({k: v for k, v in param.__dict__.items() if k != _TWIN_ATTR})
    return new


def _meta_twin(param: nn.Parameter, keep_value: bool = False) -> nn.Parameter:
    """The one meta parameter standing for `param` (memoised on it, so tied weights stay one object)."""
    twin = param.__dict__.get(_TWIN_ATTR)
    if twin is None:
        twin = _to_meta(param)
        if keep_value:
            setattr(twin, _VALUE_ATTR, param.detach().clone())
        setattr(param, _TWIN_ATTR, twin)
    return twin


@contextlib.contextmanager
def params_on_meta() -> Iterator[list[nn.Module]]:
    """While active, registered parameters above `KEEP_NUMEL` elements move to `meta` at once.

    Yields the modules that registered a parameter, so the caller can move the
    small ones when construction is over.
    """
    original = nn.Module.register_parameter
    owners: list[nn.Module] = []

    def register_parameter(self: nn.Module, name: str, param: nn.Parameter | None) -> None:
        original(self, name, param)
        p = self._parameters.get(name)
        if p is None:
            return
        owners.append(self)
        if not p.is_meta and p.numel() > KEEP_NUMEL:
            self._parameters[name] = _meta_twin(p)

    nn.Module.register_parameter = register_parameter  # type: ignore[method-assign]
    try:
        yield owners
    finally:
        nn.Module.register_parameter = original  # type: ignore[method-assign]


def _move_small(modules: list[nn.Module]) -> None:
    """Move the parameters left real to `meta`, keeping each one's value (tied ones stay one object)."""
    seen: set[int] = set()
    for mod in modules:
        if id(mod) in seen:
            continue
        seen.add(id(mod))
        for name, p in list(mod._parameters.items()):
            if p is not None and not p.is_meta:
                mod._parameters[name] = _meta_twin(p, keep_value=True)


def build_on_meta(factory: Callable[[], Any]) -> Any:
    """Call `factory()` with parameters on `meta` and real buffers (see the module docstring).

    Returns what the factory returned; the caller checks that it is a module.
    """
    with torch.random.fork_rng(devices=[]), params_on_meta() as owners:
        model = factory()
    if isinstance(model, nn.Module):
        _move_small(owners + list(model.modules()))
    return model
