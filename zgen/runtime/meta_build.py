"""Building a model with its parameters on `meta` and its buffers as the constructor made them.

Two builds share this module. The runtime's (`build_on_meta(factory,
record="exact"|"seeded")`) records what the constructor does to every large
tensor (`zgen.runtime.deferred`) so the weights can later be made exactly as
`factory()` makes them, shard by shard. The tracer's (`record=None`) needs
shapes only and keeps nothing; it is described below.

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
import os
import sys
import warnings
import weakref
from typing import Any, Callable, Iterator

import torch
from torch import nn

from .deferred import Program, Recorder, Ref, deferred_tensors, is_deferred, user_attrs

__all__ = ["KEEP_NUMEL", "build_on_meta", "constructor_value", "drop_constructor_value", "params_on_meta",
           "program_of", "RECORD_MODES"]

# How the runtime's build records the constructor: "exact" draws every random number of the plain build
# while recording (same bits as `factory()` on the CPU); "seeded" draws nothing then and seeds each random
# call at replay (same distributions, fast on a GPU).
RECORD_MODES = ("exact", "seeded")

_PROGRAMS: "weakref.WeakKeyDictionary[nn.Module, Program]" = weakref.WeakKeyDictionary()

# Parameters up to this many elements keep their constructor values (at most 4 MiB each in fp32): class
# tokens, position tables and projections that libraries draw in `__init__` with no method to redo it.
KEEP_NUMEL = 1 << 20

_VALUE_ATTR = "_zgen_constructor_value"
_TWIN_ATTR = "_zgen_meta_twin"


def constructor_value(param: torch.Tensor) -> torch.Tensor | None:
    """The value the constructor gave a meta parameter built by `build_on_meta`, or None (too large to keep)."""
    return getattr(param, _VALUE_ATTR, None)


def drop_constructor_value(param: torch.Tensor) -> None:
    """Release the kept value once the shards are filled (the meta parameter itself lives on)."""
    param.__dict__.pop(_VALUE_ATTR, None)


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


def build_on_meta(factory: Callable[[], Any], *, record: str | None = None,
                  lines: set[tuple[str, int]] | None = None) -> Any:
    """Call `factory()` with parameters on `meta` and real buffers (see the module docstring).

    With `record` ("exact" or "seeded") the constructor is recorded for
    `program_of(model)` and the random stream advances as the plain build's
    would; without it the random state is left as it was. `lines`, when
    given, receives every (file, line) of code outside torch and the standard
    library that ran while the factory did: what the runtime's build replays.
    Returns what the factory returned; the caller checks that it is a module.
    """
    if lines is not None:
        with _lines_run(lines):
            return build_on_meta(factory, record=record)
    if record is None:
        with torch.random.fork_rng(devices=[]), params_on_meta() as owners:
            model = factory()
        if isinstance(model, nn.Module):
            _move_small(owners + list(model.modules()))
        return model
    if record not in RECORD_MODES:
        raise ValueError(f"record must be one of {RECORD_MODES}, not {record!r}")
    program = Program(seeded=record == "seeded", base_seed=torch.initial_seed() % (2**31))
    recorder = Recorder(program, KEEP_NUMEL)
    with recorder, _large_real_params_deferred(recorder), warnings.catch_warnings():
        # `copy.deepcopy` of a parameter asks a deferred (fake) tensor for its data pointer: torch warns.
        warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
        model = factory()
    if isinstance(model, nn.Module):
        _finish(model, program, recorder)
        _PROGRAMS[model] = program
    return model


_TORCH_DIR = os.path.dirname(torch.__file__)
_STDLIB_DIR = os.path.dirname(os.__file__)
_ZGEN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def _lines_run(lines: set[tuple[str, int]]) -> Iterator[None]:
    """Collect the lines run in model code (a frame of torch, zgen or the standard library is not traced)."""
    def model_code(filename: str) -> bool:
        return not (filename.startswith("<") or filename.startswith(_TORCH_DIR) or filename.startswith(_ZGEN_DIR)
                    or (filename.startswith(_STDLIB_DIR) and "site-packages" not in filename))

    def local(frame, event, arg):
        if event == "line":
            lines.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def scope(frame, event, arg):
        return local if model_code(frame.f_code.co_filename) else None

    previous = sys.gettrace()
    sys.settrace(scope)
    try:
        yield
    finally:
        sys.settrace(previous)


def program_of(model: nn.Module) -> Program | None:
    """What the constructor of a model built with `build_on_meta(..., record=...)` did, or None."""
    return _PROGRAMS.get(model)


@contextlib.contextmanager
def _large_real_params_deferred(recorder: Recorder) -> Iterator[None]:
    """A real parameter above `KEEP_NUMEL` made without a tensor factory (`torch.tensor(table)`) is deferred as
    a constant when it is registered (its value is kept until the replay, which may find it overwritten)."""
    original = nn.Module.register_parameter

    def register_parameter(self: nn.Module, name: str, param: nn.Parameter | None) -> None:
        if (param is not None and not param.is_meta and not is_deferred(param, recorder.program)
                and param.numel() > recorder.threshold):
            param = nn.Parameter(recorder.defer(param), requires_grad=param.requires_grad)
        original(self, name, param)

    nn.Module.register_parameter = register_parameter  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.register_parameter = original  # type: ignore[method-assign]


def _finish(model: nn.Module, program: Program, recorder: Recorder) -> None:
    """After the constructor: every parameter becomes a meta parameter the program knows (small real ones as
    constants), and every deferred buffer or tensor attribute gets its real value now."""
    twins: dict[int, nn.Parameter] = {}
    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is None or (p.is_meta and not is_deferred(p, program)):
                continue  # absent, or put on meta by the model itself: nothing to replay
            if id(p) not in twins:
                fake = p if is_deferred(p, program) else recorder.defer(p)
                meta = nn.Parameter(torch.empty(p.shape, dtype=p.dtype, device="meta"), requires_grad=p.requires_grad)
                meta.__dict__.update(user_attrs(p))
                program.params[id(meta)] = Ref.of(fake)
                program.fakes[id(meta)] = fake
                program.keep.append(meta)
                twins[id(p)] = meta
            mod._parameters[name] = twins[id(p)]
    for _name, owner, attr, value in list(deferred_tensors(model, program)):
        real = program.value(value)
        if attr in owner._buffers:
            owner._buffers[attr] = real
        else:
            object.__setattr__(owner, attr, real)
