"""Loops whose trip count is a length of this rank's data.

`for i in range(0, x.shape[-1], hop)`, `for chunk in torch.split(x, n)`,
`for t in range(max(lengths))`, `n_batches = ceil(len(windows) / size)`:
a loop over the windows, chunks or steps of a signal the function was handed
runs as often as this rank's input is long. Ranks separating signals of
different lengths, or decoding to different padded lengths, then run the
submodules in its body a different number of times.

A length is read from a value the function holds that is not the module's
own state: an argument or a local computed from one (`windows =
self.make_windows(batch)`), through `len()`, `.shape`, `.size()`,
`.numel()`, or the maximum of its values (`max(lengths)`,
`lengths.max()`). Lengths of `self`'s attributes (`range(self.n_layers)`,
`len(self.blocks)`), of constants and of values the function makes from
constants (`torch.zeros(4)`) are the same on every rank.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from ..program import known
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.tree import annotated_tensors, call_name, children, code_of, cst, dotted, positional_parameters, walk
from .flow import (
    COMPREHENSIONS, Flat, bound_names, flat_of, own_returns, paired, same_items, self_call_arguments, targets_of,
)
from .state import WRITES_SELF, self_targets


class Calls(Protocol):
    """Which calls run a submodule and which values are submodules (`calls.ModuleCalls`, a script's calls)."""

    def callee(self, call: cst.Call) -> str | None: ...

    def is_module_sequence(self, expr: cst.BaseExpression) -> bool: ...

    def classes_of(self, expr: cst.BaseExpression) -> tuple[str, ...] | None: ...

__all__ = [
    "CountedLoops", "counted_loops", "handed_counts", "counts_handed_on", "kept_inputs", "length_helpers", "length_returns",
    "HANDS_LENGTH", "passed_through", "local_bindings", "COUNT_ATTR_TEXT", "drawn_length", "plain_number",
    "EXPERIENCE_STORE", "DRAWN_TEXT",
]

# Calls that read a length (`len(x)`), methods and attributes of a tensor that do (`x.size(1)`, `x.shape[-1]`).
_LENGTH_FUNCS = frozenset({"len", "max"})
_LENGTH_METHODS = frozenset({"size", "numel", "max", "amax", "item"})
_LENGTH_ATTRS = frozenset({"shape"})
# A count a batch object carries of its own items: `data.num_graphs`, `batch.num_nodes`, `g.n_atoms`.
# (Graph items only: `cfg.batch_size`, `args.num_samples` and `num_tokens` are as often settings of a run.)
COUNT_ATTR_TEXT = r"(?:num|n)_(?:graphs|nodes|edges|atoms|molecules|residues)|natoms"  # (also the rules' triggers)
_COUNT_ATTR = re.compile(rf"^(?:{COUNT_ATTR_TEXT})$")
# Splits of a tensor into pieces whose number follows its length (`torch.split(x, 256)`, `x.unfold(-1, w, hop)`,
# `x.chunk(n, dim=1)`: at most n pieces, fewer when the dimension is shorter or does not divide evenly).
_SPLITS = frozenset({"split", "unbind", "unfold", "tensor_split", "chunk"})
# What a function makes from nothing the rank holds: its length is a constant.
_MADE = frozenset({"zeros", "ones", "empty", "full", "arange", "eye", "tensor", "linspace"})


def counted_loops(
    flat: Flat, inputs: frozenset[str], calls: Calls | None = None, handed: dict[str, str] | None = None,
    kept: Callable[[], frozenset[str]] | None = None, index: ModelIndex | None = None, owner: ClassInfo | None = None,
) -> dict[int, tuple[cst.BaseExpression, str]]:
    """By loop node: (its iterable, the length of this rank's data that sets its trip count), for the loops of a
    function that have one. Cheap when no loop walks a `range`, a split or an `enumerate`/`zip` of one.

    With `calls` (which calls run a submodule, which values are submodules), what a submodule returned and
    the length of a module container are the model's structure, not data (`len(laterals)` for `laterals =
    [conv(f) for conv in self.lateral_convs]`, the stacked outputs of the decoder layers), and a loop whose
    variable picks an item of the module's own state (`self.fpn_convs[i]`, `self.embed[level]`) runs as
    often as the model has items.

    `handed`: parameters the function's callers bind to a length of their data (`handed_counts`), with that length.
    `kept`: (asked when needed) attributes of `self` another method keeps from what it was handed (`kept_inputs`),
    whose extents are this rank's data's. `owner`: the class whose method this is (`b, t = self._sizes(x)`: what its
    methods hand back)."""
    loops = []
    bindings = local_bindings(flat)
    splits = _split_locals(bindings)
    wrappers: frozenset[str] | None = None  # locals bound to a pass-through (`wrap = tqdm if verbose else identity`)
    tensors: frozenset[str] | None = None  # names read as tensors (`tensor_names`)
    ranges: frozenset[str] = frozenset()  # ... to `range` itself (`range_fn = range if not verbose else tqdm.trange`)
    produced: dict[str, cst.Call] | None = None  # locals bound to what a length-returning function of the file made
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind is cst.For:
            iterable = node.iter
        elif kind in COMPREHENSIONS():
            iterable = node.for_in.iter
        else:
            continue
        reported = iterable  # (what a pass-through wrapper walks is counted; the loop's own iterable reported)
        if type(iterable) is cst.Call and iterable.args:
            if wrappers is None:
                wrappers, ranges = _wrapper_locals(flat), _range_locals(flat)
            iterable = passed_through(iterable, wrappers, ranges)
        call = same_items(iterable)
        if isinstance(call, cst.Name) and index is not None and produced is None:
            produced = _produced_locals(flat, index)
        if isinstance(call, cst.Name) and (call.value in splits or call.value in (produced or {})):
            # `chunks = x.chunk(n)` ... `for c in chunks`; `ranges = _minibatch_ranges(x, m)` ... `for r in ranges`
            iterable = call = reported = splits.get(call.value) or produced[call.value]  # type: ignore[index]
        elif isinstance(call, cst.Name) and (bound := _bound_range(bindings, call.value)) is not None:
            iterable = call = bound  # `for t in steps` over `steps = range(len(x))` (reported at the loop)
        if isinstance(call, (cst.Call, cst.Name, cst.Subscript)) and (
                drawn := drawn_length(flat, call, bindings)) is not None and len(drawn) == 1:
            iterable = call = cst.Call(func=cst.Name("range"), args=[cst.Arg(drawn[0])])  # `torch.randperm(x.size(0))`
        if isinstance(call, cst.Call):
            name = (call_name(call) or "").rsplit(".", 1)[-1]
            if name in _LOOPED or _length_function(index, call):
                loops.append((node, iterable, reported))
        elif isinstance(call, cst.Name):
            if tensors is None:
                tensors = tensor_names(flat)  # (once per function, and only when a loop walks a bare name)
            if call.value in tensors:
                loops.append((node, iterable, reported))  # `for x_t in x` for a tensor `x`: `x.unbind(0)`
    if not loops:
        return {}
    counts = CountedLoops(flat, inputs, calls, handed, kept, index, owner)
    found = {}
    for node, iterable, reported in loops:
        if calls is not None and _picks_own_item(node):
            continue
        if calls is not None and _walks_a_schedule(node, iterable, inputs, calls):
            continue
        source = counts.source(iterable)
        if source is not None:
            found[id(node)] = (reported, source)
    return found


# Calls that hand back their first argument's items, one by one, unchanged: progress bars and the identity.


def passed_through(
    iterable: cst.BaseExpression, wrappers: frozenset[str] = frozenset(), ranges: frozenset[str] = frozenset()
) -> cst.BaseExpression:
    """What a loop walks through a pass-through wrapper: `tqdm(range(n), desc=...)`, `track(xs)`, a local bound
    to one (`wrap = tqdm if verbose else identity` ... `wrap(range(n))`); `trange(n)` is `range(n)`, and so is a call
    of a local in `ranges`, bound only to `range` or `trange` (`range_fn = range if not verbose else tqdm.trange`)."""
    for _ in range(4):
        if not isinstance(iterable, cst.Call) or not iterable.args or iterable.args[0].keyword or iterable.args[0].star:
            return iterable
        name = (call_name(iterable) or "").rsplit(".", 1)[-1]
        if name == "trange" or isinstance(iterable.func, cst.Name) and iterable.func.value in ranges:
            return iterable.with_changes(func=cst.Name("range"))  # (`range_fn = range if quiet else tqdm.trange`)
        if name not in known.PASS_THROUGH and not (isinstance(iterable.func, cst.Name) and iterable.func.value in wrappers):
            return iterable
        iterable = iterable.args[0].value
    return iterable


def drawn_length(
    flat: Flat, iterable: cst.BaseExpression, bindings: dict[str, list[cst.BaseExpression]] | None = None
) -> list[cst.BaseExpression] | None:
    """The sizes that fix how many items a random draw holds, for a draw of a given size or a local bound only to
    one: `np.random.choice(n, k, replace=False)` and `random.sample(xs, k)` hold `k` items, `torch.randperm(n)` `n`,
    `torch.multinomial(p, k)` `k`; `torch.randperm(n)[:k]` at most `k`; a store's `.sample(n)` `n` (mini-batches of a
    rollout storage, `self.storage.sample()`, as many as its settings: no size). Which items were drawn differs per
    rank, how many does not. None for anything else (`np.random.choice(xs)` is one item; a draw's length of `x.shape[0]`
    still follows the data, through the size returned here)."""
    values = [iterable]
    if isinstance(iterable, cst.Name):
        values = (local_bindings(flat) if bindings is None else bindings).get(iterable.value, [])
    found: list[cst.BaseExpression] = []
    for value in values:
        sizes = _draw_sizes(value)
        if sizes is None:
            return None
        found += sizes
    return found if values else None


def _draw_sizes(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Slice):
        cut = value.slice[0].slice  # `torch.randperm(n)[:k]`: the first `k` of a drawn order
        if cut.lower is None and cut.step is None and cut.upper is not None and _draw_sizes(value.value) is not None:
            return [cut.upper]
        return None
    if not isinstance(value, cst.Call):
        return None
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "sample" and EXPERIENCE_STORE.search(
            code_of(value.func.value)):
        # `self.storage.sample()`, `self.memory.sample(n)`: mini-batches or transitions of a store, as many as its
        # settings or the size handed say
        return [arg.value for arg in value.args if arg.keyword is None or arg.keyword.value in ("batch_size", "n")]
    name = (call_name(value) or "").split(".")
    position, keyword = _SIZED_DRAWS.get(tuple(name[-2:]), None) or _SIZED_DRAWS.get((name[-1],), (None, None))
    if position is None:
        return None
    for index, arg in enumerate(value.args):
        if arg.keyword is not None and arg.keyword.value == keyword or arg.keyword is None and index == position:
            return [arg.value]
    return None


# Objects storing a rank's own experience (a replay buffer, a memory pool, a rollout storage): what `.sample()` of
# one draws differs per rank in its values and its episode ends (`taint`), not in how many items it hands out.
EXPERIENCE_STORE = re.compile(r"(?i)(?:buffer|memory|mem_pool|replay|storage|rollouts?)\w*$")
# Draws whose length is one argument (its position, its keyword): a sample of a given size, a permutation of `n`.
_SIZED_DRAWS: dict[tuple[str, ...], tuple[int, str]] = {
    ("random", "choice"): (1, "size"), ("random", "sample"): (1, "k"), ("random", "choices"): (-1, "k"),
    ("random", "permutation"): (0, "x"), ("randperm",): (0, "n"), ("multinomial",): (1, "num_samples"),
}
# Text of such a draw (or a store's `.sample(...)`), with its arguments as the group: the pre-filter of a loop over one.
DRAWN_TEXT = r"\b(?:" + "|".join(sorted({key[-1] for key in _SIZED_DRAWS} | {"sample"})) + r")\(([^\n]*)"


def plain_number(index: ModelIndex | None, expr: cst.BaseExpression) -> bool:
    """`np.ceil(hours / length)`, `math.floor(n * r)`: a numpy or math function of names, numbers and arithmetic
    only (no tensor made or indexed in it): its `.item()` is a number the names decide, no tensor's value."""
    if index is None or not isinstance(expr, cst.Call):
        return False
    if not index.qualify(call_name(expr) or "").startswith(("numpy.", "math.")):
        return False
    return not any(type(node) in (cst.Call, cst.Subscript) for arg in expr.args for node in walk(arg.value))


def _wrapper_locals(flat: Flat) -> frozenset[str]:
    """Locals bound only to pass-throughs: a progress bar, `identity`, `lambda t: t`, or a choice between them."""
    return frozenset(name for name, values in local_bindings(flat).items() if all(map(_is_pass_through, values)))


def _range_locals(flat: Flat) -> frozenset[str]:
    """Locals bound only to `range` or a progress bar's `trange`, or a choice between them: calling one is a range."""
    return frozenset(name for name, values in local_bindings(flat).items() if all(map(_is_range, values)))


def _is_range(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _is_range(value.body) and _is_range(value.orelse)
    return isinstance(value, (cst.Name, cst.Attribute)) and code_of(value).rsplit(".", 1)[-1] in ("range", "trange")


def _is_pass_through(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _is_pass_through(value.body) and _is_pass_through(value.orelse)
    if isinstance(value, cst.Lambda):
        params = value.params.params
        return len(params) == 1 and isinstance(value.body, cst.Name) and value.body.value == params[0].name.value
    if isinstance(value, (cst.Name, cst.Attribute)):
        return (code_of(value).rsplit(".", 1)[-1]) in known.PASS_THROUGH
    if isinstance(value, cst.Call) and call_name(value) in ("partial", "functools.partial") and value.args:
        return _is_pass_through(value.args[0].value)  # `partial(tqdm, desc="sampling")`
    return False


def local_bindings(flat: Flat) -> dict[str, list[cst.BaseExpression]]:
    """The values each local is assigned (not loop variables), worked out once per function (do not change them)."""
    found = flat.memo.get("bindings")
    if found is None:
        found = flat.memo["bindings"] = _local_bindings(flat)
    return found


def _local_bindings(flat: Flat) -> dict[str, list[cst.BaseExpression]]:
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node, _ctx in flat.nodes:
        targets, value = targets_of(node)
        if value is None or type(node) in (cst.For, cst.CompFor):
            continue
        pairs = [p for target in targets for p in paired(target, value) or [(target, value)]]  # (`a, b = x, y`)
        for target, each in pairs:
            for name in bound_names(target):
                bound.setdefault(name, []).append(each)
    return bound


def _bound_range(bindings: dict[str, list[cst.BaseExpression]], name: str) -> cst.Call | None:
    """The range a local is bound to (`bindings`: `local_bindings`) when every binding is a range over the same count
    (`range(n)`, `reversed(range(n))`, or a choice between the two directions): what a loop over the local walks."""
    found: list[cst.Call] = []
    pending = list(bindings.get(name, []))
    while pending:
        value = pending.pop()
        if isinstance(value, cst.IfExp):
            pending += [value.body, value.orelse]
            continue
        walked = same_items(value)
        if not (isinstance(walked, cst.Call) and call_name(walked) == "range" and walked.args):
            return None
        found.append(walked)
    return found[0] if found and all(code_of(f) == code_of(found[0]) for f in found) else None


def _own_collection(value: cst.BaseExpression) -> bool:
    """`self.to_features`, `self.heads.values()`: a collection the model holds, as long on every rank."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args \
            and value.func.attr.value in ("values", "items", "keys", "children", "modules"):
        value = value.func.value
    return isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"


def _split_locals(bindings: dict[str, list[cst.BaseExpression]]) -> dict[str, cst.Call]:
    """Locals bound once (`bindings`: `local_bindings`), to a split of a tensor (`chunks = x.chunk(self.chunks,
    dim=1)`)."""
    found = {}
    for name, values in bindings.items():
        value = values[0] if len(values) == 1 else None
        # (`text = re.split(pattern, text) if pattern else [text]`: the pieces, or the input whole)
        arms = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        for arm in arms:
            if isinstance(arm, cst.Call) and isinstance(arm.func, cst.Attribute) \
                    and (call_name(arm) or "").rsplit(".", 1)[-1] in _SPLITS:
                found[name] = arm
                break
    return found


def _settings(flat: Flat, inputs: frozenset[str], calls: Calls) -> set[str]:
    """Arguments read only as namespaces of settings: every use is a plain attribute read (`args.grad_steps`, not
    `args.x[i]`, `args.lengths.max()`, `len(args)`) or the whole object handed to a method of an object `self` holds
    (`self.handler.on_step(args, state)`), none of them inside what a call that runs a submodule is handed (a batch
    read field by field goes into the model: `self.layer(batch.x)`). A trainer's `args` hold the same values on every
    rank; what is counted from them counts steps of a setting."""
    names = set(inputs) - {"self", "cls"}
    if not names:
        return set()
    found = set(names)
    fed: set[int] = set()  # names handed, somewhere in their arguments, to a call that runs a submodule
    for node, _ctx in flat.nodes:
        if type(node) is cst.Call and calls.callee(node) is not None:
            fed.update(id(n) for arg in node.args for n in walk(arg.value) if type(n) is cst.Name)
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Name or node.value not in found:
            continue
        parent = flat.parent.get(id(node))
        if isinstance(parent, cst.Param) or (isinstance(parent, cst.Attribute) and parent.attr is node):
            continue  # the parameter itself; another object's attribute of the same name
        outer = flat.parent.get(id(parent)) if parent is not None else None
        plain = isinstance(parent, cst.Attribute) and parent.value is node and not (
            isinstance(outer, cst.Subscript) and outer.value is parent
            or isinstance(outer, cst.Call) and outer.func is parent
            or isinstance(outer, cst.Attribute) and outer.value is parent
        )
        handed = isinstance(parent, cst.Arg) and parent.value is node and _held_objects_method(outer)
        if not (plain or handed) or id(node) in fed:
            found.discard(node.value)
    return found


def _held_objects_method(call: cst.CSTNode | None) -> bool:
    """`self.handler.on_step_end(args, state)`: a method of an object `self` holds (not a function given the value to
    transform, `torch.split(x, n)`, nor a helper of the class)."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    owner = call.func.value
    return isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self"


def _walks_a_schedule(loop: cst.CSTNode, iterable: cst.BaseExpression, inputs: frozenset[str], calls: Calls) -> bool:
    """`for i in range(len(sigmas) - 1)` whose body reads the argument only one step at a time (`sigmas[i]`,
    `sigmas[i + 1]`, or its length again) and never hands it, or a step of it, to a submodule as its first argument
    (the data a model runs on, `self.step(tokens[:, t])`): a schedule of steps the caller chose (noise levels, time
    steps), the same on every rank."""
    if not isinstance(loop, cst.For) or not isinstance(iterable, cst.Call) or call_name(iterable) != "range":
        return False
    counted = {
        node.args[0].value.value
        for arg in iterable.args for node in walk(arg.value)
        if type(node) is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1
        and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value in inputs
    }
    steps = set(bound_names(loop.target))
    if not counted or not steps:
        return False
    stepped: set[int] = set()  # `sigmas[i]` subscripts by the loop variable (and `len(sigmas)` again)
    for node in walk(loop.body):
        if type(node) is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "len" and node.args:
            stepped.add(id(node.args[0].value))
            continue
        if type(node) is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value in counted:
            if any(isinstance(e.slice, cst.Slice) for e in node.slice):
                return False  # `sentences[start:start + batch_size]`: a batch of the data at a time, no step
            if any(type(n) is cst.Name and n.value in steps for e in node.slice for n in walk(e.slice)):
                stepped.add(id(node.value))
            else:
                return False
        elif type(node) is cst.Call and node.args and not node.args[0].keyword and calls.callee(node) is not None:
            first = node.args[0].value
            base = first.value if isinstance(first, cst.Subscript) else first
            if isinstance(base, cst.Name) and base.value in counted:
                return False
    uses = [n for n in walk(loop.body) if type(n) is cst.Name and n.value in counted]
    return bool(uses) and all(id(n) in stepped for n in uses)


def _picks_own_item(loop: cst.CSTNode) -> bool:
    """Does the loop's variable index an attribute of `self` in its body or element (`self.fpn_convs[i](x)`)?"""
    target = loop.target if isinstance(loop, cst.For) else getattr(getattr(loop, "for_in", None), "target", None)
    names = set(bound_names(target)) if target is not None else set()
    if not names:
        return False
    for node in walk(loop):
        if type(node) is cst.Subscript and isinstance(node.value, cst.Attribute):
            root = node.value
            while isinstance(root, cst.Attribute):
                root = root.value
            if isinstance(root, cst.Name) and root.value == "self":
                for element in node.slice:
                    part = element.slice
                    if isinstance(part, cst.Index) and isinstance(part.value, cst.Name) and part.value.value in names:
                        return True
    return False


# Splits given a list of piece sizes or indices make as many pieces as the list says.
_SIZED_SPLITS = frozenset({"split", "tensor_split"})
_SIZE_KEYWORDS = frozenset({"split_size_or_sections", "split_size", "sections", "indices"})


def _is_sequence(value: cst.BaseExpression) -> bool:
    """A list or tuple of sizes: written out, repeated (`[n] * k`), made by `.tolist()` or a comprehension."""
    if isinstance(value, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(value, cst.BinaryOperation):
        return isinstance(value.left, (cst.List, cst.Tuple)) or isinstance(value.right, (cst.List, cst.Tuple))
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "tolist"


# The iterables whose length `CountedLoops.source` reads.
# Walks along other iterables, as often as one of them is long (`zip_longest`: the longest; `itertools.` or bare).
_ALONG = frozenset({"enumerate", "zip", "zip_longest"})
_LOOPED = frozenset({"range", *_ALONG, *_SPLITS})


# A dataset's name (`dataset`, `train_ds`), not a batch's or a sample's.
_DATASET_NAME = re.compile(r"(?i)(?:^|_)(?:dataset|ds)s?$")
# A dataset built for this rank alone: handed the rank, or a shard of the data.
_RANKED = re.compile(known.RANK_TEXT + r"|(?<!\w)(?:local_|global_)?rank(?!\w)|shard|split_by_node")


def _loader_length(value: cst.BaseExpression) -> bool:
    """Is `value`, handed to `len`, a loader of batches (`len(train_dataloader)`, `len(self.loader)`)? The number of
    batches is the same on every rank: a distributed sampler splits the data evenly (padding the last shard)."""
    name = dotted(value)
    return name is not None and _LOADER_NAME.search(name.rsplit(".", 1)[-1]) is not None


# A loader's name, not a dataset's or a batch's (`train_loader`, `dataloader`, `val_dl`).
_LOADER_NAME = re.compile(r"loader|(?:^|_)dl$")


class CountedLoops:
    """Which loops of one function run a number of times set by a length of this rank's data."""

    def __init__(
        self, flat: Flat, inputs: frozenset[str], calls: Calls | None = None, handed: dict[str, str] | None = None,
        kept: Callable[[], frozenset[str]] | None = None, index: ModelIndex | None = None,
        owner: ClassInfo | None = None,
    ) -> None:
        self.flat = flat
        self.calls = calls
        self.index = index  # (for the functions of the file that hand back a length: `length_returns`)
        self.owner = owner  # (for its methods that hand back lengths among other values: `element_length_returns`)
        self._kept_of = kept
        self._kept: frozenset[str] | None = None
        # names holding this rank's data (not an argument that is a namespace of settings: `_settings`)
        self.data: set[str] = set(inputs) - {"self", "cls"} - (_settings(flat, inputs, calls) if calls else set())
        self.fixed = _checked_against_settings(flat)  # `if n != self.config.n: raise`: the same on every rank
        # names holding a length of it -> the length read, for messages (first: the parameters callers bind to one)
        self.counts: dict[str, str] = {name: length for name, length in (handed or {}).items() if name not in self.fixed}
        self._splits: dict[str, cst.Call] | None = None  # locals bound to a split of a tensor (read when asked)
        self._tensors: frozenset[str] | None = None  # names read as tensors (`tensor_names`, read when asked)
        for _ in range(2):  # a second pass carries values around loops
            for node, _ctx in flat.nodes:
                if type(node) is cst.CompFor:
                    continue
                targets, value = targets_of(node)
                if value is None:
                    continue
                if type(node) is cst.For:
                    # `for batch in true_batches`: each item of this rank's data is its data (not an index of it)
                    length, held = None, not _counts_indices(value) and self._holds_data(value)
                elif len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) and (
                        pairs := paired(targets[0], value)):
                    for target, each in pairs:  # `epochs, freeze = opt.epochs, opt.freeze`: each its own value
                        self._bind(target, self._length(each), self._holds_data(each))
                    continue
                elif len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) and (
                        lengths := self._returned_lengths(value)):
                    # `targets, batch_size, max_length = self.validate_args(targets, ...)`: the method hands back a
                    # length of what it was given in one place of its tuple
                    held = self._holds_data(value)
                    for at, element in enumerate(targets[0].elements):
                        self._bind(element.value, code_of(value) if at in lengths else None, held)
                    continue
                else:
                    length = self._length(value)
                    held = self._holds_data(value)
                for target in targets:
                    self._bind(target, length, held)

    def _bind(self, target: cst.BaseExpression, length: str | None, held: bool) -> None:
        """The names `target` binds hold a length of this rank's data (`length`) or its data (`held`)."""
        for name in bound_names(target):
            if name in self.fixed:
                continue
            if length is not None:
                self.counts.setdefault(name, length)
            if held:
                self.data.add(name)

    def source(self, iterable: cst.BaseExpression) -> str | None:
        """The length of this rank's data that sets how often a loop over `iterable` runs, as text, if any."""
        iterable = passed_through(same_items(iterable))  # (`enumerate(tqdm(ranges))`: the ranges)
        if isinstance(iterable, cst.Name):  # `enumerate(zip(chunks, masks))` for `chunks = x.split(sizes)`
            if self._splits is None:
                self._splits = _split_locals(local_bindings(self.flat))
                if self.index is not None:
                    self._splits.update(_produced_locals(self.flat, self.index))
            iterable = self._splits.get(iterable.value, iterable)
        if isinstance(iterable, cst.Name):
            if self._tensors is None:
                self._tensors = tensor_names(self.flat)
            if iterable.value in self._tensors and self._holds_data(iterable):
                return code_of(iterable)  # a tensor of this rank's data walked along its first dimension, step by step
        if not isinstance(iterable, cst.Call):
            return None
        if self._hands_back_length(iterable):
            return code_of(iterable)  # `for begin, end in _minibatch_ranges(features, m)`
        name = call_name(iterable) or ""
        last = name.rsplit(".", 1)[-1]
        if name == "range":
            for arg in iterable.args:
                found = self._length(arg.value)
                if found is not None:
                    return found
            return None
        if last in _ALONG:
            if last == "zip" and any(_own_collection(arg.value) for arg in iterable.args if arg.keyword is None):
                return None  # `zip(x.split(self.dims), self.to_features)`: a piece for each of the model's modules
            for arg in iterable.args:
                found = self.source(arg.value)
                if found is not None:
                    return found
            return None
        if last in _SPLITS and isinstance(iterable.func, cst.Attribute):
            owner = iterable.func.value
            # (`th.split(x, 1)` of `import torch as th`: torch's, which splits its first argument)
            torch_form = (self.index.qualify(name) if self.index is not None else name).startswith("torch.")
            split = iterable.args[0].value if torch_form and iterable.args else owner
            if name == "re.split" and len(iterable.args) > 1:
                split = iterable.args[1].value  # `re.split(pattern, text)`: the pieces of `text`
            sizes = self._sizes(iterable, torch_form) if last in _SIZED_SPLITS else None
            if sizes is not None:
                # `x.split([d // 2] * 2)`: as many pieces as the list has sizes, however long `x` is; sizes read from
                # this rank's data (`(idx[1:] - idx[:-1]).tolist()`) make as many pieces as that data says
                found = self._holds_data(sizes) or self._length(sizes) is not None
                return code_of(iterable) if found else None
            if self._holds_data(split):
                return code_of(iterable)
        return None

    def _sizes(self, call: cst.Call, torch_form: bool) -> cst.BaseExpression | None:
        """The list of piece sizes a `split`/`tensor_split` is given (a literal list or tuple, a repeated list, a
        `.tolist()`, or a local bound only to these), or None when it is given one size or something unknown."""
        at = 1 if torch_form else 0
        positional = [a for a in call.args if a.keyword is None and not a.star]
        keyed = [a for a in call.args if a.keyword is not None and a.keyword.value in _SIZE_KEYWORDS]
        arg = positional[at] if len(positional) > at else keyed[0] if keyed else None
        if arg is None:
            return None
        value = arg.value
        if isinstance(value, cst.Name):
            bound = local_bindings(self.flat).get(value.value)
            return value if bound and all(map(_is_sequence, bound)) else None
        return value if _is_sequence(value) else None

    def _length(self, expr: cst.CSTNode) -> str | None:
        """A length of this rank's data that `expr` reads (or a name holding one), as text."""
        stack = [expr]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Name:
                if node.value in self.counts and node.value not in self.fixed:
                    return self.counts[node.value]
                continue
            if kind is cst.Call:
                func = node.func
                if isinstance(func, cst.Name) and func.value in _LENGTH_FUNCS and len(node.args) == 1:
                    if self._holds_data(node.args[0].value) and not _loader_length(node.args[0].value) \
                            and not self._built_dataset(node.args[0].value):
                        return code_of(node)
                elif isinstance(func, cst.Name) and self._hands_back_length(node):
                    return code_of(node)  # `batch_size = _get_batch_size(features)`
                elif isinstance(func, cst.Attribute) and func.attr.value in _LENGTH_METHODS:
                    if func.attr.value == "item" and plain_number(self.index, func.value):
                        pass  # `np.ceil(hours / length).item()`: what the names hold decides (read below)
                    elif self._holds_data(func.value) or (
                            func.attr.value in _EXTENT_METHODS and self._kept_data(func.value)):
                        return code_of(node)
            elif kind is cst.Attribute:
                if node.attr.value in _LENGTH_ATTRS or _COUNT_ATTR.match(node.attr.value):
                    if self._holds_data(node.value) or self._kept_data(node.value):
                        return code_of(node)
                    continue
                stack.append(node.value)  # (`self.max_length`: what it is read from, not a local named `max_length`)
                continue
            elif kind is cst.Lambda:
                continue
            if kind is cst.Arg and node.keyword is not None:  # type: ignore[attr-defined]
                continue  # `restore(output_dir=d, train_size=n)`: a setting handed over by name, not a count computed
            stack.extend(children(node))
        return None

    def _hands_back_length(self, call: cst.Call) -> bool:
        """Is `call` a call of a function of this file handing back a length of an argument (`return x.shape[0]`) or a
        list counted by one (`return [(b, b + m) for b in range(0, len(x), m)]`), handed this rank's data there?"""
        if self.index is None or not isinstance(call.func, cst.Name) or call.func.value in _NOT_FUNCTIONS:
            return False
        positions = length_returns(self.index, call.func.value)
        return any(
            at in positions and self._holds_data(arg.value)
            for at, arg in enumerate(a for a in call.args if a.keyword is None and not a.star)
        )

    def _returned_lengths(self, value: cst.BaseExpression) -> frozenset[int]:
        """The places of the tuple a method of the class hands back (`self.validate_args(targets, ...)`) that hold a
        length of an argument this call hands this rank's data."""
        if self.owner is None or self.index is None or type(value) is not cst.Call:
            return frozenset()
        func = value.func
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
            return frozenset()
        method = self.owner.method(func.attr.value)
        if method is None or "return" not in method.text:
            return frozenset()
        positional = [a.value for a in value.args if a.keyword is None and not a.star]
        return frozenset(
            at for at, params in element_length_returns(self.index, method).items()
            if any(p < len(positional) and self._holds_data(positional[p]) for p in params)
        )

    def _kept_data(self, expr: cst.CSTNode) -> bool:
        """Is `expr` an attribute of `self` that another method kept from what it was handed (`self.img` of
        `def pre_process(self, img): self.img = img.unsqueeze(0)`)? Its extents are this rank's input's."""
        if self._kept_of is None or not isinstance(expr, cst.Attribute):
            return False
        if not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            return False
        if self._kept is None:
            self._kept = self._kept_of()
        return expr.attr.value in self._kept

    def _built_dataset(self, value: cst.BaseExpression) -> bool:
        """`len(dataset)` of a dataset this function built itself (`dataset = build_dataset(args)`), not one handed
        the rank or a shard: every rank builds the same one (a distributed sampler splits it), so its length is the
        same everywhere."""
        if not (isinstance(value, cst.Name) and _DATASET_NAME.search(value.value)):
            return False
        bound = local_bindings(self.flat).get(value.value, [])
        return bool(bound) and all(
            isinstance(each, cst.Call) and _RANKED.search(code_of(each)) is None for each in bound
        )

    def _holds_data(self, expr: cst.CSTNode) -> bool:
        """Does `expr` hold (or compute from) a value of this rank's data, not of `self`'s own state, a submodule,
        what a submodule returned, or a list built from numbers (`[3] * (m - 2)`)?"""
        if self.calls is not None and isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
            if self.calls.is_module_sequence(expr) or self.calls.classes_of(expr):
                return False  # `len(model.products)`: a module container's length is the model's
        stack = [expr]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Name:
                if node.value in self.data:
                    return True
                continue
            if kind is cst.BinaryOperation and (
                isinstance(node.left, (cst.List, cst.Tuple)) or isinstance(node.right, (cst.List, cst.Tuple))
            ):
                continue  # `[3] * (m - 2) + [2, 1]`: a list of settings, however many numbers it repeats
            if kind is cst.Call and self.calls is not None and self.calls.callee(node) is not None:
                continue  # what a submodule returned: shaped by the model as much as by the batch
            if kind is cst.IfExp:
                stack += [node.body, node.orelse]  # the value is one of the two, not the flag that chose it
                continue
            if kind is cst.Attribute and node.attr.value == "dataset":
                continue  # `loader.dataset.text`: the whole dataset, every rank's (a sampler splits the indices)
            if kind is cst.Attribute:
                stack.append(node.value)  # `x.real`, `batch.windows`: what it is read from; `self.w`: not data
                continue
            if kind is cst.Call:
                name = call_name(node) or ""
                if name.rsplit(".", 1)[-1] in _MADE and name.startswith(("torch.", "np.", "numpy.")):
                    continue
                func = node.func
                if isinstance(func, cst.Attribute):
                    stack.append(func.value)
                stack.extend(arg.value for arg in node.args)
                continue
            if kind is cst.Lambda:
                continue
            stack.extend(children(node))
        return False


class LengthHelpers:
    """A text pre-filter: `base`, or a call of a function of this file that may hand back a length of an argument or a
    list counted by one (its text reads a length and returns, or calls such a function: `_minibatch_ranges` calling
    `_get_batch_size`), read from the functions' text alone; `length_returns` answers on a parse."""

    def __init__(self, index: ModelIndex, base) -> None:
        self.base = base
        texts = {
            name: index.skeleton.text(span.start, span.end) for name, span in index.skeleton.functions.items()
        }
        named = {name for name, text in texts.items() if "return" in text and _LENGTH_HINT.search(text)}
        if named:
            calls = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, sorted(named))) + r")\(")
            named |= {name for name, text in texts.items() if "return" in text and calls.search(text)}
        alternatives = "|".join(map(re.escape, sorted(named)))
        # `for r in _ranges(x, m)`, or `spans = _ranges(x, m)` (then walked: `for r in tqdm(spans)`); the iterable
        # up to the loop's colon, over lines (`enumerate(\n tqdm.tqdm(\n ranges, desc=...))`)
        self._looped = re.compile(
            rf"for(?<!\wfor)\b[^\n]*?\bin\b[^:]*?(?<![\w.])(?:{alternatives})\("
        ) if named else None
        self._bound = re.compile(rf"^[ \t]*(\w+)[ \t]*=[ \t]*(?:{alternatives})\(", re.M) if named else None
        # `targets, batch_size, max_length = self.validate_args(targets, ...)`: a method of a class of the file that
        # may hand back a length among other values (`element_length_returns` answers on a parse)
        methods = sorted({
            name for cls in index.classes.values() for name, span in cls.span.methods.items()
            if _LENGTH_HINT.search(text := index.skeleton.text(span.start, span.end)) and "return" in text
        })
        self._unpacked = re.compile(
            r"^[ \t]*\w+(?:[ \t]*,[ \t]*\w+)+[ \t]*=[ \t]*self\.(?:" + "|".join(map(re.escape, methods)) + r")\(", re.M
        ) if methods else None

    def search(self, text: str) -> bool:
        if self.base.search(text):
            return True
        if self._unpacked is not None and "for" in text and self._unpacked.search(text):
            return True
        if self._looped is None or self._bound is None:
            return False
        if self._looped.search(text):
            return True
        return any(
            re.search(rf"for(?<!\wfor)\b[^\n]*?\bin\b[^:]*?(?<![\w.]){name}\b", text)
            for name in set(self._bound.findall(text))
        )


@memoised
def length_helpers(index: ModelIndex, base) -> LengthHelpers:
    """`LengthHelpers` of `base` for this file, once."""
    return LengthHelpers(index, base)


# Builtins and torch names called bare: no function of the file.
_NOT_FUNCTIONS = frozenset({"len", "max", "min", "range", "enumerate", "zip", "list", "tuple", "sorted", "int", "sum"})


def _length_function(index: ModelIndex | None, call: cst.Call) -> bool:
    """Is `call` a call, by bare name, of a function of this file that hands back a length of an argument?"""
    return (
        index is not None and isinstance(call.func, cst.Name) and call.func.value not in _NOT_FUNCTIONS
        and bool(length_returns(index, call.func.value))
    )


def _produced_locals(flat: Flat, index: ModelIndex) -> dict[str, cst.Call]:
    """Locals bound once, to a call of a function of this file handing back a length or a list counted by one
    (`ranges = _minibatch_ranges(features, m)`)."""
    return {
        name: values[0] for name, values in local_bindings(flat).items()
        if len(values) == 1 and isinstance(values[0], cst.Call) and _length_function(index, values[0])
    }


@memoised(cycle=frozenset())
def length_returns(index: ModelIndex, name: str) -> frozenset[int]:
    """The positions of the parameters of the function `name` of this file whose length it hands back (`return
    x.shape[0]`, `return len(f["ids"]) - 1`, or what another such function returns of it) or whose length counts
    the list it hands back (`return [(b, min(b + m, n)) for b in range(0, n, m)]` for `n = len(x)`): a call handed
    this rank's data makes a count of it."""
    function = index.function_info(name)
    if function is not None and "yield" in function.text:
        return _yield_counts(index, function)
    if function is None or "return" not in function.text:
        return frozenset()
    flat, returns = own_returns(function)
    root = flat.nodes[0][0] if flat is not None and flat.nodes else None
    if not isinstance(root, cst.FunctionDef):
        return frozenset()
    found = set()
    for at, param in enumerate(positional_parameters(root)):
        counts = CountedLoops(flat, frozenset({param}), index=index)
        if any(counts._length(value) is not None for value in returns):
            found.add(at)
    return frozenset(found)


@memoised
def element_length_returns(index: ModelIndex, method: MethodInfo) -> dict[int, frozenset[int]]:
    """For a method handing back a tuple (`return targets, batch_size, max_length`), the places of the tuple that
    hold a length of an argument (`max_length = targets.size(1) - 1` on one path) -> the positions of those
    arguments in a call (`self` left out)."""
    flat, returns = own_returns(method)
    root = flat.nodes[0][0] if flat is not None and flat.nodes else None
    if not isinstance(root, cst.FunctionDef):
        return {}
    params = positional_parameters(root)
    params = params[1:] if params[:1] in (["self"], ["cls"]) else params
    found: dict[int, set[int]] = {}
    for at, param in enumerate(params):
        counts = CountedLoops(flat, frozenset({param}), index=index)
        for value in returns:
            for place, element in enumerate(value.elements if type(value) is cst.Tuple else ()):
                if not isinstance(element, cst.StarredElement) and counts._length(element.value) is not None:
                    found.setdefault(place, set()).add(at)
    return {place: frozenset(ats) for place, ats in found.items()}


def _yield_counts(index: ModelIndex, function: MethodInfo) -> frozenset[int]:
    """`length_returns` of a generator: the positions of the parameters whose length sets how often it yields, a
    `yield` inside a loop over `range(0, x.shape[0], n)` or a `while start < x.shape[-2]` (OmegaFold's shards of an
    edge representation, `for s, e, r in _get_sharded_stacked(edge, subbatch_size=n)`)."""
    flat = flat_of(function)
    root = flat.nodes[0][0] if flat is not None and flat.nodes else None
    if not isinstance(root, cst.FunctionDef):
        return frozenset()
    found = set()
    for at, param in enumerate(positional_parameters(root)):
        counted = counted_loops(flat, frozenset({param}), index=index)
        loops = [node for node, _ctx in flat.nodes if id(node) in counted or type(node) is cst.While and _extent_test(
            node.test, param)]
        if any(type(n) is cst.Yield for loop in loops for n in walk(loop.body)):
            found.add(at)
    return frozenset(found)


def _extent_test(test: cst.BaseExpression, param: str) -> bool:
    """Does a loop's test read an extent (`x.shape[-2]`, `x.size(0)`, `len(x)`) and name `param`?"""
    return any(type(n) is cst.Name and n.value == param for n in walk(test)) and bool(
        _EXTENT_READ.search(code_of(test)))


# An extent read in a loop's test (`x.shape[-2]`, `x.size(0)`, `len(x)`).
_EXTENT_READ = re.compile(r"\.shape\b|\.size\(|\blen\(")
# Methods reading a tensor's extent (not `len()`: a dataset or a list of settings kept whole is every rank's).
_EXTENT_METHODS = frozenset({"size", "numel"})


@memoised
def kept_inputs(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes of `self` that a method of `cls` keeps from what it was handed (`def pre_process(self, img): img =
    torch.from_numpy(img); self.img = img.unsqueeze(0)`): in the class's other methods (`tile_process`, reading
    `self.img.shape`) their extents are those of this rank's input. Not the constructor's or an initialiser's (what
    a class is built with is its settings), nor what a method makes from nothing (`self.bank = torch.zeros(n, d)`)."""
    skipped = {id(method.span) for method in (*cls.init_methods, *cls.late_init_methods)}
    found: set[str] = set()
    for method in cls.all_methods():
        if id(method.span) in skipped or not WRITES_SELF.search(method.text):
            continue
        flat = flat_of(method)
        root = flat.nodes[0][0] if flat is not None and flat.nodes else None
        if not isinstance(root, cst.FunctionDef):
            continue
        inputs = frozenset(positional_parameters(root)) | {p.name.value for p in root.params.kwonly_params}
        inputs -= {"self", "cls"}
        if not inputs:
            continue
        counts = CountedLoops(flat, inputs)
        for node, _ctx in flat.nodes:
            if type(node) in (cst.Assign, cst.AnnAssign) and node.value is not None:
                attrs = list(self_targets(node))
                if attrs and counts._holds_data(node.value):
                    found.update(attrs)
    return frozenset(found)


_TENSOR_ATTRS = frozenset({"shape", "ndim"})
_TENSOR_METHODS = frozenset({"size", "dim"})


def tensor_names(flat: Flat) -> frozenset[str]:
    """Names the function reads as a tensor, by an extent (`x.shape`, `x.ndim`, `x.size(1)`, `x.dim()`): a loop over
    one walks its first dimension, item by item, as often as it is long (what `x.unbind(0)` hands back); a list of
    tensors (`for f in feats`) has no extent of its own."""
    found = set()
    for node, _ctx in flat.nodes:
        if type(node) is cst.Attribute and isinstance(node.value, cst.Name):
            if node.attr.value in _TENSOR_ATTRS:
                found.add(node.value.value)
        elif type(node) is cst.Call and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
            if node.func.attr.value in _TENSOR_METHODS:
                found.add(node.func.value.value)
    found |= annotated_tensors(flat.nodes[0][0] if flat.nodes else None)  # (`def f(self, ids: Tensor, targets: Tensor)`)
    if not found:
        return frozenset()
    # a name also bound to a list (`targets = []`, `[t.to(d) for t in targets]`) holds tensors, one an item
    lists = {name for name, values in local_bindings(flat).items() if any(map(_makes_list, values))}
    return frozenset(found - lists)


def _makes_list(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.List, cst.ListComp, cst.Tuple)) or isinstance(value, cst.Call) and call_name(
        value) in ("list", "tuple")


def _counts_indices(iterable: cst.BaseExpression) -> bool:
    """A `range(...)` (or `enumerate`/`zip` of one only): its items are positions, not items of the data."""
    if not isinstance(iterable, cst.Call):
        return False
    name = call_name(iterable)
    if name == "range":
        return True
    return (name or "").rsplit(".", 1)[-1] in _ALONG and bool(iterable.args) and all(
        _counts_indices(arg.value) for arg in iterable.args if arg.keyword is None
    )


def handed_counts(index: ModelIndex, cls: ClassInfo, func: cst.FunctionDef) -> dict[str, str]:
    """Parameters of the method `func` that count one of its loops (`for t in range(seq_length)`) and that a call of
    it by the class itself or a base (`self.forward_layer(x, cell, seq_length=seq_length)` for `seq_length =
    x.shape[0]`) binds to a length of the caller's data: the loop runs as often as that rank's input is long. By
    parameter: the length the caller read."""
    if not cls.self_callers(func.name.value):
        return {}  # (most methods: no call of this one by the class itself)
    counting = _counting_parameters(index, func)
    if not counting:
        return {}
    found: dict[str, str] = {}
    for param, length in cls.self_call_bindings(func, counting, _lengths_handed):
        found.setdefault(param, length)
    return found


@memoised
def _counting_parameters(index: ModelIndex, func: cst.FunctionDef) -> frozenset[str]:
    """The parameters of `func` named, bare, in the `range(...)` of one of its loops (`range(seq_length)`, not
    `range(strategy.max_length)`: an attribute of an object handed in is not what the caller counted), or in the
    value of a local named there (`num_block = (batch_size + bs - 1) // bs` ... `range(num_block)`), once per
    method."""
    params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    params -= {"self", "cls"}
    if not params or "range(" not in index.body_text(func):
        return frozenset()
    found: set[str] = set()
    locals_: dict[str, set[str]] = {}  # `blocks = ceil(n / self.bs)`: the names a local is computed from
    for node in walk(func.body):
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            locals_.setdefault(node.targets[0].target.value, set()).update(_bare_names(node.value))
        elif type(node) is cst.For or type(node) is cst.CompFor:  # (a comprehension's loop too)
            iterable = passed_through(node.iter)
            if isinstance(iterable, cst.Call) and call_name(iterable) == "range":
                for arg in iterable.args:
                    found.update(_bare_names(arg.value))
    # a local counting a loop counts it by what it was computed from (one hop, as zg204's text trigger reads it)
    found.update(name for local in found & locals_.keys() - params for name in locals_[local])
    return frozenset(found & params)


def _bare_names(expr: cst.BaseExpression) -> set[str]:
    """Names `expr` computes with as values (`n - 1`, `max(n, 1)`), not as an object read from (`s.max_length`,
    `sizes[i]`, `f(x)`)."""
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        return set()
    if isinstance(expr, cst.Call):
        return {name for arg in expr.args for name in _bare_names(arg.value)}
    return {name for child in children(expr) if isinstance(child, cst.BaseExpression) for name in _bare_names(child)}


# Words without which a caller reads no length of its data (a text trigger, before any parse).
_LENGTH_HINT = re.compile(r"len\(|\.shape\b|\.size\(|numel\(|max\(")


@memoised(cycle={})
def _lengths_handed(index: ModelIndex, cls: ClassInfo, name: str) -> dict[int | str, str]:
    """What the methods of `cls` pass to `self.<name>(...)` that is a length of their data: by argument position (after
    `self`) or keyword, the length read."""
    needle = f"self.{name}("
    found: dict[int | str, str] = {}
    for method in cls.all_methods():
        if method.name == name or needle not in method.text or not _LENGTH_HINT.search(method.text):
            continue
        flat = flat_of(method)
        if flat is None or not flat.nodes or not isinstance(root := flat.nodes[0][0], cst.FunctionDef):
            continue
        inputs = frozenset(p.name.value for p in (*root.params.posonly_params, *root.params.params,
                                                  *root.params.kwonly_params)) - {"self", "cls"}
        counts: CountedLoops | None = None
        for key, value in self_call_arguments(flat, name):
            counts = counts or CountedLoops(flat, inputs)
            length = counts._length(value)
            if length is not None:
                found.setdefault(key, length)
    return found


# A keyword argument read from a length (`n_decoder_steps=input_vector.size(1)`, `steps=len(xs)`): a text trigger
# (written without spaces around `=`, as keyword arguments are: `b, t = x.size()` unpacks a shape)
HANDS_LENGTH = re.compile(r"[(,]\s*\w+=(?:len\(|[\w.]+(?:\[[^\]\n]*\])*\.(?:size\(|shape\b))")


def counts_handed_on(
    index: ModelIndex, cls: ClassInfo, flat: Flat, inputs: frozenset[str], calls: Calls, runs: frozenset[str]
) -> list[tuple[cst.Arg, str, str]]:
    """Calls of a method a base class of another file defines (`self.decode_autoregressive(decode_one, ...,
    n_decoder_steps=input_vector.size(1))`) that bind a parameter counting one of its loops to a length of this
    rank's data, and a parameter that loop calls to what runs submodules here (a local function in `runs`, or a
    submodule): (the argument, the length, the callable handed). Methods of this file answer for themselves, as
    callees (`handed_counts`)."""
    found: list[tuple[cst.Arg, str, str]] = []
    counts: CountedLoops | None = None
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute):
            continue
        if not (isinstance(node.func.value, cst.Name) and node.func.value.value == "self"):
            continue
        name = node.func.attr.value
        if cls.method(name) is not None:
            continue  # (defined in this file)
        method = cls.inherited_method(name)
        target = flat_of(method) if method is not None else None
        func = target.nodes[0][0] if target is not None and target.nodes else None
        if not isinstance(func, cst.FunctionDef):
            continue
        loops = _counting_calls(method.index, func)  # type: ignore[union-attr]
        if not loops:
            continue
        bound = _bind(func, node)
        for param, called in loops.items():
            arg = bound.get(param)
            if arg is None:
                continue
            handed = next((code_of(bound[c].value) for c in sorted(called) if c in bound and _runs(
                bound[c].value, runs, calls)), None)
            if handed is None:
                continue
            counts = counts or CountedLoops(flat, inputs, calls)
            length = counts._length(arg.value)
            if length is not None:
                found.append((arg, length, f"{handed}()"))
    return found


def _runs(value: cst.BaseExpression, runs: frozenset[str], calls: Calls) -> bool:
    """Is `value`, handed to a callee to call, a local function that runs submodules or a submodule?"""
    if isinstance(value, cst.Name) and value.value in runs:
        return True
    return isinstance(value, (cst.Attribute, cst.Subscript)) and bool(calls.classes_of(value))


def _bind(func: cst.FunctionDef, call: cst.Call) -> dict[str, cst.Arg]:
    """The arguments of a call of the method `func` (through `self.`), by the parameter each binds."""
    params = positional_parameters(func)
    bound: dict[str, cst.Arg] = {}
    at = 0
    for arg in call.args:
        if arg.star:
            break
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg
        else:
            if at < len(params):
                bound[params[at]] = arg
            at += 1
    return bound


@memoised
def _counting_calls(index: ModelIndex, func: cst.FunctionDef) -> dict[str, frozenset[str]]:
    """By parameter of `func` that counts one of its loops (`for idx in range(n_decoder_steps)`): the parameters that
    loop's body calls (`decode_one(idx, ...)`)."""
    counting = _counting_parameters(index, func)
    if not counting:
        return {}
    params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    found: dict[str, frozenset[str]] = {}
    for node in walk(func.body):
        if type(node) is not cst.For:
            continue
        iterable = passed_through(node.iter)
        if not isinstance(iterable, cst.Call) or call_name(iterable) != "range":
            continue
        named = {n.value for arg in iterable.args for n in walk(arg.value) if type(n) is cst.Name} & counting
        called = frozenset(
            n.func.value for n in walk(node.body)
            if type(n) is cst.Call and isinstance(n.func, cst.Name) and n.func.value in params
        )
        for param in named:
            if called:
                found[param] = found.get(param, frozenset()) | called
    return found


def _checked_against_settings(flat: Flat) -> frozenset[str]:
    """Names the function requires to equal a setting of `self`, raising otherwise (`if num_images !=
    self.config.num_images: raise ValueError(...)`, `assert n == self.n`)."""
    found: set[str] = set()
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind is cst.If and isinstance(node.test, cst.Comparison):
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            raises = any(
                isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in stmt.body)
                for stmt in body
            )
            if raises and all(isinstance(t.operator, cst.NotEqual) for t in node.test.comparisons):
                found.update(_compared_with_self(node.test))
        elif kind is cst.Assert and isinstance(node.test, cst.Comparison):
            if all(isinstance(t.operator, cst.Equal) for t in node.test.comparisons):
                found.update(_compared_with_self(node.test))
    return frozenset(found)


def _compared_with_self(test: cst.Comparison) -> set[str]:
    sides = [test.left, *(t.comparator for t in test.comparisons)]
    if not any(code_of(side).startswith("self.") for side in sides):
        return set()
    return {side.value for side in sides if isinstance(side, cst.Name)}


# The pieces of a sequence split into one per rank: `np.array_split(items, world)`, `torch.chunk(x, world)`.
_SHARE_SPLITS = _SPLITS | frozenset({"array_split"})


def rank_share(
    flat: Flat, iterable: cst.BaseExpression, of_rank: Callable[[cst.CSTNode], str | None], locals_too: bool = True
) -> tuple[cst.CSTNode, str] | None:
    """This rank's share of a sequence in what a loop walks: a slice with a bound `of_rank` answers for (`items[rank::
    world]`, `feats[start:end]` for `start = rank * step`) or the rank's piece of a split (`np.array_split(items,
    world)[rank]`), in the iterable, in the arguments of a call around it (`enumerate(...)`, a logger's
    `log_every(...)`) or in a local bound to one (`shard = items[rank::world]` ... `for x in shard`). Shares differ in
    length by the remainder when the sequence does not divide evenly (the last slice shorter, some empty), so the
    ranks walk different numbers of items. As (the share, the rank value its bound came from). `locals_too`: follow
    locals to what they were bound to (worth a pass over the function only where a local holds the rank)."""
    bound: dict[str, list[cst.BaseExpression]] | None = None
    todo, seen = [iterable], 0
    while todo and seen < 8:
        expr = todo.pop()
        seen += 1
        for node in walk(expr):
            kind = type(node)
            if kind is cst.Subscript:
                found = _share_of(node, of_rank)
                if found is None and locals_too and type(node.value) is cst.Name:
                    # `chunks[rank]` for `chunks = torch.tensor_split(items, world)`: the piece of a split a local holds
                    if bound is None:
                        bound = local_bindings(flat)
                    values = bound.get(node.value.value, ())
                    if len(values) == 1 and isinstance(values[0], cst.Call):
                        found = _share_of(node.with_changes(value=values[0]), of_rank)
                if found is not None:
                    return node, found
            elif locals_too and kind is cst.Name and node is not getattr(flat.parent.get(id(node)), "func", None):
                if bound is None:
                    bound = local_bindings(flat)
                values = bound.get(node.value, ())
                if len(values) == 1:  # (a local bound once: `shard = items[rank::world]`)
                    todo.append(values[0])
    return None


def _share_of(node: cst.Subscript, of_rank: Callable[[cst.CSTNode], str | None]) -> str | None:
    """The rank a subscript's slice bounds, or its item of a split, come from (`_SHARE_SPLITS`)."""
    if len(node.slice) != 1:
        return None
    part = node.slice[0].slice
    if isinstance(part, cst.Slice):
        for edge in (part.lower, part.upper, part.step):
            if edge is not None and (source := of_rank(edge)) is not None:
                return source
        return None
    value = node.value
    if (
        isinstance(part, cst.Index) and isinstance(value, cst.Call)
        and (call_name(value) or "").rsplit(".", 1)[-1] in _SHARE_SPLITS
    ):
        return of_rank(part.value)
    return None
