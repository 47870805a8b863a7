"""A model's constructor recorded without memory, and replayed where its weights are made.

`zgen.runtime.initialize(factory, ...)` must give each rank exactly the
weights `factory()` would give on the CPU (the same seed gives the same bits),
without any rank ever holding the whole model. The constructor is run once
under `Recorder`, a `TorchFunctionMode`:

* a tensor factory (`torch.empty`, `torch.randn`, ...) asked for more than
  `meta_build.KEEP_NUMEL` elements returns a *deferred* tensor: a fake tensor
  (shape, dtype, no memory) whose storage the recorder knows;
* every later call that reads or writes a deferred tensor (`nn.init.*`,
  `w.data.normal_()`, `self.head.weight[:] = ...`, `p.clone()` in a
  `deepcopy`, `w * 0.02`) is run on the fakes and appended to a `Program`,
  with which storages it reads, writes, fully overwrites and produces. Views
  need no record: a view of a deferred tensor is the storage plus geometry;
* a call that draws random numbers advances the real generator as the plain
  build would (it is run once on a throw-away real tensor of the same shape
  and strides), and the generator's state before it is kept, so the replay
  draws the very same numbers. Smaller tensors stay real and draw at the
  right moment of the stream because of that;
* a Python decision on a deferred value (`if mask.any()` in rejection
  sampling, `.item()`) replays what that value needs, on the spot.

`Program.replay` then runs only the calls a final value depends on (a weight
that is re-initialised three times is drawn once, after the dead draws were
skipped), in order, freeing each storage after its last use and handing each
parameter to a sink the moment its value is final; the runtime's sink copies
this rank's slice into the shard. Peak memory is a few parameters, not the
model.

Fake rather than meta tensors: torch's own initialisers return early on meta
tensors (`trunc_normal_`, `orthogonal_`), so on meta their writes would never
be seen. Random calls under `seeded=True` (fast on a GPU: nothing is drawn while
recording) instead seed the replay device's generator per call from the build
seed: the same distributions and the same constructor writes, reproducible
from the seed, but not the CPU build's bits.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from zgen.errors import ZgenError

__all__ = ["Ref", "Program", "Recorder", "storage_key", "is_deferred", "deferred_tensors", "user_attrs"]

_TORCH_DIR = os.path.dirname(torch.__file__)
_ZGEN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Tensor factories whose result may be deferred, and those among them that draw random numbers.
_FACTORIES = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn, torch.randint,
              torch.randperm, torch.empty_strided, torch.arange, torch.linspace, torch.logspace, torch.eye}
_RANDOM_FACTORIES = {torch.rand, torch.randn, torch.randint, torch.randperm}
# Uninitialised memory: a parameter whose value comes only from one of these was never set.
_UNSET = {torch.empty, torch.empty_strided, torch.empty_like}
_UNSET_METHODS = {"new_empty", "new_empty_strided"}

_RANDOM_METHODS = frozenset({"normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_",
                             "log_normal_", "cauchy_", "bernoulli", "multinomial"})
_RANDOM_FUNCS = {torch.rand_like, torch.randn_like, torch.randint_like, torch.normal, torch.bernoulli,
                 torch.multinomial, torch.poisson}
# Initialisers reach a mode under their own name, and libraries wrap them under the same name (transformers
# replaces `torch.nn.init.normal_` by a guarded copy): any in-place function so named is taken to draw.
_RANDOM_WORDS = ("normal", "uniform", "bernoulli", "random", "exponential", "geometric", "cauchy", "orthogonal",
                 "sparse", "xavier", "kaiming")
# Calls that set every element of their first argument without reading it.
_FILL_METHODS = frozenset({"normal_", "uniform_", "random_", "exponential_", "geometric_", "log_normal_",
                           "cauchy_", "bernoulli_", "fill_", "zero_", "copy_"})
# (A wrapper of the same name may skip its write, so only torch's own initialisers count.)
_FILL_FUNCS = {nn.init.uniform_, nn.init.normal_, nn.init.constant_, nn.init.kaiming_uniform_}
# In-place methods that change a tensor's geometry or flags, not its values.
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "t_", "transpose_", "squeeze_",
                         "unsqueeze_", "as_strided_", "swapdims_", "swapaxes_", "retain_grad", "record_stream"})
_INPLACE_DUNDERS = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                              "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
                              "__irshift__", "__imatmul__"})
# Reads of metadata only: answered by the fake tensor itself.
_METADATA = frozenset({"__get__", "size", "dim", "numel", "stride", "storage_offset", "element_size",
                       "is_contiguous", "is_floating_point", "is_complex", "nelement", "ndimension",
                       "__len__", "__hash__", "__repr__", "__format__", "data_ptr", "untyped_storage",
                       "get_device", "type"})


def storage_key(t: torch.Tensor) -> int:
    """The identity of a tensor's storage (views share it)."""
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return -id(t)


@dataclass(frozen=True, slots=True)
class Ref:
    """A deferred tensor as the program sees it: a storage and a view of it."""

    storage: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: torch.dtype

    @classmethod
    def of(cls, t: torch.Tensor) -> Ref:
        return cls(storage_key(t), tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.size:
            n *= s
        return n


@dataclass(slots=True)
class _Storage:
    numel: int  # in elements of `dtype`
    dtype: torch.dtype
    device: torch.device  # where the plain build would have made it


@dataclass(slots=True)
class _Call:
    fn: Callable[..., Any]
    args: Any  # (args, kwargs) with deferred tensors as `Ref` and real ones as snapshots
    outputs: list[Ref | None]  # per tensor leaf of the result: the storage it produced, if new
    reads: frozenset[int]
    writes: frozenset[int]
    overwrites: frozenset[int]  # written in full and not read
    produces: frozenset[int]
    rng: tuple[torch.Generator, torch.Tensor] | None  # the generator and its state before the call
    seed: int | None  # under `seeded`: the call's own seed
    site: tuple[str, int] | None
    unset: bool = False  # produces uninitialised memory (`torch.empty`)


def _deepcopy(t: torch.Tensor) -> torch.Tensor:
    """`copy.deepcopy` of one tensor with a memo of its own (the replay's form of a recorded deepcopy)."""
    return t.__deepcopy__({})


def _const(value: torch.Tensor) -> torch.Tensor:
    """The call that produces a value known when it was recorded (a parameter the constructor left real)."""
    return value


@dataclass
class Program:
    """What a constructor (and the initialisation after it) did to deferred tensors, in order."""

    storages: dict[int, _Storage] = field(default_factory=dict)
    calls: list[_Call] = field(default_factory=list)
    keep: list[torch.Tensor] = field(default_factory=list)  # fakes kept alive: storage keys stay unique
    seeded: bool = False
    base_seed: int = 0
    # After the build: each meta parameter of the model (by id) -> the deferred tensor it stands for.
    params: dict[int, Ref] = field(default_factory=dict)
    fakes: dict[int, torch.Tensor] = field(default_factory=dict)

    def knows(self, t: torch.Tensor) -> bool:
        return storage_key(t) in self.storages

    def add_storage(self, t: torch.Tensor, device: torch.device) -> None:
        key = storage_key(t)
        if key not in self.storages:
            size = t.untyped_storage().nbytes() // max(t.element_size(), 1)
            self.storages[key] = _Storage(size, t.dtype, device)
            self.keep.append(t)

    def add_constant(self, fake: torch.Tensor, value: torch.Tensor) -> None:
        """Make `fake` a deferred tensor whose value is `value` (kept until the replay)."""
        self.add_storage(fake, value.device)
        self.calls.append(_Call(fn=_const, args=((value.detach().clone(),), {}), outputs=[Ref.of(fake)], reads=frozenset(),
                                writes=frozenset(), overwrites=frozenset(), produces=frozenset({storage_key(fake)}),
                                rng=None, seed=None, site=None))

    def add_unset(self, fake: torch.Tensor, device: torch.device) -> None:
        """Make `fake` a deferred tensor of uninitialised memory (a parameter its author built on meta)."""
        self.add_storage(fake, device)
        self.calls.append(_Call(fn=torch.empty, args=((tuple(fake.shape),), {"dtype": fake.dtype, "device": device}),
                                outputs=[Ref.of(fake)], reads=frozenset(), writes=frozenset(),
                                overwrites=frozenset(), produces=frozenset({storage_key(fake)}), rng=None, seed=None,
                                site=None, unset=True))

    def sites(self) -> set[tuple[str, int]]:
        """The user lines (file, line) whose calls wrote or made a deferred tensor."""
        return {c.site for c in self.calls if c.site is not None and (c.writes or c.produces)}

    # -- replay --------------------------------------------------------------------------------

    def live(self, wanted: set[int]) -> list[int]:
        """Indices of the calls the final contents of `wanted` storages depend on, in order."""
        need = set(wanted)
        keep: list[int] = []
        for i in range(len(self.calls) - 1, -1, -1):
            c = self.calls[i]
            if (c.produces | c.writes) & need:
                keep.append(i)
                need -= c.produces
                need -= c.overwrites
                need |= c.reads
        keep.reverse()
        return keep

    def unset(self, wanted: set[int]) -> set[int]:
        """Wanted storages whose final contents are uninitialised memory (or were never made at all)."""
        bad = set()
        for s in wanted:
            source = None
            for i in self.live({s}):
                c = self.calls[i]
                if s in c.produces or s in c.writes:
                    source = c
            if source is None or (source.unset and s not in source.writes):
                bad.add(s)
        return bad

    def replay(self, wanted: dict[str, Ref], sink: Callable[[str, torch.Tensor], None], device: torch.device) -> None:
        """Compute every wanted tensor and hand it to `sink(name, value)` as soon as its value is final.

        Tensors are made on `device` under `seeded`, else on the device the
        constructor would have used (the recorded generator states belong to it).
        """
        by_storage: dict[int, list[str]] = {}
        for name, ref in wanted.items():
            by_storage.setdefault(ref.storage, []).append(name)
        order = self.live(set(by_storage))
        last: dict[int, int] = {}
        for i in order:
            c = self.calls[i]
            for s in c.reads | c.writes | c.produces:
                last[s] = i
        real: dict[int, torch.Tensor] = {}
        with _KeptGenerators() as gens, torch.no_grad():
            for i in order:
                c = self.calls[i]
                self._run(c, real, device, gens)
                for s in c.reads | c.writes | c.produces:
                    if last.get(s) != i:
                        continue
                    for name in by_storage.get(s, ()):
                        sink(name, _view(real, wanted[name], self, device))
                    real.pop(s, None)
        for s in set(by_storage) - set(last):
            for name in by_storage[s]:
                sink(name, _view(real, wanted[name], self, device))  # never made: uninitialised memory

    def value(self, t: torch.Tensor) -> torch.Tensor:
        """The real value of one deferred tensor now (for a decision the constructor takes on it)."""
        out: list[torch.Tensor] = []
        ref = Ref.of(t)
        self.replay({"": ref}, lambda _n, v: out.append(v.clone()), self.storages[ref.storage].device)
        return out[0]

    def _run(self, c: _Call, real: dict[int, torch.Tensor], device: torch.device, gens: _KeptGenerators) -> None:
        dev = device if self.seeded else None

        def to_real(x):
            if isinstance(x, Ref):
                return _view(real, x, self, dev)
            if isinstance(x, torch.Tensor):
                return x.to(dev) if dev is not None else x
            if isinstance(x, torch.Generator) and self.seeded:
                return None  # the device's own generator, seeded per call
            return x

        args, kwargs = pytree.tree_map(to_real, c.args, is_leaf=lambda x: isinstance(x, Ref))
        if dev is not None and c.fn in _FACTORIES:
            kwargs = {**kwargs, "device": dev}
        if c.rng is not None:
            gen, state = c.rng
            gens.keep(gen)
            gen.set_state(state)
        elif c.seed is not None:
            gen = _default_generator(dev or torch.device("cpu"))
            gens.keep(gen)
            gen.manual_seed(c.seed)
        out = c.fn(*args, **kwargs)
        for leaf, ref in zip(pytree.tree_leaves(out), c.outputs):
            if ref is None or not isinstance(leaf, torch.Tensor):
                continue
            if (tuple(leaf.shape), tuple(leaf.stride()), leaf.storage_offset()) == (ref.size, ref.stride, ref.offset) \
                    and leaf.untyped_storage().nbytes() >= self.storages[ref.storage].numel * leaf.element_size():
                real[ref.storage] = leaf
            else:  # the real kernel chose another layout than the fake one: copy into the recorded one
                _view(real, ref, self, dev).copy_(leaf)


def _view(real: dict[int, torch.Tensor], ref: Ref, program: Program, device: torch.device | None) -> torch.Tensor:
    """The real tensor a `Ref` stands for (its storage allocated, uninitialised, on first use)."""
    base = real.get(ref.storage)
    if base is None:
        info = program.storages[ref.storage]
        base = torch.empty(info.numel, dtype=info.dtype, device=device or info.device)
        real[ref.storage] = base
    if base.dtype != ref.dtype:
        raise ZgenError(f"a tensor built by the model's constructor is viewed as {ref.dtype} over a {base.dtype} "
                        "storage, which zgen cannot replay", help="build that tensor with the dtype it is used in")
    return base.as_strided(ref.size, ref.stride, ref.offset)


def _default_generator(device: torch.device) -> torch.Generator:
    if device.type == "cuda":
        return torch.cuda.default_generators[device.index if device.index is not None else torch.cuda.current_device()]
    return torch.default_generator


class _KeptGenerators:
    """Puts back every generator the replay reseeds, so replaying changes no random stream."""

    def __init__(self) -> None:
        self.saved: dict[int, tuple[torch.Generator, torch.Tensor]] = {}

    def keep(self, gen: torch.Generator) -> None:
        if id(gen) not in self.saved:
            self.saved[id(gen)] = (gen, gen.get_state())

    def __enter__(self) -> _KeptGenerators:
        return self

    def __exit__(self, *exc) -> None:
        for gen, state in self.saved.values():
            gen.set_state(state)


def _user_site() -> tuple[str, int] | None:
    frame = sys._getframe(1)
    while frame is not None:
        f = frame.f_code.co_filename
        if not (f.startswith("<") or f.startswith(_TORCH_DIR) or f.startswith(_ZGEN_DIR)
                or (f.startswith(os.path.dirname(os.__file__)) and "site-packages" not in f)):
            return f, frame.f_lineno
        frame = frame.f_back
    return None


class Recorder(TorchFunctionMode):
    """Runs a constructor with large tensors deferred, appending what it does to them to `program`.

    `threshold` is read when the recorder starts: tensors with more elements are
    deferred. Under `seeded` nothing random is drawn while recording.
    """

    def __init__(self, program: Program, threshold: int) -> None:
        super().__init__()
        from torch._subclasses.fake_tensor import FakeTensorMode

        self.program = program
        self.threshold = threshold
        self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        self.calls = 0

    # -- deferred tensors ------------------------------------------------------------------------

    def fake_like(self, t: torch.Tensor) -> torch.Tensor:
        """A fake tensor of `t`'s shape, strides and dtype, with a storage of its own."""
        with self.fake_mode:
            return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="cpu")

    def defer(self, t: torch.Tensor, value: torch.Tensor | None = None) -> torch.Tensor:
        """A deferred stand-in for a real tensor (its value recorded as a constant)."""
        fake = self.fake_like(t)
        self.program.add_constant(fake, t if value is None else value)
        return fake

    def _deferred(self, x: Any) -> bool:
        return isinstance(x, torch.Tensor) and self.program.knows(x)

    # -- the mode --------------------------------------------------------------------------------

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FACTORIES:
            return self._factory(func, args, kwargs)
        leaves = pytree.tree_leaves((args, kwargs))
        if not any(self._deferred(x) for x in leaves):
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in _METADATA:
            return func(*args, **kwargs)
        written = self._written(func, name, args, kwargs)
        if any(not self._deferred(t) for t in written):
            return self._on_real(func, args, kwargs)  # a real tensor written from deferred values
        before = {storage_key(x) for x in leaves if isinstance(x, torch.Tensor)}
        try:
            out = func(*args, **kwargs)
        except Exception:
            # The fake kernel needs values (`bool(mask.any())`, `nonzero`) or has none: run it for real.
            return self._on_real(func, args, kwargs)
        self._record(func, name, args, kwargs, written, before, out)
        return out

    def _factory(self, func, args, kwargs):
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "meta":
            return func(*args, **kwargs)  # the constructor asked for meta itself
        probe_kwargs = {k: v for k, v in kwargs.items() if k not in ("generator", "pin_memory", "out")}
        try:
            probe = func(*args, **{**probe_kwargs, "device": "meta"})
        except Exception:
            return func(*args, **kwargs)
        if not isinstance(probe, torch.Tensor) or probe.numel() <= self.threshold or "out" in kwargs:
            return func(*args, **kwargs)
        origin = torch.device(device) if device is not None else _default_device()
        rng = seed = None
        if func in _RANDOM_FACTORIES:
            rng, seed = self._draw(func, args, {**kwargs, "device": origin}, origin)
        fake = self.fake_like(probe)
        self.program.add_storage(fake, origin)
        call_kwargs = {k: v for k, v in kwargs.items() if k != "requires_grad"}
        self._append(func, (args, {**call_kwargs, "device": origin}), [Ref.of(fake)], set(), set(), set(),
                     {storage_key(fake)}, rng, seed, unset=func in _UNSET)
        return fake.requires_grad_(bool(kwargs.get("requires_grad", False)))

    def _written(self, func, name: str, args, kwargs) -> list[torch.Tensor]:
        out = kwargs.get("out")
        written = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)] if out is not None else []
        first = _first(args, kwargs)
        inplace = (name.endswith("_") and not name.startswith("__") and name not in _NOT_WRITES) \
            or name in _INPLACE_DUNDERS or kwargs.get("inplace") is True
        if inplace and first is not None:
            written += [t for t in pytree.tree_leaves(first) if isinstance(t, torch.Tensor)]
        return written

    def _record(self, func, name: str, args, kwargs, written, before: set[int], out) -> None:
        """Append a call that ran on fakes (`out` is its fake result) to the program."""
        outputs: list[Ref | None] = []
        produces: set[int] = set()
        origin = next(self.program.storages[storage_key(t)].device
                      for t in pytree.tree_leaves((args, kwargs)) if self._deferred(t))
        for leaf in pytree.tree_leaves(out):
            if isinstance(leaf, torch.Tensor) and storage_key(leaf) not in before and _is_fake(leaf):
                self.program.add_storage(leaf, origin)
                outputs.append(Ref.of(leaf))
                produces.add(storage_key(leaf))
            else:
                outputs.append(None)
        writes = {storage_key(t) for t in written}
        if not writes and not produces:
            return  # a view or a metadata answer: the geometry of its result is all there is to know
        fill = (name in _FILL_METHODS and getattr(torch.Tensor, name, None) is func) or func in _FILL_FUNCS
        overwrites = {storage_key(written[0])} if fill and written and _covers(written[0], self.program) else set()
        head = _first(args, kwargs)
        first = [t for t in pytree.tree_leaves(head) if self._deferred(t)]
        rest = [t for t in pytree.tree_leaves((args, kwargs)) if self._deferred(t) and not any(t is f for f in first)]
        reads = {storage_key(t) for t in rest} | {storage_key(t) for t in first if storage_key(t) not in overwrites}
        random = func in _RANDOM_FUNCS or name in _RANDOM_METHODS or (
            name.endswith("_") and not name.startswith("_") and any(w in name for w in _RANDOM_WORDS))
        rng, seed = self._draw(func, args, kwargs, origin) if random else (None, None)
        self._append(func, (args, kwargs), outputs, reads, writes, overwrites, produces, rng, seed,
                     unset=func in _UNSET or name in _UNSET_METHODS)

    def _append(self, func, call_args, outputs, reads, writes, overwrites, produces, rng, seed, unset=False):
        if func is torch.Tensor.__deepcopy__:
            # The caller's memo maps ids of objects alive now to their copies; by the replay those ids may
            # belong to new objects (a fresh storage), and deepcopy would hand back a stale copy instead.
            func, call_args = _deepcopy, ((call_args[0][0],), {})
        snap = pytree.tree_map(self._snapshot, call_args)
        self.program.calls.append(_Call(fn=func, args=snap, outputs=outputs, reads=frozenset(reads),
                                        writes=frozenset(writes), overwrites=frozenset(overwrites),
                                        produces=frozenset(produces), rng=rng, seed=seed, site=_user_site(),
                                        unset=unset))
        self.calls += 1

    def _snapshot(self, x):
        if isinstance(x, torch.Tensor):
            if self._deferred(x):
                return Ref.of(x)
            if _is_fake(x):
                raise _NeedsValues()  # a fake the program does not know (made outside the recorder)
            return x.detach().clone()
        return x

    def _draw(self, func, args, kwargs, origin: torch.device):
        """Advance the real random stream exactly as the plain build would; return its state before."""
        if self.program.seeded:
            self.program.base_seed += 1
            return None, (self.program.base_seed * 1_000_003) % (2**63)
        gen = kwargs.get("generator") or _default_generator(origin)
        state = gen.get_state()

        def stand_in(x):
            if self._deferred(x):
                t = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=origin)
                t.__dict__.update(user_attrs(x))  # a guarded initialiser (HF's `_is_hf_initialized`) decides alike
                return t
            return x

        a, k = pytree.tree_map(stand_in, (args, kwargs))
        with torch.no_grad():
            func(*a, **k)
        return (gen, state), None

    def _on_real(self, func, args, kwargs):
        """Run a call for real, deferred inputs replaced by their values (computed now)."""
        def real(x):
            return self.program.value(x) if self._deferred(x) else x

        a, k = pytree.tree_map(real, (args, kwargs))
        return func(*a, **k)


_FAKE_ATTRS: frozenset[str] | None = None


def user_attrs(t: torch.Tensor) -> dict[str, Any]:
    """Attributes a library set on a tensor (timm, HF), without a fake tensor's own bookkeeping."""
    global _FAKE_ATTRS
    if _FAKE_ATTRS is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode():
            probe = nn.Parameter(torch.empty(1))
        _FAKE_ATTRS = frozenset(probe.__dict__) | {"_zgen_meta_twin", "_zgen_constructor_value"}
    return {k: v for k, v in t.__dict__.items() if k not in _FAKE_ATTRS}


class _NeedsValues(Exception):
    pass


def _first(args: tuple, kwargs: dict) -> Any:
    """The argument a call acts on: the first positional one, or the keyword torch passes it as
    (`torch.nn.init` hands `tensor=` to a mode through `handle_torch_function`)."""
    if args:
        return args[0]
    for key in ("tensor", "input", "self"):
        if key in kwargs:
            return kwargs[key]
    return None


def _is_fake(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def _covers(t: torch.Tensor, program: Program) -> bool:
    """Whether `t` views every element of its storage exactly once."""
    info = program.storages.get(storage_key(t))
    if info is None or t.numel() != info.numel or t.storage_offset() != 0:
        return False
    try:
        from torch._prims_common import is_non_overlapping_and_dense

        return bool(is_non_overlapping_and_dense(t))
    except Exception:
        return t.is_contiguous()


def _default_device() -> torch.device:
    get = getattr(torch, "get_default_device", None)
    return get() if get is not None else torch.device("cpu")


def is_deferred(t: torch.Tensor, program: Program | None) -> bool:
    """Whether `t` is a deferred tensor of `program`."""
    return program is not None and isinstance(t, torch.Tensor) and program.knows(t)


def deferred_tensors(module: nn.Module, program: Program) -> Iterator[tuple[str, nn.Module, str, torch.Tensor]]:
    """(qualified name, owner, attribute, tensor) for every deferred buffer or tensor attribute of `module`."""
    for mod_name, mod in module.named_modules():
        for attr, value in list(vars(mod).items()):
            if attr in ("_parameters", "_modules"):
                continue
            if attr == "_buffers":
                for b_name, buf in value.items():
                    if is_deferred(buf, program):
                        yield (f"{mod_name}.{b_name}" if mod_name else b_name), mod, b_name, buf
            elif is_deferred(value, program):
                yield (f"{mod_name}.{attr}" if mod_name else attr), mod, attr, value
