"""Random draws: which ops draw, what values a draw can take, and a draw forced to either end of that range.

Ranks draw different random numbers, so a decision taken on a draw can go
one way on one rank and the other way on another. Whether it can is a
question about the draw's *support*, not about the decision: `torch.rand([])
< p` skips a layer on some rank exactly when `p > 0`; flipping the
comparison's answer would claim it can with `p = 0` too. So a decision that
depends on draws only is tried by forcing its draws to each end of what they
can be (`extreme`) and letting the program compute the rest:

* uniform draws (`rand`, `uniform_`): their lower bound, and the largest
  value below the upper one;
* integers (`randint`, `random_`): the lowest and the highest;
* normal draws (`randn`, `normal_`): five standard deviations either side;
* Bernoulli draws and dropout masks: all zeros where a one is not certain,
  all ones where a zero is not certain (`p = 0` keeps every element both ways);
* a permutation: the identity and its reverse; a categorical draw: the first
  and the last category of non-zero weight.

Python's `random` and numpy's global generator draw outside torch; while a
run is active their module functions (and the names user modules imported
from them, `from random import random`) are wrapped (`python_draws`), so
those draws are recorded and forced alike, with the same bounds.
"""

from __future__ import annotations

import contextlib
import random as _random
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from zgen.plan.frames import is_user_file

__all__ = ["RANDOM_OPS", "extreme", "python_draws", "DRAW"]

_aten = torch.ops.aten

# The taint label of one draw: (DRAW, site, occurrence).
DRAW = "draw"

# Ops whose output is a random draw.
RANDOM_OPS = {getattr(_aten, n) for n in (
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "bernoulli", "bernoulli_",
    "normal", "normal_", "uniform", "uniform_", "exponential_", "geometric_", "cauchy_", "log_normal_",
    "random_", "multinomial", "native_dropout", "poisson") if hasattr(_aten, n)}

# A normal draw is forced this many standard deviations from its mean.
NORMAL_REACH = 5.0


def extreme(func, args: tuple, kwargs: dict, out: Any, high: bool) -> Any:
    """`out` of the draw `func(*args, **kwargs)` replaced by the low or high end of its support, or None when
    the draw is of a kind not forced (its value is then kept)."""
    name = func._overloadpacket.__name__
    with torch.no_grad():
        if name in ("rand", "rand_like", "uniform", "uniform_"):
            lo = _arg(args, kwargs, 1, "from", 0.0) if name.startswith("uniform") else 0.0
            hi = _arg(args, kwargs, 2, "to", 1.0) if name.startswith("uniform") else 1.0
            return _filled(out, _below(hi, lo, out.dtype) if high else lo)
        if name in ("randn", "randn_like"):
            return _filled(out, NORMAL_REACH if high else -NORMAL_REACH)
        if name == "normal_":
            mean, std = _arg(args, kwargs, 1, "mean", 0.0), _arg(args, kwargs, 2, "std", 1.0)
            return _filled(out, mean + (NORMAL_REACH if high else -NORMAL_REACH) * std)
        if name == "normal":
            mean, std = _arg(args, kwargs, 0, "mean", 0.0), _arg(args, kwargs, 1, "std", 1.0)
            value = mean + (NORMAL_REACH if high else -NORMAL_REACH) * std
            return _filled(out, value) if not isinstance(value, torch.Tensor) else _as(out, value)
        if name in ("randint", "randint_like", "random_"):
            bounds = _int_bounds(name, args, kwargs)
            return None if bounds is None else _filled(out, bounds[1] if high else bounds[0])
        if name == "randperm":
            n = out.numel()
            order = torch.arange(n, dtype=out.dtype, device=out.device)
            return order.flip(0) if high else order
        if name in ("bernoulli", "bernoulli_"):
            p = _arg(args, kwargs, 1, "p", None)
            if p is None:
                p = args[0] if name == "bernoulli" else 0.5
            return _as(out, _certain(p, out, high))
        if name == "native_dropout":
            x, p = args[0], float(_arg(args, kwargs, 1, "p", 0.5))
            keep = (p < 1.0) if high else (p == 0.0)
            mask = torch.full_like(out[1], keep, dtype=out[1].dtype)
            scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
            return x * mask.to(x.dtype) * scale, mask
        if name == "multinomial":
            probs = args[0]
            positive = (probs > 0).to(torch.long)
            index = torch.arange(probs.shape[-1], device=probs.device)
            pick = (positive * index).argmax(-1) if high else (positive * (probs.shape[-1] - index)).argmax(-1)
            return pick.unsqueeze(-1).expand(out.shape).to(out.dtype).clone()
    return None


def _arg(args: tuple, kwargs: dict, i: int, key: str, default: Any) -> Any:
    if key in kwargs:
        return kwargs[key]
    return args[i] if len(args) > i else default


def _below(hi: float, lo: float, dtype: torch.dtype) -> float:
    """The largest value of `dtype` below `hi` (what a half-open `[lo, hi)` draw can reach)."""
    if dtype.is_floating_point:
        top = torch.nextafter(torch.tensor(float(hi), dtype=dtype), torch.tensor(float(lo), dtype=dtype))
        return float(top)
    return hi - 1


def _filled(out: torch.Tensor, value: float) -> torch.Tensor:
    return torch.full_like(out, value)


def _as(out: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return value.to(dtype=out.dtype, device=out.device).expand(out.shape).clone()


def _certain(p: Any, out: torch.Tensor, high: bool) -> torch.Tensor:
    """A Bernoulli draw at one end: ones only where p = 1 (low), ones wherever p > 0 (high)."""
    p = p if isinstance(p, torch.Tensor) else torch.tensor(float(p))
    return (p > 0) if high else (p >= 1)


def _int_bounds(name: str, args: tuple, kwargs: dict) -> tuple[int, int] | None:
    """The lowest and highest value of an integer draw, or None (`random_()` over the whole dtype)."""
    if name == "random_":
        if len(args) >= 3 or "to" in kwargs:
            lo, hi = _arg(args, kwargs, 1, "from", 0), _arg(args, kwargs, 2, "to", None)
        elif len(args) == 2:
            lo, hi = 0, args[1]
        else:
            return None
        return None if hi is None else (int(lo), int(hi) - 1)
    if "high" in kwargs:
        return int(kwargs.get("low", 0)), int(kwargs["high"]) - 1
    rest = args[1:3] if name == "randint_like" else args[:2]  # randint(high, size) / randint(low, high, size)
    ints = [a for a in rest if isinstance(a, int) and not isinstance(a, bool)]
    if len(ints) >= 2:
        return ints[0], ints[1] - 1
    if len(ints) == 1:
        return 0, ints[0] - 1
    return None


# -- Python's `random` and numpy's global generator ------------------------------------------

def _py_bounds(name: str, args: tuple, kwargs: dict) -> tuple[Any, Any] | None:
    """The low and high end of a draw of Python's `random` module, or None (not forced)."""
    def a(i: int, key: str, default: Any) -> Any:
        return _arg(args, kwargs, i, key, default)

    if name == "random":
        return 0.0, 1.0 - 2.0 ** -53
    if name in ("uniform", "triangular"):
        return a(0, "a" if name == "uniform" else "low", 0.0), a(1, "b" if name == "uniform" else "high", 1.0)
    if name == "randint":
        return a(0, "a", 0), a(1, "b", 0)
    if name == "randrange":
        start, stop, step = a(0, "start", 0), a(1, "stop", None), a(2, "step", 1)
        if stop is None:
            start, stop = 0, start
        count = (stop - start + step - (1 if step > 0 else -1)) // step
        return (start, start + (count - 1) * step) if count > 0 else None
    if name == "choice":
        seq = a(0, "seq", None)
        return (seq[0], seq[-1]) if seq is not None and len(seq) else None
    if name in ("gauss", "normalvariate"):
        mu, sigma = a(0, "mu", 0.0), a(1, "sigma", 1.0)
        return mu - NORMAL_REACH * sigma, mu + NORMAL_REACH * sigma
    return None


def _np_bounds(name: str, args: tuple, kwargs: dict) -> tuple[tuple[Any, Any], Any] | None:
    """((low, high), size) of a draw of numpy's global generator, or None (not forced)."""
    def a(i: int, key: str, default: Any) -> Any:
        return _arg(args, kwargs, i, key, default)

    if name in ("rand", "randn"):
        ends = (0.0, 1.0 - 2.0 ** -53) if name == "rand" else (-NORMAL_REACH, NORMAL_REACH)
        return ends, (tuple(args) or None)
    if name in ("random", "random_sample"):
        return (0.0, 1.0 - 2.0 ** -53), a(0, "size", None)
    if name == "uniform":
        return (a(0, "low", 0.0), a(1, "high", 1.0)), a(2, "size", None)
    if name in ("normal", "standard_normal"):
        loc, scale = (a(0, "loc", 0.0), a(1, "scale", 1.0)) if name == "normal" else (0.0, 1.0)
        return (loc - NORMAL_REACH * scale, loc + NORMAL_REACH * scale), a(2 if name == "normal" else 0, "size", None)
    if name == "randint":
        low, high = a(0, "low", 0), a(1, "high", None)
        if high is None:
            low, high = 0, low
        return (low, high - 1), a(2, "size", None)
    if name == "choice":
        pool, size = a(0, "a", None), a(1, "size", None)
        if isinstance(pool, int):
            return ((0, pool - 1), size) if pool > 0 else None
        return ((pool[0], pool[-1]), size) if pool is not None and len(pool) else None
    return None


_PY_NAMES = ("random", "uniform", "triangular", "randint", "randrange", "choice", "gauss", "normalvariate")
_NP_NAMES = ("rand", "randn", "random", "random_sample", "uniform", "normal", "standard_normal", "randint", "choice")

# on_draw(name, compute, bounds): records the draw and returns its value (`compute()`, or a forced end of `bounds`).
OnDraw = Callable[[str, Callable[[], Any], "tuple[Any, Any] | None"], Any]


@contextlib.contextmanager
def python_draws(on_draw: OnDraw) -> Iterator[None]:
    """While active, draws of Python's `random` module and numpy's global generator go through `on_draw`:
    the module functions, and the names user modules imported from them."""
    originals: dict[int, Callable[..., Any]] = {}
    wrappers: dict[int, Callable[..., Any]] = {}
    undo: list[tuple[dict, str, Any]] = []

    def wrap(module: Any, names: tuple[str, ...], bounds, label: str) -> None:
        for name in names:
            fn = module.__dict__.get(name)
            if fn is None or not callable(fn):
                continue
            wrapper = _wrapper(fn, name, label, bounds, on_draw)
            originals[id(fn)] = fn
            wrappers[id(fn)] = wrapper
            undo.append((module.__dict__, name, fn))
            module.__dict__[name] = wrapper

    wrap(_random, _PY_NAMES, _py_bounds, "random")
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        wrap(np_random, _NP_NAMES, _np_bounds, "numpy.random")
    for module in list(sys.modules.values()):
        try:
            space = object.__getattribute__(module, "__dict__")  # no module `__getattr__` (lazy imports)
        except AttributeError:
            continue
        file = space.get("__file__") if isinstance(space, dict) else None
        if not isinstance(file, str) or not is_user_file(file):
            continue
        for key, value in list(space.items()):
            if id(value) in wrappers and originals[id(value)] is value:
                undo.append((space, key, value))
                space[key] = wrappers[id(value)]
    try:
        yield
    finally:
        for space, key, value in reversed(undo):
            space[key] = value


def _wrapper(fn: Callable[..., Any], name: str, label: str, bounds, on_draw: OnDraw) -> Callable[..., Any]:
    def draw(*args: Any, **kwargs: Any) -> Any:
        ends = bounds(name, args, kwargs)
        if label == "numpy.random" and ends is not None:
            (lo, hi), size = ends
            ends = (_np_value(lo, size), _np_value(hi, size))
        return on_draw(f"{label}.{name}()", lambda: fn(*args, **kwargs), ends)

    draw.__name__ = name
    draw.__wrapped__ = fn  # type: ignore[attr-defined]
    return draw


def _np_value(value: Any, size: Any) -> Any:
    if size is None:
        return value
    import numpy as np

    return np.full(size, value)
