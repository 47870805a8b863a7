"""Per-rank values handed to objects: the object-state half of where a per-rank value goes.

A value that differs between ranks (the rank, a random draw, this rank's data, what a submodule returned) does
not stop being per-rank when it is handed to an object. The transfer rules, written once here and used by
`taint.Taint` (rank, random and data values) and by `divergence` (values computed from what a submodule returned):

* **hand-off by method**: `holder.m(v, ...)` makes the holder's state follow `v` (`strategy.advance(log_probs)` then
  `if strategy.done: break`; `tracker.update(logits)` then `while not tracker.finished()`;
  `evaluator.evaluate_if_necessary(t=t)` then `evaluator.max_score`), unless `m` only places the object
  (`.to(device)`, `.cuda(rank)`, `.manual_seed(seed + rank)`, `.set_epoch(epoch)`). A call made for its effect (a
  statement) counts; one whose result is used is a query of a long-lived part (`y = self.loss.domain_map(x)`) or a
  step of a model (`h = model.sub(h)`), and counts only on a local object where the caller knows which calls run
  models (`divergence`, for values computed from what a submodule returned);
* **hand-off by write**: `holder.attr = v`, `holder.attr += v` do the same (an item write, `buf[:n] = v`, fills a
  buffer sized already: not one);
* a **holder** is a local or an argument of the function (`strategy`), or an attribute of `self`
  (`self.tracker.update(x)`: the key `self.tracker`; `self.done = v`: `self.done`); never `self` itself (a helper
  method call is a call, not a hand-off), nor an imported module or a global (`dist.all_reduce(t)`);
* **state kept only on some ranks**: an attribute of `self` that a method writes only under a test on the rank, or
  after an early `return` on one (`if not self.is_main: return` ... `self.has_ema = True`), differs per rank in every
  other method of the class: its value and its `None`-ness (`if exists(self.ema):`), `rank_state`.

A value all-reduced or broadcast first is the same on every rank: the callers ask their own "agreed" test of the
value before handing it on (`Taint.agreed_use`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from ..program import known
from ..program.tree import code_of, cst
from ..program.index import ModelIndex, memoised
from .flow import FILLS, Flat

__all__ = [
    "Handoff", "handoff", "handoffs", "unpacked_handoffs", "holder_key", "RankTests", "self_targets", "self_writes", "PLACING",
    "WRITES_SELF", "StateReaders", "state_trigger",
]

# Methods that place or seed an object rather than hand it a value: a device or a seed made from the rank puts the
# object on this rank's device, not this rank's values in it.
PLACING = frozenset({"to", "cuda", "set_device", "manual_seed", "seed", "set_epoch", "set_seed"})


@dataclass(frozen=True, slots=True)
class Handoff:
    """Values handed to an object by a method call or an attribute/item write."""

    holder: str  # `strategy`, `self.tracker`, `self.done`
    values: tuple[cst.BaseExpression, ...]  # what was handed (the arguments, or the value written)
    node: cst.CSTNode  # the call or the assignment


def holder_key(expr: cst.CSTNode, locals_: frozenset[str] | set[str]) -> str | None:
    """`x` for a local or argument of the function, `self.a` for an attribute of `self` (also the root of
    `self.a.b`); None for `self` itself, an imported module, a global, a computed value."""
    if isinstance(expr, cst.Name):
        return expr.value if expr.value in locals_ and expr.value not in ("self", "cls") else None
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        inner = expr.value
        if isinstance(expr, cst.Attribute) and isinstance(inner, cst.Name) and inner.value == "self":
            return f"self.{expr.attr.value}"
        if isinstance(inner, (cst.Name, cst.Attribute, cst.Subscript)):
            return holder_key(inner, locals_)
    return None


def self_field(expr: cst.CSTNode) -> str | None:
    """`self.stats.steps`: a field of an object `self` holds, as a key of its own (`self.stats.steps`)."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Attribute):
        inner = expr.value
        if isinstance(inner.value, cst.Name) and inner.value.value == "self":
            return f"self.{inner.attr.value}.{expr.attr.value}"
    return None


def handoff(
    node: cst.CSTNode, locals_: frozenset[str] | set[str], flat: Flat, runs: Callable[[cst.Call], bool] | None = None
) -> Handoff | None:
    """The hand-off `node` makes, if it is one: a method call on a holder with arguments, made for its effect (a
    statement of its own, its result unused; `y = self.loss.domain_map(x)` is a query), or on a local object whose
    result is used where `runs` tells the call runs no model (`score = evaluator.evaluate(t=t)`, not `h =
    model.sub(h)`); or a write of an attribute of a holder (`x.a = v`, `self.a.b += v`; `self.a = v` writes the holder `self.a`). An item write (`buf[:n] = v`) fills
    a buffer whose size was fixed already: not a hand-off."""
    kind = type(node)
    if kind is cst.Call:
        func = node.func
        if not isinstance(func, cst.Attribute) or not node.args or func.attr.value in PLACING:
            return None
        key = holder_key(func.value, locals_)
        if key is None or func.attr.value in _RECORDS or _SAVES.match(func.attr.value) \
                or key.rsplit(".", 1)[-1] in known.WRAPPER_NAMES:
            # `self.writer.add_scalar("loss", loss.item())`: a value written to a log, not the logger's state;
            # `trainer.save_checkpoint(path)`: written to a file; `self.accelerator.backward(loss)`: the training
            # wrapper's flags (`sync_gradients`) are every rank's
            return None
        if type(flat.parent.get(id(node))) is not cst.Expr:  # the result is used: a query, or a step of a model
            if key.startswith("self.") or runs is None or runs(node):
                return None
        return Handoff(key, tuple(arg.value for arg in node.args), node)
    if kind is cst.Assign or kind is cst.AugAssign or kind is cst.AnnAssign:
        if node.value is None:
            return None
        targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
        for target in targets:
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
                return Handoff(f"self.{target.attr.value}", (node.value,), node)
            if isinstance(target, cst.Attribute) and (field := self_field(target)) is not None:
                return Handoff(field, (node.value,), node)  # `self.stats.total_tokens += n`: that field, not the rest
            if isinstance(target, cst.Attribute):
                key = holder_key(target.value, locals_)
                if key is not None and key.rsplit(".", 1)[-1] not in known.WRAPPER_NAMES:
                    # (`fabric._loggers = [logger]` on the main rank: the wrapper's size, rank count and flags stay
                    # every rank's)
                    return Handoff(key, (node.value,), node)
    return None


def unpacked_handoffs(node: cst.CSTNode) -> list[Handoff]:
    """The writes of `self`'s attributes an unpacking assignment makes, each with the value it takes
    (`self.best, self.patience = metric, n`: `self.best` from `metric`, `self.patience` from `n`); `handoff` reads
    single targets."""
    if type(node) is not cst.Assign or len(node.targets) != 1:
        return []
    target, value = node.targets[0].target, node.value
    if not isinstance(target, (cst.Tuple, cst.List)):
        return []
    values = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) and len(
        value.elements) == len(target.elements) else [value] * len(target.elements)
    found = []
    for element, item in zip(target.elements, values):
        written = element.value
        if isinstance(written, cst.Attribute) and isinstance(written.value, cst.Name) and written.value.value == "self":
            found.append(Handoff(f"self.{written.attr.value}", (item,), node))
        elif isinstance(written, cst.Attribute) and (field := self_field(written)) is not None:
            found.append(Handoff(field, (item,), node))
    return found


# Methods that write what they are handed to a log or a board: the object keeps no decision of it.
_RECORDS = frozenset(
    {"log", "log_dict", "log_metrics", "add_scalar", "add_scalars", "add_image", "add_histogram", "info", "debug",
     "warning", "write", "set_description", "set_postfix", "set_postfix_str", "set_description_str"}
)  # (the last four: a progress bar's caption, `pbar.set_description(f"loss: {loss.item():.2f}")`)


_SAVES = re.compile(r"(?:save|dump|export)(?:_|$)")  # `save_checkpoint(path)`, `dump(f)`: what it is handed goes out


def handoffs(flat: Flat, locals_: frozenset[str] | set[str]) -> Iterator[tuple[Handoff, int]]:
    """Every hand-off in a flattened function, with its position (a container filled by `append`/`update` is one:
    `FILLS`, the name set `flow` keeps for them)."""
    for node, _ctx in flat.nodes:
        found = handoff(node, locals_, flat)
        if found is not None:
            yield found, flat.position.get(id(node), -1)


def fills(call: cst.Call) -> bool:
    """`xs.append(v)`, `d.update(...)`: a container filled (kept apart from other hand-offs by some callers)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in FILLS


# A method that may write `self.<attr>`: the only ones whose rank tests are parsed for `Taint.rank_state`.
WRITES_SELF = re.compile(r"self\.\w+\s*(?::[^=\n]*)?[+\-*/|&]?=[^=]")


class RankTests:
    """Which writes of a function run only on some ranks (`taint.Taint` answers which tests are on the rank)."""

    def __init__(self, flat: Flat, is_rank_test: Callable[[cst.CSTNode], bool]) -> None:
        self._flat = flat
        self._is_rank = is_rank_test
        self._returns: list[tuple[int, tuple[cst.CSTNode, ...], str]] = []  # early returns on a rank test
        for node, ctx in flat.nodes:
            if type(node) is cst.Return and not ctx.loops and not ctx.guarded:
                tests = tuple(t for t in ctx.conds if is_rank_test(t))
                if tests:
                    self._returns.append((flat.position.get(id(node), -1), ctx.conds, code_of(tests[0])))
        self.any = bool(self._returns) or any(
            is_rank_test(test) for node, ctx in flat.nodes if _is_write(node) for test in ctx.conds
        )

    def deciding(self, node: cst.CSTNode, ctx) -> str | None:
        """The rank test that decides whether `node` runs: one around it, or one an earlier `return` left on."""
        for test in ctx.conds:
            if self._is_rank(test):
                return code_of(test)
        position = self._flat.position.get(id(node), -1)
        for at, conds, why in self._returns:
            if at < position and not any(any(t is c for c in ctx.conds) for t in conds):
                return why
        return None


def self_writes(flat: Flat, tests: RankTests) -> Iterator[tuple[str, str]]:
    """(attribute, deciding rank test) for each write of `self.<attribute>` that runs only on some ranks."""
    if not tests.any:
        return
    for node, ctx in flat.nodes:
        if _is_write(node):
            for attr in self_targets(node):
                why = tests.deciding(node, ctx)
                if why is not None:
                    yield attr, why


def _is_write(node: cst.CSTNode) -> bool:
    return type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign)


def self_targets(node: cst.CSTNode) -> Iterator[str]:
    """The attributes of `self` an assignment writes (`self.a = ...`, `self.a: T = ...`, `self.a += ...`)."""
    targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
    for target in targets:
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            yield target.attr.value


class _Searches(Protocol):
    def search(self, text: str) -> object: ...


class StateReaders:
    """A text pre-filter that also lets through the methods reading an attribute of `self` (`self.v`) that a method
    matching `trigger` (not a constructor) writes: a per-rank value kept there is decided on in the reader, whose
    own text holds no word of it (`self.observe(h)` ... `if self.v:`); and the methods a call hands such an attribute
    to (`self.forward_path(self._sample_idx, x)`)."""

    def __init__(self, index: ModelIndex, trigger: _Searches, value_tests: bool = False) -> None:
        self.trigger = trigger
        written: set[str] = set()
        for span, attrs in _self_writers(index):
            if trigger.search(index.skeleton.text(span.start, span.end)):
                written.update(attrs)
        # (`\bself`, the word first: `program/trigger.py`)
        alternatives = "|".join(map(re.escape, sorted(written)))
        self._reads = re.compile(r"self(?<!\wself)\.(?:" + alternatives + r")\b") if written else None
        if self._reads is not None:
            # ... and the methods the class hands such an attribute to (`self.forward_path(self._sample_idx, *args)`:
            # `def forward_path(self, index, ...)` decides on it through its parameter)
            handed = sorted({
                m.group(1) for m in _SELF_CALL_LINE.finditer(index.source) if self._reads.search(m.group(2))
            })
            if handed:
                self._reads = re.compile(
                    self._reads.pattern + r"|def(?<!\wdef)[ \t]+(?:" + "|".join(map(re.escape, handed)) + r")\("
                )
        # with `value_tests`, the callers of a value test: data decisions (`_value_test_callers`)
        self._tests = _value_test_callers(index) if value_tests else None

    def search(self, text: str) -> bool:
        if self.trigger.search(text):
            return True
        if self._tests is not None and self._tests.search(text) is not None:
            return True
        return self._reads is not None and self._reads.search(text) is not None


# `self.m(<arguments on the line>`: a method the file calls on `self`, and the rest of the line.
_SELF_CALL_LINE = re.compile(r"self(?<!\wself)\.(\w+)\(([^\n]*)")


@memoised
def _value_test_callers(index: ModelIndex) -> re.Pattern[str] | None:
    """The calls of a method answering with a test of a tensor's values (`if self.is_mirrored(lrs):`), or of such a
    function of the file (`if has_positives(t):`), as one pattern (None: the file has none); once per file."""
    tests = sorted({span.name for cls in index.classes.values() for span in cls.span.methods.values()
                    if span.name != "__init__" and value_test_text(index.skeleton.text(span.start, span.end))})
    functions = sorted({span.name for span in index.skeleton.functions.values()
                        if value_test_text(index.skeleton.text(span.start, span.end))})
    alternatives = "|".join(
        ([r"self(?<!\wself)\.(?:" + "|".join(tests) + ")"] if tests else [])
        + [rf"{name}(?<![\w.]{name})" for name in functions]
    )
    return re.compile(rf"(?:{alternatives})\(") if alternatives else None


def value_test_text(text: str) -> bool:
    """Can the function `text` return a test of a tensor's values or a selection they make (`return torch.norm(a -
    b) == 0`, `return (x > 0).any()`, `return torch.nonzero(m)`, a local bound to one)? The text trigger of
    `taint.value_test_method`."""
    if "return" not in text or not any(word in text for word in _VALUES_READ):
        return False
    if _TEST_RETURN.search(text) is not None:
        return True
    # `ok = (x > 0).all()` ... `return ok`
    return any(re.search(rf"^[ \t]*{m[1]}[ \t]*=[^=\n]*{_TESTS}", text, re.M) for m in _LOCAL_RETURN.finditer(text))


# What reads a tensor's values into a decision: a reduction, a verdict, a selection.
_VALUES_READ = (
    ".sum(", ".mean(", ".max(", ".min(", "norm(", ".any(", ".all(", ".item()", "nonzero(", "isfinite(", "isnan(",
    "isinf(", "count_nonzero(", ".amax(", ".amin(", ".std(", "where(", "unique(", "masked_select(",
)
# A `return` of a comparison, a negation, a verdict or a selection (`return x.norm() == 0`, `return not ok`, `return
# m.any()`, `return math.isfinite(v)`, `return torch.nonzero(m)`), or of a local (bound to one).
_TESTS = (r"(?:[<>]=?|[=!]=|\bany\(|\ball\(|\bis\b|finite\(|nan\(|inf\(|nonzero\(|where\(|unique\("
          r"|masked_select\()")
_TEST_RETURN = re.compile(rf"return(?<!\wreturn)[ \t]+(?:not\b|[^\n]*{_TESTS})", re.M)
_LOCAL_RETURN = re.compile(r"return(?<!\wreturn)[ \t]+(\w+)[ \t]*$", re.M)


@memoised
def _self_writers(index: ModelIndex) -> list[tuple[object, frozenset[str]]]:
    """(method span, attributes of `self` it writes) for the methods of the file's classes but constructors that write
    one: one pass of a pattern over the file, each write placed in its method by line."""
    rows: dict[int, set[str]] = {}
    source, row, at = index.source, 1, 0
    for match in _WRITTEN.finditer(source):
        row += source.count("\n", at, match.start())
        at = match.start()
        if match.start() == 0 or not (source[match.start() - 1].isalnum() or source[match.start() - 1] in "_."):
            rows.setdefault(row, set()).add(match.group(1))
    if not rows:
        return []
    found = []
    ordered = sorted(rows)
    for cls in index.classes.values():
        for span in cls.span.methods.values():
            if span.name != "__init__":
                first, last = bisect.bisect_left(ordered, span.start), bisect.bisect_right(ordered, span.end)
                attrs = {a for row in ordered[first:last] for a in rows[row]}
                if attrs:
                    found.append((span, frozenset(attrs)))
    return found


@memoised
def state_trigger(index: ModelIndex, trigger: _Searches, value_tests: bool = False) -> StateReaders:
    """`trigger` widened to the readers of what its matching methods keep on `self` (`StateReaders`), and with
    `value_tests` to the callers of value tests (the data rules'), once per file."""
    return StateReaders(index, trigger, value_tests)


# `self.x = ...`, `self.x += ...`: the attributes a method writes.
_WRITTEN = re.compile(r"self\.(\w+)[ \t]*(?::[^=\n]*)?[-+*/|&]?=(?!=)")  # (a literal first: fast to search)
