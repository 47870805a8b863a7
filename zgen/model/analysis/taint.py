"""Which values in a function can differ between ranks, and why: the rank, a random draw, this rank's data.

`Taint` follows them through assignments, branches and loops;
`random_function` says when a helper of the file returns a random draw.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import weakref
from collections.abc import Callable, Iterator, Sequence

from ..program import known
from ..program.holds import module_like_name
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Kind, facts_of
from ..program.skeleton import dotted as ast_dotted
from ..program.tree import access_path, annotated_tensors, call_name, chain_root, children, code_of, const_str, cst, dotted, parameter_names, positional_parameters, walk
from ..program.trigger import Trigger, line_matches, word_first
from .hooks import hook_kept, item_key
from .counts import EXPERIENCE_STORE, local_bindings, plain_number, rank_share
from .own import SELF_CALL
from .reach import function_target
from .runs import ast_function
from .flow import (
    COMPREHENSIONS, FILLS, Ctx, Flat, bound_names, flat_of, loop_items, own_returns, paired, passes_items,
    same_items, self_call_arguments, stored_into, targets_of,
)
from .state import (
    WRITES_SELF, Handoff, RankTests, StateReaders, handoff, holder_key, self_field, self_targets, self_writes,
    unpacked_handoffs, value_test_text,
)

__all__ = [
    "RANK", "RANDOM", "HOST_RANDOM", "DATA", "HOST", "CLOCK", "ITEM_COUNTS", "Taint", "rank_attrs", "random_function", "draw_kind",
    "draw_trigger", "draws_in", "extent_exit_text", "CALLED_IN_IF", "VALUE_FREE_ATTRS", "is_none_test", "presence_helpers", "agreeing", "handed_parameters", "own_state",
    "output_test_text", "rank_decorator", "VALUE_REDUCTIONS", "stored_sample_text", "setting_of_an_object",
]

RANK = "rank"
RANDOM = "random"
HOST_RANDOM = "host-random"
DATA = "data"
HOST = "host"  # this host's files: an output that already exists, a node-local cache
CLOCK = "clock"  # this host's clock: elapsed time, a deadline


# How a loader of batches is named (`train_loader`, `dataloader`, `data_iter`, `batches`), as opposed to the lists of
# layers, names or settings a function also walks.
_LOADER = re.compile(r"load|batches$|data_?iter|_iter$|^iter|dataset|^(?:train|val|valid|eval|test)_data$")


def _batches_of(flat: Flat, inputs: frozenset[str]) -> frozenset[str]:
    """The names a `for` binds to the items of an argument (or an attribute of `self`) named as a loader of batches
    (`for batch in loader`, `for i, (x, y) in enumerate(self.train_loader)`), directly or through `enumerate`/`tqdm`."""
    found = set()
    for node, _ctx in flat.nodes:
        if type(node) is not cst.For:
            continue
        iterable, target = node.iter, node.target
        if isinstance(iterable, cst.Call) and iterable.args and (dotted(iterable.func) or "").rsplit(".", 1)[-1] in (
                "enumerate", "tqdm", "iter"):
            iterable = iterable.args[0].value
            if isinstance(target, cst.Tuple) and len(target.elements) == 2 and \
                    (dotted(node.iter.func) or "").endswith("enumerate"):
                target = target.elements[1].value
        if isinstance(iterable, cst.Name) and iterable.value in inputs and _LOADER.search(iterable.value):
            found.update(bound_names(target))
        elif isinstance(iterable, cst.Attribute) and isinstance(iterable.value, cst.Name) and \
                iterable.value.value == "self" and _LOADER.search(iterable.attr.value):
            found.update(bound_names(target))  # `for batch in self.test_loader`: a loader the object was given
    if found:
        for node, _ctx in flat.nodes:  # `x, y = sample`, `x = batch[0]`: the parts of a batch are this rank's too
            if type(node) is cst.Assign and len(node.targets) == 1:
                value = node.value.value if isinstance(node.value, cst.Subscript) else node.value
                if isinstance(value, cst.Name) and value.value in found:
                    found.update(bound_names(node.targets[0].target))
    return frozenset(found)


def _filled(node: cst.CSTNode, local: set[str]) -> tuple[list[cst.CSTNode], cst.CSTNode | None]:
    """`xs.append(v)` as the binding ([xs], v) when `xs` is a local of this function; else ([], None)."""
    if type(node) is cst.Call:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in FILLS and isinstance(func.value, cst.Name):
            if node.args and func.value.value in local:
                return [func.value], node.args[-1].value
    return [], None


@functools.cache
def _moves() -> frozenset[type]:
    """The node types taint flows through (`Taint`): bindings and calls."""
    return frozenset({cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Call})


# The settings an object carries (`model.args`, `trainer.cfg`, `agent.hparams`): fixed when it was built, the same on
# every rank, whatever data the object was handed or loaded since.
_SETTINGS = re.compile(r"args|cfg|config|conf|opts?|h?params|hyper_?params|settings")


def setting_of_an_object(node: cst.Attribute) -> bool:
    """Is `node` a field of the settings a local object carries (`model.args.n_epochs`, not `self.args.x`, whose
    writes this analysis follows itself)?"""
    held = node.value
    return isinstance(held, cst.Attribute) and _SETTINGS.fullmatch(held.attr.value) is not None \
        and isinstance(held.value, cst.Name) and held.value.value != "self"


class Taint:
    """Which values in a function can differ between ranks, and why.

    A value is tainted by the rank (`dist.get_rank()`, `LOCAL_RANK`,
    `is_main_process`), by a random draw (torch's generator or the host's
    `random`/`numpy.random`), or by a data-dependent selection (`nonzero()`,
    `unique()`, one-argument `torch.where`, `.any()`/`.all()`). Indexing with
    the rank (`shards[rank]`) is arithmetic, not a decision. Taint flows
    through assignments and through branches: a name assigned under a
    tainted condition is tainted too (`to_drop = True` inside
    `if torch.rand([]) < p:`), from that assignment on (or around a loop
    that encloses both). `direct` keeps only what flowed through values,
    which is what decides how often a loop runs.

    A test of this host's files (`os.path.isfile(ckpt)`) decides where it is tested (`if exists(out): return`); what
    is assigned under it (the state a checkpoint held, a step counter resumed from it) does not carry it.

    A `x is None` test does not carry data taint: whether an optional input
    was given is the caller's convention (`labels is not None`), not data.
    """

    def __init__(
        self, index: ModelIndex, cls: ClassInfo | None, flat: Flat, own_state: bool = True,
        output_of: Callable[[cst.CSTNode], str | None] | None = None,
        filled: Callable[[], dict[str, dict[str, str]]] | None = None,
        fills: Callable[[cst.Call], list[tuple[str, str]]] | None = None,
    ) -> None:
        self.index = index
        self.cls = cls
        self._in_module = cls is not None and cls.is_module
        # `o = self.sub(h)` ... `if o.argmax(-1)[0] == 0:`: a value read of what a submodule-running call returned
        # is this rank's data too (`output_of` names that call for an expression using its output as a value; the
        # caller knows which calls run submodules: `divergence`)
        self._output_of = output_of
        self.names: dict[str, dict[str, str]] = {}
        self.direct: dict[str, dict[str, str]] = {}
        self.rank_attrs = rank_attrs(index, cls) if cls is not None else frozenset()
        self._own_state = own_state and cls is not None  # attributes other methods set per rank (lazy)
        # attributes other methods fill from what the model returned (asked with `own_state`, by the caller who
        # knows which calls run a model: `script.filled_state`)
        self._filled = filled if self._own_state else None
        # the locals a call hands a function that keeps in them what the model returned (`self.evaluate(dev,
        # metric)`: `script.filled_arguments`), -> why
        self._fills = fills
        # the sources of taint that came from such records: values a rank kept, read by an exit test, not counts or
        # choices (`kept_only`)
        self._kept_sources: set[str] = set()
        self._state_of_self: dict[str, dict[str, str]] | None = None
        # Each expression's taint, with the `_version` it was read at: names (and where they were tainted) change
        # while taint propagates, and each change starts a new version; a read of the same version is still exact.
        self._memo: dict[tuple[int, bool], tuple[int, dict[str, str]]] = {}
        self._version = 0
        self._flat = flat
        self._mirror: dict[int, frozenset[int]] = {}  # assignments both sides of a test make alike (`_mirrored`)
        # Where each tainted name was assigned (position, enclosing loops): a use before that
        # assignment sees the taint only when a loop around both carries it back.
        self._where: dict[str, list[tuple[int, tuple[cst.CSTNode, ...]]]] = {}
        self._fields: dict[str, set[str]] = {}  # `self.stats` -> its fields written tainted (`self.stats.steps`)
        self._rate_holders: tuple[str, ...] | None = None  # (`_rate_holders`, read at the first stepped scheduler)
        # `dist.all_reduce(t)`: a local a collective made the same on every rank, from that call on (by position)
        # (or bound only ever to every rank's values gathered, `kls = accelerator.gather(kl)`, from that binding on)
        self.agreed: dict[str, int] = {}
        self._agreeing_nested: frozenset[str] | None = None  # (`_nested_agreeing`, read when asked)
        self._shards = _mentions_shards(index)  # (the text trigger of a shard function: `_loads_shard`)
        self._rank_constants = rank_constants(index)  # (`RANK = int(os.getenv("RANK", -1))` at the file's top)
        self._plain_bindings: dict[str, list[tuple[int, cst.BaseExpression]]] | None = None  # (`_bound_as_before`)
        self._mask_locals: frozenset[str] | None = None  # (`_is_mask`, read at the first index by a local)
        self._lists: frozenset[str] | None = None  # (`_built_list`, read at the first length tested of an output)
        # name -> where it is bound, unconditionally, to a value every rank agrees on (position, loops): a tainted
        # binding before such a rebinding does not reach past it (`_reaches`)
        # (and the tests it runs under: it holds for a use under all of them)
        self._kills: dict[str, list[tuple[int, tuple[cst.CSTNode, ...], tuple[cst.CSTNode, ...]]]] = {}
        self._taint_count = 0  # calls of `_taint_name`: a pass that made none leaves nothing for another
        gathered: dict[str, int] = {}
        rebound: dict[str, int] = {}  # name -> the last position another binding of it sits at
        for node, node_ctx in flat.nodes:
            if type(node) is cst.Assert and (settled := _asserted_setting(node.test)) is not None:
                # `assert not (self.accept_memories ^ has_memories)`: past it, the local is the setting, on every
                # rank that goes on
                self._kills.setdefault(settled, []).append((flat.position[id(node)], node_ctx.loops, node_ctx.conds))
            elif type(node) is cst.Call and agreeing(node) and node.args and isinstance(node.args[0].value, cst.Name):
                self.agreed.setdefault(node.args[0].value.value, flat.position.get(id(node), 0))
            elif type(node) is cst.Assign or type(node) is cst.AugAssign or type(node) is cst.AnnAssign:
                targets, value = targets_of(node)
                names = [name for target in targets for name in bound_names(target)]
                at = flat.position.get(id(node), 0)
                if type(node) is cst.Assign and isinstance(value, cst.Call) and (
                        agreed_call(value) or _may_agree(value) and agreeing_function(index, value)):
                    for name in names:
                        gathered.setdefault(name, at)
                else:
                    for name in names:
                        rebound[name] = max(rebound.get(name, -1), at)
        for name, at in gathered.items():
            # (bound only ever to what every rank agreed on; or agreed last, `kl = dist_avg(kl)` after computing it:
            # from that binding on)
            if name not in rebound or rebound[name] < at:
                self.agreed.setdefault(name, at)
        if self.agreed:
            for name, at in _read_back(flat, self.agreed).items():
                self.agreed.setdefault(name, at)
            for name, at in _carried_on(flat, self.agreed).items():
                self.agreed.setdefault(name, at)
        # (the nodes taint flows through: bindings and calls; the rest of the function's nodes hand nothing on)
        moving = [(node, ctx) for node, ctx in flat.nodes if type(node) in _moves()]
        local = {  # names this function binds itself (not `self`, not an imported module)
            name for node, _ctx in moving for target in targets_of(node)[0] for name in bound_names(target)
        } - {"self", "cls"}
        # The function's arguments: what this call was given (a dict of inputs whose keys differ per rank).
        root = flat.nodes[0][0] if flat.nodes else None
        self.inputs = parameter_names(root) - {"self", "cls"} if isinstance(root, cst.FunctionDef) else frozenset()
        batches = _batches_of(flat, self.inputs)
        if batches:
            # the batches a loop takes from a loader this call was given are this rank's data too (`for batch in
            # loader: if len(batch) == 0: continue`), also in a model's own training method (`def fit(self, loader)`)
            self.inputs = self.inputs | batches
        self.batches = batches
        self._shares: frozenset[str] | None = None  # (`_share_items`, on demand)
        self._given: dict[str, dict[str, cst.BaseExpression]] | None = None  # (`_given_field`, on demand)
        holders = frozenset(local | self.inputs)  # objects a value can be handed to (`state.handoff`)
        self._holders = holders
        # Local predicates, read at their calls (`_predicate_bodies`): built on the first call of a holder's name
        self._predicates: dict[str, list[cst.BaseExpression]] | None = None
        self._late: set[int] = set()  # nodes of their bodies: every assignment reaches them (they run at the call)
        # locals bound to an output (`o = self.sub(h)`, not an object handed one): their methods are the output's own
        self._output_locals = frozenset(
            name for node, _ctx in moving if type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign)
            for target in targets_of(node)[0] for name in bound_names(target)
            if targets_of(node)[1] is not None and output_of(targets_of(node)[1]) is not None
        ) if output_of is not None else frozenset()
        # `feats[key]` for an argument: (argument, key text), a mapping the call was given, read by a key
        self.keyed = frozenset(
            (node.value.value, code_of(node.slice[0].slice.value))
            for node, _ctx in flat.nodes
            if type(node) is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value in self.inputs
            and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
        )
        # Mappings the call was given that it fills or hands back (`cache[layer] = kv`, `return out, cache`): the
        # caller's state, whose keys follow the program's path, not a batch whose fields differ per rank
        # (`state`, and `fed` below: computed on first use, which most functions never reach)
        self._state: frozenset[str] | None = None
        self._writes: dict[str, frozenset[str] | None] | None = None  # (`mapping_writes`, on demand)
        self._fed: frozenset[tuple[str, str]] | None = None
        self._handed_whole: frozenset[str] | None = None
        # `count += x.shape[0]` in a loop: running counts grown by this rank's data, and where (`_running_test`)
        self._running: dict[str, list[tuple[str, tuple[cst.CSTNode, ...]]]] | None = None
        self._counting = False  # reading the tests a count is grown under (`_counted_under_data`)
        self._conditional: dict[str, list[tuple[cst.AugAssign, Ctx]]] | None = None  # (`_conditional_growth`)
        self._grown_elsewhere: dict[str, list[MethodInfo]] = {}  # a count of `self` -> the methods growing it
        # `for key in feats: ... feats[key]`: a mapping the call was given, walked directly; its keys are this batch's
        self.keyed_walks = frozenset(
            id(node.iter)
            for node, _ctx in flat.nodes
            if type(node) in (cst.For, cst.CompFor) and isinstance(node.iter, cst.Name)
            and node.iter.value in self.inputs and isinstance(node.target, cst.Name)
            and (node.iter.value, node.target.value) in self.keyed and node.iter.value not in self.state
        ) | _field_key_walks(flat, self._input_field, lambda: self.inputs - self.state if self.inputs else frozenset())
        # `x[idx, 1:]` for an argument `idx`: the samples the caller selected; how many differs per rank
        self.selections = frozenset(
            element.value
            for node, _ctx in flat.nodes
            if type(node) is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value != "self"
            for part in node.slice if isinstance(part.slice, cst.Index)
            if isinstance(element := part.slice.value, cst.Name) and element.value in self.inputs
        ) if self.inputs else frozenset()
        # `x.shape`, `x.view(...)` of an argument, or an argument annotated as one (`x: Tensor`): a tensor, whose
        # `len()` is its batch size
        self.tensors = frozenset(
            node.value.value
            for node, _ctx in flat.nodes
            if type(node) is cst.Attribute and node.attr.value in _TENSOR_ATTRS and isinstance(node.value, cst.Name)
            and node.value.value in self.inputs
        ) | annotated_tensors(root) if self.inputs else frozenset()
        # `kept = [s for s in sentences if len(s) > 0]`: what is left of an input after a filter on its items; it may
        # be empty on this rank alone (`if not kept: return`)
        self.filtered = _filtered_locals(flat, self.inputs) if self.inputs else frozenset()
        # names whose `len()` counts this rank's samples (a loader's batch: `len(batch["ids"]) < batch_size`)
        self.counted = self.selections | self.tensors | self.filtered | self.batches
        # `task = batch["task"]`: locals holding a field of a mapping the call was given, and locals computed from one
        # by a call handed it (`route = self._resolve_route(task=task)`)
        self.fields = _field_locals(flat, self._input_field)
        # `b = x.shape[0]`, `b, n, _ = x.shape`: locals that hold the batch size of a tensor the function holds
        self.batch_sizes = frozenset(
            name for node, _ctx in flat.nodes if type(node) is cst.Assign for name in _batch_size_names(node)
        )
        # `torch.tensor([sot, *tokens])` for an argument `tokens`: a list of this sample's values (tokens, ids), not of
        # modules or feature maps: how many it holds is this rank's data
        self.valued = frozenset(
            name for node, _ctx in flat.nodes if type(node) is cst.Call and self._builds_tensor(node)
            for name in _handed_names(node) if name in self.inputs
        ) | batches if self.inputs else frozenset()  # (a batch's `len()` is how many samples this rank holds)
        # `t = x.shape[1]`, `_, t = x.shape[:2]`, `n = len(tokens)`: locals holding an extent of what this call was
        # given (a tensor's length along a dimension, how many values a list holds)
        # (`num_gts = [len(t["labels"]) for t in targets]`: read once, at the first `max(num_gts)`)
        lists: list[frozenset[str]] = []

        def counts() -> frozenset[str]:
            if not lists:
                lists.append(_sample_count_lists(flat, self.inputs))
            return lists[0]

        self.extents = frozenset(
            name for node, _ctx in flat.nodes if type(node) is cst.Assign
            for name in _extent_names(node, self.inputs, self.valued, counts)
        ) if self.inputs else frozenset()
        # the tests of such extents, as their text: they decide an early exit, not which branch runs (`extent_only`)
        self._extent_tests: set[str] = set()
        self._asserted: frozenset[str] | None = None  # (`_asserted_extent`, read at the first empty test)
        if cls is not None and isinstance(root, cst.FunctionDef) and self.inputs:
            # `self.forward_single_task(x[mask], task.item())` for `task` in `labels.unique()`: a parameter the
            # class's own calls bind to a value that differs per rank differs too
            for name, (kinds, direct) in handed_parameters(index, cls, root).items():
                _merge_into(self.names.setdefault(name, {}), kinds)
                if direct:  # (what flowed through the values handed: a tensor chosen under a test has its shape)
                    _merge_into(self.direct.setdefault(name, {}), direct)
                self._version += 1
        for _ in range(2):  # a second pass carries taint around loops
            tainted = self._taint_count
            for node, ctx in moving:
                if type(node) is cst.CompFor:
                    continue  # a comprehension's variable lives in the comprehension only
                if type(node) in (cst.Call, cst.Assign, cst.AugAssign, cst.AnnAssign):
                    self._hand_off(node, ctx, holders)
                if type(node) is cst.Call and self._fills is not None and node.args:
                    self._filled_by(node, ctx, holders)
                targets, value = targets_of(node)
                if value is None:
                    targets, value = _filled(node, local)  # `offsets.append(n)`: the list holds what was put in
                if value is None:
                    continue
                for bound, each in _zipped(node, targets, value):  # (`for a, b in zip(xs, ys)`: each its own)
                    self._bind(node, ctx, bound, each, local)
            if self._taint_count == tainted:
                break  # (a pass that tainted nothing read what the next one would: the same answers)

    def _bind(
        self, node: cst.CSTNode, ctx: Ctx, targets: list[cst.CSTNode], value: cst.CSTNode, local: set[str]
    ) -> None:
        """`targets` hold what `value` holds (and the tests `node` runs under), from `node` on."""
        flat = self._flat
        direct = self.of(value, direct=True)
        kinds = dict(self.of(value))
        # `(using_ddp, rank, device) = setup_ddp(d)`: of a function of the file answering with a tuple, only
        # the places that hold the rank (or a decision on it) hold it
        placed = _rank_places(self.index, targets, value) if RANK in kinds else None
        as_before = None  # (asked once a test decides: `_bound_as_before`)
        tested: dict[str, str] = {}  # what the tests around the binding decide on
        for test in ctx.conds if ctx.conds and not _rewrapped(node) else ():
            decides = self.of(test)
            if not decides:
                continue
            if as_before is None:
                as_before = self._bound_as_before(node)
            if as_before or id(node) in self._mirrored(test):
                continue  # (`if main: ds = load(cfg)` ... `if not main: ds = load(cfg)`: every rank binds it)
            for kind, why in decides.items():
                if kind != HOST:  # (a test of this host's files is not carried: the docstring)
                    kinds.setdefault(kind, why)
                    tested.setdefault(kind, why)
        counter, start = _enumerate_counter(node, targets)
        if counter is not None:
            # `for i, s in enumerate(s_list)`: `i` counts 0, 1, 2, ... on every rank, whatever the items hold (how
            # many steps there are is the loop's count, told where the loop runs something), from where it starts
            counted = dict(tested)
            for kind, why in self.of(start).items() if start is not None else ():
                counted.setdefault(kind, why)
            for name in bound_names(counter) if counted else ():
                self._taint_name(name, counted, {}, (flat.position.get(id(node), -1), ctx.loops))
            kept = [e for e in targets[0].elements if e.value is not counter]  # type: ignore[attr-defined]
            targets = [cst.Tuple(kept)]
        if not kinds:
            # `best = broadcast_metric(best)`: from here on agreed; `for module in [g, d]:` after `module` was
            # bound on rank 0 alone: rebound, on every rank, to values every rank holds; `labels = load_all(path)`
            # after `labels = build(labels)` on the main process alone: a new value, every rank's own alike
            replaced = type(node) in (cst.Assign, cst.AnnAssign) and all(type(t) is cst.Name for t in targets)
            if replaced or not ctx.conds and (type(node) is cst.For or type(node) is cst.Assign and isinstance(
                    value, cst.Call) and self.agreed_value(value)):
                kill = (flat.position.get(id(node), -1), ctx.loops, ctx.conds)
                for name in (n for t in targets for n in bound_names(t)):
                    if kill not in self._kills.setdefault(name, []):
                        self._kills[name].append(kill)
                        if name in self._where:
                            self._version += 1  # (reads past it, already answered, are read again)
            return
        self._version += 1
        site = (flat.position.get(id(node), -1), ctx.loops)
        if type(node) is cst.Assign:  # `flags[i] = (h > 0).any()`: the local list holds the value
            targets = [*targets, *(cst.Name(c) for t in targets if (c := stored_into(t)) in local)]
        if placed is not None and not any(RANK in self.of(test) for test in ctx.conds):
            for at, element in enumerate(targets[0].elements):  # type: ignore[attr-defined]
                held = kinds if at in placed else {k: why for k, why in kinds.items() if k != RANK}
                for name in bound_names(element.value) if held else ():
                    self._taint_name(name, held, direct, site)
            return
        for target in targets:
            for name in bound_names(target):
                self._taint_name(name, kinds, direct, site)

    def _bound_as_before(self, node: cst.CSTNode) -> bool:
        """Is `node`, under a test, an assignment binding each of its names to the very expression an earlier
        binding outside any test gave it (`epochs = opt.epochs` ... `if rank == 0: weights, epochs = opt.weights,
        opt.epochs`)? The test decides nothing then: every rank holds the same value."""
        if type(node) is not cst.Assign or len(node.targets) != 1:
            return False
        pairs = _named_pairs(node.targets[0].target, node.value)
        if not pairs:
            return False
        if self._plain_bindings is None:
            self._plain_bindings = {}
            for other, ctx in self._flat.nodes:
                if type(other) is cst.Assign and len(other.targets) == 1 and not ctx.conds:
                    at = self._flat.position.get(id(other), -1)
                    for name, value in _named_pairs(other.targets[0].target, other.value):
                        self._plain_bindings.setdefault(name, []).append((at, value))
        at = self._flat.position.get(id(node), -1)
        return all(
            any(p < at and earlier.deep_equals(value) for p, earlier in self._plain_bindings.get(name, ()))
            for name, value in pairs
        )

    def _mirrored(self, test: cst.BaseExpression) -> frozenset[int]:
        """The assignments (by id) that both sides of the `if` testing `test` make alike: the `if` and its `else`,
        or it and another `if` of the same block on the negated test (`if is_main: ds = make_dataset(cfg)`, a
        barrier, `if not is_main: ds = make_dataset(cfg)`: the main process first). Every rank binds the name to
        the same value, so the test decides only when, not what (`_mirrored_assignments`)."""
        found = self._mirror.get(id(test))
        if found is None:
            found = self._mirror[id(test)] = _mirrored_assignments(self._flat, self._flat.parent.get(id(test)))
        return found

    def _hand_off(self, node: cst.CSTNode, ctx, holders: frozenset[str]) -> None:
        """`strategy.advance(out)`, `tracker.x = v`, `self.done = v`: the holder's state follows what it was handed
        (and the tests the hand-off runs under), from here on (`state.handoff`)."""
        found = handoff(node, holders, self._flat)
        if found is None:
            for each in unpacked_handoffs(node):  # `self.best_e, self.patience = epoch, patience` under a test
                self._handed(each, node, ctx, holders)
            return
        self._handed(found, node, ctx, holders)

    def _handed(self, found: Handoff, node: cst.CSTNode, ctx, holders: frozenset[str]) -> None:
        """The holder of one hand-off holds what it was handed (and the tests it runs under) from here on."""
        kinds: dict[str, str] = {}
        for value in found.values:
            _merge_into(kinds, self.of(value))
        rates = ()
        if _steps_on_a_value(node):  # `scheduler.step(score)`: the rates of the optimizers the function reads follow
            if self._rate_holders is None:
                self._rate_holders = _rate_holders(self._flat, holders)
            rates = self._rate_holders
        if rates and self._output_of is not None and (source := self._output_of(found.values[0])) is not None:
            kinds.setdefault(DATA, f"the output of `{source}`")  # (the scheduler compares it with its best: a value read)
        if type(node) is not cst.Call:  # a write under a test is decided by it (`if main: state.ready = True`); a
            for test in ctx.conds:  # call under one hands the object only its arguments (`out_dir.mkdir(...)`)
                _merge_into(kinds, {k: why for k, why in self.of(test).items() if k != HOST})
        if _rank_named_write(node):
            kinds.pop(RANK, None)  # `state.is_main = rank == 0`: read as the rank by its name, not the holder's state
        recorded = not _own_attribute_write(node)
        if recorded:
            kinds.pop(CLOCK, None)  # `metrics.update(speed(start))`: a time kept in a record is reported, not tested
        if not kinds:
            return
        self._version += 1
        direct: dict[str, str] = {}  # what flowed through the values handed (not the tests): how often a loop runs
        for value in found.values:
            _merge_into(direct, self.of(value, direct=True))
        if _rank_named_write(node):
            direct.pop(RANK, None)
        if recorded:
            direct.pop(CLOCK, None)
        site = (self._flat.position.get(id(node), -1), ctx.loops)
        for holder in (_written_field(node, found.holder), *rates):
            self._taint_name(holder, kinds, direct, site)
        self._version += 1  # (the direct taint read since the change above: read again from here on)

    def _merge_fields(
        self, found: dict[str, str], node: cst.CSTNode, holder: str, names: dict[str, dict[str, str]]
    ) -> None:
        """Into `found`, what the fields of `holder` written tainted before `node` hold (`self.stats.steps`,
        `phase.start_event`): an object read whole carries them. A field naming where values are placed
        (`args.device = torch.device("cuda", args.local_rank)`) carries the rank's place, not a decision: what a
        callee handed the object makes is the same on every rank, on its own device."""
        for field in sorted(self._fields.get(holder, ())):
            if field in names and self._reaches(node, field):  # type: ignore[arg-type]
                held = names[field]
                if field.rpartition(".")[2] in _PLACEMENT_KEYWORDS:
                    held = {kind: why for kind, why in held.items() if kind != RANK}
                _merge_into(found, held)

    def _share_items(self) -> frozenset[str]:
        """The names a loop binds to the items of this rank's share of a sequence (`counts.rank_share`: `for b in
        batches[rank::world]`), found once, on the first `len()` of a loop variable."""
        if self._shares is None:
            self._shares = frozenset()  # (asked again while this is computed: none yet)
            found: set[str] = set()
            if "rank" in self.index.source or "process_index" in self.index.source:
                for node, _ctx in self._flat.nodes:
                    if type(node) is cst.For and rank_share(
                            self._flat, node.iter, lambda edge: self.of(edge).get(RANK)) is not None:
                        found.update(bound_names(node.target))
            self._shares = frozenset(found)
        return self._shares

    def _given_field(self, name: str, attr: str) -> cst.BaseExpression | None:
        """The value a local bound once to a construction was given for field `attr` by keyword (`TrainState(step=0,
        ...)`: `0` for `state.step`), else None."""
        if self._given is None:
            self._given = _constructed_by_keyword(self._flat)
        fields = self._given.get(name)
        return fields.get(attr) if fields is not None else None

    def _asked(self, attribute: cst.Attribute) -> bool:
        """`phase.record()`: a method of the object called, which may read any of its fields."""
        parent = self._flat.parent.get(id(attribute))
        return type(parent) is cst.Call and parent.func is attribute

    def _taint_name(
        self, name: str, kinds: dict[str, str], direct: dict[str, str], site: tuple[int, tuple[cst.CSTNode, ...]]
    ) -> None:
        """`name` holds `kinds` (and `direct`, what flowed through values) from `site` on (position, loops)."""
        self._taint_count += 1
        if name.count(".") == 2 and name.startswith("self.") or name.count(".") == 1 and not name.startswith("self."):
            # `self.stats.steps` of `self.stats`, `phase.start_event` of a local `phase`
            self._fields.setdefault(name.rpartition(".")[0], set()).add(name)
        _merge_into(self.names.setdefault(name, {}), kinds)
        if direct:
            _merge_into(self.direct.setdefault(name, {}), direct)
        sites = self._where.setdefault(name, [])
        if site not in sites:
            sites.append(site)

    def _filled_by(self, call: cst.Call, ctx, holders: frozenset[str]) -> None:
        """`self.evaluate(dev, metric)` for a method that keeps what the model returned in `metric`: from here on
        `metric` holds this rank's own values."""
        for name, why in self._fills(call):  # type: ignore[misc]
            if name not in holders or DATA in self.names.get(name, {}):
                continue
            self._version += 1
            self._kept_sources.add(why)
            self._taint_name(name, {DATA: why}, {DATA: why}, (self._flat.position.get(id(call), -1), ctx.loops))
            self._version += 1

    def with_outputs(self, output_of: Callable[[cst.CSTNode], str | None]) -> Taint:
        """This function's taint once value reads of what submodule-running calls returned are data too."""
        found = Taint(self.index, self.cls, self._flat, self._own_state, output_of, self._filled, self._fills)
        found._extent_tests = self._extent_tests  # (one record of the extent tests read, whichever taint read them)
        found._kept_sources = self._kept_sources
        return found

    @property
    def state_of_self(self) -> dict[str, dict[str, str]]:
        """Attributes of `self` some method of the class writes per rank (`own_state`), or fills from what the model
        returned (`filled`)."""
        if self._state_of_self is None:
            state = own_state(self.index, self.cls) if self._own_state else {}
            filled = self._filled() if self._filled is not None else {}
            if filled:
                state = {attr: dict(kinds) for attr, kinds in state.items()}
                for attr, kinds in filled.items():
                    _merge_into(state.setdefault(attr, {}), kinds)
                    self._kept_sources.update(kinds.values())
            self._state_of_self = state
        return self._state_of_self

    def _nested_agreeing(self, node: cst.Call) -> bool:
        """Is `node` a call of a function nested in this one that makes an agreeing collective and returns
        (`def _broadcast_metric(m): ... dist.broadcast(t, src=0); return float(t.item())`)?"""
        if type(node.func) is not cst.Name or self._agreeing_nested == frozenset():
            return False
        if self._agreeing_nested is None:
            root = self._flat.nodes[0][0] if self._flat.nodes else None
            self._agreeing_nested = frozenset(
                n.name.value for n, _ctx in self._flat.nodes
                if type(n) is cst.FunctionDef and n is not root
                and any(type(c) is cst.Call and agreeing(c) for c in walk(n.body))
                and any(type(r) is cst.Return and r.value is not None for r in walk(n.body))
            )
        return node.func.value in self._agreeing_nested

    def agreed_use(self, use: cst.Name) -> bool:
        """Is `use` after a collective that made this local the same on every rank (`dist.all_reduce(t)`)? (A call
        whose value every rank holds alike, `if self._should_stop(tokens): break` for a flag all-reduced inside it:
        `agreed_value`.)"""
        at = self.agreed.get(use.value)
        return at is not None and self._flat.position.get(id(use), -1) > at

    def agreed_value(self, node: cst.CSTNode) -> bool:
        """Is `node` a value every rank holds alike: a local read after a collective made it so (`agreed_use`), every
        rank's values gathered (`accelerator.gather(kl)`), or what a method of the class returns once a collective
        made it the same (`agreed_output`: `self._mean_kl(old, new)` all-reducing the statistic it computes from its
        arguments)?"""
        if isinstance(node, cst.Name):
            return self.agreed_use(node)
        return isinstance(node, cst.Call) and (
            agreed_call(node) or self.agreed_output(node) or agreeing_function(self.index, node)
            or self._nested_agreeing(node)
        )

    def predicate_bodies(self, name: str) -> list[cst.BaseExpression]:
        """What a local predicate returns: the body of a lambda (or a choice between lambdas) a local is bound to, or
        the one returned expression of a function defined here (`def done(): return steps >= n`); for a parameter,
        the lambdas the class's own calls of this method hand it (`self._run_impl(move_condition, ...)` for
        `move_condition = lambda: self._total_episodes_counter < self._n_episodes` in the caller)."""
        if self._predicates is None:
            self._predicates = found = _local_predicates(self._flat)
            root = self._flat.nodes[0][0] if self._flat.nodes else None
            if self.cls is not None and isinstance(root, cst.FunctionDef) and self.inputs:
                for key, body in _handed_predicates(self.index, self.cls, root.name.value):
                    param = key if isinstance(key, str) else next(
                        iter(positional_parameters(root)[key:key + 1]), None)
                    if param in self.inputs:
                        found.setdefault(param, []).append(body)
            for bodies in found.values():
                for body in bodies:
                    self._late.update(id(n) for n in walk(body))
        return self._predicates.get(name, [])

    def _verdict_reads(self, call: cst.Call) -> tuple[str, ...]:
        """For `self.m(...)`, a method of the class returning a verdict: the attributes of `self` it decides on
        (`_tested_attributes`)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return ()
        method = self.cls.method(func.attr.value)  # type: ignore[union-attr]
        if method is None or self.agreed_output(call):
            return ()
        return _tested_attributes(method)

    def _reaches(self, use: cst.Name | cst.Attribute, key: str | None = None) -> bool:
        """Can a tainted assignment of this name (or holder `key`) reach `use` (earlier in the code, or around a
        loop)?"""
        position = self._flat.position.get(id(use))
        sites = self._where.get(key or use.value)
        if position is None or not sites or id(use) in self._late:
            return True
        loops = self._flat.nodes[position][1].loops
        guard = self._enclosing_while_test(use)
        if guard is not None:  # `while go:` with `go = ...` in the body: the loop carries it back
            loops = (*loops, guard)
        conds = self._flat.nodes[position][1].conds
        kills = [  # (a rebinding under tests that do not all hold where the use is may not have run)
            (k, kill_loops) for k, kill_loops, kill_conds in self._kills.get(key or use.value, ())
            if all(any(c is u for u in conds) for c in kill_conds)
        ]
        for at, around in sites:
            if any(loop is other for loop in around for other in loops):
                # (carried around the loop, unless rebound in the use's own loops, unconditionally, before the use and
                # after the binding, or anywhere before the use when the binding comes after it in the loop)
                if not any(
                    k < position and (at < k or at > position) and len(kill_loops) == len(loops)
                    and all(a is b for a, b in zip(kill_loops, loops)) for k, kill_loops in kills
                ):
                    return True
                continue
            if at < position and not any(
                at < k < position and all(any(l is o for o in loops) for l in kill_loops) for k, kill_loops in kills
            ):  # (a binding to an agreed value between, in no loop the use is outside of: every rank's the same)
                return True
        return False

    def _enclosing_while_test(self, use: cst.CSTNode) -> cst.While | None:
        """The `while` whose test holds `use` (a test is flattened outside its own loop)."""
        child, parent = use, self._flat.parent.get(id(use))
        for _ in range(12):
            if parent is None:
                return None
            if type(parent) is cst.While:
                return parent if parent.test is child else None
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return None
            child, parent = parent, self._flat.parent.get(id(parent))
        return None

    def of(self, expr: cst.CSTNode, direct: bool = False) -> dict[str, str]:
        """The taint kinds of an expression, each with the source it came from (for messages)."""
        key = (id(expr), direct)
        kept = self._memo.get(key)
        if kept is not None and kept[0] == self._version:
            return kept[1]
        found = self._of(expr, self.direct if direct else self.names)
        self._memo[key] = (self._version, found)
        return found

    def _of(self, expr: cst.CSTNode, names: dict[str, dict[str, str]]) -> dict[str, str]:
        found: dict[str, str] = {}
        stack = [expr]
        fielded: set[int] = set()  # `self.stats` of `self.stats.steps`: one field read, not the whole object
        while stack:
            node = stack.pop()
            kind = type(node)
            if (node is expr or kind is cst.UnaryOperation) and self.filtered and _emptiness_of(node, self.filtered):
                found.setdefault(DATA, code_of(node))  # `if not kept:` of a filtered input: empty on this rank only
                continue
            if kind in (cst.Subscript, cst.Call) and id(node) in self.keyed_walks:
                walked = same_items(node)  # `for task in batch["labels"]:`; `enumerate(levels)`: the items of `levels`
                if isinstance(walked, cst.Call) and call_name(walked) == "enumerate" and walked.args:
                    walked = walked.args[0].value
                word = "items" if isinstance(walked, cst.Name) or call_name(walked) in ("tuple", "list", "sorted") else "keys"
                found.setdefault(DATA, f"the {word} of `{code_of(_viewed(walked))}`")
                continue
            if kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "len" \
                    and len(node.args) == 1 and isinstance(node.args[0].value, cst.Name) \
                    and node.args[0].value.value in self._share_items():
                # `for batch_seeds in rank_batches: batch_size = len(batch_seeds)` over `seeds[rank::world]` split
                # into more batches than seeds: how much of this rank's share an item holds (empty on some ranks)
                found.setdefault(DATA, code_of(node))
                continue
            if kind is cst.IfExp and (plain := _shown_either_way(node)) is not None:
                stack.append(plain)  # `pbar = tqdm(pbar) if rank == 0 else pbar`: the same items, shown on one rank
                continue
            if kind is cst.Call:
                if agreed_call(node) or agreeing_function(self.index, node) or self._nested_agreeing(node):
                    continue  # `idist.all_reduce(loss)`, `accelerator.gather(kl)`: the same value on every rank
                if node.args and extent_call(self.index, node):
                    continue  # `self._check_end_condition(hyps)` returning `hyps.seq.shape[1] >= self.max_len`
                if isinstance(node.func, cst.Name) and node.func.value in _TYPE_TESTS:
                    continue  # `isinstance(self.loss, IQLoss)`: what an object is, not the values it was handed
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in _TIME_TEXT:
                    # `now = datetime.now().strftime("%Y-%m-%dT%H-%M-%S")`: a time written as text names a run (its log
                    # directory, a checkpoint); no deadline tests it
                    inner = self._of(node.func.value, names)
                    inner.pop(CLOCK, None)
                    _merge_into(found, inner)
                    continue
                if node.args and (self._shards or _rank_keyword(node)) and _loads_shard(node):
                    stack.append(node.func)  # `create_dataloader(path, bs, rank=LOCAL_RANK)`, `get_shard(n, rank,
                    for arg in node.args:  # world)`: this rank's share of the data or the work, as much on every rank
                        inner = self._of(arg.value, names)
                        inner.pop(RANK, None)
                        _drop_seeded(inner, arg.keyword.value if arg.keyword is not None else None)
                        _merge_into(found, inner)
                    if (own := self._call_kind(node)) is not None:
                        found.setdefault(own, _call_text(node))  # (what the function answers itself still counts)
                    continue
                if self._presence_call(node):
                    inner = self._of(node.args[0].value, names)  # `exists(x)`: a `x is not None` test by a helper
                    inner.pop(DATA, None)
                    _merge_into(found, self._presence(node.args[0].value, inner))
                    continue
                if isinstance(node.func, cst.Name) and node.func.value in self._holders:
                    # `while move_condition():` for `move_condition = lambda: self._episodes < n_episodes`: the
                    # predicate's body decides, read where it is called
                    stack.extend(self.predicate_bodies(node.func.value))
                number = reduced_value(node, self.agreed_use, scalar=True) if _read_into_a_number(node) else None
                if number is not None:  # `n_pos = int((labels > 0).sum())`: one value of this rank's tensor
                    found.setdefault(DATA, number)
                    continue
                taint = self._call_kind(node)
                if taint is None and self._output_of is not None:
                    taint = self._output_call(node)
                if taint is None and node is expr and self._in_module and (
                        number := reduced_value(node, self.agreed_use, scalar=True)):
                    # `n = mask.sum()` bound whole in a module's method: a later `if n > 0:` reads it (training code's
                    # losses and statistics are read by their own exit and collective rules); of a tensor drawn at
                    # random, the draw decides
                    drawn = {k: v for k, v in self._of(node.func, names).items() if k in (RANDOM, HOST_RANDOM)}
                    _merge_into(found, drawn or {DATA: number})
                    continue
                if taint is not None:
                    found.setdefault(taint, _call_text(node))
                elif self.cls is not None and (tested := self._verdict_reads(node)):
                    # `while not self._converged(epoch, patience):` deciding on `self._val_loss`, which this
                    # function keeps from a validation pass: the verdict is as much this rank's own as the loss
                    for attr in tested:
                        key = f"self.{attr}"
                        if key in names and self._reaches(node.func, key):
                            _merge_into(found, names[key])
                        elif attr in self.state_of_self:
                            _merge_into(found, self.state_of_self[attr])
                    if self._reports_time(node):
                        self._reported_arguments(node, names, found, stack)
                        continue
                elif self._reports_time(node):
                    # `speed_metrics("train", start, n)`: a time handed to a function of another module comes back as
                    # a report of it (a rate, a record), not the time a deadline tests
                    self._reported_arguments(node, names, found, stack)
                    continue
                elif self._input_keys(node):
                    found.setdefault(DATA, _call_text(node))
                elif isinstance(node.func, cst.Name) and node.func.value == "range":
                    # `range(int(n.item()))`: a trip count read from this rank's tensor (a buffer of `self` is
                    # shared); what the tensor came from (a random draw, the rank) says why, when known
                    for read in (n for arg in node.args for n in walk(arg.value) if type(n) is cst.Call):
                        if _reads_value(read):
                            # (`np.ceil(hours / length).item()`: a number of arithmetic on names, no tensor: only
                            # what those names hold decides)
                            plain = plain_number(self.index, read.func.value)
                            _merge_into(found, self._of(read.func.value, names) or (
                                {} if plain else {DATA: _call_text(read)}))
            elif kind is cst.Name:
                if self.agreed_use(node):
                    continue
                if id(node) in self.keyed_walks:
                    found.setdefault(DATA, f"the keys of `{node.value}`")
                if id(node) not in fielded and node.value in self._fields:
                    # the whole local handed on or asked (`log(phase)`, `phase.record()`): its fields' values too
                    self._merge_fields(found, node, node.value, names)
                if node.value in names and self._reaches(node):
                    _merge_into(found, names[node.value])
                elif known.is_rank_name(node.value) or node.value in self._rank_constants:
                    found.setdefault(RANK, node.value)  # (`RANK = int(os.getenv("RANK", -1))` at the file's top)
            elif kind is cst.Arg and node.keyword is not None and node.keyword.value in _PLACEMENT_KEYWORDS:
                # `torch.randn(n, d, device=device)` for `device = torch.device("cuda", rank)`: where a value is made
                # is this rank's, what it holds is not
                inner = self._of(node.value, names)
                inner.pop(RANK, None)
                _merge_into(found, inner)
                continue
            elif kind is cst.Comparison and _rank_field_compared(node):
                # `if self.args.rank <= 0:`, `opt.rank == 0`: a run's `rank` field tested against the first rank (a
                # LoRA rank is handed to layers, not compared with 0)
                found.setdefault(RANK, code_of(node.left))
                stack.extend(c.comparator for c in node.comparisons)
                continue
            elif kind is cst.Attribute and node.attr.value in VALUE_FREE_ATTRS:
                # `x.ndim` of a value that went through a random helper (`drop_path`): the shape is not random
                inner = self._of(node.value, names)
                inner.pop(RANDOM, None)
                inner.pop(HOST_RANDOM, None)
                _merge_into(found, inner)
                continue
            elif kind is cst.Attribute:
                if known.is_rank_name(node.attr.value):
                    found.setdefault(RANK, code_of(node))
                elif isinstance(node.value, cst.Name) and node.value.value == "self":
                    attr = node.attr.value
                    key = f"self.{attr}"
                    if id(node) not in fielded and self._fields:
                        # the whole object handed on (`handler.on_step_end(self.state)`): its fields' values too
                        self._merge_fields(found, node, key, names)
                    if attr in self.rank_attrs:
                        found.setdefault(RANK, code_of(node))
                    elif key in names and self._reaches(node, key):
                        _merge_into(found, names[key])  # `self.done = out.all()` earlier in this function
                    elif attr in self.state_of_self:  # `self.ema` set only under `if is_main:`, in another method
                        _merge_into(found, self.state_of_self[attr])
                elif (
                    isinstance(node.value, cst.Attribute) and isinstance(node.value.value, cst.Name)
                    and node.value.value.value == "self" and self._filled is not None
                    and (kept := self.state_of_self.get(f"{node.value.attr.value}.{node.attr.value}")) is not None
                ):
                    _merge_into(found, kept)  # `self.state.converged`, a field another method kept from the model
                elif (field := self_field(node)) is not None:
                    fielded.add(id(node.value))
                    if field in names and self._reaches(node, field):
                        _merge_into(found, names[field])  # `self.stats.total_tokens += n` under `if rank == 0:` earlier
                elif isinstance(node.value, cst.Name) and node.value.value in self._fields and not self._asked(node):
                    fielded.add(id(node.value))  # `phase.interval`: that field, not `phase.start_event` set on rank 0
                    field = f"{node.value.value}.{node.attr.value}"
                    if field in names and self._reaches(node, field):
                        _merge_into(found, names[field])
                if isinstance(node.value, cst.Name) and (
                    given := self._given_field(node.value.value, node.attr.value)
                ) is not None and not self._asked(node):
                    # `state = TrainState(step=0, loader_state=rank_state)` ... `state.step`: the value the field was
                    # given, not all the object was built with (its later writes are its `_fields`, above)
                    field = f"{node.value.value}.{node.attr.value}"
                    if field in names and self._reaches(node, field):
                        _merge_into(found, names[field])
                    stack.append(given)
                    continue
                if setting_of_an_object(node):
                    continue  # `model.args.n_epochs`: a setting the object was built with, whatever it was handed since
                stack.append(node.value)  # (the attribute's name is no variable: `output.metrics` reads no `metrics`)
                continue
            elif kind is cst.Subscript:
                base_node = node.value
                if (
                    isinstance(base_node, cst.Attribute) and isinstance(base_node.value, cst.Name)
                    and base_node.value.value == "self" and self.state_of_self
                ):
                    key = item_key(node)
                    kept = self.state_of_self.get(f"{base_node.attr.value}[{key}]") if key is not None else None
                    if kept is not None:
                        _merge_into(found, kept)  # `self.gg["act"]`, kept by a forward hook of the class
                    elif (items := self._filled_items(node)) is not None:
                        _merge_into(found, items)  # `self.id[i]` of a list another method filled from the data
                base = dotted(node.value) or ""
                if base.endswith("environ") and _env_key(node) in known.RANK_ENV:
                    found.setdefault(RANK, code_of(node))
                    continue
                if _selected_whole(node, expr) and any(
                        isinstance(e.slice, cst.Index) and self._is_mask(e.slice.value) for e in node.slice):
                    # `kept = boxes[scores > t]`, `for b in x[keep]` for `keep = (s > 0) & ~done`: as many items as this
                    # rank's values pass the test (what is taken whole: not `len(x[x != pad]) == 1` inside a test)
                    found.setdefault(DATA, f"the items `{code_of(node)}` keeps")
                # `parts[rank]` picks this rank's share: the rank is arithmetic here, not a decision.
                for element in node.slice:
                    inner = self._of(element, names)
                    inner.pop(RANK, None)
                    _merge_into(found, inner)
                stack.append(node.value)
                continue
            elif kind is cst.Arg:
                if node.keyword is not None and node.keyword.value in _PLACEMENT_KEYWORDS | _SEED_KEYWORDS:
                    inner = self._of(node.value, names)  # `torch.load(path, map_location=f"cuda:{rank}")`: where the
                    inner.pop(RANK, None)  # values land, not which values: the rank placed, as in `parts[rank]`; and
                    # `make_iterator(data, n, seed=seed + rank)`: the order the draws take, not how many there are
                    # (whatever drew the seed: `seed = random.randint(1, 10000)`)
                    _drop_seeded(inner, node.keyword.value)
                    _merge_into(found, inner)
                    continue
                if node.keyword is not None and node.keyword.value in _DISPLAY_KEYWORDS:
                    continue  # `tqdm(loader, disable=args.rank != 0)`: how a bar shows, not what it hands out
                stack.append(node.value)  # (a keyword's name is no local: `f(keep=x)` hands `x`, not `keep`)
                continue
            elif kind in COMPREHENSIONS():
                # Names bound by the comprehension's `for` shadow the function's names of the same spelling.
                comp, local = node.for_in, set()
                while comp is not None:
                    local.update(bound_names(comp.target))
                    comp = comp.inner_for_in
                if local & names.keys():
                    _merge_into(found, self._of_comprehension(node, {k: v for k, v in names.items() if k not in local}))
                    continue
            elif kind is cst.Comparison and _batch_size_test(node, self.batch_sizes, self.counted):
                found.setdefault(DATA, code_of(node))  # `x.shape[0] > 1`: this rank's batch is one sample, or empty
            elif kind is cst.Comparison and _batch_limit_test(node, self.batch_sizes, self.counted, self.inputs):
                found.setdefault(DATA, code_of(node))  # `x.size(0) > self.max_batch`: this rank's batch is over a limit
            elif kind is cst.Comparison and self.batches and _uneven_batch_test(node, self.batches, self.inputs):
                found.setdefault(DATA, code_of(node))  # `x.size(0) != batch_size` of a loader's batch: the last one
            elif kind is cst.Comparison and self.inputs and _extent_test(
                    node, self.inputs | self.fields, self.extents, self.valued):
                why = code_of(node)  # `if x.shape[1] < 4: return x`, `if len(tokens) == 0: return []`
                # (`edge_index.shape[1] == 0`: this rank's input has none, a decision; not an extent asserted just
                # before to be a setting, `assert x.shape[1] == self.continuous_dim`)
                if not _empty_test(node) or self._asserted_extent(node):
                    self._extent_tests.add(why)
                found.setdefault(DATA, why)
            elif kind is cst.Comparison and self.inputs and _empty_test(node) and _reads_input_extent(node, self.inputs):
                # `torch.prod(torch.as_tensor(h.shape[:-1])) == 0`, `x.numel() == 0`: this rank's input holds nothing
                found.setdefault(DATA, code_of(node))
            elif kind is cst.Comparison and self.inputs and _kind_test(node, self.inputs):
                found.setdefault(DATA, code_of(node))  # `x.ndim == 5`: this call was given videos, not images
            elif kind is cst.Comparison and self._key_presence(node):
                found.setdefault(DATA, code_of(node))  # `key not in feats`: which keys this call's input has
            elif kind is cst.Comparison and is_none_test(node) and self._input_get(node.left):
                found.setdefault(DATA, code_of(node))  # `batch.get("image") is not None`: a key this input may lack
            elif kind is cst.Comparison and _main_rank_test(node):
                found.setdefault(RANK, code_of(node.left))  # `opt["rank"] == 0`, `args.rank != 0`: the main process
            elif kind is cst.Comparison and _unset_rank_test(node):
                inner = self._of(node.left, names)  # `local_rank != -1`: launched distributed, the same on every rank
                inner.pop(RANK, None)
                _merge_into(found, inner)
                continue
            elif kind is cst.Comparison and is_none_test(node) and code_of(node.left) in self.batches:
                found.setdefault(DATA, code_of(node))  # `if batch is None: continue`: dropped by this rank's collate
            elif kind is cst.Comparison and is_none_test(node) and (items := self._filled_items(node.left)):
                _merge_into(found, items)  # `self.id[i] is not None`: the filling method put None or this rank's data
                continue
            elif kind is cst.Comparison and is_none_test(node):
                inner = self._of(node.left, names)
                inner.pop(DATA, None)
                _merge_into(found, self._presence(node.left, inner))
                continue
            elif kind is cst.Comparison and (grown := self._running_test(node)) is not None:
                found.setdefault(DATA, grown)  # `while seen < n` for `seen += len(batch)`: this rank's data sets the trip
            elif kind is cst.Comparison and self.inputs and _element_test(node, self.tensors | self.fields):
                found.setdefault(DATA, code_of(node))  # `offset[-1] > 0` of `offset = batch["offset"]`: one value
            elif kind is cst.Comparison:
                reduction = _compared_reduction(node, self.agreed_use)
                if reduction is not None:  # `x.sum() > 0`: a decision on this rank's tensor values
                    found.setdefault(DATA, reduction)
                elif self._output_of is not None:
                    source = self._compared_output(node)
                    if source is not None:  # `self.router(x).max() > t`: a test of a submodule's output values
                        found.setdefault(DATA, source)
            stack.extend(children(node))
        return found

    def _is_mask(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` a boolean mask of values (`scores > t`, `~done & valid`, `x.isfinite()`), or a local bound only
        to one? Indexing with it keeps as many items as this rank's values pass."""
        if isinstance(expr, cst.Name):
            if self._mask_locals is None:
                self._mask_locals = _mask_locals(self._flat)
            return expr.value in self._mask_locals
        return mask_expression(expr, self._mask_locals or frozenset())

    def _filled_items(self, expr: cst.BaseExpression) -> dict[str, str] | None:
        """What another method filled the items of `self.<attr>` with, for an item read (`self.id[i]`), or None."""
        if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute)):
            return None
        owner = expr.value
        if not (isinstance(owner.value, cst.Name) and owner.value.value == "self") or not self.state_of_self:
            return None
        return self.state_of_self.get(f"{owner.attr.value}[]")

    def _running_test(self, node: cst.Comparison) -> str | None:
        """`while seen < n`, `if count >= num_samples: break`: a running count that a loop around the test grows by
        what this rank's data gave it (`count += x["target"].shape[0]`, `tokens += mask.sum().item()`, `collected +=
        len(buffer)`, two assignments deep: `k = min(cap // x.shape[0], n)` ... `done += k`), compared with a bound
        that is no length of a collection (`len(dataset)`, known alike to every rank): ranks reach it after
        different numbers of steps. The augmentation, as text; a count grown by a constant, or by a value a
        collective agreed on (`dist.all_reduce(t)` ... `seen += t.item()`), is none."""
        if len(node.comparisons) != 1 or isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
            return None
        if self._running is None:
            self._running = _running_counts(self._flat, frozenset(self.agreed))
        left, right = node.left, node.comparisons[0].comparator
        for count, bound in ((left, right), (right, left)):
            if not isinstance(count, (cst.Name, cst.Attribute)) or _reads_len(bound):
                continue
            sites = self._running.get(code_of(count), [])
            position = self._flat.position.get(id(count))
            if position is None:
                continue
            loops = self._flat.nodes[position][1].loops
            guard = self._enclosing_while_test(count)
            if guard is not None:  # `while seen < n:` holds the loop that grows `seen`
                loops = (*loops, guard)
            for why, around in sites:
                if not around or any(loop is other for loop in around for other in loops):
                    return why
            counted = self._counted_under_data(count, loops) or self._grown_by_a_method(count, loops)
            if counted is not None:
                return counted
        return None

    def _conditional_growth(self) -> dict[str, list[tuple[cst.AugAssign, Ctx]]]:
        """Each count this function grows (`+=`) under a test, with those growths: read once per function."""
        if self._conditional is None:
            self._conditional = {}
            for node, ctx in self._flat.nodes:
                if type(node) is cst.AugAssign and type(node.operator) is cst.AddAssign and ctx.conds:
                    self._conditional.setdefault(code_of(node.target), []).append((node, ctx))
        return self._conditional

    def _grown_by_a_method(self, count: cst.BaseExpression, loops: tuple[cst.CSTNode, ...]) -> str | None:
        """`if self.state.samples >= max_samples: break` in a loop calling `self._step(batch)`, which does
        `self.state.samples += batch.samples`: a count of `self` another method of the class grows by a size of this
        rank's data, called in a loop around the test. The growth, as text."""
        text = code_of(count)
        if self.cls is None or not text.startswith("self.") or not loops:
            return None
        if text not in self._grown_elsewhere:  # (the class's methods growing it: read once per count)
            grows = re.compile(rf"{re.escape(text)}[ \t]*\+=")
            self._grown_elsewhere[text] = [m for m in self.cls.all_methods() if text in m.text and grows.search(m.text)]
        for method in self._grown_elsewhere[text]:
            callee = f"self.{method.name}"
            if not any(type(n) is cst.Call and code_of(n.func) == callee and any(l is o for l in c.loops for o in loops)
                       for n, c in self._flat.nodes):
                continue
            flat = flat_of(method)
            for node, _ctx in flat.nodes if flat is not None else ():
                if type(node) is cst.AugAssign and type(node.operator) is cst.AddAssign and code_of(node.target) == text \
                        and _data_size(node.value, {}, frozenset(), 0):
                    return f"{code_of(node)} in `{callee}()`"
        return None

    def _counted_under_data(self, count: cst.BaseExpression, loops: tuple[cst.CSTNode, ...]) -> str | None:
        """`if terminals[i] or truncations[i]: episodes += 1` in a loop around the test of `episodes`: a count grown
        under a test of this rank's data (an episode's end, a sample kept) reaches the bound after a number of steps
        that differs per rank. The test as text, or None (also while such a test is being read: no cycle)."""
        growths = self._conditional_growth().get(code_of(count))
        if self._counting or not growths:
            return None
        self._counting = True
        try:
            for node, ctx in growths:
                if not any(loop is other for loop in ctx.loops for other in loops):
                    continue
                for cond, depth in zip(ctx.conds, ctx.depths):
                    if depth and DATA in (kinds := self.of(cond)) and not self.extent_only(kinds[DATA]):
                        return f"{code_of(node)} when {kinds[DATA]}"
        finally:
            self._counting = False
        return None

    def kept_only(self, source: str) -> bool:
        """Is `source` a record a rank kept of what its model returned (`filled`, `fills`)? Its values decide an exit
        (an early stop on a metric), not how many items a buffer filled from outputs holds, nor which branch runs."""
        return source in self._kept_sources

    def _asserted_extent(self, node: cst.Comparison) -> bool:
        """Is a side of `node` an extent the function asserts equal to something (`assert x.shape[1] ==
        self.continuous_dim`): the same on every rank that goes on?"""
        if self._asserted is None:
            self._asserted = frozenset(
                code_of(side) for n, _ctx in self._flat.nodes if type(n) is cst.Assert
                and type(n.test) is cst.Comparison and len(n.test.comparisons) == 1
                and type(n.test.comparisons[0].operator) is cst.Equal
                for side in (n.test.left, n.test.comparisons[0].comparator)
            )
        return bool(self._asserted) and any(
            code_of(side) in self._asserted for side in (node.left, node.comparisons[0].comparator))

    def extent_only(self, source: str) -> bool:
        """Is `source` (the reason `of` gave for DATA) a test of an extent of this call's input (`x.shape[1] < 4`,
        `len(tokens) == 0`)? Such a test counts where it ends the function or a loop early (this rank's short or empty
        input skips what follows); which of two branches runs on a length is most often the same on every rank
        (decoding steps in lockstep: `if seq_len > 1`), so it is no decision there."""
        return source in self._extent_tests

    def _builds_tensor(self, node: cst.Call) -> bool:
        """`torch.tensor(x)`, `torch.LongTensor(x)`, `np.array(x)`: a tensor made of the values of what it is handed."""
        name = call_name(node)
        return name is not None and self.index.qualify(name) in _TENSOR_BUILDERS

    def agreed_output(self, call: cst.CSTNode) -> bool:
        """Is `call` a method of the class returning a value every rank holds alike (`agreed_method`), or a child
        module of a class of this file whose forward does (`self.stopper()` for a forward that all-reduces the
        stop flag it returns: every rank leaves together)?"""
        func = call.func if isinstance(call, cst.Call) else None
        if self.cls is None or not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
            return False
        if func.value.value != "self":
            return False
        if self.cls.method(func.attr.value) is not None:
            return agreed_method(self.index, self.cls, func.attr.value)
        return self._agreed_child(func.attr.value)

    def _agreed_child(self, name: str) -> bool:
        """`self.stopper(...)`: a child built of classes of this file only, each of whose forward makes an agreeing
        collective and returns a value every rank holds alike."""
        if self.cls is None or not _agrees_somewhere(self.index):
            return False  # (no collective in the file: the forwards of the children are not read)
        member = facts_of(self.cls).members.get(name)
        if member is None or member.kind is not Kind.MODULE or not member.classes:
            return False
        infos = [self.index.classes.get(ref) for ref in member.classes]
        return all(
            info is not None and (forward := info.method("forward")) is not None
            and _AGREEING_TEXT.search(forward.text) is not None and agreed_method(self.index, info, "forward")
            for info in infos
        )

    def _reports_time(self, node: cst.Call) -> bool:
        """Is `node` a call of a function imported from another module (not a builtin, not arithmetic of `math`,
        `torch`, `numpy` or `time`), handed an argument? What it returns of a time it was handed is a report."""
        func = node.func
        if node.args and type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            # `model, train_time = self._train_epoches(model, train_begin_time, ...)`: a step of the class handed a
            # time it reports (not one named for a time it computes or tests: `self._time_left(start)`)
            return _TIME_WORD.search(func.attr.value) is None
        if not node.args or not isinstance(func, cst.Name) or func.value in _NUMERIC_BUILTINS:
            return False
        target = self.index.imports.get(func.value)
        return target is not None and not target.startswith(("math.", "torch.", "numpy.", "time.", "datetime."))

    def _reported_arguments(
        self, node: cst.Call, names: dict[str, dict[str, str]], found: dict[str, str], stack: list[cst.CSTNode]
    ) -> None:
        """What a call reporting a time it is handed (`_reports_time`) hands back: its arguments' taint less the
        clock's (the function itself read as usual)."""
        stack.append(node.func)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in _DISPLAY_KEYWORDS:
                continue  # (`tqdm(loader, disable=rank != 0)`, as below)
            inner = self._of(arg.value, names)
            inner.pop(CLOCK, None)
            _merge_into(found, inner)

    def _output_call(self, node: cst.Call) -> str | None:
        """DATA for a call that reads a submodule's output values (`self.halt(h).all()`, `out.max().item()`), or a
        method of an object of this function handed such an output (`env.step(action)` for `action` the policy
        returned: what the object computes from it, `done`, is this rank's own)."""
        func = node.func
        tested = _value_predicate(self.index, node)
        if tested is not None:  # `torch.isnan(loss)`, `loss.isnan()`: a test of the output's values
            return DATA if self._output_of(tested) is not None else None  # type: ignore[misc]
        if not isinstance(func, cst.Attribute):
            return None
        if _reads_output_value(node):
            return DATA if self._output_of(func.value) is not None else None  # type: ignore[misc]
        owner = func.value
        if func.attr.value in _NOT_RESULTS:
            return None
        if isinstance(owner, cst.Name):
            if owner.value not in self._holders or owner.value in self._output_locals:
                return None  # `o.argmax(-1)`: the output's own method (a value read decides, not the call)
        elif not (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self"):
            return None  # (an object of this function, or one `self` holds: `self.env.step(action)`)
        if any(self._output_of(arg.value) is not None for arg in node.args):  # type: ignore[misc]
            return DATA
        return None

    def _compared_output(self, node: cst.Comparison) -> str | None:
        """`o.argmax(-1)[0] == 0`, `score > t` for `score` computed from a submodule's output: the output's values
        compared (not its presence, its length or membership in a list of options), as the output's call."""
        if any(isinstance(t.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for t in node.comparisons):
            return None
        sides = (node.left, *(t.comparator for t in node.comparisons))
        if any(isinstance(side, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for side in sides):
            return None  # `block.__class__.__name__ == "Readout"`: a name, not a tensor's values
        for side in sides:
            if isinstance(side, cst.Call) and isinstance(side.func, cst.Name) and side.func.value in _SIZE_FUNCS:
                # `len(instance_coords) > 0` for a local an output was bound to: detections, maybe none (not a queue
                # `self` keeps and refills by a fixed count, `len(self._action_queue) == 0`)
                held = side.args[0].value if side.args else None
                if isinstance(held, cst.Name) and _emptiness_test(node) and not self._built_list(held) and (
                        source := self._output_of(held)) is not None:
                    return f"whether `{source}` found any"
                continue  # `len(outputs) > 1`: how many values a call returns, fixed by the code
            source = self._output_of(side)  # type: ignore[misc]
            if source is not None:
                return f"the output of `{source}`"
        return None

    def _built_list(self, expr: cst.CSTNode) -> bool:
        """Is `expr` a local the function builds as a list, set or dict (`kept = [f for f in feats if ...]`)? How its
        filter decides is the filter's question (`filtered` outputs), not the output's."""
        if not isinstance(expr, cst.Name):
            return False
        if self._lists is None:
            self._lists = frozenset(
                name for node, _ctx in self._flat.nodes
                if type(node) is cst.Assign and isinstance(node.value, _built_types())
                for target in node.targets for name in bound_names(target.target)
            )
        return expr.value in self._lists

    def field_of(self, expr: cst.CSTNode) -> str | None:
        """`batch["task"]` (or a local holding it) for a mapping this call was given: a value of this rank's batch."""
        if self._input_field(expr):
            return code_of(expr)
        if isinstance(expr, cst.Name) and expr.value in self.fields:
            return expr.value
        return None

    def _input_field(self, expr: cst.CSTNode) -> bool:
        """`batch["task"]`, `batch.get("task")`, `batch.get("task", None)` of a mapping this call was given."""
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get":
            owner = expr.func.value
            return isinstance(owner, cst.Name) and owner.value in self.inputs and bool(expr.args) \
                and const_str(expr.args[0].value) is not None
        return (
            isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value in self.inputs
            and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
            and const_str(expr.slice[0].slice.value) is not None
        )

    def _input_keys(self, node: cst.Call) -> bool:
        """`feats.items()` / `.keys()` / `.values()` of a mapping this call was given: the keys its batch has."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _MAPPING_VIEWS and not node.args):
            return False
        owner = func.value
        return isinstance(owner, cst.Name) and owner.value in self.inputs and owner.value not in self.state

    @property
    def mapping_writes(self) -> dict[str, frozenset[str] | None]:
        """`_mapping_writes` of this function, worked out once."""
        if self._writes is None:
            self._writes = _mapping_writes(self._flat)
        return self._writes

    @property
    def state(self) -> frozenset[str]:
        """Mappings the call was given that it fills or hands back: the caller's state."""
        if self._state is None:
            self._state = frozenset(self.mapping_writes.keys() & self.inputs) if self.inputs else frozenset()
        return self._state

    @property
    def fed(self) -> frozenset[tuple[str, str]]:
        """`self.enc(batch["image"])`: (argument, key text) for the fields of an input mapping that go into a call."""
        if self._fed is None:
            self._fed = frozenset(_fed_fields(self._flat, self.inputs)) if self.inputs else frozenset()
        return self._fed

    @property
    def handed_whole(self) -> frozenset[str]:
        """`self.encode_image(batch)`: in a module's method, input mappings handed whole to a call, whose callee reads
        the fields it needs. (Outside model code a mapping handed on is as often one of loaders or settings, `'val' in
        data`, the same on every rank.)"""
        if self._handed_whole is None:
            model_code = self.inputs and self.cls is not None and self.cls.is_module
            self._handed_whole = frozenset(_handed_whole(self._flat, self.inputs)) if model_code else frozenset()
        return self._handed_whole

    def _input_get(self, expr: cst.CSTNode) -> bool:
        """`batch.get("image")` for a mapping this call was given, whose field goes into a call: a field this
        rank's batch may lack."""
        func = expr.func if isinstance(expr, cst.Call) else None
        return (
            isinstance(func, cst.Attribute) and func.attr.value == "get" and isinstance(func.value, cst.Name)
            and func.value.value in self.inputs and func.value.value not in self.state and bool(expr.args)
            and const_str(expr.args[0].value) is not None
            and ((func.value.value, code_of(expr.args[0].value)) in self.fed or func.value.value in self.handed_whole)
        )

    def _key_presence(self, node: cst.Comparison) -> bool:
        """`key in feats` / `"image" not in feats` for a mapping this call was given (not `**kwargs`, nor state it
        fills or returns) and reads by that key (`feats[key]`; a fixed key only when the field goes into a call:
        `self.enc(feats["image"])`); not a list of options (`m.i in embed`)."""
        fixed = isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.Integer))
        if self._own_module(node.left):
            return False  # `self.key not in kv_cache`: a cache keyed by this module's own layer, filled step by step
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)):
                container = target.comparator
                if isinstance(container, cst.Call) and isinstance(container.func, cst.Attribute):
                    container = container.func.value if container.func.attr.value in _MAPPING_VIEWS else container
                if fixed and isinstance(container, cst.Subscript) and self._item_field_read(container, node.left):
                    return True  # `if "prompt" in metadata[0]: ... metadata[0]["prompt"]`: a sample's field
                if not isinstance(container, cst.Name) or container.value in self.state and not (
                        fixed and _filled_by_other_keys(self._flat, self.mapping_writes, container.value,
                                                        code_of(node.left))):
                    continue  # (a mapping the call fills, tested for a key it may have put there: a cache)
                if _SETTINGS_MAPPING.search(container.value):
                    continue  # `if "weight_path_add" in params_dict:`: the settings it was given, every rank's
                if (container.value, code_of(node.left)) in (self.fed if fixed else self.keyed):
                    return True
                if fixed and container.value in self.handed_whole:
                    return True  # `if "image" in batch: self.encode_image(batch)`: the callee reads the field
                if fixed and self.cls is not None and self.cls.is_module and container.value in self.inputs \
                        and _field_read(self._flat, container.value, code_of(node.left)):
                    # `if "lafs0" not in data: feats = self.extract(data["image0"])` / `else: lafs0 = data["lafs0"]`:
                    # a field of the call's input the module reads when it is there, computes when it is not
                    return True
        return False

    def _item_field_read(self, item: cst.Subscript, key: cst.BaseExpression) -> bool:
        """Is `item` an item of a list this call was given (`metadata[0]`), read by `key` somewhere in the function
        (`metadata[0]["prompt"]`)?"""
        if not (isinstance(item.value, cst.Name) and item.value.value in self.inputs) or item.value.value in self.state:
            return False
        if const_str(_only_index(item)) is not None:
            return False  # `inputs["regressors"]`: a field of the batch mapping, whose keys the model's settings name
        text, wanted = code_of(item), const_str(key)
        return any(
            type(node) is cst.Subscript and node is not item and code_of(node.value) == text
            and const_str(_only_index(node)) == wanted
            for node, _ctx in self._flat.nodes
        )

    def _own_module(self, expr: cst.CSTNode) -> bool:
        """`self.key` for a submodule the class builds: an object of the model, the same on every rank."""
        if self.cls is None or not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)):
            return False
        if expr.value.value != "self":
            return False
        member = facts_of(self.cls).members.get(expr.attr.value)
        return member is not None and member.kind == Kind.MODULE

    def _of_comprehension(self, node: cst.CSTNode, names: dict[str, dict[str, str]]) -> dict[str, str]:
        found: dict[str, str] = {}
        for child in children(node):
            _merge_into(found, self._of(child, names))
        return found

    def _presence(self, tested: cst.BaseExpression, kinds: dict[str, str]) -> dict[str, str]:
        """What a `None` test of `tested` decides on, of the taint of its value: not a random draw it holds, when
        no binding of the local can be `None` (`if not exists(t): t = torch.rand(b)` ... `if exists(t):`): a drawn
        tensor is always there. The tests it was bound under still decide."""
        if not isinstance(tested, cst.Name) or not (RANDOM in kinds or HOST_RANDOM in kinds):
            return kinds
        drawn = self.direct.get(tested.value, {})
        if not (RANDOM in drawn or HOST_RANDOM in drawn) or self._may_bind_none(tested.value):
            return kinds
        return {k: why for k, why in kinds.items() if k not in drawn or k not in (RANDOM, HOST_RANDOM)}

    def _may_bind_none(self, name: str) -> bool:
        """Does some binding of the local `name` in this function hold `None` (`x = f(h) if coin else None`)? Not an
        unconditional `x = None` (a start value, `s_prev = None` before a loop that fills it with drawn tensors):
        whether it still holds that follows the code's own order, not a draw."""
        for node, ctx in self._flat.nodes:
            if type(node) in (cst.Assign, cst.AnnAssign):
                targets, value = targets_of(node)
                if value is not None and any(name in bound_names(t) for t in targets) and _may_be_none(value):
                    if type(value) is cst.Name and value.value == "None" and not ctx.conds:
                        continue
                    return True
        return False

    def _presence_call(self, node: cst.Call) -> bool:
        """`exists(x)`, `self.exists(x)`: a helper of `presence_helpers` saying only whether its argument is given,
        a `None` test like `x is not None` (which carries no data taint either)."""
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return False
        func = node.func
        if isinstance(func, cst.Name):
            name = func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            name = f"self.{func.attr.value}"
        else:
            return False
        return name in presence_helpers(self.index)

    def _call_kind(self, node: cst.Call) -> str | None:
        name = call_name(node)
        if name is None:
            return None
        qualified = name if name.startswith(".") else self.index.qualify(name)
        last = qualified.rsplit(".", 1)[-1]
        if known.is_rank_call(last) or qualified in known.RANK_QUALIFIED_CALLS:
            return RANK
        if qualified.endswith(("environ.get", "getenv")) and node.args:
            if const_str(node.args[0].value) in known.RANK_ENV:
                return RANK
        draw = _draw(qualified, node)
        if draw is not None:
            return draw
        if last == "random" and isinstance(node.func, cst.Attribute) and not isinstance(node.func.value, cst.Call) \
                and not re.search(re.escape(code_of(node.func.value)) + _BOUND_TO_GENERATOR, self.index.source):
            # `self.choice.random()`: an object's own draw of one of its values (tensors have none); of a generator
            # the file builds (`self.rng = random.Random(0)`, `random.Random(0).random()`), what built it says
            return HOST_RANDOM
        if qualified in known.DATA_SELECT_FUNCS:
            return DATA
        if qualified in known.HOST_STATE_FUNCS:
            return HOST
        if qualified in known.CLOCK_FUNCS:
            return CLOCK
        if name in ("all", "any") and len(node.args) == 1 and isinstance(node.args[0].value, cst.Call):
            return DATA  # all(stopping_criteria(out)): a verdict over this rank's values
        if qualified == "torch.where" and len(node.args) == 1:
            return DATA
        if isinstance(node.func, cst.Name):
            found = random_function(self.index, node.func.value)
            if found is None and _handed_a_value(node) and value_test_function(self.index, node.func.value):
                return DATA  # `if not loss_ok(loss):` for `def loss_ok(v): return math.isfinite(v.item())`
            return found or (RANK if rank_function(self.index, node.func.value) else None)
        method = isinstance(node.func, cst.Attribute)
        if method and self.cls is not None and isinstance(node.func.value, cst.Name) and node.func.value.value == "self":
            if rank_method(self.index, self.cls, last):
                return RANK  # `if self.should_evaluate():` with `return self.trainer.global_rank == 0`
            drawn = random_method(self.index, self.cls, last)
            if drawn is not None:
                return drawn  # `if self._should_explore():` with `return np.random.rand() < self.epsilon`
            if _handed_a_value(node) and value_test_method(self.index, self.cls, last):
                return DATA  # `if self.is_mirrored(lrs):` with `return torch.norm(a - b.flip(1)) == 0`
        if method and last in known.DATA_SELECT_METHODS and not qualified.startswith(("torch.", "numpy.")):
            return DATA
        if method and last == "sample" and EXPERIENCE_STORE.search(code_of(node.func.value)):
            return DATA  # `self.mem_pool.sample(batch_size=n)`: a draw from what this rank stored
        return None


_STORED_SAMPLE = re.compile(EXPERIENCE_STORE.pattern.removesuffix("$") + r"\.sample\(", EXPERIENCE_STORE.flags)


def stored_sample_text(text: str) -> bool:
    """Text pre-filter: a draw from a store of this rank's experience (`self.mem_pool.sample(batch_size=n)`)."""
    return ".sample(" in text and _STORED_SAMPLE.search(text) is not None
# ` = np.random.default_rng(...)`, ` = random.Random(...)`: a name bound to a generator object (after its text).
_BOUND_TO_GENERATOR = r"\s*(?::[^=\n]*)?=\s*[\w.]*(?:Random|default_rng|RandomState|Generator)\("

# Builtins that compute with a number they are handed (a time stays a time through them).
_NUMERIC_BUILTINS = frozenset({"max", "min", "abs", "round", "int", "float", "sum", "divmod", "pow"})


def _asserted_setting(test: cst.BaseExpression) -> str | None:
    """The local an assertion ties to a setting of the object (`assert has_memories == self.accept_memories`,
    `assert not (self.accept_memories ^ has_memories)`, `assert x is self.flag`), else None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.BitXor):
            sides = (inner.left, inner.right)
        else:
            return None
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
        test.comparisons[0].operator, (cst.Equal, cst.Is)
    ):
        sides = (test.left, test.comparisons[0].comparator)
    else:
        return None
    names = [side.value for side in sides if isinstance(side, cst.Name)]
    paths = [access_path(side) for side in sides]
    settings = [path for path in paths if path is not None and path.root == "self" and path.parts]
    return names[0] if len(names) == 1 and len(settings) == 1 else None


def _main_rank_test(node: cst.Comparison) -> bool:
    """`rank == 0`, `args.rank != 0`, `opt["rank"] == 0`, `cfg.get("rank") in (-1, 0)`: a value named plainly `rank`
    (a name, an attribute, a settings key) compared with the main process's rank. The bare word may also be a
    matrix's rank (a LoRA setting, `r > 0` when enabled), which is not tested for being the first; the spellings
    `is_rank_name` accepts count wherever they are read."""
    if len(node.comparisons) != 1:
        return False
    test = node.comparisons[0]
    right = test.comparator
    if isinstance(test.operator, (cst.Equal, cst.NotEqual)):
        if not (isinstance(right, cst.Integer) and right.value == "0"):
            return False
    elif isinstance(test.operator, (cst.In, cst.NotIn)):
        if not (isinstance(right, (cst.Tuple, cst.List)) and {code_of(e.value) for e in right.elements} == {"-1", "0"}):
            return False
    else:
        return False
    left = node.left
    if isinstance(left, cst.Name):
        return left.value.lstrip("_") == "rank"
    if isinstance(left, cst.Attribute):
        return left.attr.value.lstrip("_") == "rank"  # `self._rank == 0`
    if isinstance(left, cst.Subscript):
        return _env_key(left) == "rank"
    if isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute) and left.func.attr.value == "get":
        return bool(left.args) and const_str(left.args[0].value) == "rank"
    return False


def _unset_rank_test(node: cst.Comparison) -> bool:
    """`args.local_rank != -1`, `rank == -1`: a test of the launcher's "not distributed" value, true or false alike on
    every rank (a decision on the rank compares it with a rank: `rank == 0`, `rank > 0`)."""
    if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
        return False
    right = node.comparisons[0].comparator
    return (
        isinstance(right, cst.UnaryOperation) and isinstance(right.operator, cst.Minus)
        and isinstance(right.expression, cst.Integer) and right.expression.value == "1"
    )


def _rank_named_write(node: cst.CSTNode) -> bool:
    """`state.is_local_process_zero = self.is_local_process_zero()`: a write of an attribute named as the rank (of an
    object other than `self`). Every read of that attribute is the rank by its name (`known.is_rank_name`); the
    object's other attributes (a step counter, the flags a callback sets) do not follow it, so handing the object on
    (`handler.on_step_end(args, state, control)`) hands no rank decision."""
    if type(node) is not cst.Assign:
        return False
    return all(
        isinstance(t.target, cst.Attribute) and known.is_rank_name(t.target.attr.value)
        and not (isinstance(t.target.value, cst.Name) and t.target.value.value == "self")
        for t in node.targets
    )


def _own_attribute_write(node: cst.CSTNode) -> bool:
    """`self.deadline = time.time() + budget`: a write of an attribute of `self` itself, which then holds the value as a
    local would; not a write into another object (`logs.t = v`) nor a method handed it (`metrics.update(v)`)."""
    if type(node) not in (cst.Assign, cst.AugAssign, cst.AnnAssign):
        return False
    targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
    return all(
        isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" for t in targets
    )


def agreeing(node: cst.Call) -> bool:
    """`dist.all_reduce(t)`, `idist.broadcast(x, src=0)`: a collective after which every rank holds the same value."""
    name = call_name(node)
    return name is not None and name.rsplit(".", 1)[-1] in known.AGREEING_COLLECTIVES


def _tested_attributes(method: MethodInfo) -> tuple[str, ...]:
    """The attributes of `self` a method returning a value tests or returns (`if self._val_loss < self._best: ...;
    return converged`, `return self._bad_epochs > patience`): what its verdict depends on. Not its children's
    calls (`self.net(x)`), nor a method that returns nothing."""
    found = _TESTED.get(method)
    if found is None:
        found = _TESTED[method] = _tested_in(method)
    return found


_TESTED: weakref.WeakKeyDictionary[MethodInfo, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _tested_in(method: MethodInfo) -> tuple[str, ...]:
    text = method.text
    if "return " not in text or "self." not in text or _AGREEING_TEXT.search(text):
        return ()  # (`dist.all_reduce(flag)` in it: the verdict every rank received)
    func = ast_function(method)  # (the `ast` pass's node: no libcst parse for a question asked this often)
    if func is None:
        return ()
    found: list[str] = []
    returns_a_value = False
    for sub in ast.walk(func):
        if isinstance(sub, ast.Call) and not isinstance(sub.func, ast.Subscript) and (
                name := ast_dotted(sub.func)) is not None and _agreeing_function(
                method.index, name):
            return ()  # `synchronize_flag(should_cancel)`: a function of the program that makes the verdict agree
        if isinstance(sub, ast.If):
            where = sub.test
        elif isinstance(sub, ast.Return) and sub.value is not None:
            where, returns_a_value = sub.value, True
        else:
            continue
        for read in ast.walk(where):
            if isinstance(read, ast.Attribute) and isinstance(read.value, ast.Name) and read.value.id == "self" and (
                    read.attr not in found):
                found.append(read.attr)
    return tuple(found) if returns_a_value else ()


def agreed_call(node: cst.Call) -> bool:
    """A call whose value every rank holds alike: an agreeing collective (`agreeing`) or every rank's values gathered
    (`accelerator.gather(kl)`, `_gathered`)."""
    return agreeing(node) or _gathered(node)


# Roots of call names that are no function of the checked program.
_NOT_PROGRAM_ROOTS = frozenset({"torch", "F", "nn", "np", "numpy", "math", "super", "len", "range", "isinstance"})

# `dist.all_gather(parts, t)`: words without which a method makes no collective that agrees on a value
_AGREEING_TEXT = re.compile(r"(?:" + "|".join(sorted(known.AGREEING_COLLECTIVES, key=len, reverse=True)) + r")\(")


# Names a helper that agrees across ranks goes by (`dist_avg`, `reduce_mean`, `all_gather_object`, `sync_value`):
# the cheap trigger before a call's function is looked up in another file.
_AGREEING_NAME = re.compile(r"reduce|gather|broadcast|dist_|sync|all_|_avg|avg_|_mean|mean_", re.I)


def _may_agree(node: cst.Call) -> bool:
    name = call_name(node)
    return name is not None and _AGREEING_NAME.search(name.rsplit(".", 1)[-1]) is not None


def agreeing_function(index: ModelIndex, node: cst.Call) -> bool:
    """Is `node` a call of a function of this file or another one of the program that makes an agreeing collective
    and returns (`broadcast_from_master(flag)`: `dist.broadcast_object_list(box, src=0)` ... `return box[0]`)? What
    it hands back is the value every rank received."""
    name = call_name(node)
    return name is not None and index.project is not None and _agreeing_function(index, name)


@memoised
def _agreeing_function(index: ModelIndex, name: str) -> bool:
    """`agreeing_function` for the name a call is written with, read once per file."""
    if name.startswith(("self.", ".")) or name.partition(".")[0] in _NOT_PROGRAM_ROOTS:
        return False
    return _agrees(index, name, _DELEGATIONS)


_DELEGATIONS = 3  # how many functions deep a value is handed on to the one that agrees (`dist_avg` -> `dist_sum` -> `dist_op`)


def _agrees(index: ModelIndex, name: str, depth: int) -> bool:
    """`_agreeing_function`, also for a function every return of which computes from what such a function returned
    (`def dist_avg(v): return dist_sum(v) / world_size()`), `depth` delegations deep."""
    if name.startswith(("self.", ".")) or name.partition(".")[0] in _NOT_PROGRAM_ROOTS:
        return False
    home = index
    if "." not in name and name in index.skeleton.functions:
        function = index.function_info(name)
    else:
        found = index.external_function(index.qualify(name))
        home, function = found if found is not None else (index, None)
    if function is None or "return" not in function.text:
        return False
    agrees_here = _AGREEING_TEXT.search(function.text) is not None
    if not agrees_here and depth == 0:
        return False
    flat, returns = own_returns(function)
    if flat is None or not returns:
        return False
    if agrees_here and any(type(n) is cst.Call and agreeing(n) for n, _ctx in flat.nodes):
        return True
    return depth > 0 and all(
        any(type(n) is cst.Call and (called := call_name(n)) is not None and _agrees(home, called, depth - 1)
            for n in walk(value))
        for value in returns
    )


@memoised
def _agrees_somewhere(index: ModelIndex) -> bool:
    """Does the file make an agreeing collective anywhere (a cheap trigger, read once per file)?"""
    return _AGREEING_TEXT.search(index.source) is not None


@memoised(cycle=False)
def agreed_method(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does `self.<name>()` return a value every rank holds alike? A method that makes an agreeing collective
    (`dist.all_gather(parts, t)` ... `return total`: what it returns is the gathered result), or whose every return
    is computed from what such methods of the class returned, bound last before it, and settings (`result =
    self._map_reduce(result, n)` ... `return result`; `score = calculate(result, self.metric)`: a validation score
    gathered across ranks before a stopping flag is set from it)."""
    method = cls.method(name)
    if method is None or "return" not in method.text:
        return False
    text = method.text
    if _AGREEING_TEXT.search(text) is None and not any(
        m != name and "return" in (cls.method(m).text if cls.method(m) else "") for m in SELF_CALL.findall(text)
    ):
        return False
    flat, returns = own_returns(method)
    if flat is None:
        return False
    if any(type(node) is cst.Call and agreeing(node) for node, _ctx in flat.nodes):
        return True
    return bool(returns) and all(
        _agreed_value(index, cls, flat, value, flat.position.get(id(value), 0), 3) is True for value in returns
    )


def _agreed_value(
    index: ModelIndex, cls: ClassInfo, flat: Flat, expr: cst.BaseExpression, at: int, depth: int
) -> bool | None:
    """True when `expr` (read at position `at`) is made of agreed values (`agreed_method`) and settings with at least
    one agreed value, None when made of settings alone, False otherwise."""
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return agreed_method(index, cls, func.attr.value) or False
        parts = [arg.value for arg in expr.args]
    elif isinstance(expr, cst.Name):
        if expr.value in ("None", "True", "False"):
            return None
        if depth == 0:
            return False
        bound = [
            (position, value) for node, _ctx in flat.nodes
            if (position := flat.position.get(id(node), -1)) < at
            for target, value in _assigned_pairs(node) if isinstance(target, cst.Name) and target.value == expr.value
        ]
        if not bound:
            return False  # (an argument: what the caller handed in)
        position, value = max(bound, key=lambda pair: pair[0])
        return _agreed_value(index, cls, flat, value, position, depth - 1)
    elif isinstance(expr, (cst.Attribute, cst.SimpleString, cst.Integer, cst.Float)):
        return None if not isinstance(expr, cst.Attribute) or _on_self(expr) else False
    elif isinstance(expr, (cst.Tuple, cst.List)):
        parts = [element.value for element in expr.elements]
    else:
        return False
    answers = [_agreed_value(index, cls, flat, part, at, depth) for part in parts]
    if False in answers:
        return False
    return True if True in answers else None


def _zipped(node: cst.CSTNode, targets: list, value: cst.CSTNode) -> list[tuple[list, cst.CSTNode]]:
    """(targets, value) of a binding, split for a loop over a zip of as many iterables as the target has parts (`for
    phase, z in zip(phases, all_z)`: `phase` takes the items of `phases` only)."""
    if type(node) is cst.For and isinstance(node.target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call):
        parts = [e.value for e in node.target.elements]
        args = [a.value for a in value.args]
        name = (call_name(value) or "").rsplit(".", 1)[-1]
        if known.ZIP_LIKE.match(name) and len(args) == len(parts) and not any(a.star or a.keyword for a in value.args):
            return [([part], arg) for part, arg in loop_items(node.target, value)]
    return [(targets, value)]


_TIME_TEXT = frozenset({"strftime", "isoformat", "ctime"})  # a time as text


def _written_field(node: cst.CSTNode, holder: str) -> str:
    """The key a write of an attribute of a local taints: `phase.start_event` for `phase.start_event = e` (that field,
    not the rest of `phase`: `phase.interval` keeps its own values); `holder` for any other hand-off."""
    if type(node) is cst.Assign and len(node.targets) == 1:
        target = node.targets[0].target
    elif type(node) in (cst.AugAssign, cst.AnnAssign):
        target = node.target
    else:
        return holder
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == holder:
        return f"{holder}.{target.attr.value}"
    return holder


def _assigned_pairs(node: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(target, value) pairs of an assignment, a tuple unpacked into a tuple of names pairing each with the
    whole value."""
    if type(node) is cst.Assign:
        pairs = []
        for target in node.targets:
            t = target.target
            names = [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t]
            pairs += [(name, node.value) for name in names]
        return pairs
    if type(node) is cst.AnnAssign and node.value is not None:
        return [(node.target, node.value)]
    return []


def handed_parameters(
    index: ModelIndex, cls: ClassInfo, func: cst.FunctionDef
) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Parameters of the method `func` that a call of it by the class itself or a base (`self.<name>(...)`, in this
    file or the base's) binds to a value that differs per rank, with why, and what of that flowed through the values
    handed (`Taint.direct`). Only parameters the method decides on (a test, a loop count, a key of one of its
    containers) are looked for: the callers are parsed for those."""
    if not cls.self_callers(func.name.value):
        return {}  # (most methods: no call of this one by the class itself)
    decided = _decided_parameters(index, func)
    if not decided:
        return {}
    found: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    for param, (kinds, direct) in cls.self_call_bindings(func, decided, _bound_by_calls):
        held = found.setdefault(param, ({}, {}))
        _merge_into(held[0], kinds)
        _merge_into(held[1], direct)
    return found


@memoised
def _decided_parameters(index: ModelIndex, func: cst.FunctionDef) -> frozenset[str]:
    """The parameters of `func` it decides on (`handed_parameters`), read from its text once per method: each `Taint`
    of the method asks (the body's text is generated again from the parse, a costly walk)."""
    text = index.body_text(func)
    params = positional_parameters(func)
    if not params:
        return frozenset()
    # the words of the tests, loop counts and keys of containers of `self`; the locals each assignment binds from
    # which words (one pass each, not a pattern per parameter)
    decisions = {w for line in _DECISION_LINE.findall(text) for w in _WORD.findall(line)}
    bound = [(name, set(_WORD.findall(value))) for name, value in _ASSIGNED_FROM.findall(text)]
    decided = set()
    for param in params:
        # the parameter, or a local assigned from it (`col = self.index_of[task]`, `key = str(task)`), in a test, a
        # loop count or the key of a container of `self`
        names = {param} | {name for name, words in bound if param in words}
        if names & decisions:
            decided.add(param)
    return frozenset(decided)


# What follows a test, a loop count or a key of a container of `self` on its line (`if`, `while` word first:
# `program/trigger.py`); a local and the value it is assigned.
_DECISION_LINE = re.compile(r"(?:if(?<!\wif)\b|while(?<!\wwhile)\b|range\(|self\.\w+\[)([^\n]*)")
_ASSIGNED_FROM = re.compile(r"^[ \t]*(\w+)[ \t]*=(?!=)([^=\n]*)", re.M)
_WORD = re.compile(r"\w+")


# Words without which a caller hands no value that differs per rank (a text trigger, before any parse; a batch
# size handed to a helper is left out: most callers read shapes).
_PER_RANK_HINT = re.compile(
    r"rank|master|main_process|rand|random|uniform|bernoulli|multinomial|choice|shuffle|unique|nonzero|argwhere"
    r"|masked_select|bincount"
    r"|\.items\(|\.keys\(|\.item\(|\.any\(|\.all\(|where\(|time|perf_counter|monotonic"
)


# `if ...:` then, on the next line, `self.flag = True`: a constant written under a test (`own_state`'s flags)
_FLAG_UNDER_TEST = re.compile(r"\bif\b[^\n]*:[ \t]*\n[ \t]*self\.\w+[ \t]*=[ \t]*(?:True|False|None|-?\d)")


def _is_constant(value: cst.BaseExpression) -> bool:
    """`True`, `None`, `3`, `-1`: a value no data flows into."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float)) or (isinstance(value, cst.Name) and value.value in ("True", "False", "None"))


@memoised(cycle={})
def _bound_by_calls(
    index: ModelIndex, cls: ClassInfo, name: str
) -> dict[int | str, tuple[dict[str, str], dict[str, str]]]:
    """What the methods of `cls` pass to `self.<name>(...)` that differs per rank: by argument position (after
    `self`) or keyword, the taint kinds and their sources, and those that flowed through the values handed."""
    needle = f"self.{name}("
    found: dict[int | str, tuple[dict[str, str], dict[str, str]]] = {}
    if needle not in cls.text:
        return found
    # (a caller with no word of a per-rank value hands none, not parsed: unless it reads an attribute a method with a
    # word of a draw or the rank sets, `self.forward_path(self._sample_idx, x)` after `resample()` drew it)
    kept: StateReaders | None = None
    for method in cls.all_methods():
        if method.name == name or needle not in method.text:
            continue
        if not _PER_RANK_HINT.search(method.text):
            kept = kept or StateReaders(index, _DRAW_OR_RANK_HINT)
            if not kept.search(method.text):
                continue
        flat = flat_of(method)
        if flat is None:
            continue
        taint: Taint | None = None
        for key, value in self_call_arguments(flat, name):
            taint = taint or Taint(index, cls, flat)
            kinds = taint.of(value)
            if kinds:
                held = found.setdefault(key, ({}, {}))
                _merge_into(held[0], kinds)
                _merge_into(held[1], taint.of(value, direct=True))
    return found


# The words of a draw or of the rank (`_bound_by_calls`: a sample or a rank kept on `self`, not a statistic).
_DRAW_OR_RANK_HINT = re.compile(r"rank|rand|random|uniform|bernoulli|multinomial|choice|shuffle")


def _field_key_walks(flat: Flat, is_field, given: Callable[[], frozenset[str]]) -> frozenset[int]:
    """`for task in batch["labels"]: ... self.heads[task]`: a field of an input walked by a loop whose variable picks an
    item of a container of `self`; which keys the field holds is this rank's batch's. Also a local holding such keys
    (`names = tuple(batch.surf_vars.keys())`, grown by `+=`) or an attribute field (`batch.surf_vars`). Not a sequence
    the call was given whole (`for key in names: self.proj[key](feats[key])`): the caller's choice, as often the same
    on every rank. By the loop's iterable."""
    loops = [node for node, _ctx in flat.nodes if type(node) in (cst.For, cst.CompFor)]
    if not loops:
        return frozenset()
    keys = {  # `self.heads[task](h)`, `self.layers[str(level)](x)`: the names the called item's key is made of
        name.value
        for node, _ctx in flat.nodes
        if type(node) is cst.Call and isinstance(item := node.func, cst.Subscript) and _on_self(item.value)
        and (key := _only_index(item)) is not None
        for name in walk(key) if type(name) is cst.Name
    }
    if not keys:
        return frozenset()
    inputs = given()
    bindings: dict[str, list[cst.CSTNode]] = {}
    for node, _ctx in flat.nodes:
        if type(node) in (cst.Assign, cst.AugAssign):
            targets, _value = targets_of(node)
            for target in targets:
                if isinstance(target, cst.Name):
                    bindings.setdefault(target.value, []).append(node)

    def keyed(iterable: cst.BaseExpression, depth: int = 0) -> bool:
        iterable = _viewed(same_items(iterable))
        if is_field(iterable):
            return True
        if isinstance(iterable, cst.Attribute) and isinstance(root := chain_root(iterable), cst.Name) \
                and root.value in inputs:
            return True  # `batch.surf_vars`: a field of a batch object
        if isinstance(iterable, cst.Name) and depth < 2 and iterable.value in bindings:
            made = [b for b in bindings[iterable.value] if type(b) is cst.Assign]
            return bool(made) and all(keyed(b.value, depth + 1) for b in made)  # (`+=` grows the same keys)
        return False

    return frozenset(
        id(node.iter) for node in loops
        for target, iterable in loop_items(node.target, node.iter)
        if isinstance(target, cst.Name) and target.value in keys and keyed(iterable)
    )


def _viewed(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """The mapping whose keys a loop walks: `batch["labels"]` of `batch["labels"].keys()` (or the iterable itself)."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args \
            and iterable.func.attr.value == "keys":
        return iterable.func.value
    return iterable


def _steps_on_a_value(node: cst.CSTNode) -> bool:
    """`scheduler.step(dev_score)`: a scheduler stepped on a value (`ReduceLROnPlateau`; an optimizer's own `step`
    takes a closure, not a value), which sets the learning rates of the optimizer it wraps from it."""
    return (type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == "step"
            and len(node.args) == 1 and node.args[0].keyword is None and not isinstance(node.args[0].value, cst.Lambda))


def _rate_holders(flat: Flat, holders: frozenset[str]) -> tuple[str, ...]:
    """The holders whose `param_groups` the function reads (`optimizer.param_groups[0]["lr"]`): what a scheduler
    stepped on a value hands them (`_steps_on_a_value`)."""
    found: list[str] = []
    for other, _ctx in flat.nodes:
        if type(other) is cst.Attribute and other.attr.value == "param_groups":
            key = holder_key(other.value, holders)
            if key is not None and key not in found:
                found.append(key)
    return tuple(found)


def _filtered_locals(flat: Flat, inputs: frozenset[str]) -> frozenset[str]:
    """Locals bound to a comprehension that keeps the items of an input (or of such a local) passing a test:
    `sentences = [s for s in sentences if len(s) > 0]`."""
    found: set[str] = set()
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign or type(node.value) not in (cst.ListComp, cst.GeneratorExp, cst.SetComp):
            continue
        comp = node.value.for_in
        walked = same_items(comp.iter)
        if not comp.ifs or not isinstance(walked, cst.Name) or walked.value not in inputs | found:
            continue
        if all(_structural_filter(test.test) for test in comp.ifs):
            continue  # `[f for f in feats if f is not None]`: which levels a model has, the same on every rank
        found.update(name for target in node.targets for name in bound_names(target.target))
    return frozenset(found)


def _structural_filter(test: cst.BaseExpression) -> bool:
    """A comprehension's test of what an item is rather than what it holds: `is (not) None`, `isinstance(...)`."""
    if isinstance(test, cst.Comparison):
        return is_none_test(test)
    return isinstance(test, cst.Call) and call_name(test) in _TYPE_TESTS


def _emptiness_of(node: cst.CSTNode, names: frozenset[str]) -> bool:
    """Is `node` a truth test of one of `names` (`kept`, `not kept`)?"""
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        node = node.expression
    return isinstance(node, cst.Name) and node.value in names


def _field_locals(flat: Flat, is_field) -> frozenset[str]:
    """Locals bound to a field of an input mapping (`is_field`: `batch["task"]`, `batch.get("task")`), or to what a
    call handed such a field or such a local returns (`route = self._resolve_route(task=task)`), in flat order."""
    found: set[str] = set()
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign:
            continue
        value = node.value
        if isinstance(value, cst.Tuple) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Tuple):
            # `kpts0, kpts1 = data["keypoints0"], data["keypoints1"]`: each name its own field
            parts = node.targets[0].target.elements
            if len(parts) == len(value.elements):
                found.update(name for part, item in zip(parts, value.elements) if is_field(item.value)
                             for name in bound_names(part.value))
            continue
        if not is_field(value) and not (found and isinstance(value, cst.Call) and any(
            is_field(arg.value) or (isinstance(arg.value, cst.Name) and arg.value.value in found) for arg in value.args
        )):
            continue
        found.update(name for target in node.targets for name in bound_names(target.target))
    return frozenset(found)


def _mapping_writes(flat: Flat) -> dict[str, frozenset[str] | None]:
    """The names the function writes into by key, fills, or returns (`cache[k] = v`, `cache.update(...)`, `return
    out, cache`, `{key: eps, **cache}`), each with the literal keys it writes (`y["mask"] = ...`), or None when it is
    also written by a computed key, filled, or returned: what `Taint.state` and `_filled_by_other_keys` read."""
    found: dict[str, frozenset[str] | None] = {}
    copied: set[str] = set()  # names rebound to a new mapping (`data = {**data, **pred}`): later writes fill that

    def wrote(name: str, key: str | None) -> None:
        if name in copied:
            return
        keys = found.get(name, frozenset())
        found[name] = None if key is None or keys is None else keys | {key}

    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and _copy_of(node.value, node.targets[0].target.value):
            copied.add(node.targets[0].target.value)
            continue
        if kind in (cst.Assign, cst.AugAssign):
            for target in node.targets if kind is cst.Assign else (node,):
                target = target.target
                if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                    index = target.slice[0].slice if len(target.slice) == 1 else None
                    key = index.value if isinstance(index, cst.Index) else None
                    wrote(target.value.value, code_of(key).strip("'\"") if isinstance(key, cst.SimpleString) else None)
        elif kind is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value in (*FILLS, "pop"):
            if isinstance(node.func.value, cst.Name):
                wrote(node.func.value.value, None)
        elif kind is cst.Return and node.value is not None:
            value = node.value
            parts = value.elements if isinstance(value, (cst.Tuple, cst.Dict)) else (value,)
            for part in parts:
                part = getattr(part, "value", part)
                if isinstance(part, cst.Name):
                    wrote(part.value, None)
    return found


def _copy_of(value: cst.BaseExpression, name: str) -> bool:
    """Is `value` a new mapping made from the mapping `name` (`{**data, **pred}`, `dict(data)`, `data.copy()`,
    `copy.copy(data)`)? What is written into it later is not written into `name`'s mapping. (Not a default put in
    its place, `cache = {}` when none was given: writes then go where a given one would be.)"""
    if type(value) is cst.Dict:
        return any(type(e) is cst.StarredDictElement and type(e.value) is cst.Name and e.value.value == name
                   for e in value.elements)
    if type(value) is not cst.Call:
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "copy" and not value.args:
        return type(func.value) is cst.Name and func.value.value == name
    return (call_name(value) or "") in ("dict", "copy.copy", "copy.deepcopy", "deepcopy", "OrderedDict") and any(
        type(a.value) is cst.Name and a.value.value == name for a in value.args)


def _filled_by_other_keys(flat: Flat, writes: dict[str, frozenset[str] | None], name: str, key: str) -> bool:
    """Does the function fill the mapping `name` only by literal keys other than `key` (`y["mask"] = ...` beside a test
    of `"text_embed" in y`), never by a computed key, `update`, a fill call or by handing it back (in any returned
    expression: `return self.head(y)` too)? Then the key it tests is one the caller put there or not: a field of this
    rank's input, not a cache the call keeps."""
    keys = writes.get(name, frozenset())
    if keys is None or key.strip("'\"") in keys:
        return False
    return not any(
        type(node) is cst.Return and node.value is not None and name in code_of(node.value, limit=400)
        for node, _ctx in flat.nodes
    )


def _handed_whole(flat: Flat, inputs: frozenset[str]) -> set[str]:
    """The input mappings passed as a whole positional or keyword argument of a call (`self.encode(batch)`,
    `tower(x, feats=batch)`; not unpacked, `model(**batch)`: a call given every field whatever the batch holds)."""
    return {
        node.value.value for node, _ctx in flat.nodes
        if type(node) is cst.Arg and not node.star and isinstance(node.value, cst.Name) and node.value.value in inputs
    }


def _field_read(flat: Flat, mapping: str, key: str) -> bool:
    """Does the function read `mapping[key]` (the key as written) somewhere?"""
    for node, _ctx in flat.nodes:
        if type(node) is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value == mapping \
                and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
                and code_of(node.slice[0].slice.value) == key:
            return True
    return False


def _fed_fields(flat: Flat, inputs: frozenset[str]) -> set[tuple[str, str]]:
    """(mapping, key text) for the fields of an input mapping read inside a call's arguments
    (`self.enc(batch["image"])`, `f(x, batch.get("mask"))`)."""
    found: set[tuple[str, str]] = set()
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value in inputs:
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                continue
            field = (node.value.value, code_of(node.slice[0].slice.value))
        elif kind is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get" and node.args:
            owner = node.func.value
            if not (isinstance(owner, cst.Name) and owner.value in inputs):
                continue
            field = (owner.value, code_of(node.args[0].value))
        else:
            continue
        parent = flat.parent.get(id(node))
        while parent is not None and not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            if type(parent) is cst.Arg:
                found.add(field)
                break
            parent = flat.parent.get(id(parent))
    return found


# Methods that read a tensor's values into one decision (`out.all()`, `score.item()`), and sizes that do not.
_VALUE_READS = frozenset({"any", "all", "item"})
_SIZE_FUNCS = frozenset({"len", "isinstance", "type", "hasattr", "callable"})
# Methods of an object handed an output whose result is not computed from it: containers filled, logs written.
_NOT_RESULTS = frozenset({"append", "extend", "add", "update", "insert", "put", "setdefault", "log", "write", "info"})


# `o = self.sub(h)` / `o, aux = self.sub(h)`: a local bound to what a call of `self`'s attribute returned.
_OUTPUT_LOCAL = re.compile(r"^[ \t]*(\w+)\b[\w, \t()*]*=[ \t]*\(?[ \t]*self\.\w+(?:\.\w+)*\(", re.M)
# After a value: its items and value-keeping methods (`[0]`, `.argmax(-1)`, `.max()`), then a comparison or a read
# of the value (`== 0`, `.item()`); not its metadata (`.dtype ==`, `.shape[0] >`).
_KEPT = r"(?:\[[^\]\n]*\]|\.(?:argmax|argmin|max|min|amax|amin|sum|mean|norm|std|abs|float|long|int|sigmoid|softmax|squeeze|flatten|view|reshape)\([^()\n]*\))*"
_READ = r"(?:[ \t]*(?:[<>]=?|==|!=)|\.(?:item|all|any)\(\))"
# `if self.router(x).max() > t:`, `n = self.halt(h).sum().item()`: a call of `self`'s attribute read as a value.
_OUTPUT_TESTED = re.compile(r"self\.\w+(?:\.\w+)*\([^()\n]*\)" + _KEPT + _READ)
_SIGNATURE = re.compile(r"def\s+\w+\s*\(([^)]*)\)")
# `loss = model(batch).mean()`, `out = engine(x)`: a local bound to a call of a name itself (not of a library's
# functions: `_NOT_RUNNERS`; not a method, `sd = net.state_dict()`).
# (`loss = (model(x) - y).pow(2).mean()`: the call may open a parenthesised expression)
_CALLED_LOCAL = re.compile(r"^[ \t]*(\w+)\b[\w, \t()*]*=[ \t]*\(?[ \t]*(\w+)\(", re.M)
_CALL_BOUND = re.compile(r"=[ \t]*\(?[ \t]*\w+\(")  # (what every line `_CALLED_LOCAL` matches holds: `line_matches`)
_NOT_RUNNERS = frozenset(dir(builtins)) | {"self", "torch", "np", "numpy", "F", "nn", "math", "os", "time", "random"}
# `x = owner.method(rest`: a method's result assigned (owner an argument or `self.x`), and what it is handed.
_HANDED = re.compile(r"^[ \t]*\w+(?:[ \t]*,[ \t]*\w+)*[ \t]*=[ \t]*((?:self\.)?\w+)\.\w+\(([^\n]*)", re.M)
# `act, value, logp = agent.step(obs)`: locals bound to what a method of an argument returned (`output_test_text`)
_ARGUMENT_CALLED_LOCAL = re.compile(r"^[ \t]*(\w+)\b[\w, \t()*]*=[ \t]*(\w+)\.\w+\(", re.M)
_METHOD_CALL_BOUND = re.compile(r"=[ \t]*(?:self\.)?\w+\.\w+\(")  # (what every line `_HANDED` matches holds)
# `for r in out`, `for i, r in enumerate(out)`: the names a loop (or a comprehension) binds to the items of a word
# (`r`; not the count `enumerate` hands out beside them).
_ITEMS_OF = re.compile(r"\bfor[ \t]+\(?(?:(\w+)[ \t]*,[ \t]*(?=[\w( \t]+?\)?[ \t]+in[ \t]+enumerate\())?([\w, \t]+?)\)?"
                       r"[ \t]+in[ \t]+(?:enumerate\(|zip\()?(\w+)\b")
# A word followed by what `_KEPT` keeps of it and a read (`n.sum() > 0`); the lookahead consumes nothing, so every
# word is tried once.
_WORD_READ = re.compile(rf"\b(\w++)\b(?={_KEPT}{_READ})")
# `scheduler.step(score)`: a statement stepping an object on one value (`_steps_on_a_value`)
_STEPPED_ON = re.compile(r"^[ \t]*(?:self\.)?\w+\.step\([ \t]*(\w+)[ \t]*\)[ \t]*$", re.M)
_PASSED_WORD = re.compile(r"\b(\w+)\b(?!\.(?:device|dtype|shape|ndim|size\())")  # (not its metadata)


# `if x.shape[1] < 4: return x`, `if len(tokens) == 0:` + `return []` on the next line: a test whose first statement
# leaves; and the locals bound to an extent (`t = x.shape[1]`)
_EXIT_TEST = re.compile(r"if(?<!\wif)\b([^\n]*):[ \t]*(?:#[^\n]*)?(?:\n[ \t]*)?(?:return|continue|break)\b")
_EXTENT_READ = re.compile(r"\.shape\b|\.size\(|len(?<!\wlen)\(")
_EXTENT_LOCAL = re.compile(r"^[ \t]*([\w, ()*]+?)[ \t]*=[^=\n]*(?:\.shape\b|\.size\(|len(?<!\wlen)\()", re.M)


def extent_exit_text(text: str) -> bool:
    """Text pre-filter: a test reading an extent (`.shape`, `.size(`, `len(`, or a local bound to one) whose first
    statement returns, continues or breaks (`_extent_test`)."""
    if ("return" not in text and "continue" not in text and "break" not in text) or not _EXTENT_READ.search(text):
        return False
    tests = [m.group(1) for m in _EXIT_TEST.finditer(text)]
    if not tests:
        return False
    if any(_EXTENT_READ.search(test) for test in tests):
        return True
    bound = _extent_locals(text)
    return any(w in bound for test in tests for w in re.findall(r"\w+", test))


def _extent_locals(text: str) -> set[str]:
    """The names `_EXTENT_LOCAL` binds in `text` (matched on the lines that read an extent alone: `line_matches`),
    and those bound to the most or least of one (`max_gt_num = max(num_gts)` for `num_gts = [len(t) for t in xs]`)."""
    bound = {w for m in line_matches(_EXTENT_LOCAL, text, _EXTENT_READ) for w in re.findall(r"\w+", m.group(1))}
    if bound and ("max(" in text or "min(" in text):
        bound |= {m.group(1) for m in _MOST_OF_LOCAL.finditer(text) if m.group(2) in bound}
    return bound


_MOST_OF_LOCAL = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*(?:max|min)\((\w+)\)[ \t]*$", re.M)


def output_test_text(text: str) -> bool:
    """Text pre-filter: what a call of one of `self`'s attributes returned, compared or read as a value (`o =
    self.sub(h)` ... `o.argmax(-1)[0] == 0`; `if self.halt(h).all():`), or handed to a method of an argument or of
    an object `self` holds (`self.env.step(self.policy(obs))`), before any parse."""
    if "if" not in text and "while" not in text and "range(" not in text:
        return False
    if "self." in text and _OUTPUT_TESTED.search(text):
        return True
    names = {m.group(1) for m in line_matches(_OUTPUT_LOCAL, text, "self.")} - {"self"}
    # (in a function: a local bound to what a call of a name of its own returned, `loss = engine(batch)`, `out =
    # model.generate(x)`; which calls run a model the analysis decides)
    names |= {m.group(1) for m in line_matches(_CALLED_LOCAL, text, _CALL_BOUND) if m.group(2) not in _NOT_RUNNERS} - {"self"}
    signature = _SIGNATURE.search(text)
    params = set(re.findall(r"(\w+)\s*(?:[:=,]|$)", signature.group(1))) - {"self", "cls"} if signature else set()
    names |= {m.group(1) for m in line_matches(_ARGUMENT_CALLED_LOCAL, text, _METHOD_CALL_BOUND)
              if m.group(2) in params} - {"self"}
    for match in line_matches(_HANDED, text, _METHOD_CALL_BOUND):  # `done = self.env.step(...)`, `done = state.step(action)`
        owner, rest = match.group(1), match.group(2)
        if "," in match.group(0).split("=", 1)[0] and owner not in names and (owner in params or re.search(
                rf"(?m)^[ \t]*{re.escape(owner)}[ \t]*=[ \t]*[\w.]+\(", text) is not None):
            return True  # `s, r, done, info = env.step(a)` of an object given or built here (`env = gym.make(id)`)
        if not owner.startswith("self.") and (owner not in params or owner in names):
            continue  # (not an argument's method, or an output's own: `h.to(h)`)
        if SELF_CALL.search(rest) or any(
            word in names for word in _PASSED_WORD.findall(rest)
        ):
            return True  # handed what a call of `self`'s attribute returned, or a local bound to it
    if "param_groups" in text and any(m.group(1) in names for m in _STEPPED_ON.finditer(text)):
        return True  # `scheduler.step(score)` for `score = self.evaluate(dev)`, then the learning rate read
    if names and " in " in text:  # `for i, r in enumerate(out)`, `[r for r in out if r[1] < t]`: an output's items
        names |= {
            word for m in _ITEMS_OF.finditer(text) if m.group(3) in names for word in re.findall(r"\w+", m.group(2))
        }
    # (one fixed pattern over every word, not one compiled per name: a pattern compiled per call cost more than
    # the rest of this trigger)
    if not names:
        return False
    read = {m.group(1) for m in _WORD_READ.finditer(text)}
    return bool(
        read & names
        or any(_derived_word(text, word, names) for word in _predicate_words(text))  # `isnan(loss)`
        or "len(" in text and any(
            _derived_word(text, m.group(1), names, unpacked=True) for m in _EMPTINESS_READ.finditer(text))
        # `kl = (old_logp - out["logp"]).mean()` ... `if kl <= 1.5 * target:`: a local computed from an output
        or any(m.group(1) in read and names.intersection(re.findall(r"\w+", m.group(2)))
               for m in _ONE_BINDING.finditer(text))
    )


# `name = value` on a line of its own (not `==`, not an augmented or annotated binding)
_ONE_BINDING = re.compile(r"^[ \t]*(\w+)[ \t]*=(?!=)([^\n]*)", re.M)


# `len(found) > 0`, `len(found) == 0`: whether a value holds anything (`_emptiness_test`)
_EMPTINESS_READ = re.compile(r"len(?<!\wlen)\(\s*(\w+)\s*\)\s*(?:(?:>|==|!=|<=)\s*0|(?:>=|<)\s*1)\b")


def _derived_word(text: str, word: str, names: set[str], unpacked: bool = False) -> bool:
    """Is `word` one of `names`, or a local bound (one assignment) to an expression reading one (`loss = out.mean()`,
    `loss = sum(v for v in losses.values())`; with `unpacked`, also one of the names a tuple binds, `feats, coords =
    info`)?"""
    if word in names:
        return True
    others = r"(?:\w+[ \t]*,[ \t]*)*" if unpacked else ""
    rest = r"(?:[ \t]*,[ \t]*\w+)*" if unpacked else ""
    assigned = re.compile(rf"^[ \t]*{others}{word}{rest}[ \t]*(?::[^=\n]*)?=(?!=)([^\n]*)", re.M)
    return any(names.intersection(re.findall(r"\w+", m.group(1))) for m in line_matches(assigned, text, word))


def _reads_output_value(call: cst.Call) -> bool:
    """`x.all()` / `x.any()` / `x.item()` with no arguments: a read of `x`'s values."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in _VALUE_READS and not call.args


# Element-wise tests of a tensor's or a number's values (`torch.isnan(loss)`, `math.isfinite(v)`, `np.isinf(a)`): a
# decision read from the values themselves, like `.item()` or `.all()`.
_VALUE_PREDICATES = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf"})
# Whole-tensor comparisons answering one bool from the values (`torch.allclose(grad, zeros)`): tests of the first
# tensor's values, like the predicates.
_VALUE_COMPARISONS = frozenset({"allclose"})
_PREDICATE_MODULES = ("torch.", "math.", "numpy.")
# `isnan(loss`, `torch.isfinite(out`: the word a value predicate tests (the text trigger of `output_test_text`).
_PREDICATE_READ = re.compile(r"\bis(?:nan|inf|finite|posinf|neginf)\(\s*(\w+)|\b(\w+)\.is(?:nan|inf|finite)\(\)")
# `torch.allclose(grad, z)`, `t.allclose(grad`, `grad.allclose(z)`: either word may be the tensor tested.
_CLOSE_READ = re.compile(r"\b(\w+)\.allclose\(\s*(\w+)")


def _predicate_words(text: str) -> Iterator[str]:
    """The words a value predicate or comparison tests (`_PREDICATE_READ`, `_CLOSE_READ`), looked for where the text
    holds a predicate's call (`nan(`, `inf(`, `finite(`, `allclose(`: every match ends in one); the second alternative
    of `_PREDICATE_READ` opens on a word, so `re` would try it at every word of the text."""
    if "nan(" in text or "inf(" in text or "finite(" in text:
        for m in _PREDICATE_READ.finditer(text):
            yield m.group(1) or m.group(2)
    if "allclose(" in text:
        for m in _CLOSE_READ.finditer(text):
            yield from m.groups()


def _value_predicate(index: ModelIndex, call: cst.Call) -> cst.BaseExpression | None:
    """`torch.isnan(x)`, `math.isinf(x)`, `np.isfinite(x)`, `x.isnan()`: a test of `x`'s values, element by element;
    as `x`."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _VALUE_PREDICATES and not call.args:
        return func.value  # `loss.isnan()`
    name = call_name(call)
    last = name.rsplit(".", 1)[-1] if name is not None else ""
    if last in _VALUE_COMPARISONS and isinstance(func, cst.Attribute):
        # `torch.allclose(grad, zeros)` (`t.allclose`, a module however imported) or `grad.allclose(zeros)`
        positional = [a for a in call.args if a.keyword is None and not a.star]
        return positional[0].value if len(positional) >= 2 else func.value if len(positional) == 1 else None
    if name is None or last not in _VALUE_PREDICATES or len(call.args) != 1:
        return None
    return call.args[0].value if index.qualify(name).startswith(_PREDICATE_MODULES) else None


def _reads_value(call: cst.Call) -> bool:
    """`t.item()` on a tensor that is not an attribute of `self`."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args and not _on_self(func.value)


def _on_self(expr: cst.CSTNode) -> bool:
    """Is `expr` rooted at `self` (`self.steps`, `self.buf[0].sum()`)?"""
    while True:
        if isinstance(expr, cst.Attribute | cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        else:
            return isinstance(expr, cst.Name) and expr.value == "self"


def draw_kind(index: ModelIndex, call: cst.Call) -> str | None:
    """RANDOM / HOST_RANDOM when `call` draws a random number (torch's generator or the host's), else None."""
    name = call_name(call)
    if name is None:
        return None
    return _draw(name if name.startswith(".") else index.qualify(name), call)


def _draw(qualified: str, call: cst.Call) -> str | None:
    if qualified in known.RANDOM_TORCH:
        return RANDOM
    if qualified in known.SEEDED_GENERATORS and _constant_seed(call):
        return None  # `random.Random(0)`, `np.random.default_rng(1234)`: the same stream on every rank
    if qualified.startswith(known.RANDOM_HOST_PREFIXES):
        return HOST_RANDOM
    method = isinstance(call.func, cst.Attribute)
    if method and qualified.rsplit(".", 1)[-1] in known.RANDOM_TORCH_METHODS:
        return None if qualified.startswith("torch.nn.init") else RANDOM  # `nn.init.uniform_(w)` initialises
    return None


def _constant_seed(call: cst.Call) -> bool:
    """Is a generator built with a literal integer seed, its first argument or `seed=`, or with a step or epoch
    counter (not a seed handed in, which a caller may offset by the rank)?"""
    seed = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "seed"), None)
    if isinstance(seed, cst.UnaryOperation):
        seed = seed.expression
    if isinstance(seed, (cst.Name, cst.Attribute)):
        # `np.random.default_rng(self.global_step)`: a step or epoch counter, the same on every rank
        return _STEP_COUNTER.match(code_of(seed).rsplit(".", 1)[-1]) is not None
    return isinstance(seed, cst.Integer)


_STEP_COUNTER = re.compile(r"^(?:global_step|current_epoch|epoch|step|steps|global_steps|iteration|num_updates)$")


# `if explore(eps):`, `elif not given(x)`: a function of one name an `if` calls
CALLED_IN_IF = re.compile(r"if(?<!\wif)[ \t]+(?:not[ \t]+)?(\w+)\(")
# `self.name(`: a method the text calls on `self` (its name).
_SELF_CALLED = re.compile(r"self(?<!\wself)\.(\w+)\(")


@memoised
def draw_trigger(index: ModelIndex, helpers: bool = True) -> Trigger:
    """Text without which code of this file makes no random draw: `known.RANDOM_HINT`, the names this file
    imported a draw as (`from random import random as rnd`), and (with `helpers`) its functions that return one."""
    names = [
        alias for alias, target in index.imports.items()
        if target.startswith(known.RANDOM_HOST_PREFIXES) or target in known.RANDOM_TORCH
    ]
    if helpers:
        names += [name for name in index.skeleton.functions if random_function(index, name)]
        # (imported functions only where an `if` calls one: each is read in its own file)
        tested = {m.group(1) for m in CALLED_IN_IF.finditer(index.source)} & index.imports.keys()
        names += [name for name in sorted(tested) if random_function(index, name)]
    calls = [f"{name}(" for name in names]
    pattern = known.RANDOM_HINT + "".join("|" + word_first(name, r"[\w.]") + r"\(" for name in names)  # (word first)
    if helpers:  # `self._should_explore()` answering with a draw (`random_method`)
        # (only names the file calls as `self.<name>(`: the pattern is searched in this file's texts alone, so any
        # other name could never match there, and its method is not parsed for it)
        called = set(_SELF_CALLED.findall(index.source))
        methods = {
            method.name for cls in index.classes.values() for method in cls.all_methods()
            if method.name in called
            and "return" in method.text and draw_trigger(index, False).search(method.text)
            and random_method(index, cls, method.name)
        }
        pattern += "".join(f"|self\\.{re.escape(name)}\\(" for name in sorted(methods))
        calls += [f"self.{name}(" for name in sorted(methods)]  # (a literal too: `if self._drop(): continue`)
    return Trigger("rand", "bernoulli", "multinomial", "poisson", "uniform_(", ").normal_(", *calls, pattern=pattern)


def draws_in(index: ModelIndex, method: MethodInfo) -> str | None:
    """RANDOM / HOST_RANDOM when `method` (or a function of this file) makes a random draw somewhere, else None."""
    if not draw_trigger(index, False).search(method.text):
        return None
    node = method.node
    kinds = {draw_kind(index, call) for call in walk(node) if isinstance(call, cst.Call)} if node is not None else set()
    return RANDOM if RANDOM in kinds else HOST_RANDOM if HOST_RANDOM in kinds else None


# `self.rank = dist.get_rank()`: an attribute assigned, on one line, from a rank word.
_RANK_ASSIGN = re.compile(r"self\.(\w+)\s*(?::[^=\n]*)?=[^=\n][^\n]*" + known.RANK_TEXT)
# A word of the rank, searched in the lines holding one of its literals (`Trigger`).
_RANK_WORD = Trigger(*known.RANK_LITERALS, pattern=known.RANK_TEXT, by_line=True)
_FREE_CALL = re.compile(r"(?<![\w.])(\w+)\s*\(")
_RANK_RETURN = re.compile(r"return(?<!\wreturn)\b[^\n]*" + known.RANK_TEXT)


@memoised
def rank_attrs(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes `__init__` (and the helpers it calls) sets from the process rank, read from the text, and
    properties that return it (`@property def is_main(self): return self.accelerator.is_main_process`)."""
    text = "".join(method.text for method in cls.init_methods)
    found = {m.group(1) for m in _RANK_ASSIGN.finditer(text)}
    constants = rank_constants(index)  # `self.experts_start_idx = rank * self.n_local_experts` for the file's `rank`
    if constants and any(c in text for c in constants):
        named = "|".join(map(re.escape, sorted(constants)))
        found |= {m.group(1) for m in re.finditer(
            rf"self\.(\w+)\s*(?::[^=\n]*)?=[^=\n][^\n]*(?<![\w.])(?:{named})(?!\w)", text)}
    for method in cls.all_methods():
        if "@property" in method.text and _RANK_RETURN.search(method.text):
            found.add(method.name)
    return frozenset(found)


@memoised(cycle=False)
def rank_function(index: ModelIndex, name: str) -> bool:
    """Is `name` a function of this file that returns the process rank or a decision on it (`def on_first_host():
    return int(os.environ["RANK"]) == 0`, `return dist.get_rank() % 2`)? Its answer differs per rank like the rank
    itself. Not one returning the rank placed in a name (`return f"cuda:{rank}"`, `torch.device("cuda", rank)`)."""
    function = index.function_info(name)
    return function is not None and _returns_rank_decision(index, None, function)


@memoised(cycle=False)
def rank_decorator(index: ModelIndex, name: str) -> bool:
    """Is `@name` a decorator of the program, of this file or imported from another, whose wrapper runs the function
    it decorates only on some ranks (`def main_only(fn): def inner(*a): if get_rank() == 0: return fn(*a)`, or an
    early `return` on a test of the rank before the call)? What it decorates then runs on those ranks alone."""
    found = (index, index.function_info(name)) if "." not in name else (index, None)
    if found[1] is None:
        found = index.external_function(index.qualify(name)) or (index, None)
    owner, function = found
    if function is None or function.node is None or "def " not in function.text:
        return False
    if not _RANK_WORD.search(function.text) and not any(
        rank_function(owner, m) for m in set(_FREE_CALL.findall(function.text)) if m != function.name
    ):
        return False
    return _runs_argument_on_rank(owner, function)


def _runs_argument_on_rank(index: ModelIndex, function: MethodInfo) -> bool:
    """Does every call of the function's first argument sit under a test of the rank, or after a `return` taken on one?"""
    params = positional_parameters(function.node)
    flat = flat_of(function)
    if not params or flat is None:
        return False
    wrapped = params[0]
    calls = [(n, c) for n, c in flat.nodes if type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == wrapped]
    if not calls:
        return False
    taint = Taint(index, None, flat, own_state=False)
    exits = [
        (flat.position[id(n)], c) for n, c in flat.nodes
        if type(n) is cst.Return and any(RANK in taint.of(t) for t in c.conds)
    ]

    def gated(call: cst.Call, ctx) -> bool:
        if any(RANK in taint.of(t) for t in ctx.conds):
            return True
        position = flat.position[id(call)]
        return any(at < position and not set(map(id, c.conds)) <= set(map(id, ctx.conds)) for at, c in exits)

    return all(gated(n, c) for n, c in calls)


class _Either:
    """A text pre-filter that also passes text calling one of some functions."""

    def __init__(self, base, calls: re.Pattern[str]) -> None:
        self.base, self.calls = base, calls

    def search(self, text: str) -> bool:
        return bool(self.base.search(text) or self.calls.search(text))


@memoised
def rank_trigger(index: ModelIndex, base):
    """`base` (a rule's rank pre-filter) widened to text calling a function of this file that may return a decision
    on the rank (its text has a word of the rank and a `return`): `if on_first_host():` names no rank itself."""
    skeleton = index.skeleton
    names = [
        name for name, span in skeleton.functions.items()
        if _RANK_WORD.search(text := skeleton.text(span.start, span.end)) and "return" in text
    ]
    if names:
        base = _Either(base, re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, names)) + r")\s*\("))
    handed = _rank_handed_methods(index)
    if handed:  # `def evaluate_mt(self, ..., eval_bleu)`: its test names no rank, its caller's argument does
        base = _Either(base, re.compile(r"def[ \t]+(?:" + "|".join(map(re.escape, handed)) + r")\("))
    return base


@memoised
def _rank_handed_methods(index: ModelIndex) -> tuple[str, ...]:
    """Methods a method of a class of the file calls on `self` with an argument that names the rank or a local
    assigned from it on the call's line (`eval_bleu = params.eval_bleu and params.is_master` then
    `self.evaluate_mt(scores, eval_bleu)`), read from the text: `handed_parameters` tells which parameter."""
    found: list[str] = []
    for cls in index.classes.values():
        if not _RANK_WORD.search(cls.text):
            continue
        for method in cls.all_methods():
            text = method.text
            if "self." not in text or not _RANK_WORD.search(text):
                continue
            ranked = {name for name, value in _ASSIGNED_FROM.findall(text) if _RANK_WORD.search(value)}
            for name, args in _SELF_CALL_LINE.findall(text):
                if name not in found and (_RANK_WORD.search(args) or ranked & set(_WORD.findall(args))):
                    found.append(name)
    return tuple(found)


# `self.evaluate(x, flag)`: the method a line calls on `self`, and the rest of the line.
_SELF_CALL_LINE = re.compile(r"self(?<!\wself)\.(\w+)\(([^\n]*)")


@memoised(cycle=False)
def rank_method(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Is `self.<name>()` a method of the class that returns the process rank or a decision on it?"""
    method = cls.method(name)
    return method is not None and _returns_rank_decision(index, cls, method)


@memoised(cycle=None)
def random_method(index: ModelIndex, cls: ClassInfo, name: str) -> str | None:
    """RANDOM / HOST_RANDOM when `self.<name>()` is a method of the class that returns a decision drawn at random
    (`return len(self.buffer) < n or np.random.rand() < self.eps`), also through another such method: whether it
    holds differs per rank like the draw. (A random value it returns, `torch.randn(b, d)`, decides nothing.)"""
    method = cls.method(name)
    if method is None or "return" not in method.text:
        return None
    text = method.text
    if not draw_trigger(index, False).search(text):
        helpers = (m for m in SELF_CALL.findall(text) if m != name)
        if not any(random_method(index, cls, m) for m in helpers):
            return None
    return _random_decision(index, cls, method)


def _random_decision(index: ModelIndex, cls: ClassInfo | None, function: MethodInfo) -> str | None:
    """RANDOM / HOST_RANDOM when a value the function returns is a decision on a draw (`random.random() < eps`)."""
    flat, returns = own_returns(function)
    if flat is None or not returns:
        return None
    taint = Taint(index, cls, flat, own_state=False)
    for value in returns:
        kinds = taint.of(value)
        for kind in (RANDOM, HOST_RANDOM):
            if kind in kinds and _decision(value, taint, kind):
                return kind
    return None


def _rank_places(index: ModelIndex, targets, value: cst.BaseExpression) -> frozenset[int] | None:
    """For `a, b, c = f(x)` with `f` a function of this file whose every `return` is a tuple of as many items: the
    positions whose item holds the rank or a decision on it (not the rank placed in a name); else None."""
    if len(targets) != 1 or not isinstance(targets[0], (cst.Tuple, cst.List)) or not isinstance(value, cst.Call):
        return None
    if not isinstance(value.func, cst.Name) or any(isinstance(e, cst.StarredElement) for e in targets[0].elements):
        return None
    return _tuple_rank_places(index, value.func.value, len(targets[0].elements))


@memoised(cycle=None)
def _tuple_rank_places(index: ModelIndex, name: str, count: int) -> frozenset[int] | None:
    function = index.function_info(name)
    if function is None or "return" not in function.text:
        return None
    flat, returns = own_returns(function)
    if flat is None or not returns or not all(
        isinstance(r, cst.Tuple) and len(r.elements) == count and not any(
            isinstance(e, cst.StarredElement) for e in r.elements) for r in returns
    ):
        return None
    taint = Taint(index, None, flat, own_state=False)
    return frozenset(
        at for r in returns for at, e in enumerate(r.elements)  # type: ignore[union-attr]
        if RANK in taint.of(e.value) and not _names_a_place(e.value)
    )


def _returns_rank_decision(index: ModelIndex, cls: ClassInfo | None, function: MethodInfo) -> bool:
    text = function.text
    if "return" not in text:
        return False
    if not _RANK_WORD.search(text):  # (no word of the rank, nor a call of a helper answering on it: not parsed)
        if cls is not None:
            helpers = (m for m in SELF_CALL.findall(text) if m != function.name)
            if not any(rank_method(index, cls, m) for m in helpers):
                return False
        elif not any(m != function.name and rank_function(index, m) for m in _FREE_CALL.findall(text)):
            return False
    flat, returns = own_returns(function)
    if flat is None:
        return False
    taint = Taint(index, cls, flat, own_state=False)
    return any(RANK in taint.of(value) and not _names_a_place(value) for value in returns)


# Keywords that say where a call's result is placed, not what it holds.
_PLACEMENT_KEYWORDS = frozenset({"map_location", "device", "device_ids", "output_device"})
# Keywords seeding what a call draws (`make_iterator(data, n, seed=seed + rank)`): a seed of this rank's own changes
# the values drawn, not how many.
_SEED_KEYWORDS = frozenset({"seed", "random_state", "random_seed", "rng_seed", "shuffle_seed"})


# A method named for a time it computes or tests (`_elapsed`, `time_left`, `check_timeout`, `deadline_passed`).
_TIME_WORD = re.compile(r"(?i)time|elapsed|duration|deadline|clock|budget|wall")


def _rank_field_compared(test: cst.Comparison) -> bool:
    """`args.rank == 0`, `self.args.rank <= 0`: the `rank` field of a run's settings tested for the first rank (not
    `self.rank > 0` of a low-rank adapter, whether it is enabled)."""
    left = test.left
    if type(left) is not cst.Attribute or left.attr.value != "rank" or len(test.comparisons) != 1:
        return False
    if type(left.value) is cst.Name and left.value.value == "self":
        return False
    # (not `config.rank == -1`: whether the run is distributed at all, often handed on as a place, `0 if ... else`)
    value, operator = test.comparisons[0].comparator, type(test.comparisons[0].operator)
    return type(value) is cst.Integer and (
        value.value == "0" and operator in (cst.Equal, cst.LessThanEqual) or value.value == "1" and operator is cst.LessThan
    )


def _drop_seeded(taint: dict[str, str], keyword: str | None) -> None:
    """A seed handed by keyword orders the draws, however it was drawn itself: no random taint passes."""
    if keyword in _SEED_KEYWORDS:
        taint.pop(RANDOM, None)
        taint.pop(HOST_RANDOM, None)


# Keywords handing a data loader, sampler or dataset builder this rank's place (`DistributedSampler(ds, rank=r)`,
# `create_dataloader(path, bs, rank=LOCAL_RANK)`): it picks this rank's shard, of the same length on every rank.
_SHARD_KEYWORDS = frozenset({"rank", "local_rank", "global_rank", "num_replicas", "world_size", "shard_id", "num_shards"})
_DATA_BUILDER = re.compile(r"(?i)loader|sampler|dataset|shard")


@memoised
def _mentions_shards(index: ModelIndex) -> bool:
    return "shard" in index.source or "Shard" in index.source or "SHARD" in index.source


def _rank_keyword(call: cst.Call) -> bool:
    """Is `call` handed this rank's place by keyword (`rank=r`, `num_replicas=w`), or a distributed sampler handed it
    by position (`DistributedSampler(ds, world_size, rank)`)?"""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _SHARD_KEYWORDS:
            return True
    last = (call_name(call) or "").rsplit(".", 1)[-1]
    return last.startswith("Distributed") and last.endswith("Sampler") and len(call.args) > 1


def _constructed_by_keyword(flat: Flat) -> dict[str, dict[str, cst.BaseExpression]]:
    """Locals bound once, to a construction of a class (by its capitalised name: not a function handing back what it
    likes) given keyword arguments -> each keyword's value (`state = TrainState(step=0, ...)`: {"step": `0`})."""
    found = {}
    for name, values in local_bindings(flat).items():
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            continue
        written = call_name(values[0]) or ""
        if written[written.rfind(".") + 1:][:1].isupper():
            given = {a.keyword.value: a.value for a in values[0].args if a.keyword is not None}
            if given:
                found[name] = given
    return found


def _loads_shard(call: cst.Call) -> bool:
    """Is `call` a call of a data loader, sampler or dataset (builder), by its last name, handed this rank's place
    (`rank=r`), or of a function naming a shard (`_get_estimator_shard(n, rank, world)`)?"""
    last = (call_name(call) or "").rsplit(".", 1)[-1]
    if "shard" in last.lower():
        return True
    # (`load_checkpoint(path, step, device, rank=rank)`: this rank's file of a saved run, whose model and progress
    # every rank reads alike; only its optimizer shard is its own)
    return _rank_keyword(call) and (
        _DATA_BUILDER.search(last) is not None or _CHECKPOINT_LOADER.search(last) is not None
    )


_CHECKPOINT_LOADER = re.compile(r"(?i)^_?(?:load|restore|resume)\w*(?:checkpoint|ckpt|state)|checkpoint\w*load")


# Keywords of a progress bar or logger that only say how it shows (`tqdm(loader, disable=rank != 0)`): the items it
# hands out are the iterable's, on every rank.
_DISPLAY_KEYWORDS = frozenset({"disable", "position", "desc", "leave", "dynamic_ncols", "ncols", "file", "mininterval"})


def _names_a_place(value: cst.BaseExpression) -> bool:
    """`f"cuda:{rank}"`, `torch.device("cuda", rank)`, `str(rank)`, `Sampler(data, rank=rank)`: the rank placed (a
    device, a file name, an object built for this rank's shard), not a number or a decision a caller tests."""
    if isinstance(value, (cst.FormattedString, cst.ConcatenatedString, cst.SimpleString)):
        return True
    name = call_name(value) if isinstance(value, cst.Call) else None
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1]
    # (an object built for this rank, `DistributedSampler(data, rank=rank)`: its shard, not a decision on the rank)
    return last in ("device", "str", "format", "join") or last[:1].isupper()


# Methods of a list or a deque that put a value in it (not `add`/`update`: a meter's or a set's as often).
_FILLS = frozenset({"append", "appendleft", "extend", "insert"})


def _filled_attribute(call: cst.Call) -> str | None:
    """The attribute of `self` a call puts items in (`self.id.append(x)` -> `id`), or None."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in _FILLS and call.args):
        return None
    held = func.value
    if isinstance(held, cst.Attribute) and isinstance(held.value, cst.Name) and held.value.value == "self":
        return held.attr.value
    return None


@memoised(cycle={})
def own_state(index: ModelIndex, cls: ClassInfo) -> dict[str, dict[str, str]]:
    """Attributes of `self` (by name) that a method of `cls` writes per rank, with why: written only on some ranks
    (under a test on the rank, or after an early `return` on one: `if not self.is_main: return` ... `self.has_ema =
    True`), or assigned a value drawn at random or read from this rank's data or host (`self.done = (h > 0).all()`)
    outside the constructor (whose values are the same on every rank unless drawn). In every other method their
    value and their `None`-ness differ per rank.

    Only what flows through the assigned value counts across methods (not the tests around the write; of the rank,
    only a decision on it, `self.is_first = rank == 0`, not a device name or a seed offset made from it), and only a
    write of `self.<attribute>` itself (not a method of the object it holds): what another method decides is read
    by its callers through these attributes. One exception: a flag, a constant written under a test of the values
    of this rank's data (`if torch.norm(a - b.flip(1)) == 0: self.is_mirror_extended = True`), holds that test's
    outcome as surely as `self.flag = <test>` would (not a test of an extent: `extent_only`)."""
    found: dict[str, dict[str, str]] = {}
    init = {id(method.span) for method in cls.init_methods}
    for method in cls.all_methods():
        text = method.text
        if not WRITES_SELF.search(text):
            continue
        ranked = _RANK_WORD.search(text)
        flagged = id(method.span) not in init and _FLAG_UNDER_TEST.search(text) is not None
        if not ranked and not flagged and not _PER_RANK_HINT.search(text):
            continue  # (a method with no word of a per-rank value writes none: not parsed)
        flat = flat_of(method)
        if flat is None:
            continue
        taint = Taint(index, cls, flat, own_state=False)
        in_init = id(method.span) in init
        for node, _ctx in flat.nodes:
            if type(node) is cst.Call and not in_init and (attr := _filled_attribute(node)) is not None:
                # `self.id.append(mask.nonzero())`: what a kept list is filled with, its items' values (not how many
                # there are, nor whether the list is there)
                kinds = {}
                for arg in node.args:
                    kinds.update(taint.of(arg.value, direct=True))
                kinds.pop(RANK, None)
                if kinds:
                    _merge_into(found.setdefault(f"{attr}[]", {}), kinds)
                continue
            if type(node) not in (cst.Assign, cst.AugAssign, cst.AnnAssign) or node.value is None:
                continue
            attrs = list(self_targets(node))
            if not attrs:
                continue
            kinds = dict(taint.of(node.value, direct=True))
            if RANK in kinds and not _rank_decision(node.value, taint):
                del kinds[RANK]  # `self.device = f"cuda:{rank}"`: the rank placed, not decided on
            if in_init:
                kinds.pop(DATA, None)
            for attr in attrs if kinds else ():
                _merge_into(found.setdefault(attr, {}), kinds)
            if flagged and not in_init and _is_constant(node.value):
                why = next((
                    source for test in _ctx.conds if (source := taint.of(test).get(DATA)) is not None
                    and not taint.extent_only(source)
                ), None)
                for attr in attrs if why is not None else ():
                    found.setdefault(attr, {}).setdefault(DATA, why)
        if ranked:
            for attr, why in self_writes(flat, RankTests(flat, lambda test: RANK in taint.of(test))):
                found.setdefault(attr, {}).setdefault(RANK, why)
    for kept, why in hook_kept(index, cls).items():  # `self.acts["x"] = out` in a forward hook: this rank's output
        found.setdefault(kept, {}).setdefault(DATA, why)
    return found


def extent_call(index: ModelIndex, node: cst.CSTNode) -> bool:
    """`self.m(...)` for a method `m` of this file that hands back no value of what it is given (`extent_method`)."""
    func = node.func if type(node) is cst.Call else None
    return (
        isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
        and extent_method(index, func.attr.value)
    )


@memoised
def extent_method(index: ModelIndex, name: str) -> bool:
    """Does every class of the file that defines method `name` have it return a constant, or a test of its
    arguments' extents and of settings (`return memory.shape[1] >= self.max_len - self.begin`, `return False`)? Such
    a method hands back no value of what it is given: a loop that stops on it stops after as many steps on every
    rank whose inputs have the same shape. (Nothing is read when no class of the file defines it.)"""
    found = False
    for cls in index.classes.values():
        method = cls.method(name) if name in cls.span.methods else None
        if method is None:
            continue
        func = ast_function(method)
        if func is None:
            return False
        body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            return False
        if not _reads_only_extents(body[0].value, {a.arg for a in func.args.args[1:]}):
            return False
        found = True
    return found


def _reads_only_extents(expr: ast.expr, params: set[str]) -> bool:
    """Is every use of a parameter in `expr` a read of its extent (`x.shape[1]`, `x.seq.size(1)`, `len(x)`, `x.ndim`)?"""
    parents = {id(child): node for node in ast.walk(expr) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(expr):
        if not (isinstance(node, ast.Name) and node.id in params):
            continue
        current, extent = node, False
        while (parent := parents.get(id(current))) is not None:
            if isinstance(parent, ast.Attribute) and parent.attr in ("shape", "ndim"):
                extent = True
                break
            if isinstance(parent, ast.Attribute) and parent.attr == "size" and isinstance(parents.get(id(parent)), ast.Call):
                extent = True
                break
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "len":
                extent = True
                break
            if not isinstance(parent, ast.Attribute):
                break
            current = parent
        if not extent:
            return False
    return True


@memoised
def random_function(index: ModelIndex, name: str) -> str | None:
    """RANDOM / HOST_RANDOM when `name` is a function of this file that draws a random number and returns.

    `layers = dropout_layers(self.layers, p)`: what such a helper returns
    differs per rank as much as the draw inside it.
    """
    function = index.function_info(name)
    if function is None and name in index.imports:
        # `from .utils import explore` ... `if explore(self.eps):`: a decision drawn in a function of another file
        # of the program, read there
        function = function_target(index, name)
        if function is None or "return" not in function.text or not draw_trigger(function.index, False).search(
            function.text
        ):
            return None
        return _random_decision(function.index, None, function)
    if function is None or "return" not in function.text:
        return None
    return draws_in(index, function)


def _handed_a_value(call: cst.Call) -> bool:
    """Is `call` handed a local or an expression of one (`check(loss)`), not only constants or `self`'s state?"""
    for arg in call.args:
        value = chain_root(arg.value)
        if isinstance(value, cst.Name) and value.value not in ("self", "cls", "True", "False", "None"):
            return True
    return False


@memoised(cycle=False)
def value_test_function(index: ModelIndex, name: str) -> bool:
    """Is `name` a function (of this file, or imported from another file of the program) that returns a test of the
    values of what it was handed (`def nonfinite(x): return not torch.isfinite(x).all()`, `return
    math.isfinite(loss.item())`)? What it says of this rank's tensor is this rank's own."""
    function = function_target(index, name)
    if function is None or not value_test_text(function.text):
        return False
    flat, returns = own_returns(function)
    root = flat.nodes[0][0] if flat is not None and flat.nodes else None
    if not isinstance(root, cst.FunctionDef):
        return False
    params = parameter_names(root)
    for value in returns:
        for node in walk(value):
            if type(node) is not cst.Call:
                continue
            tested = _value_predicate(function.index, node)
            if tested is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("all", "any"):
                tested = None if node.args else node.func.value  # `(x > 0).all()` (not `x.item()`: a value, no test)
            if tested is not None and params.intersection(
                n.value for n in walk(tested) if type(n) is cst.Name
            ):
                return True
    # `return t.sum() > 0`, `return torch.nonzero(t > 0)`: a test or a selection its values make (`value_test_method`)
    return _answers_with_values(function.index, None, flat, returns)


@memoised(cycle=False)
def value_test_method(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Is `self.<name>(...)` a method of the class that answers with what the values of the tensors it computes from
    its arguments decide: a test of them (`a, b = lrs.chunk(2, 1); return torch.norm(a - b.flip(1)) == 0`, `return
    scores.max() > self.threshold`) or a selection they make (`return torch.nonzero(heat > t)`)? Handed this rank's
    tensors, it answers for this rank alone, as the test would where it is written out (`Taint`'s data)."""
    method = cls.method(name)
    if method is None or not value_test_text(method.text):
        return False
    flat, returns = own_returns(method)
    return _answers_with_values(index, cls, flat, returns)


def _answers_with_values(
    index: ModelIndex, cls: ClassInfo | None, flat: Flat | None, returns: list[cst.BaseExpression]
) -> bool:
    """Is one of `returns` a decision on this rank's values or a selection they make (`Taint`'s data)?"""
    if flat is None or not returns:
        return False
    taint = Taint(index, cls, flat, own_state=False)
    return any(
        DATA in taint.of(value)
        and (_decision(value, taint, DATA) or type(value) is cst.Call and taint._call_kind(value) == DATA)
        for value in returns
    )


# Comparisons of values (not `is`, `in`): elementwise on tensors, a mask. (By name: libcst is read only on a parse.)
_MASK_OPERATORS = frozenset({"LessThan", "GreaterThan", "LessThanEqual", "GreaterThanEqual", "Equal", "NotEqual"})
# Methods and torch functions answering a mask of the values they are given.
_MASK_CALLS = frozenset(
    {"gt", "lt", "ge", "le", "eq", "ne", "isnan", "isinf", "isfinite", "isin", "logical_and", "logical_or",
     "logical_not", "logical_xor"}
)  # fmt: skip


def _built_types() -> tuple[type, ...]:
    return (cst.List, cst.ListComp, cst.Set, cst.SetComp, cst.Dict, cst.DictComp, cst.GeneratorExp)


def _selected_whole(node: cst.Subscript, expr: cst.CSTNode) -> bool:
    """Is the selection `node` what `expr` evaluates to (`x[m]`, or a method of it: `x[m].clone()`)?"""
    if node is expr:
        return True
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.value is node


def _emptiness_test(node: cst.Comparison) -> bool:
    """Is `node` a test of a length against none (`len(found) > 0`, `len(found) == 0`, `0 < len(found)`, `len(found)
    >= 1`): whether anything was found, not how many values a call hands back?"""
    if len(node.comparisons) != 1:
        return False
    test, other = type(node.comparisons[0].operator).__name__, node.comparisons[0].comparator
    if isinstance(node.left, cst.Integer):  # `0 < len(found)`
        test, other = _MIRRORED.get(test, test), node.left
    if not isinstance(other, cst.Integer):
        return False
    return (other.value, test) in _NONE_FOUND


_MIRRORED = {"LessThan": "GreaterThan", "GreaterThan": "LessThan", "LessThanEqual": "GreaterThanEqual",
             "GreaterThanEqual": "LessThanEqual"}
_NONE_FOUND = frozenset({
    ("0", "GreaterThan"), ("0", "Equal"), ("0", "NotEqual"), ("0", "LessThanEqual"), ("1", "GreaterThanEqual"),
    ("1", "LessThan"),
})


def mask_expression(expr: cst.BaseExpression, masks: frozenset[str] = frozenset()) -> bool:
    """Is `expr` an elementwise test of values (`scores > t`, `labels == c`, `~done & valid`, `x.isnan()`), given the
    locals `masks` already known to hold one? A comparison of numbers alone (`1 < 2`) is none."""
    if isinstance(expr, cst.Name):
        return expr.value in masks
    if isinstance(expr, cst.Comparison):
        if not all(type(c.operator).__name__ in _MASK_OPERATORS for c in expr.comparisons):
            return False
        sides = [expr.left, *(c.comparator for c in expr.comparisons)]
        numbers = (cst.Integer, cst.Float, cst.SimpleString, cst.UnaryOperation)
        return any(not isinstance(side, numbers) for side in sides)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return mask_expression(expr.expression, masks)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return mask_expression(expr.left, masks) or mask_expression(expr.right, masks)
    if isinstance(expr, cst.Call):
        name = call_name(expr)
        return name.rsplit(".", 1)[-1] in _MASK_CALLS if name else False
    return False


def _mask_locals(flat: Flat) -> frozenset[str]:
    """The locals every binding of which is a mask of values (`keep = scores > t`; `valid = valid & (x != pad)`)."""
    bound: list[tuple[str, cst.BaseExpression]] = []
    others: set[str] = set()  # (bound some other way too: a tuple's element, an augmented assignment)
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            bound.append((node.targets[0].target.value, node.value))
        elif type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
            others.update(n for t in targets_of(node)[0] for n in bound_names(t))
    masks: frozenset[str] = frozenset()
    for _ in range(2):  # (a mask made of another bound later in the text, around a loop: `keep = valid & ~done`)
        masks = frozenset(name for name, value in bound if mask_expression(value, masks))
    others.update(name for name, value in bound if not mask_expression(value, masks))
    return masks - others


# Attributes that only a tensor has among a function's arguments (a list or a mapping has none of them).
_TENSOR_ATTRS = frozenset({"shape", "size", "dim", "view", "reshape", "ndim", "dtype", "device", "unsqueeze", "float"})
# A mapping's views: iterating one given as an input walks the keys this call's batch has.
_MAPPING_VIEWS = frozenset({"items", "keys", "values"})
# A mapping named as settings (`params_dict`, `config`, `model_kwargs`, `hparams`), not a batch.
_SETTINGS_MAPPING = re.compile(r"conf|cfg|args$|opts?$|options|param|setting|hparams|kwargs")


def _batch_size_test(
    node: cst.Comparison, names: frozenset[str] = frozenset(), selections: frozenset[str] = frozenset()
) -> bool:
    """`x.shape[0] > 1`, `x.size(0) == 0`, `x.numel() == 0`, `b > 1` for `b = x.shape[0]`, `len(x) == 1` of a tensor
    argument,
    `len(idx) > 0` of an argument that indexes a tensor (`x[idx]`): the batch size (of a tensor the function holds) or
    the number of samples selected, tested
    against a small literal: this rank's last, uneven batch or an empty share. (Not `cache.shape[0] ==
    self.kernel_size`, nor `len(fmaps) == 0` of a list argument.)"""
    if len(node.comparisons) != 1:
        return False
    left, right = node.left, node.comparisons[0].comparator
    operator = type(node.comparisons[0].operator).__name__
    if isinstance(left, cst.Integer):
        left, right = right, left
        operator = _MIRRORED.get(operator, operator)
    if not (isinstance(right, cst.Integer) and (
            right.value in ("0", "1") or right.value == "2" and operator in ("LessThan", "GreaterThanEqual"))):
        return False  # (`x.size(0) < 2`: one sample, as `== 1`)
    if type(left) is cst.BinaryOperation and type(left.operator) is cst.Modulo and type(left.right) is cst.Integer \
            and operator in ("Equal", "NotEqual"):
        left = left.left  # `x.size(0) % 2 == 0`: a batch of an even size, which this rank's last one may not be
    if isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute) and left.func.attr.value == "numel":
        # `batch["ids"].numel() == 0`: a tensor the function holds is empty on this rank
        tensor = left.func.value  # (a local or an item of one: not an attribute path, `block.bias.numel()`, a size)
        held = tensor.value if isinstance(tensor, cst.Subscript) else tensor
        return not left.args and right.value == "0" and isinstance(held, cst.Name) and held.value not in ("self", "cls")
    return _batch_size_of(left, names, selections)


def _empty_test(node: cst.Comparison) -> bool:
    """`n == 0`, `x.shape[1] > 0`, `0 != len(boxes)`: a test of an extent against zero, whether this rank's input
    holds any (edges of its graph, boxes of its images) at all; not a length any decoding step moves alike."""
    operator = type(node.comparisons[0].operator).__name__
    sides = (node.left, node.comparisons[0].comparator)
    return operator in ("Equal", "NotEqual", "GreaterThan", "LessThan", "LessThanEqual") and any(
        type(side) is cst.Integer and side.value == "0" for side in sides)


def _reads_input_extent(node: cst.Comparison, inputs: frozenset[str]) -> bool:
    """Does the side of `node` other than its literal read an extent of an argument (`h.shape`, `x.size(1)`,
    `x.numel()`), whatever it computes from it (not its remainder, `x.size(2) % factor == 0`: a divisibility)?"""
    for side in (node.left, node.comparisons[0].comparator):
        if type(side) is cst.BinaryOperation and type(side.operator) is cst.Modulo:
            return False
        for part in walk(side):
            if type(part) is cst.Attribute and part.attr.value == "shape" and type(part.value) is cst.Name \
                    and part.value.value in inputs:
                return True
            if type(part) is cst.Call and type(part.func) is cst.Attribute and part.func.attr.value in ("size", "numel") \
                    and type(part.func.value) is cst.Name and part.func.value.value in inputs:
                return True  # (a tensor's `size()`, not a dataset's `size` attribute)
    return False


# An order read from the other side (`2 > b` is `b < 2`).
_MIRRORED = {"LessThan": "GreaterThan", "GreaterThan": "LessThan", "LessThanEqual": "GreaterThanEqual",
             "GreaterThanEqual": "LessThanEqual"}


def _batch_limit_test(
    node: cst.Comparison, names: frozenset[str], counted: frozenset[str], arguments: frozenset[str]
) -> bool:
    """`x.size(0) > self.max_batch`, `b <= self.test_batch_size` for `b = x.shape[0]`, `len(x) > chunk` of a tensor
    argument: the batch size (of a tensor the function holds) ordered against a setting: an attribute, or an
    argument of the function (not a local, a counter the function moves: `while done < x.shape[0]` counts a loop). The
    batch is the one extent no decoding step moves, and ranks' batches differ in size (the last, uneven one, a
    token budget, a shard): a limit on it is crossed on some ranks only, and which branch runs is a decision, not
    the lockstep test of a step (`extent_only`). (Not against a literal: `_batch_size_test`; nor against another
    extent, `x.shape[0] > y.shape[0]`.)"""
    if len(node.comparisons) != 1:
        return False
    if not isinstance(node.comparisons[0].operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)):
        return False
    left, right = node.left, node.comparisons[0].comparator
    for size, limit in ((left, right), (right, left)):
        if isinstance(limit, cst.Name):
            if limit.value not in arguments or limit.value in names:
                continue
        elif not isinstance(limit, cst.Attribute):
            continue
        if isinstance(limit, cst.Attribute) and limit.attr.value in ("shape", "ndim"):
            continue
        if _batch_size_of(size, names, counted):
            return True
    return False


def _uneven_batch_test(node: cst.Comparison, batches: frozenset[str], arguments: frozenset[str]) -> bool:
    """`x.size(0) != batch_size`, `len(batch) == self.batch_size`: the size of a batch a loop takes from a loader
    this code was given, tested for equality with a setting (an argument or an attribute): the last batch of a
    rank's shard is the short one, and shards differ in length."""
    if len(node.comparisons) != 1 or type(node.comparisons[0].operator).__name__ not in ("Equal", "NotEqual"):
        return False
    left, right = node.left, node.comparisons[0].comparator
    for size, setting in ((left, right), (right, left)):
        if isinstance(setting, cst.Name) and setting.value in arguments or isinstance(setting, cst.Attribute) and (
                setting.attr.value not in ("shape", "ndim")):
            if _batch_size_of(size, frozenset(), batches) and _sized_name(size) in batches:
                return True
    return False


def _sized_name(size: cst.BaseExpression) -> str | None:
    """The name whose extent `x.shape[0]`, `x.size(0)`, `len(x)` (or `batch["x"].shape[0]`) reads."""
    if isinstance(size, cst.Call) and isinstance(size.func, cst.Name):  # `len(x)`
        size = size.args[0].value if size.args else size
    root = chain_root(size)
    return root.value if isinstance(root, cst.Name) else None


def _batch_size_of(value: cst.BaseExpression, names: frozenset[str], counted: frozenset[str]) -> bool:
    """`x.shape[0]`, `x.size(0)` of a tensor the function holds, a local bound to one, `len(x)` of a tensor argument."""
    if isinstance(value, cst.Name):
        return value.value in names
    if isinstance(value, cst.Subscript):
        return _batch_size_index(value)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "len":
        if len(value.args) != 1:
            return False
        counted_value = value.args[0].value
        if isinstance(counted_value, cst.Subscript) and const_str(_only_index(counted_value)) is not None:
            counted_value = counted_value.value  # `len(batch["input_ids"])` of a batch this rank drew
        return isinstance(counted_value, cst.Name) and counted_value.value in counted
    return isinstance(value, cst.Call) and _batch_size_call(value)


# Calls that make a tensor (or an array) of the values they are handed.
_TENSOR_BUILDERS = frozenset({
    "torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.FloatTensor", "torch.IntTensor", "torch.Tensor",
    "numpy.array", "numpy.asarray",
})


def _handed_names(node: cst.Call) -> list[str]:
    """Names handed to a call as values: `f(x)`, `f([a, *x])`, `f((x, y))`."""
    found = []
    for arg in node.args:
        value = arg.value
        if isinstance(value, cst.Name):
            found.append(value.value)
        elif isinstance(value, (cst.List, cst.Tuple)):
            found += [e.value.value for e in value.elements if isinstance(e.value, cst.Name)]
    return found


def _extent_test(
    node: cst.Comparison, inputs: frozenset[str], extents: frozenset[str], valued: frozenset[str]
) -> bool:
    """`x.shape[1] < 4`, `ids.size(1) < n`, `t < 4` for `t = x.shape[1]`, `len(tokens) == 0` of a list of values the
    function was given: an extent of this call's input tested against a number (a literal or a name; not against 1
    along a dimension other than the batch's, the test of one decoding step, made alike by every rank)."""
    if len(node.comparisons) != 1 or isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
        return False
    left, right = node.left, node.comparisons[0].comparator
    if isinstance(left, cst.Name) and left.value in extents and isinstance(right, cst.Attribute):
        pass  # `n < self.chunk_size` for `n = x.shape[-2]`: the extent is the left side, the setting the right
    elif isinstance(left, (cst.Integer, cst.Name)) and not isinstance(right, (cst.Integer, cst.Name)):
        left, right = right, left
    elif isinstance(left, cst.Integer):
        left, right = right, left
    if not (isinstance(right, cst.Integer) or (isinstance(right, (cst.Name, cst.Attribute)) and right is not left)):
        return False
    one = isinstance(right, cst.Integer) and right.value == "1"
    offset = _offset_extent(left, inputs, extents)
    if offset is not None:  # `(seq_len - n) <= 0`, `n + k > max_len`: the extent against a setting moved by it
        left, one = offset, False
    if isinstance(left, cst.Name):
        return left.value in extents and not one
    if isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len":
        return len(left.args) == 1 and isinstance(left.args[0].value, cst.Name) and left.args[0].value.value in valued
    return _input_extent(left, inputs) and not one


def _element_test(node: cst.Comparison, holders: frozenset[str]) -> bool:
    """`offset[-1] > 0`, `lengths[0] == 0`: one item of a tensor this call was given (or of a field of its batch), by a
    literal position, tested against a number: a value of this rank's data, as `x.sum() > 0` is."""
    if len(node.comparisons) != 1 or type(node.comparisons[0].operator).__name__ not in _ORDERS:
        return False
    sides = (node.left, node.comparisons[0].comparator)
    return any(_number(other) and _literal_item(side, holders) for side, other in (sides, sides[::-1]))


_ORDERS = frozenset({"LessThan", "GreaterThan", "LessThanEqual", "GreaterThanEqual", "Equal", "NotEqual"})


def _number(expr: cst.BaseExpression) -> bool:
    """`0`, `-1`, `0.5`: a literal number."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _literal_item(expr: cst.BaseExpression, holders: frozenset[str]) -> bool:
    """`offset[-1]`, `x[0]` of a name in `holders`: one item, at a literal position."""
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value in holders):
        return False
    return len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and isinstance(
        expr.slice[0].slice.value, (cst.Integer, cst.UnaryOperation)) and _number(expr.slice[0].slice.value)


def _offset_extent(
    value: cst.BaseExpression, inputs: frozenset[str], extents: frozenset[str]
) -> cst.BaseExpression | None:
    """The extent in `seq_len - n` / `n + k` (`n` an extent local or `x.shape[1]`, the other side a name, an attribute
    or a number: a setting), or None."""
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Add, cst.Subtract))):
        return None
    for side, other in ((value.left, value.right), (value.right, value.left)):
        if not isinstance(other, (cst.Name, cst.Attribute, cst.Integer)):
            continue
        if (isinstance(side, cst.Name) and side.value in extents) or _input_extent(side, inputs):
            return side
    return None


def _mirrored_assignments(flat: Flat, node: cst.CSTNode | None) -> frozenset[int]:
    """`Taint._mirrored`: the assignment statements written directly under the `if` `node` that its other side
    holds too, alike in text, by id: its `else`, or the body of any other `if` of the same block on the negated
    test. `node` may be no `if` at all (the test of a loop): then none."""
    if type(node) is not cst.If:
        return frozenset()
    if isinstance(node.orelse, cst.Else):
        others: list[cst.BaseSuite] = [node.orelse.body]
    else:
        others = [sibling.body for sibling in _negated_siblings(flat, node)]
    mine = _assignments(node.body)
    found: set[int] = set()
    for other in others:
        theirs = _assignments(other)
        for targets in mine.keys() & theirs.keys():  # (the text only of those binding the same names)
            texts = {code_of(a) for a in theirs[targets]}
            found.update(id(assign) for assign in mine[targets] if code_of(assign) in texts)
            if isinstance(node.orelse, cst.Else):  # (both sides sit under this one test)
                texts = {code_of(a) for a in mine[targets]}
                found.update(id(assign) for assign in theirs[targets] if code_of(assign) in texts)
    return frozenset(found)


def _negated_siblings(flat: Flat, node: cst.If) -> list[cst.If]:
    """The other `if`s of the block holding `node` (before or after it), with no `else`, whose test is `not
    <node's test>` or the other way round."""
    block = flat.parent.get(id(node))
    body = getattr(block, "body", None)
    if node.orelse is not None or not isinstance(body, (list, tuple)):
        return []
    negated = isinstance(node.test, cst.UnaryOperation) and isinstance(node.test.operator, cst.Not)
    found = []
    for other in body:
        if type(other) is not cst.If or other is node or other.orelse is not None:
            continue
        if negated and not isinstance(other.test, cst.UnaryOperation):
            if code_of(node.test.expression) == code_of(other.test):  # type: ignore[attr-defined]
                found.append(other)
        elif not negated and isinstance(other.test, cst.UnaryOperation) and isinstance(other.test.operator, cst.Not):
            if code_of(other.test.expression) == code_of(node.test):
                found.append(other)
    return found


def _assignments(body: cst.BaseSuite) -> dict[tuple[str, ...], list[cst.Assign]]:
    """The plain assignments written directly in a block (not nested), by the names they bind."""
    found: dict[tuple[str, ...], list[cst.Assign]] = {}
    for statement in getattr(body, "body", ()):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if type(small) is cst.Assign:
                    names = tuple(name for target in small.targets for name in bound_names(target.target))
                    found.setdefault(names, []).append(small)
    return found


def _kind_test(node: cst.Comparison, inputs: frozenset[str]) -> bool:
    """`x.ndim == 5`, `x.dim() != 4`, `len(x.shape) == 3` against a number, or `mel.shape[-2:] != (n_ctx, d)` against
    a tuple, of an argument `x`: which kind of input this call was given (videos or images, raw features or ones
    already encoded), which no decoding step changes; a branch on it runs what that kind needs. Not of a mask, ids
    or a state (`attention_mask.ndim == 2`, `known.CONVENTION_INPUT`): their layout is the calling convention."""
    if len(node.comparisons) != 1 or isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
        return False
    left, right = node.left, node.comparisons[0].comparator
    if isinstance(left, (cst.Integer, cst.Tuple)):
        left, right = right, left
    if isinstance(right, cst.Integer):
        owner = None
        if isinstance(left, cst.Attribute) and left.attr.value == "ndim":
            owner = left.value  # `x.ndim`
        elif isinstance(left, cst.Call) and not left.args and isinstance(left.func, cst.Attribute):
            owner = left.func.value if left.func.attr.value == "dim" else None  # `x.dim()`
        elif isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len" and left.args:
            shape = left.args[0].value  # `len(x.shape)`
            owner = shape.value if isinstance(shape, cst.Attribute) and shape.attr.value == "shape" else None
        return isinstance(owner, cst.Name) and owner.value in inputs and not known.CONVENTION_INPUT.search(owner.value)
    if not (isinstance(right, cst.Tuple) and isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual))):
        return False
    if not (isinstance(left, cst.Subscript) and len(left.slice) == 1 and isinstance(left.slice[0].slice, cst.Slice)):
        return False
    shape, trailing = left.value, left.slice[0].slice  # `x.shape[-2:]`: the trailing dimensions
    return (
        isinstance(shape, cst.Attribute) and shape.attr.value == "shape" and isinstance(shape.value, cst.Name)
        and shape.value.value in inputs and not known.CONVENTION_INPUT.search(shape.value.value)
        and trailing.upper is None and isinstance(trailing.lower, cst.UnaryOperation)
    )


def _input_extent(value: cst.BaseExpression, inputs: frozenset[str]) -> bool:
    """`x.shape[k]` / `x.size(k)` for `k` other than 0 (the batch's, `_batch_size_test`), of an argument `x`."""
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index):
        index, shape = value.slice[0].slice.value, value.value
        if not (isinstance(shape, cst.Attribute) and shape.attr.value == "shape"):
            return False
        owner = shape.value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size":
        if len(value.args) != 1:
            return False
        index, owner = value.args[0].value, value.func.value
    else:
        return False
    if isinstance(index, cst.Integer) and index.value == "0":
        return False
    return isinstance(index, (cst.Integer, cst.UnaryOperation)) and isinstance(owner, cst.Name) and owner.value in inputs


def _extent_names(
    node: cst.Assign, inputs: frozenset[str], valued: frozenset[str],
    counts: Callable[[], frozenset[str]] = frozenset,
) -> list[str]:
    """The names `t = x.shape[1]`, `_, t = x.shape[:2]`, `b, t, d = x.size()`, `n = len(tokens)` bind to an extent of
    an argument (not the first of an unpacked shape: the batch size), and `m = max(num_gts)` to the most (or least) of
    the per-sample counts of one (`counts()`: `num_gts = [len(t["labels"]) for t in targets]`)."""
    value, found = node.value, []
    for target in node.targets:
        target = target.target
        if isinstance(target, cst.Name):
            if _input_extent(value, inputs) or (
                isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "len"
                and len(value.args) == 1 and isinstance(value.args[0].value, cst.Name)
                and value.args[0].value.value in valued
            ) or _most_per_sample(value, inputs, counts):
                found.append(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Tuple) and not isinstance(
            value.elements[0] if value.elements else None, cst.StarredElement
        ):
            # `b, n, c = x.shape[0], x.shape[-2], *ctx.shape[-2:]`: each name bound to its own value, up to a starred one
            for element, bound in zip(target.elements, value.elements):
                if isinstance(bound, cst.StarredElement) or isinstance(element, cst.StarredElement):
                    break
                if isinstance(element.value, cst.Name) and _input_extent(bound.value, inputs):
                    found.append(element.value.value)
        elif isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) > 1:
            shape, elements = _starred_shape(value, target.elements)
            shape = shape.value if isinstance(shape, cst.Subscript) and _leading_slice(shape) else shape
            if isinstance(shape, cst.Call) and isinstance(shape.func, cst.Attribute) and shape.func.attr.value == "size":
                if shape.args:
                    continue
                shape = shape.func
            if isinstance(shape, cst.Attribute) and shape.attr.value == "shape" and isinstance(shape.value, cst.Name):
                if shape.value.value in inputs:
                    found += [e.value.value for e in elements[1:] if isinstance(e.value, cst.Name)]
    return found


def _sample_count_lists(flat: Flat, inputs: frozenset[str]) -> frozenset[str]:
    """Locals bound to the count of a field of each sample of an input (`num_gts = [len(t["labels"]) for t in
    targets]`: how many boxes each image of this rank's batch holds)."""
    return frozenset(
        node.targets[0].target.value for node, _ctx in flat.nodes
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
        and _per_sample_counts(node.value, inputs)
    )


def _per_sample_counts(value: cst.BaseExpression, inputs: frozenset[str]) -> bool:
    """`[len(t["labels"]) for t in targets]`, `(len(s.boxes) for s in samples)`: a field's length per sample of an
    input."""
    if not isinstance(value, (cst.ListComp, cst.GeneratorExp)) or value.for_in.inner_for_in is not None:
        return False
    loop, elt = value.for_in, value.elt
    if not (isinstance(loop.iter, cst.Name) and loop.iter.value in inputs and isinstance(loop.target, cst.Name)):
        return False
    if not (isinstance(elt, cst.Call) and isinstance(elt.func, cst.Name) and elt.func.value == "len" and elt.args):
        return False
    field = elt.args[0].value
    return isinstance(field, (cst.Subscript, cst.Attribute)) and chain_root(field) is not field and isinstance(
        root := chain_root(field), cst.Name) and root.value == loop.target.value


def _most_per_sample(value: cst.BaseExpression, inputs: frozenset[str], counts: Callable[[], frozenset[str]]) -> bool:
    """`max(num_gts)`, `max(len(t["labels"]) for t in targets)`: the most (or least) of the per-sample counts of an
    input: zero when no sample of this rank's batch holds any."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("max", "min")
            and len(value.args) == 1):
        return False
    given = value.args[0].value
    return isinstance(given, cst.Name) and given.value in counts() or _per_sample_counts(given, inputs)


def _starred_shape(
    value: cst.BaseExpression, targets: Sequence[cst.BaseElement]
) -> tuple[cst.BaseExpression, Sequence[cst.BaseElement]]:
    """`b, n, out, device = *x.shape, x.clone(), x.device`: the shape unpacked first and the targets it binds (all but
    the values after it); any other value as itself, with all the targets."""
    if isinstance(value, cst.Tuple) and value.elements and isinstance(value.elements[0], cst.StarredElement):
        rest = len(value.elements) - 1
        if all(not isinstance(e, cst.StarredElement) for e in value.elements[1:]) and len(targets) > rest:
            return value.elements[0].value, targets[: len(targets) - rest]
    return value, targets


def _batch_size_names(node: cst.Assign) -> list[str]:
    """The names `b = x.shape[0]` / `b = x.size(0)` / `b, n = x.shape[:2]` / `b, *_ = x.size()` bind to a batch size."""
    value, found = node.value, []
    for target in node.targets:
        target = target.target
        if isinstance(target, cst.Name):
            if (isinstance(value, cst.Subscript) and _batch_size_index(value)) or (
                isinstance(value, cst.Call) and _batch_size_call(value)
            ):
                found.append(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)) and target.elements:
            first = target.elements[0].value
            shape = _starred_shape(value, target.elements)[0]
            shape = shape.value if isinstance(shape, cst.Subscript) and _leading_slice(shape) else shape
            if isinstance(first, cst.Name) and _shape_of_local(shape):
                found.append(first.value)
    return found


def _leading_slice(node: cst.Subscript) -> bool:
    """`shape[:2]`: a slice from the first dimension."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
        return False
    return node.slice[0].slice.lower is None


def _shape_of_local(value: cst.BaseExpression) -> bool:
    """`x.shape` / `x.size()` of a tensor the function holds (not of `self.weight`: a fixed size)."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size":
        if value.args:
            return False
        value = value.func
    elif not (isinstance(value, cst.Attribute) and value.attr.value == "shape"):
        return False
    root = chain_root(value.value)  # type: ignore[union-attr]
    return isinstance(root, cst.Name) and root.value not in ("self", "cls")


def _batch_size_index(node: cst.Subscript) -> bool:
    """`x.shape[0]` of a tensor the function holds."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    index = node.slice[0].slice.value
    return isinstance(index, cst.Integer) and index.value == "0" and _shape_of_local(node.value)


# Methods of a graph batch that count its own items (`g.num_edges()`, `g.number_of_nodes()`).
ITEM_COUNTS = frozenset({"num_edges", "num_nodes", "number_of_edges", "number_of_nodes", "batch_size"})


def _only_index(node: cst.Subscript) -> cst.BaseExpression | None:
    """The one index of `x[i]` (None for a slice or several)."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return node.slice[0].slice.value


def _batch_size_call(node: cst.Call) -> bool:
    """`x.size(0)` of a tensor the function holds; `g.num_edges()` of a graph it holds."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in ITEM_COUNTS and not node.args:
        return isinstance(func.value, cst.Name) and func.value.value not in ("self", "cls")
    if not (isinstance(func, cst.Attribute) and func.attr.value == "size" and len(node.args) == 1):
        return False
    arg = node.args[0].value
    return isinstance(arg, cst.Integer) and arg.value == "0" and _shape_of_local(cst.Call(func=func))


def _running_counts(flat: Flat, agreed: frozenset[str]) -> dict[str, list[tuple[str, tuple[cst.CSTNode, ...]]]]:
    """The locals and `self` attributes a loop adds this rank's data sizes to (`n += len(batch)`, `self.seen +=
    x.shape[0]`, `total += mask.sum().item()`), each with the augmentation's text and the loops around it (none
    for an attribute of `self` grown once per call of the method: `self._batch_size += len(features)` at each
    episode's end, tested in the same method)."""
    assigned: dict[str, list[cst.BaseExpression]] = {}
    grown: list[tuple[cst.AugAssign, tuple[cst.CSTNode, ...]]] = []
    for node, ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    assigned.setdefault(target.target.value, []).append(node.value)
        elif kind is cst.AugAssign and type(node.operator) is cst.AddAssign:
            grown.append((node, ctx.loops))
    found: dict[str, list[tuple[str, tuple[cst.CSTNode, ...]]]] = {}
    for node, loops in grown:
        target = node.target
        own = isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"
        if not (own or (isinstance(target, cst.Name) and loops)):
            continue  # (`self.seen += len(batch)` outside a loop grows once per call: the calls are its loop)
        if _data_size(node.value, assigned, agreed, 2):
            found.setdefault(code_of(target), []).append((code_of(node), loops))
    return found


# Reads of how much data a value holds: its length, its shape, how many of its entries are set.
_SIZE_CALLS = frozenset({"size", "numel", "sum", "count_nonzero"})
# ... or a field of a batch object counting them (`batch.samples`, `batch.num_tokens`, `out.n_frames`).
_COUNT_FIELD = re.compile(r"^(?:n_|num_)?(?:samples|tokens|examples|sentences|frames|transitions|episodes)$|^batch_size$")


def _data_size(
    value: cst.BaseExpression, assigned: dict[str, list[cst.BaseExpression]], agreed: frozenset[str], depth: int
) -> bool:
    """Does `value` read a size of a value this function holds (`len(batch)`, `x.shape[0]`, `x.size(0)`,
    `mask.sum()`; not of `self`'s state nor of a value a collective agreed on), directly or through locals bound to
    one (`depth` assignments deep)?"""
    for node in walk(value):
        kind = type(node)
        if kind is cst.Call:
            if agreed_call(node):
                return False
            func = node.func
            if isinstance(func, cst.Name) and func.value == "len" and len(node.args) == 1:
                if _held_value(node.args[0].value, agreed):
                    return True
            elif isinstance(func, cst.Attribute) and func.attr.value in _SIZE_CALLS and _held_value(func.value, agreed):
                return True
        elif kind is cst.Attribute and node.attr.value == "shape" and _held_value(node.value, agreed):
            return True
        elif kind is cst.Attribute and _COUNT_FIELD.match(node.attr.value) and _held_value(node.value, agreed):
            return True  # `self.state.samples += batch.samples`: how many samples this rank's batch holds
        elif kind is cst.Name and depth and node.value in assigned and node.value not in agreed:
            if any(_data_size(bound, assigned, agreed, depth - 1) for bound in assigned[node.value]):
                return True
    return False


def _held_value(value: cst.BaseExpression, agreed: frozenset[str]) -> bool:
    """A value rooted at a local (`batch["x"]`, `obs`, `out.logits`), not at `self`, a module (`torch`, `np`) or a
    local a collective agreed on."""
    root = value
    while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(root, cst.Call) and agreed_call(root):
            return False  # `accelerator.gather(batch).shape[0]`: every rank's count
        root = root.func if isinstance(root, cst.Call) else root.value
    return isinstance(root, cst.Name) and root.value not in ("self", "cls", "torch", "np", "numpy", "math") and (
        root.value not in agreed
    )


def _gathered(call: cst.Call) -> bool:
    """`accelerator.gather(t)`, `gather_for_metrics(x)`: every rank's values, gathered (not `torch.gather(x, d, i)`,
    `x.gather(d, i)`: an index into one tensor)."""
    name = call_name(call)
    return name is not None and name.rsplit(".", 1)[-1] in ("gather", "gather_for_metrics") and len(call.args) == 1


def _reads_len(bound: cst.BaseExpression) -> bool:
    """`len(dataset)`, `len(self.loader)`: a bound that is the length of a collection."""
    return any(
        type(node) is cst.Call and isinstance(node.func, cst.Name) and node.func.value == "len" for node in walk(bound)
    )


# What a tensor is rather than what it holds: the same whatever values a random draw or a rank's data put in.
VALUE_FREE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "layout"})


def _rank_decision(value: cst.BaseExpression, taint: Taint, depth: int = 2) -> bool:
    """Is `value` a decision on the rank (`rank == 0`, `not is_main`, `a and rank > 0`, `Probe() if rank == 0 else
    None`, or a local bound to one: `first = rank == 0` ... `self.first = first`), not a value made from it?"""
    return _decision(value, taint, RANK, depth)


def _decision(value: cst.BaseExpression, taint: Taint, kind: str, depth: int = 2) -> bool:
    """Is `value` a decision on a value of `kind` (a test, a conditional expression, or a local bound to one), not a
    value made from it?"""
    if isinstance(value, cst.Name) and depth:
        return any(
            _decision(node.value, taint, kind, depth - 1)
            for node, _ctx in taint._flat.nodes
            if type(node) is cst.Assign and any(
                isinstance(t.target, cst.Name) and t.target.value == value.value for t in node.targets
            )
        )
    func = value.func if isinstance(value, cst.Call) else None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        # `return self._draw()`: another method answering with a decision drawn at random
        return kind != RANK and taint.cls is not None and random_method(taint.index, taint.cls, func.attr.value) == kind
    if isinstance(value, cst.IfExp):
        return kind in taint.of(value.test)
    if isinstance(value, (cst.Comparison, cst.BooleanOperation)) or (
        isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not)
    ):
        return kind in taint.of(value)
    return False


# Builtins that test what an object is (its type, its attributes), the same whatever per-rank values it holds.
_TYPE_TESTS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "type"})


# Reductions of a tensor to a value that a comparison then tests.
VALUE_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "norm", "count_nonzero", "std"})


def _compared_reduction(node: cst.Comparison, agreed: Callable[[cst.Name], bool]) -> str | None:
    """`x.sum() > 0`, `h.norm().item() < eps`, `torch.norm(a - b.flip(1)) == 0`: the reduction of a local tensor a
    comparison tests, as text (not of a local a collective made the same on every rank, `agreed`). The function form
    reduces its first argument; a reduction of a difference or sum, its first operand."""
    for side in (node.left, *(t.comparator for t in node.comparisons)):
        found = reduced_value(side, agreed)
        if found is not None:
            return found
    return None


# Builtins that turn a one-element tensor into a Python number (`int(mask.sum())`): the same value.
_NUMBER_OF = frozenset({"int", "float", "bool", "abs"})


def _read_into_a_number(call: cst.Call) -> bool:
    """`int(...)`, `float(...)`, `x.item()`: a call that reads a tensor's value into a Python number."""
    func = call.func
    return isinstance(func, cst.Name) and func.value in _NUMBER_OF or isinstance(func, cst.Attribute) and (
        func.attr.value == "item") and not call.args


def reduced_value(expr: cst.BaseExpression, agreed: Callable[[cst.Name], bool], scalar: bool = False) -> str | None:
    """`x.sum()`, `h.norm().item()`, `int((labels > 0).sum())`, `torch.norm(a - b)`: one value reduced from a local
    tensor, as text (not of a local a collective made the same on every rank, `agreed`). The function form reduces
    its first argument; a reduction of a difference or of a test, its first operand. With `scalar`, only a whole
    reduction (no `dim`) or one read into a number counts: what a local may hold and a later test compare."""
    call = expr
    converted = False
    while isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _NUMBER_OF and len(
        call.args) == 1:
        call, converted = call.args[0].value, True
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "item":
        call, converted = call.func.value, True  # (a bare `t.item()` says nothing of whose values `t` holds)
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
        return None
    if call.func.attr.value not in VALUE_REDUCTIONS:
        return None
    reduced = call.func.value
    if isinstance(reduced, cst.Name) and reduced.value in ("torch", "np", "numpy") and call.args:
        reduced, rest = call.args[0].value, call.args[1:]  # `torch.norm(t)`: the tensor handed to it
    else:
        rest = call.args
    if scalar and rest and not converted:
        return None  # `x.sum(-1)`: a tensor of values, not one
    root = chain_root(reduced)
    if isinstance(reduced, cst.Attribute) and isinstance(root, cst.Name) and module_like_name(root.value):
        return None  # `int(model.stride.max())`: a buffer or parameter of a model, the same on every rank
    while isinstance(root, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
        # `(a - b).abs().sum()`, `(labels > 0).sum()`, `(~mask).sum()`: of its first operand
        root = chain_root(root.expression if isinstance(root, cst.UnaryOperation) else root.left)
    if isinstance(root, cst.Name) and root.value not in ("self", "torch", "np", "numpy", "math") and not agreed(root):
        return f".{call.func.attr.value}()"
    return None


def _merge_into(into: dict[str, str], extra: dict[str, str]) -> None:
    for kind, why in extra.items():
        into.setdefault(kind, why)


@memoised
def presence_helpers(index: ModelIndex) -> frozenset[str]:
    """Functions that only say whether a value was given: `def exists(v): return v is not None`.

    Those defined in the checked file, those imported from another file of the program that are defined so there
    (read only for a name an `if` of this file calls: `from .helpers import given` ... `if given(images):`), and the
    common spellings of the idiom imported from elsewhere (`exists`, `is_not_none`, `not_none`).
    """
    names = set(_KNOWN_PRESENCE_HELPERS)
    skeleton = index.skeleton
    for span in skeleton.functions.values():
        if span.end - span.start <= 3 and _PRESENCE_DEF.search(skeleton.text(span.start, span.end)):
            names.add(span.name)
    for cls in skeleton.classes.values():  # `self.exists(x)`, `self._given(x)`: a method of the class saying so
        for span in cls.methods.values():
            if span.end - span.start <= 4 and _PRESENCE_METHOD.search(skeleton.text(span.start, span.end)):
                names.add(f"self.{span.name}")
    tested = {m.group(1) for m in CALLED_IN_IF.finditer(index.source)} & index.imports.keys()
    for name in tested - names:
        function = function_target(index, name)
        if function is not None and function.text.count("\n") <= 3 and _PRESENCE_DEF.search(function.text.strip()):
            names.add(name)
    return frozenset(names)


_KNOWN_PRESENCE_HELPERS = ("exists", "is_not_none", "not_none")


# `def exists(x): return x is not None` (a one-line docstring allowed): a function saying whether its first argument
# is given; a method of the class says so of its first argument after `self`.
_PRESENCE_BODY = r"(\w+)[^)]*\)[^:]*:\s*(?:\"\"\"[^\n]*\"\"\"\s*)?return\s+\1\s+is\s+not\s+None\s*$"
_PRESENCE_DEF = re.compile(r"def\s+\w+\(\s*" + _PRESENCE_BODY)
_PRESENCE_METHOD = re.compile(r"def\s+\w+\(\s*(?:self\s*,\s*)?" + _PRESENCE_BODY)


def is_none_test(node: cst.Comparison) -> bool:
    """`x is None` / `x is not None` (every comparison of the chain against `None`; `x == None` too, which asks the
    same of anything but an array)."""
    return all(
        isinstance(t.operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual))
        and isinstance(t.comparator, cst.Name)
        and t.comparator.value == "None"
        for t in node.comparisons
    )


def _call_text(node: cst.Call) -> str:
    """`torch.rand()` for a function, `.nonzero()` for a method of a computed value."""
    name = dotted(node.func)
    if name is None and isinstance(node.func, cst.Attribute):
        return f".{node.func.attr.value}()"
    return f"{name or code_of(node.func)}()"


def _env_key(node: cst.Subscript) -> str | None:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return const_str(node.slice[0].slice.value)
    return None


def _takes_arguments(func: cst.Lambda | cst.FunctionDef) -> bool:
    """Does a lambda or function declare any parameter, starred ones too?"""
    params = func.params
    return bool(parameter_names(func)) or isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None  # type: ignore[arg-type]


def _lambda_bodies(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The bodies of a lambda taking no arguments, or of each one a choice picks (`(lambda: a) if by_steps else
    (lambda: b)`)."""
    if isinstance(value, cst.Lambda):  # (one taking no arguments: it reads the state where it is called)
        return [value.body] if not _takes_arguments(value) else []
    if isinstance(value, cst.IfExp):
        return _lambda_bodies(value.body) + _lambda_bodies(value.orelse)
    return []


def _local_predicates(flat: Flat) -> dict[str, list[cst.BaseExpression]]:
    """Locals bound to a lambda, and functions defined inside this one that return one expression, each taking no
    arguments (a thunk reads the state where it is called), with what they return."""
    found: dict[str, list[cst.BaseExpression]] = {}
    root = flat.nodes[0][0] if flat.nodes else None
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Assign:
            bodies = _lambda_bodies(node.value)
            if bodies:
                for target in node.targets:
                    for name in bound_names(target.target):
                        found.setdefault(name, []).extend(bodies)
        elif kind is cst.FunctionDef and node is not root and not _takes_arguments(node):
            statements = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            line = statements[0] if len(statements) == 1 else None
            small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
            if isinstance(small, cst.Return) and small.value is not None:
                found.setdefault(node.name.value, []).append(small.value)
    return found


@memoised(cycle=())
def _handed_predicates(index: ModelIndex, cls: ClassInfo, name: str) -> tuple[tuple[int | str, cst.BaseExpression], ...]:
    """The lambdas the methods of `cls` hand to `self.<name>(...)`, written in the call or bound to a local handed:
    (argument position after `self` or keyword, the lambda's body)."""
    needle = f"self.{name}("
    found: list[tuple[int | str, cst.BaseExpression]] = []
    if needle not in cls.text or "lambda" not in cls.text:
        return ()
    for method in cls.all_methods():
        if method.name == name or needle not in method.text or "lambda" not in method.text:
            continue
        flat = flat_of(method)
        if flat is None:
            continue
        local: dict[str, list[cst.BaseExpression]] | None = None
        for key, value in self_call_arguments(flat, name):
            bodies = _lambda_bodies(value)
            if not bodies and isinstance(value, cst.Name):
                local = _local_predicates(flat) if local is None else local
                bodies = local.get(value.value, [])
            found.extend((key, body) for body in bodies)
    return tuple(found)


def _shown_either_way(choice: cst.IfExp) -> cst.BaseExpression | None:
    """The plain arm of a choice between an iterable and a pass-through wrapper of it (`tqdm(loader) if main else
    loader`): either way it hands out the same items, whatever the test."""
    for wrapped, plain in ((choice.body, choice.orelse), (choice.orelse, choice.body)):
        if isinstance(wrapped, cst.Call) and wrapped.args and wrapped.args[0].keyword is None \
                and not wrapped.args[0].star and passes_items(wrapped) \
                and code_of(wrapped.args[0].value) == code_of(plain):
            return plain
    return None


def _rewrapped(node: cst.CSTNode) -> bool:
    """Is `node` a local bound again to a pass-through wrapper of itself (`pbar = tqdm(pbar, total=n)` under `if rank
    == 0:`)? The test then decides how the items show, not which items the local hands out."""
    if type(node) is not cst.Assign or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
        return False
    value = node.value
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
        return False
    first = value.args[0].value
    return passes_items(value) and isinstance(first, cst.Name) and first.value == node.targets[0].target.value


def _carried_on(flat: Flat, agreed: dict[str, int]) -> dict[str, int]:
    """Locals bound once, after a collective made a local the same on every rank, to what is computed from it and
    from nothing another call handed back (`dist.all_reduce(loss)` ... `loss_value = loss.item()`; DETR's
    `reduced = utils.reduce_dict(losses)`, `scaled = {k: v * weight_dict[k] for k, v in reduced.items()}`, `total =
    sum(scaled.values())`, `loss_value = total.item()`): the same on every rank too -> where they are bound."""
    bindings: dict[str, list[cst.CSTNode]] = {}
    for node, _ctx in flat.nodes:
        targets, _value = targets_of(node)
        for target in targets:
            for name in bound_names(target):
                bindings.setdefault(name, []).append(node)
    # (what a call handed back, other than the collectives' results: a model's output, a loss, a drawn number)
    called = {name for name, nodes in bindings.items()
              if any(type(n) is cst.Assign and type(n.value) is cst.Call for n in nodes)}
    found: dict[str, int] = {}
    known = dict(agreed)
    changed = True
    while changed:
        changed = False
        for name, nodes in bindings.items():
            if name in known or len(nodes) != 1 or type(nodes[0]) is not cst.Assign or len(nodes[0].targets) != 1:
                continue
            at = flat.position.get(id(nodes[0]), 0)
            value = nodes[0].value
            inner = {n for t in (value,) for n in _comprehension_targets(t)}
            read = {n.value for n in walk(value) if type(n) is cst.Name} - inner - _NUMBER_BUILTINS
            if any(r in known and known[r] < at for r in read) and not any(
                    r in called and r not in known for r in read):
                known[name] = found[name] = at
                changed = True
    return found


def _comprehension_targets(value: cst.CSTNode) -> set[str]:
    """The names the comprehensions of `value` bind (`k`, `v` of `for k, v in d.items()`)."""
    return {name for n in walk(value) if type(n) is cst.CompFor for name in bound_names(n.target)}


# Builtins a number read off an agreed value goes through (`sum(d.values())`, `float(x)`).
_NUMBER_BUILTINS = frozenset({"sum", "float", "int", "len", "max", "min", "abs", "round", "list", "dict", "tuple"})


def _read_back(flat: Flat, agreed: dict[str, int]) -> dict[str, int]:
    """Locals read back from a list a broadcast made the same on every rank, the list built from the local itself:
    `box = [stop if rank == 0 else None]`, `dist.broadcast_object_list(box, 0)`, `if rank != 0: stop = box[0]`. The
    source rank's own value is what it sent, so from the read on every rank holds the same -> where it is read."""
    found: dict[str, int] = {}
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            continue
        value, name = node.value, node.targets[0].target.value
        if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name)):
            continue
        box = value.value.value
        at = flat.position.get(id(node), 0)
        if box not in agreed or agreed[box] >= at:
            continue
        built = any(
            type(other) is cst.Assign and any(box in bound_names(t.target) for t in other.targets)
            and any(type(n) is cst.Name and n.value == name for n in walk(other.value))
            for other, _ in flat.nodes
        )
        if built:
            found[name] = at
    return found


def _may_be_none(value: cst.BaseExpression) -> bool:
    """Can `value` be `None`: `None` itself, or a choice one of whose options can (`f(h) if coin else None`, `x or
    None`)?"""
    if isinstance(value, cst.Name):
        return value.value == "None"
    if isinstance(value, cst.IfExp):
        return _may_be_none(value.body) or _may_be_none(value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return _may_be_none(value.left) or _may_be_none(value.right)
    return False


@memoised
def rank_constants(index: ModelIndex) -> frozenset[str]:
    """Names the file binds at its top level to this process's rank, read from the launcher's environment or asked of
    the process group (`RANK = int(os.getenv("RANK", -1))`, `LOCAL_RANK = dist.get_rank()`): a decision on one is a
    decision on the rank, whatever the name says."""
    if "RANK" not in index.source and "rank(" not in index.source:
        return frozenset()
    found = {m.group(1) for m in _RANK_CONSTANT.finditer(index.source)}
    if "global" in index.source:  # `rank = 0` at the top, `global rank; rank = dist.get_rank()` in the setup
        declared = {n.strip() for m in _GLOBAL.finditer(index.source) for n in m.group(1).split(",")}
        found |= {m.group(1) for m in _RANK_SET.finditer(index.source) if m.group(1) in declared}
    return frozenset(found)


# A top-level binding to the rank: an environment variable of the launcher's, or the process group's answer.
_RANK_SOURCE = (
    r"[ \t]*=[^\n]*?(?:(?:getenv|environ\.get|environ)[ \t]*[(\[][ \t]*[\"'](?:" + "|".join(sorted(known.RANK_ENV))
    + r")[\"']|\bget_(?:local_|global_|node_)?rank\(\))"
)
_RANK_CONSTANT = re.compile(r"^([A-Za-z_]\w*)" + _RANK_SOURCE, re.M)


# ... or one a function binds there, declared `global` (`global world_size, rank` ... `rank = dist.get_rank()`)
_GLOBAL = re.compile(r"^[ \t]+global[ \t]+(\w+(?:[ \t]*,[ \t]*\w+)*)", re.M)
_RANK_SET = re.compile(r"^[ \t]+([A-Za-z_]\w*)" + _RANK_SOURCE, re.M)


def _named_pairs(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """`flow.paired`, when every part of the target is a plain name: (name, its value) each; else empty."""
    pairs = paired(target, value)
    if not all(isinstance(t, cst.Name) for t, _v in pairs):
        return []
    return [(t.value, v) for t, v in pairs]  # type: ignore[attr-defined]


def _enumerate_counter(
    node: cst.CSTNode, targets: list[cst.CSTNode]
) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """(the counter a loop over `enumerate(...)` binds, where it starts) (`i` of `for i, (x, y) in
    enumerate(tqdm(loader))`; `start` of `enumerate(loader, start)`), else (None, None)."""
    if type(node) not in (cst.For, cst.CompFor) or len(targets) != 1:
        return None, None
    target = targets[0]
    if type(target) not in (cst.Tuple, cst.List) or len(target.elements) != 2:  # type: ignore[attr-defined]
        return None, None
    walked = node.iter  # type: ignore[attr-defined]
    for _ in range(3):  # (`tqdm(enumerate(loader))`: the same pairs, shown)
        if not isinstance(walked, cst.Call) or not walked.args:
            return None, None
        name = (call_name(walked) or "").rsplit(".", 1)[-1]
        if name == "enumerate":
            start = next((a.value for a in walked.args[1:] if a.keyword is None or a.keyword.value == "start"), None)
            return target.elements[0].value, start  # type: ignore[attr-defined]
        if name not in known.PASS_THROUGH:
            return None, None
        walked = walked.args[0].value
    return None, None

