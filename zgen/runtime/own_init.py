"""The model's own initialisation, as a sequence of per-module steps in `model.apply` order.

A model built on `meta` has no weights; zgen gives it the ones its own code
would give it. Modules are visited children first (the order in which
`model.apply(fn)` calls `fn`), and for each module the steps are:

* its zero-argument re-initialisation methods, in this order:
  `reset_parameters()` (torch's modules and most libraries),
  `_reset_parameters()` (`nn.MultiheadAttention`, `nn.Transformer`),
  `init_weights()` and `init_parameters()` (timm, open_clip and others);
* inside a Hugging Face `PreTrainedModel`, that model's `_init_weights(module)`
  (the nearest enclosing `PreTrainedModel` decides, as `post_init` dispatches
  it for composite models).

A parent's step may write its children's parameters (timm's `init_weights`
re-initialises every `Linear` of the model; T5 writes the shared embedding
from the top): later steps win, exactly as with `model.apply`.
`init_fn`, when given, replaces all of this with `init_fn(module)` per module.
`apply_init` runs the same steps on a model that has real weights, so a plain
CPU model can be given exactly the weights zgen's runtime starts from.
"""

from __future__ import annotations

import inspect
from typing import Callable, Iterator

import torch
from torch import nn

__all__ = ["InitStep", "METHODS", "init_steps", "apply_init"]

# Zero-argument methods that (re)initialise a module's own parameters, tried in this order.
METHODS = ("reset_parameters", "_reset_parameters", "init_weights", "init_parameters")

InitStep = tuple[str, nn.Module, str, Callable[[], object]]  # (module name, module, what runs, the call)


def _post_order(module: nn.Module, prefix: str = "") -> Iterator[tuple[str, nn.Module]]:
    for name, child in module.named_children():
        yield from _post_order(child, f"{prefix}.{name}" if prefix else name)
    yield prefix, module


def _is_hf_model(module: nn.Module) -> bool:
    """A transformers `PreTrainedModel` (found by name, so transformers need not be importable)."""
    return any(c.__name__ == "PreTrainedModel" and c.__module__.startswith("transformers.")
               for c in type(module).__mro__)


def _no_required_args(method: Callable) -> bool:
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def _own_methods(module: nn.Module) -> list[tuple[str, Callable[[], object]]]:
    out = []
    for name in METHODS:
        method = getattr(module, name, None)
        if not callable(method) or isinstance(method, nn.Module) or not _no_required_args(method):
            continue
        # A PreTrainedModel's `init_weights()` re-initialises the whole model: its per-module
        # `_init_weights` is used instead.
        if name == "init_weights" and _is_hf_model(module):
            continue
        out.append((name, method))
    return out


def init_steps(model: nn.Module, init_fn: Callable[[nn.Module], object] | None = None) -> list[InitStep]:
    """Every initialisation call for `model`, in order (see the module docstring)."""
    steps: list[InitStep] = []
    owners: dict[int, nn.Module] = {}  # module id -> nearest enclosing PreTrainedModel

    def find_owners(module: nn.Module, owner: nn.Module | None) -> None:
        if _is_hf_model(module):
            owner = module
        if owner is not None:
            owners[id(module)] = owner
        for child in module.children():
            find_owners(child, owner)

    if init_fn is None:
        find_owners(model, None)
    for name, module in _post_order(model):
        if init_fn is not None:
            steps.append((name, module, getattr(init_fn, "__name__", "init_fn"),
                          lambda m=module: init_fn(m)))
            continue
        for what, method in _own_methods(module):
            steps.append((name, module, what, method))
        owner = owners.get(id(module))
        if owner is not None and callable(getattr(owner, "_init_weights", None)):
            what = f"{type(owner).__name__}._init_weights"
            steps.append((name, module, what, lambda o=owner, m=module: o._init_weights(m)))
    return steps


def apply_init(model: nn.Module, init_fn: Callable[[nn.Module], object] | None = None) -> nn.Module:
    """Initialise a model with real weights in place, as zgen's runtime initialises a meta-built one.

    With the same global seed before the call, the result equals the weights
    `zgen.runtime.initialize` gives the same model built on `meta` (whatever
    the plan and world size), except parameters no step writes: those keep
    their current values here and the constructor's values there.
    """
    with torch.no_grad():
        for _, _, _, call in init_steps(model, init_fn):
            call()
    return model
