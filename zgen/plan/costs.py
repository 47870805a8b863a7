"""What each module's forward costs, recorded while the trace runs: FLOPs, bytes moved, bytes saved for backward.

The tracer (`zgen.plan.trace`) sees every torch function the model calls;
`CostRecorder` classifies each call, attributes it to the innermost running
module and sums per module (`ModuleCost`), for the step-time and memory model
of `zgen plan --auto` (`zgen.plan.auto`):

* *matmul* calls (`F.linear`, `matmul`/`mm`/`bmm`/`addmm`/`baddbmm`, convolutions):
  2 x M x N x K FLOPs;
* *attention* (`F.scaled_dot_product_attention`): 4 x query rows x key rows x
  head dim FLOPs per head (half of it with `is_causal`). On the meta device the
  call is replaced by `FlashAttention`, which saves what a fused attention
  kernel keeps (query, key, value, output and the fp32 log-sum-exp per row)
  rather than the math kernel's attention matrix;
* the *loss* (`cross_entropy`, `nll_loss`, `log_softmax`): the logits it reads
  (elements) and the bytes it saves (the log-softmax's output);
* everything else that writes a new tensor: the bytes it reads and writes
  (views write nothing and count nothing). Calls whose output ends in the
  vocabulary dimension (the logits' copies and upcasts) are the loss region's
  and counted there instead.

Bytes saved for backward (each storage once, parameters excluded) are
attributed to the module running when autograd saves them, and counted twice:
`saved` is what eager execution keeps; `saved_compiled` what a compiled unit
keeps under inductor's recomputation of elementwise chains: a tensor both made
and saved only by elementwise calls is recomputed in backward from the tensors
around it, so it is left out; what a matmul or attention saves, and what
matmuls and attention produce, stays. A compiled unit cannot recompute what
was made outside it, though: the sources its recomputed chains start from
(the residual stream entering a decoder block, whose first norm saves an fp32
copy of it in eager mode) are kept by the compiled graph. `compiled_inputs`,
on the module a compiled unit would start at, counts them: the storages
reached by walking back from its elementwise-saved tensors through
elementwise calls made inside that module, to tensors made outside it (not
by a matmul or attention, whose outputs the chain may keep instead; torch's
min-cut partitioner keeps one hidden-sized tensor per Llama block that the
rule above leaves out, `tests/plan/test_trace.py`). `inputs` are the bytes of
each unit call's tensor arguments: what activation checkpointing keeps instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["ModuleCost", "CostRecorder", "FlashAttention", "stand_in_attention"]


@dataclass(frozen=True, slots=True)
class ModuleCost:
    """One module's own forward (its submodules' calls are theirs), for one trace of `batch_size` samples."""

    module: str
    gemm_flops: int = 0
    attention_flops: int = 0
    pointwise_bytes: int = 0
    saved: int = 0
    saved_compiled: int = 0
    inputs: int = 0  # tensor arguments of its calls, new storages only (what a checkpoint of it saves)
    loss_elements: int = 0
    loss_saved: int = 0
    compiled_inputs: int = 0  # compiled from this module: what it keeps of tensors made outside it (see above)


_MATMUL = {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "__matmul__", "__rmatmul__",
           "conv1d", "conv2d", "conv3d"}
_LOSS = {"cross_entropy", "nll_loss", "log_softmax"}
_ATTENTION = {"scaled_dot_product_attention"}


def _key(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return id(t)


def _nbytes(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        return t.numel() * t.element_size()


def _tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _matmul_flops(name: str, args: tuple, out: torch.Tensor) -> int:
    if name.startswith("conv"):
        w = args[1] if len(args) > 1 and isinstance(args[1], torch.Tensor) else None
        return 0 if w is None else 2 * out.numel() * (w.numel() // max(1, w.shape[0]))
    if name == "linear":
        x = args[0]
        return 2 * out.numel() * x.shape[-1] if isinstance(x, torch.Tensor) and x.dim() else 0
    mats = [a for a in args if isinstance(a, torch.Tensor)]
    if name in ("addmm", "baddbmm", "addbmm"):
        mats = mats[1:]
    if not mats or mats[0].dim() == 0:
        return 0
    return 2 * out.numel() * mats[0].shape[-1]


@dataclass(slots=True)
class _Acc:
    gemm: int = 0
    attention: int = 0
    pointwise: int = 0
    inputs: int = 0
    loss_elements: int = 0


@dataclass(slots=True)
class CostRecorder:
    """Sums per module while the tracer runs; `costs()` at the end. `vocab`: the logits' last dimension, if known."""

    vocab: int | None = None
    params: set[int] = field(default_factory=set)  # storages of parameters (never activations)
    acc: dict[str, _Acc] = field(default_factory=dict)
    kind: str = "other"  # the kind of the call running now (autograd saves during it)
    module: str = ""
    heavy_out: set[int] = field(default_factory=set)  # storages matmuls and attention produced
    saved_by: dict[int, tuple[str, int, bool, str]] = field(default_factory=dict)  # storage -> (module, bytes, heavy, kind)
    seen_inputs: set[int] = field(default_factory=set)
    made_in: dict[int, str] = field(default_factory=dict)  # storage -> the module whose call wrote it
    parents: dict[int, tuple[int, ...]] = field(default_factory=dict)  # storage an elementwise call wrote -> its inputs
    sizes: dict[int, int] = field(default_factory=dict)  # bytes of the storages above
    # Every tensor whose storage is keyed above, kept alive until the trace ends: a freed storage's address
    # can come back for a new tensor, which would then count as one already seen.
    alive: list[torch.Tensor] = field(default_factory=list)

    def _at(self, module: str) -> _Acc:
        a = self.acc.get(module)
        if a is None:
            a = self.acc[module] = _Acc()
        return a

    def begin(self, func, module: str) -> str:
        """Before a call: its kind, remembered for the tensors autograd saves during it."""
        name = getattr(func, "__name__", "")
        self.kind = ("matmul" if name in _MATMUL else "attention" if name in _ATTENTION
                     else "loss" if name in _LOSS else "other")
        self.module = module
        return self.kind

    def end(self, func, args: tuple, kwargs: dict, out, kind: str, module: str) -> None:
        """After a forward call: its FLOPs or bytes."""
        self.kind = "other"
        name = getattr(func, "__name__", "")
        outs = [t for t in _tensors(out) if t.is_floating_point()]
        if not outs:
            return
        a = self._at(module)
        ins = [t for t in _tensors((args, kwargs)) if t.is_floating_point()]
        keys = {_key(t) for t in ins}
        for t in outs:
            k = _key(t)
            if k not in keys and k not in self.made_in:  # a new storage (a view keeps its base's maker)
                self.made_in[k], self.sizes[k] = module, _nbytes(t)
                self.alive.append(t)
                if kind == "other":
                    self.parents[k] = tuple(_key(i) for i in ins if _key(i) not in self.params)
                    for i in ins:
                        self.sizes.setdefault(_key(i), _nbytes(i))
                        self.alive.append(i)
        if kind == "matmul":
            a.gemm += _matmul_flops(name, args, outs[0])
            self.heavy_out.update(_key(t) for t in outs)
            self.alive.extend(outs)
        elif kind == "attention":
            q, k = args[0], args[1]
            causal = bool(kwargs.get("is_causal", args[5] if len(args) > 5 else False))
            a.attention += (4 * q.numel() * k.shape[-2]) // (2 if causal else 1)
            self.heavy_out.update(_key(t) for t in outs)
            self.alive.extend(outs)
        elif kind == "loss":
            x = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if x is not None and name != "nll_loss":
                a.loss_elements += x.numel()
        else:
            new = [t for t in outs if _key(t) not in keys]
            if not new:
                return  # a view: nothing written
            logits = self.vocab is not None and any(t.dim() and t.shape[-1] == self.vocab for t in new)
            if not logits:
                a.pointwise += sum(t.numel() * t.element_size() for t in ins + new)

    def unit_inputs(self, module: str, args: tuple, kwargs: dict) -> None:
        """A unit's call: the bytes of its tensor arguments, each storage once."""
        total = 0
        for t in _tensors((args, kwargs)):
            k = _key(t)
            if t.is_floating_point() and k not in self.params and k not in self.seen_inputs:
                self.seen_inputs.add(k)
                self.alive.append(t)
                total += _nbytes(t)
        self._at(module).inputs += total

    def saved(self, t: torch.Tensor) -> None:
        """Autograd saves `t` for backward during the current call."""
        k = _key(t)
        if k in self.params:
            return
        prev = self.saved_by.get(k)
        heavy = self.kind in ("matmul", "attention")
        if prev is None:
            self.saved_by[k] = (self.module, _nbytes(t), heavy, self.kind)
            self.alive.append(t)
        elif heavy and not prev[2]:
            self.saved_by[k] = (prev[0], prev[1], True, prev[3])

    def total_saved(self) -> int:
        return sum(b for _, b, _, _ in self.saved_by.values())

    def costs(self) -> tuple[ModuleCost, ...]:
        saved: dict[str, list[int]] = {}
        for k, (module, nbytes, heavy, kind) in self.saved_by.items():
            s = saved.setdefault(module, [0, 0, 0])
            if kind == "loss":
                s[2] += nbytes
                continue
            s[0] += nbytes
            if heavy or k in self.heavy_out:
                s[1] += nbytes
        sources = self._compiled_sources()
        names = sorted(set(self.acc) | set(saved) | set(sources))
        out = []
        for m in names:
            a = self.acc.get(m, _Acc())
            s = saved.get(m, [0, 0, 0])
            out.append(ModuleCost(module=m, gemm_flops=a.gemm, attention_flops=a.attention, pointwise_bytes=a.pointwise,
                                  saved=s[0], saved_compiled=s[1], inputs=a.inputs, loss_elements=a.loss_elements,
                                  loss_saved=s[2], compiled_inputs=sum(self.sizes.get(k, 0) for k in sources.get(m, ()))))
        return tuple(out)

    def _compiled_sources(self) -> dict[str, set[int]]:
        """Per module (not the root): the storages made outside it that its elementwise-saved tensors derive from."""
        counted = {k for k, (_, _, heavy, kind) in self.saved_by.items() if kind != "loss" and (heavy or k in self.heavy_out)}
        out: dict[str, set[int]] = {}
        for k, (module, _, heavy, kind) in self.saved_by.items():
            if kind == "loss" or heavy or k in self.heavy_out:
                continue
            parts = module.split(".")
            for depth in range(1, len(parts) + 1):
                scope = ".".join(parts[:depth])
                found = out.setdefault(scope, set())
                stack, seen = [k], set()
                while stack:
                    x = stack.pop()
                    if x in seen or x in self.heavy_out:
                        continue
                    seen.add(x)
                    maker = self.made_in.get(x)
                    if maker is None or not (maker == scope or maker.startswith(scope + ".")):
                        if x not in counted:
                            found.add(x)
                    else:
                        stack.extend(self.parents.get(x, ()))
        return {m: v for m, v in out.items() if v}


class FlashAttention(torch.autograd.Function):
    """Scaled dot-product attention on meta or fake tensors, saving what a fused GPU kernel saves."""

    @staticmethod
    def forward(ctx, q, k, v):  # type: ignore[override]
        out = q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],))
        lse = q.new_empty(tuple(q.shape[:-1]), dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        q, k, v, _, _ = ctx.saved_tensors
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def stand_in_attention(args: Sequence, kwargs: dict):
    """`F.scaled_dot_product_attention`'s result on meta or fake tensors, via `FlashAttention` (None: call it)."""
    q, k, v = (list(args) + [kwargs.get(n) for n in ("query", "key", "value")][len(args):])[:3]
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)) or q.device.type not in ("meta", "cpu"):
        return None
    if q.device.type == "cpu" and not _is_fake(q):
        return None
    return FlashAttention.apply(q, k, v)


def _is_fake(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)

