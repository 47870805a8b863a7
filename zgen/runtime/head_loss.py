"""The output projection and its cross-entropy loss, computed together in chunks: the logits are never held.

A causal LM's last two steps, `logits = lm_head(h)` and
`F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten())`,
hold tokens x vocabulary values several times over: the logits, their fp32
copy, the log-softmax autograd saves, and in backward their gradients (about
12 bytes per logit at the peak with a 128k vocabulary: 11.7 GiB per sequence of
8192 tokens). `install(module)` puts a `HeadLoss` forward on the projection
module (an `nn.Linear`, on the instance; the model's code is unchanged). It
returns `LazyLogits`: a tensor standing for `F.linear(h, weight, bias)` that
records what the model's code then does with it, as long as that is a row
selection on the leading dimensions (indexing, `flatten`, `view`/`reshape`
keeping the vocabulary last), `contiguous()` or an upcast to fp32. When
`F.cross_entropy` reads it (class indices, no class weights, no label
smoothing, mean or sum), `LinearCrossEntropy` computes the loss over chunks of
rows: for each chunk the logits (one GEMM), the log-sum-exp and the target's
logit, and straight away the gradient with respect to the chunk's logits,
`(softmax - onehot) / count`, which two more GEMMs turn into the gradients of
the hidden rows and of the weight. Those are kept (the hidden rows' in the
compute dtype, the weight's accumulated in fp32) and scaled by the loss's
incoming gradient in backward, so the backward does no work on the logits and
nothing recomputes them. Memory: one chunk of logits and its gradient (about
a GiB), the weight's fp32 gradient and the hidden rows' gradient, instead of
the 12 bytes per logit. Time: the same three GEMMs; the elementwise passes
(fp32 upcast, log-softmax, the loss's fills and copies) become two reads of
each chunk, fused by inductor on a GPU.

Anything else the model does with the logits (returns them, takes an argmax,
adds a bias of its own) computes them for real at that point (`materialize`),
so the result is what the plain model computes, only without the saving.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._pytree import tree_map

from zgen.errors import ZgenError

__all__ = ["HeadLoss", "LazyLogits", "LinearCrossEntropy", "install", "CHUNK_BYTES"]

# Rows per chunk: as many as keep one chunk of fp32 logits within this many bytes.
CHUNK_BYTES = 1 << 30

# Reads of a tensor's metadata: answered by the stand-in itself, never computing the logits.
_METADATA = frozenset({
    "size", "dim", "numel", "stride", "is_contiguous", "element_size", "nelement", "ndimension",
    "is_floating_point", "is_complex", "__len__", "get_device", "is_pinned", "data_ptr",
})
_METADATA_PROPERTIES = frozenset({
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_meta", "is_cpu", "layout", "grad_fn",
    "is_leaf", "names", "is_sparse", "is_quantized", "is_nested",
})


def _rows(n_rows: int, vocab: int, chunk_bytes: int) -> int:
    return max(1, chunk_bytes // max(1, 4 * vocab))


class HeadLoss:
    """The forward set on a projection module: returns `LazyLogits` instead of computing the logits.

    `fused` and `materialized` count what became of them (the planner's probe reads both).
    """

    def __init__(self, module: nn.Module, chunk_bytes: int | None = None) -> None:
        if not isinstance(getattr(module, "weight", None), torch.Tensor) or module.weight.dim() != 2:
            raise ZgenError(f"head_loss needs a linear projection (a 2-D `weight`), not a `{type(module).__name__}`",
                            help="name the output projection (an nn.Linear) in the plan's `head_loss`, or drop it")
        self.module = module
        self.chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
        self.fused = 0
        self.materialized = 0

    @torch.compiler.disable
    def __call__(self, x: torch.Tensor) -> Any:
        m = self.module
        weight, bias = m.weight, getattr(m, "bias", None)
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != weight.shape[1]:
            return F.linear(x, weight, bias)
        return LazyLogits(x, weight, bias, _result_dtype(x), self)


def _result_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype `F.linear(x, ...)` returns here: autocast's where it is on, else the input's."""
    try:
        if torch.is_autocast_enabled(x.device.type):
            return torch.get_autocast_dtype(x.device.type)
    except RuntimeError:  # a device type autocast does not know (meta)
        pass
    return x.dtype


def install(module: nn.Module, chunk_bytes: int | None = None) -> HeadLoss:
    """Give `module` the fused head-and-loss forward (on the instance); returns it. Idempotent."""
    own = module.__dict__.get("forward")
    if isinstance(own, HeadLoss):
        return own
    if own is not None:
        raise ZgenError(f"head_loss: module `{type(module).__name__}` already has a forward set on the instance",
                        help="drop `head_loss` from the plan, or leave the module's forward as its class defines it")
    head = HeadLoss(module, chunk_bytes)
    module.forward = head
    return head


class LazyLogits(torch.Tensor):
    """`F.linear(hidden, weight, bias)` (upcast to `dtype`), not computed until something needs its values."""

    _hidden: torch.Tensor
    _weight: torch.Tensor
    _bias: torch.Tensor | None
    _head: HeadLoss
    _real: torch.Tensor | None

    @staticmethod
    def __new__(cls, hidden, weight, bias, dtype, head):
        shape = tuple(hidden.shape[:-1]) + (weight.shape[0],)
        self = torch.Tensor._make_wrapper_subclass(cls, shape, dtype=dtype, device=hidden.device)
        self._hidden, self._weight, self._bias, self._head, self._real = hidden, weight, bias, head, None
        return self

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Everything reaches `__torch_function__` first, which computes the logits before any kernel runs.
        raise ZgenError(f"head_loss: `{func}` reached the logits stand-in below autograd",
                        help="drop `head_loss` from the plan and report this model to zgen")

    def __repr__(self) -> str:  # noqa: D105 - the default would read the (absent) values
        return f"LazyLogits(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device})"

    def _derived(self, hidden: torch.Tensor, dtype: torch.dtype | None = None) -> LazyLogits:
        return LazyLogits(hidden, self._weight, self._bias, dtype or self.dtype, self._head)

    def materialize(self) -> torch.Tensor:
        """The logits, computed (once) as the plain model would."""
        if self._real is None:
            w = self._weight
            if w.device.type != "meta" and w.untyped_storage().size() == 0:
                raise ZgenError("the logits of a fused head_loss were read after the forward, when the projection's "
                                "weights were no longer gathered",
                                help="read what you need from the logits inside the forward, or drop `head_loss` "
                                     "from the plan")
            h = self._hidden
            if h.dtype != w.dtype:
                h = h.to(w.dtype)
            real = F.linear(h, w, self._bias)
            self._real = real if real.dtype == self.dtype else real.to(self.dtype)
            self._head.materialized += 1
        return self._real

    @classmethod
    @torch.compiler.disable
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)
        if name in _METADATA or (name == "__get__" and getattr(owner, "__name__", "") in _METADATA_PROPERTIES):
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        self = args[0] if args and isinstance(args[0], LazyLogits) else None
        if self is not None:
            out = self._transform(func, name, args[1:], kwargs)
            if out is not NotImplemented:
                return out
        if func is F.cross_entropy or name == "cross_entropy":
            out = _fused_cross_entropy(args, kwargs)
            if out is not NotImplemented:
                return out
        args, kwargs = tree_map(lambda x: x.materialize() if isinstance(x, LazyLogits) else x, (args, kwargs))
        return func(*args, **kwargs)

    def _transform(self, func, name: str, rest: tuple, kwargs: dict):
        """A row selection, reshape or upcast as another LazyLogits; NotImplemented for anything else."""
        nd, vocab = self.dim(), self.shape[-1]
        if name == "__getitem__" and not kwargs and len(rest) == 1 and _keeps_last(rest[0], nd):
            return self._derived(self._hidden[rest[0]])
        if name == "flatten" and not kwargs.keys() - {"start_dim", "end_dim"}:
            start = kwargs.get("start_dim", rest[0] if rest else 0)
            end = kwargs.get("end_dim", rest[1] if len(rest) > 1 else -1)
            if isinstance(start, int) and isinstance(end, int) and nd > 0:
                start, end = start % nd, end % nd
                if end < nd - 1:
                    return self._derived(self._hidden.flatten(start, end))
            return NotImplemented
        if name in ("view", "reshape") and not kwargs:
            shape = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list, torch.Size)) else rest
            if (shape and all(isinstance(s, int) for s in shape) and shape[-1] == vocab
                    and -1 not in shape[-1:]):
                return self._derived(self._hidden.reshape(*shape[:-1], self._hidden.shape[-1]))
            return NotImplemented
        if name == "contiguous" and not rest and not kwargs:
            return self
        if name == "float" and not rest and not kwargs:
            return self._derived(self._hidden, torch.float32)
        if name in ("to", "type") and len(rest) + len(kwargs) == 1:
            target = rest[0] if rest else kwargs.get("dtype")
            if target == torch.float32 or target == self.dtype:
                return self._derived(self._hidden, target)
            if isinstance(target, (torch.device, str)) and torch.device(target) == self.device:
                return self
        return NotImplemented


def _keeps_last(index: Any, nd: int) -> bool:
    """Whether `index` selects along the leading dimensions only (the last, the vocabulary, kept whole)."""
    entries = index if isinstance(index, tuple) else (index,)
    ellipsis = [i for i, e in enumerate(entries) if e is Ellipsis]
    if ellipsis:
        after = entries[ellipsis[0] + 1:]
        return bool(after) and _full(after[-1])
    consumed = sum(e.dim() if isinstance(e, torch.Tensor) and e.dtype == torch.bool else 1
                   for e in entries if e is not None)
    if consumed < nd:
        return True
    return consumed == nd and _full(entries[-1])


def _full(e: Any) -> bool:
    return isinstance(e, slice) and e == slice(None)


def _fused_cross_entropy(args: tuple, kwargs: dict):
    """`F.cross_entropy(lazy, target, ...)` through `LinearCrossEntropy`; NotImplemented where it does not apply."""
    names = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing")
    bound = dict(zip(names, args))
    if set(bound) & set(kwargs):
        return NotImplemented
    bound.update(kwargs)
    logits, target = bound.get("input"), bound.get("target")
    if not isinstance(logits, LazyLogits) or isinstance(target, LazyLogits) or not isinstance(target, torch.Tensor):
        return NotImplemented
    reduction = bound.get("reduction", "mean")
    if (bound.get("weight") is not None or bound.get("size_average") is not None or bound.get("reduce") is not None
            or bound.get("label_smoothing", 0.0) != 0.0 or reduction not in ("mean", "sum")
            or logits.dim() != 2 or target.dim() != 1 or target.shape[0] != logits.shape[0]
            or target.dtype.is_floating_point):
        return NotImplemented
    head = logits._head
    hidden = logits._hidden.reshape(-1, logits._hidden.shape[-1])
    ignore = int(bound.get("ignore_index", -100))
    loss = LinearCrossEntropy.apply(hidden, logits._weight, logits._bias, target.to(hidden.device), ignore,
                                    reduction, _rows(hidden.shape[0], logits.shape[-1], head.chunk_bytes),
                                    logits.dtype)
    head.fused += 1
    return loss


class LinearCrossEntropy(torch.autograd.Function):
    """Cross-entropy of `F.linear(hidden, weight, bias)` over chunks of rows; gradients made in the forward."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, ignore_index: int, reduction: str, rows: int, out_dtype):  # type: ignore[override]
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        dtype = hidden.dtype if hidden.dtype == weight.dtype else weight.dtype
        n = hidden.shape[0]
        valid = target != ignore_index
        count = valid.sum()
        scale = (1.0 / count.to(torch.float32)) if reduction == "mean" else torch.ones((), device=hidden.device)
        gh = torch.empty(hidden.shape, dtype=dtype, device=hidden.device) if need_h else None
        gw = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_w else None
        gb = torch.zeros(weight.shape[0], dtype=torch.float32, device=weight.device) if (need_b and bias is not None) else None
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        chunk = _chunk_fn(hidden.device)
        for s in range(0, n, rows):
            h = hidden[s: s + rows].to(dtype)
            logits = F.linear(h, weight, bias)
            loss, glog = chunk(logits, target[s: s + rows], ignore_index, scale, need_h or need_w or need_b)
            total += loss
            if gh is not None:
                torch.mm(glog, weight, out=gh[s: s + rows])
            if gw is not None:
                _accumulate(gw, glog.t(), h)
            if gb is not None:
                gb += glog.float().sum(0)
        out = total * scale
        ctx.save_for_backward(gh, gw, gb)
        ctx.dtypes = (hidden.dtype, weight.dtype, None if bias is None else bias.dtype)
        return out.to(out_dtype)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        gh, gw, gb = ctx.saved_tensors
        dh, dw, db = ctx.dtypes
        g = grad.float()
        # In place on what the forward kept (a second backward through the same graph is not supported).
        return (None if gh is None else gh.float().mul_(g).to(dh),
                None if gw is None else gw.mul_(g).to(dw),
                None if gb is None else gb.mul_(g).to(db),
                None, None, None, None, None)


def _ce_chunk(logits: torch.Tensor, target: torch.Tensor, ignore_index: int, scale: torch.Tensor, grad: bool):
    """Summed loss of one chunk and (when `grad`) d(loss x scale)/d(logits) in the logits' dtype."""
    x = logits.float()
    lse = torch.logsumexp(x, dim=-1)
    valid = target != ignore_index
    safe = torch.where(valid, target, torch.zeros_like(target))
    picked = x.gather(1, safe.unsqueeze(1)).squeeze(1)
    loss = torch.where(valid, lse - picked, torch.zeros_like(lse)).sum()
    if not grad:
        return loss, None
    p = torch.exp(x - lse.unsqueeze(1))
    p = p.scatter_add(1, safe.unsqueeze(1), -valid.to(p.dtype).unsqueeze(1))
    p = p * (valid.to(p.dtype) * scale).unsqueeze(1)
    return loss, p.to(logits.dtype)


_COMPILED: dict[str, Callable] = {}


def _chunk_fn(device: torch.device) -> Callable:
    """`_ce_chunk`, compiled by inductor on a GPU (one fused pass per output) and eager elsewhere."""
    if device.type != "cuda":
        return _ce_chunk
    fn = _COMPILED.get("cuda")
    if fn is None:
        fn = _COMPILED["cuda"] = torch.compile(_ce_chunk, dynamic=False)
    return fn


_FP32_OUT: dict[str, bool] = {}


def _accumulate(gw: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """gw (fp32) += a @ b, with fp32 accumulation (cuBLAS's fp32-output GEMM where torch has it)."""
    if a.dtype == torch.float32:
        gw.addmm_(a, b)
        return
    key = gw.device.type
    if _FP32_OUT.get(key, key == "cuda"):
        try:
            torch.ops.aten.addmm.dtype_out(gw, a, b, torch.float32, out=gw)
            _FP32_OUT[key] = True
            return
        except (RuntimeError, NotImplementedError):
            _FP32_OUT[key] = False
    gw.add_(a @ b)
