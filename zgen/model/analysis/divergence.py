"""Where ranks can run different sequences of submodules (shared by the ZG2xx rules).

Under ZeRO-3 every submodule call all-gathers that module's parameters, a
collective all ranks must join in the same order. A call is divergent when
whether it runs (or how often) depends on something that differs between
ranks: a test on the rank, a random draw, or a data-dependent selection.
This module finds such decisions once per method; each ZG2xx rule keeps the
kinds it is about.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from ..program import known
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import UNKNOWN_CLASS as UNKNOWN, Kind, classify, facts_of
from ..program.tree import call_name, children, code_of, const_str, cst, dotted, parameter_for, walk
from .callables import called_parameters
from .calls import ModuleCalls
from .counts import (
    HANDS_LENGTH, counted_loops, counts_handed_on, drawn_length, handed_counts, kept_inputs, local_bindings,
    passed_through, rank_share,
)
from .flags import flag_source
from .flow import (
    FILLS, Ctx, Flat, bound_names, flat_of, mentions_guard, own_node, same_items, stored_into, targets_of,
)
from .persistence import gathers
from .plain import inherited_member
from .reach import all_bases, function_target
from .picks import may_pick, picked_runs
from .runs import HelperRuns, records, runs_argument
from .state import handoff, holder_key
from .taint import (
    CLOCK, DATA, HOST, HOST_RANDOM, RANDOM, RANK, VALUE_FREE_ATTRS, Taint, extent_call, is_none_test as _is_none_test,
    output_test_text, setting_of_an_object,
)

__all__ = [
    "Divergence", "module_divergences", "find_divergences", "message", "GATE", "ITERATE", "SKIP", "EXIT", "WHILE", "COUNT",
    "NOT_RUNS", "PICK", "RETRY", "CAUGHT", "EXHAUSTED", "RAISE", "CHECK", "OWN_VALUE_RAISE_TEXT", "own_value_raise_text", "helper_reaches", "tensor_backward",
    "derived_names",
]

GATE = "gate"  # the call sits under an if / conditional expression on the value
ITERATE = "iterate"  # the call sits in a loop over the value
SKIP = "skip"  # a `continue` on the value skips calls later in the loop
EXIT = "exit"  # a `break`/`return` on the value skips the remaining calls
WHILE = "while"  # the call sits in a `while` loop whose test is the value
COUNT = "count"  # the call sits in a loop that runs as often as this rank's input is long
PICK = "pick"  # the module called is taken out of a container by the value (`self.experts[rank]`)
RETRY = "retry"  # the call runs again in a loop when it raised on this rank (`except OutOfMemoryError:` then retry)
CAUGHT = "caught"  # the call's failure on this rank is caught and the rank goes on (`except OutOfMemoryError: return`)
EXHAUSTED = "exhausted"  # this rank's data iterator ran out and the rank leaves the loop (`except StopIteration: break`)
RAISE = "raise"  # this rank raises on a value of its own (`if torch.isnan(loss): raise`, `if not m.all(): raise`)
CHECK = "check"  # ... in a method that runs no module itself, a check its caller runs in the pass (`validate(x)`)
# Effects whose call sits inside what the decision governs: the finding reaches from the decision down to that call.
_GOVERNED = frozenset({GATE, ITERATE, WHILE, COUNT, PICK})
_EXITS = frozenset({"Break", "Continue", "Return"})  # (names: libcst is loaded only when a file needs parsing)

# What a rank raises on its own, from its own batch and memory: out of memory, a kernel's runtime error, a bad
# value (a loss that is NaN, shapes a batch does not match: `ValueError`, `FloatingPointError`, a failed `assert`),
# anything. (`TypeError`, `ImportError`, `AttributeError`, `KeyError` around a call are how code probes an API or a
# config, the same on every rank.) An exception class of the program derived from one of these is one too
# (`class NaNLossError(Exception)`).
_OWN_FAILURES = frozenset(
    {"Exception", "BaseException", "RuntimeError", "MemoryError", "OutOfMemoryError", "ValueError", "ArithmeticError",
     "FloatingPointError", "ZeroDivisionError", "OverflowError", "AssertionError"}
)
# Calls that end the process: a handler ending in one lets no rank go on.
_ENDS_PROCESS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})


@dataclass(frozen=True, slots=True)
class Divergence:
    """One rank-divergent decision about running `callee`."""

    kind: str  # flow.RANK / RANDOM / HOST_RANDOM / DATA / HOST / CLOCK
    effect: str
    node: cst.CSTNode  # the deciding expression (report here)
    source: str  # what makes it differ, e.g. `torch.rand()`
    callee: str  # the submodule whose call it decides, e.g. `self.layers[i]`
    site: cst.CSTNode | None = None  # that call, where one call is decided (the finding reaches down to it)


def module_divergences(
    index: ModelIndex, cls: ClassInfo, method: MethodInfo, plain_runs: Callable[..., bool] | None = None
) -> list[Divergence]:
    """The divergent decisions in one method of a module class. `plain_runs(receiver, name)`: does a method of a plain
    object the module holds reach a model (`script.divergences` answers it through the project's calls)?"""
    flat = flat_of(method)
    if flat is None:
        return []
    return find_divergences(
        flat,
        lambda: ModuleCalls(index, cls, flat, method.name),
        Taint(index, cls, flat),
        lambda calls: _indirect_calls(index, cls, calls, flat, plain_runs),  # type: ignore[arg-type]
        text=method.text,
    )


NOT_RUNS = known.NOT_RUNS  # (kept here for the rules that import it from the divergence analysis)
# A model's own checkpoint I/O (`step = self.netD.restore_checkpoint(path)`): what it hands back comes from a file
# every rank reads alike, not from this rank's data.
_CHECKPOINT_IO = re.compile(r"(?:^|_)(?:restore|(?:load|save)_(?:checkpoint|weights|state|models?))(?:_|$)")


def _outputs(sites: list, taint: Taint) -> dict[int, str]:
    """The calls among `sites` whose results are this rank's outputs, by id: not what a collective made the same
    everywhere (`taint.agreed_value`), nor what a call named for checkpoint I/O read from a file every rank shares
    (`self.netD.restore_checkpoint(path)`, `self._restore_models_and_step()`), nor a model a call hands back
    (`model = remove_pt_head(model, head)`: its buffers are the same on every rank)."""
    return {
        id(call): callee for call, _ctx, callee in sites
        if not taint.agreed_value(call)
        and not (isinstance(call.func, cst.Attribute) and _CHECKPOINT_IO.search(call.func.attr.value) is not None)
        and classify(taint.index, call)[0] not in (Kind.MODULE, Kind.CONTAINER)
    }


def _indirect_calls(
    index: ModelIndex, cls: ClassInfo, calls: ModuleCalls, flat: Flat, plain_runs: Callable[..., bool] | None = None,
    nested: bool = False,
) -> Callable[[cst.Call], str | None]:
    """Calls that run submodules other than through a child's forward: helpers, child methods, a model handed in
    as a function (`policy(td)` in a rollout: `callables.called_parameters`)."""
    helpers = HelperRuns(index, cls, calls)
    members = facts_of(cls).members
    root = flat.nodes[0][0] if flat.nodes else None
    params = (
        {p.name.value for p in (*root.params.posonly_params, *root.params.params, *root.params.kwonly_params)}
        if isinstance(root, cst.FunctionDef) else set()
    )
    handed_in: list[frozenset[str]] = []  # (walked on the first call of a parameter: most methods have none)

    def indirect(call: cst.Call) -> str | None:
        func = call.func
        if isinstance(func, cst.Name):  # `aux_loss(self, h)`: a function of the file handed this module or a child
            if func.value in params:
                if not handed_in:
                    handed_in.append(called_parameters(root))  # type: ignore[arg-type]
                if func.value in handed_in[0]:
                    return f"{func.value}()"
            return _handed_to_runner(index, cls, calls, call)
        if not isinstance(func, cst.Attribute):
            return None
        name, base = func.attr.value, func.value
        if isinstance(base, cst.Name) and base.value == "self":
            if name not in members and (
                helpers.helper_runs_modules(name) or (not nested and helper_reaches(index, cls, name, plain_runs))
            ):
                return f"self.{name}()"
            if name in members and plain_runs is not None and plain_runs(func, "__call__"):
                return f"self.{name}()"  # `self.agent(state)` for `self.agent = ValueAgent(self.net)`
            if name in members and any(helpers.helper_runs_modules(bound) for bound in _bound_methods(cls, name)):
                return f"self.{name}()"  # `self.encode_text(t)` for `self.encode_text = self.clip_encode_text`
            return None
        if known.wrapper_collective((dotted(base) or "").rsplit(".", 1)[-1], name):
            return f"{code_of(func)}()"  # `self.accelerator.get_state_dict(self.net)` in a module that trains itself
        if name in NOT_RUNS:
            return None
        if plain_runs is not None and plain_runs(base, name):
            return f"{code_of(func)}()"  # `self.evaluator.run(x)`: a plain object the module built runs a model
        classes = calls.classes_of(base)
        if not classes or not any(gathers(index, c) for c in classes):
            return None
        if records(name) and all(c == UNKNOWN for c in classes):
            return None  # `self.model_config.save_json(p)`: a member of no class we read, kept or reported by name
        for ref in classes:  # a child class we can read says whether that method runs its submodules
            info = index.classes.get(ref)
            if info is not None and info.method(name) is not None:
                if not HelperRuns(index, info).helper_runs_modules(name):
                    return None
        return f"{code_of(func)}()"

    return indirect


def _bound_methods(cls: ClassInfo, name: str) -> list[str]:
    """The methods of the class an attribute is bound to (`self.encode_text = self.clip_encode_text` in one branch
    of the constructor, `= self.bert_encode_text` in another): calling the attribute runs one of them."""
    if f"self.{name}" not in cls.text:
        return []
    bound = re.findall(rf"^[ \t]*self\.{re.escape(name)}[ \t]*=[ \t]*self\.(\w+)[ \t]*(?:#.*)?$", cls.text, re.M)
    return [method for method in bound if cls.inherited_method(method) is not None]


def helper_reaches(
    index: ModelIndex, cls: ClassInfo, name: str, plain_runs: Callable[..., bool] | None
) -> bool:
    """Does the helper `self.<name>()` (or a method of `self` it calls) reach a submodule other than through a
    child's call: a plain object the module holds given a child (`self.sampler.sample(self.unet, x)`), a function
    of another file given one (`log_images(self.unet, x)`), a parameter its class's own calls bind to a child
    (`self._forward(self.model, x)` running `model(x)`: `calls.argument_modules`)? Asked once per class and name (the answer for the
    module's own callers: `plain_runs` reads only attributes of `self` there)."""
    key = ("helper_reaches", cls, name)
    known_answer = index._memo.get(key)
    if known_answer is not None:
        return known_answer
    index._memo[key] = False  # (a helper reached again while this is computed answers no)
    found = False
    for method in cls.reachable(name):
        if method.owner is not cls or "(" not in method.text:
            continue
        flat = flat_of(method)
        if flat is None:
            continue
        calls = ModuleCalls(index, cls, flat, method.name)
        indirect = _indirect_calls(index, cls, calls, flat, plain_runs, nested=True)
        if any(type(node) is cst.Call and (calls.callee(node) or indirect(node)) for node, _ctx in flat.nodes):
            found = True
            break
    index._memo[key] = found
    return found


def _handed_to_runner(index: ModelIndex, cls: ClassInfo, calls: ModuleCalls, call: cst.Call) -> str | None:
    """`f(...)` for a function `f` of this file, or imported from another file of the program, given `self` or a
    submodule that it runs."""
    name = call.func.value  # type: ignore[attr-defined]
    if name not in index.imports and index.function_info(name) is None:
        return None  # (no function of the program: `len(x)`)
    info: MethodInfo | None = None
    for position, arg in enumerate(call.args):
        if arg.star:
            continue
        value = arg.value
        is_self = isinstance(value, cst.Name) and value.value == "self"
        classes = (cls.name,) if is_self else calls.classes_of(value)
        # a child of a class we know (not a member of unknown kind: `default(x, self.sigma)` hands a value)
        if not classes or not (is_self or any(ref != UNKNOWN and gathers(index, ref) for ref in classes)):
            continue
        if info is None:  # (the function found and parsed once a module is handed: most calls hand values)
            info = function_target(index, name)
            if info is None or info.node is None:
                return None
        param = arg.keyword.value if arg.keyword is not None else parameter_for(info.node, call, position)
        # (a function of another file reads the module's classes as unknown there)
        if param and runs_argument(info.index, info.name, param, classes if info.index is index else (UNKNOWN,)):
            return f"{name}()"
    return None


def find_divergences(
    flat: Flat,
    make_calls: Callable[[], Calls],
    taint: Taint,
    make_indirect: Callable[[Calls], Callable[[cst.Call], str | None]] | None = None,
    model_code: bool = True,
    text: str | None = None,
    run_around: Callable[[str], bool] | None = None,
) -> list[Divergence]:
    """Divergent decisions in a flattened function, given what counts as a synchronising call.

    `run_around(name)`: does a caller of the method `name` (of a plain class) run a model around its call? A check
    that raises on this rank's values there stops the rank in the middle of the pass. (A module's methods run in
    its pass.)

    `text`: the function's source, for the text trigger of tests on what submodules returned (none without it).
    `model_code`: a method of a module, where a mapping walked per key is a batch; in code outside the model
    (a training function walking `valid_loaders.items()`) it is as often a setting, and a helper run per item
    is left out.

    Tainted decisions are looked for first: most methods have none, and then
    the (costlier) question of which calls run submodules is never asked.
    With `make_indirect` (calls that run submodules through helpers: a
    decoding step, a search method), a loop that calls them and leaves on a
    value computed from what they returned is a data-dependent exit too.
    """
    decisions = _decisions(flat)
    tainted = any(taint.of(test) for test in decisions) or (
        # `for f in feats[start:end]` for `start = rank * step`: a loop over this rank's share (`counts.rank_share`)
        (text is None or "rank" in text or "process_index" in text) and any(
            _rank_share(flat, taint, test) is not None
            for test in decisions if type(flat.parent.get(id(test))) in (cst.For, cst.CompFor)
        )
    )
    loop_exits = make_indirect is not None and _has_loop_exit(flat)
    picks = _picked_calls(flat, taint)  # `self.heads[batch["task"]](x)`: the batch names the submodule
    # `for i in range(x.shape[-1] // hop)`: as often as the input is long; `for t in range(seq_length)` for a
    # `seq_length` the class's own calls of this method bind to a length of their data
    root = flat.nodes[0][0] if flat.nodes else None
    handed = handed_counts(taint.index, taint.cls, root) if taint.cls is not None and type(root) is cst.FunctionDef else {}
    kept = None
    if taint.cls is not None:
        index, cls = taint.index, taint.cls
        kept = lambda: kept_inputs(index, cls)  # noqa: E731  (asked only where a loop reads `self`'s extents)
    counted = counted_loops(flat, taint.inputs, handed=handed, kept=kept, index=taint.index, owner=taint.cls)
    pickable = may_pick(flat)  # `self.experts[rank_slice]`: a container item taken by a key that may differ per rank
    # `if self.router(x).max() > t:`, `done = self.env.step(action)`: the text of a test on an output
    value_tests = make_indirect is not None and text is not None and output_test_text(text)
    # `while True: try: out = self.net(x); break` / `except OutOfMemoryError: ...`
    handled = _failure_handlers(taint.index, flat) if text is None or "except" in text else []
    # `self.decode_autoregressive(decode_one, n_decoder_steps=x.size(1))`: a base class's loop, counted by this call
    hands_on = taint.cls is not None and text is not None and HANDS_LENGTH.search(text) is not None
    # `odeint(ode_fn, x, t, method="dopri5")`: as many calls of `ode_fn` as the error control decides
    solves = _adaptive_solves(taint.index, flat) if text is None or "odeint" in text else []
    # `if torch.isnan(loss): raise NanException`, `assert torch.isfinite(loss)`: this rank stops on its own value
    raises = _own_value_raises(flat, taint) if text is None or own_value_raise_text(text) else []
    # `self(batch, recycling_steps=random.randint(0, n))`: a draw bounding a loop of the module's own forward
    drawn = _drawn_counts_handed_to_forward(taint, flat) if taint.cls is not None and taint.cls.is_module and (
        text is None or "rand" in text or "rng" in text) else []
    if (
        not tainted and not loop_exits and not picks and not counted and not pickable and not value_tests
        and not handled and not hands_on and not solves and not raises and not drawn
    ):
        return []
    calls = make_calls()
    callee_of = calls.callee
    sites: list[tuple[cst.Call, Ctx, str]] = []
    for node, ctx in flat.nodes:
        if type(node) is cst.Call:
            callee = callee_of(node)
            if callee is not None:
                sites.append((node, ctx, callee))
    found: dict[tuple[int, str], Divergence] = {}

    def add(kind: str, effect: str, node: cst.CSTNode, source: str, callee: str, site: cst.CSTNode | None = None) -> None:
        if kind == DATA and effect not in (EXIT, SKIP) and taint.extent_only(source):
            return  # `reverse = x.shape[1] > t` picks blocks: only an exit on an input's extent counts
        if kind == DATA and effect not in (EXIT, WHILE) and taint.kept_only(source):
            return  # a record of what the model returned stops a loop (a metric), not a count of a filled buffer
        # (an exit's skipped call lies past it, often far: it reaches down to the `break`/`return` instead)
        site = site if effect in _GOVERNED or effect == RETRY or type(site).__name__ in _EXITS else None
        key = (id(node), kind)
        if key in found and not (effect == EXIT and found[key].effect == GATE and type(site).__name__ == "Break"):
            return  # (a test that gates a call and then leaves the loop: the exit, skipping every later call, is told)
        found[key] = Divergence(kind, effect, node, source, callee, site)

    extra: list[tuple[cst.Call, Ctx, str]] = []
    if make_indirect is not None:
        indirect = make_indirect(calls)
        direct = {id(call) for call, _ctx, _callee in sites}
        extra = [
            (node, ctx, callee)
            for node, ctx in flat.nodes
            if type(node) is cst.Call and id(node) not in direct and (callee := indirect(node)) is not None
        ]
    runners = _local_runners(flat, sites + extra)
    if runners:  # `def evaluate(): return self.policy(states)` ... `new = evaluate()`: a call of a local closure
        extra += [
            (node, ctx, f"{node.func.value}()")
            for node, ctx in flat.nodes
            if type(node) is cst.Call and isinstance(node.func, cst.Name) and node.func.value in runners
        ]
    plain = None  # the taint before outputs were read as values
    if value_tests and (sites or extra):
        # `o = self.sub(h)` ... `if o.argmax(-1)[0] == 0: self.alt(h)`: what a submodule returned, read as a value
        # (not what a method returns once a collective made it the same everywhere: a gathered validation score)
        outputs = _outputs(sites + extra, taint)
        agreed = _no_own_value(taint)
        derived_at: dict[str, list[tuple[int, tuple]]] = {}
        derived = derived_names(flat, outputs, agreed, derived_at)
        with_outputs = taint.with_outputs(_bound_before(flat, derived, outputs, agreed, derived_at))
        if any(with_outputs.of(test) for test in _decisions(flat)):
            plain, taint, tainted = taint, with_outputs, True
    plain = taint if plain is None else plain
    # `loss.backward()`: what a `return` or `continue` before it skips, like a submodule call
    backs = _backward_sites(flat) if tainted and (text is None or "backward" in text) else []
    if tainted and (sites or extra or backs):
        # Helpers count for rank and random decisions (`if random() < 0.5: self.predict(x)`); for data
        # decisions a helper on the other branch often runs the same layers, so only direct calls do.
        _tainted_decisions(
            flat, calls, taint, sites + extra, add, {id(call) for call, _c, _n in extra}, model_code,
            plain if loop_exits else None, backs,
        )
    if loop_exits and (sites or extra):
        _output_exits(flat, sites + extra, taint, add)
    if counted:
        counted = counted_loops(  # again, now that submodule calls are known
            flat, taint.inputs, calls, handed, kept, taint.index, taint.cls)
        for call, ctx, callee in sites + extra:
            loop = next((loop for loop in ctx.loops if id(loop) in counted), None)
            if loop is not None and not ctx.guarded:
                iterable, source = counted[id(loop)]
                add(DATA, COUNT, iterable, source, callee, call)
    if hands_on:
        for arg, source, callee in counts_handed_on(taint.index, taint.cls, flat, taint.inputs, calls, runners):
            add(DATA, COUNT, arg.value, source, callee)
    for arg, kind, source in drawn:
        # reported from the draw (`n = random.randint(...)`, the local's one binding) down to the call
        bound = local_bindings(flat).get(arg.value.value, []) if isinstance(arg.value, cst.Name) else []
        drawn_value = bound[0] if len(bound) == 1 else None
        add(kind, COUNT, drawn_value or arg.value, source, "self.forward", arg if drawn_value is not None else None)
    for call, ctx, callee in sites:
        key = picks.get(id(call))
        if key is not None and not ctx.guarded:
            add(DATA, GATE, key[0], key[1], callee, call)
    if tainted:
        for call, test, kinds, callee in _chosen_calls(flat, taint, sites, calls):
            for kind, source in kinds.items():
                add(kind, PICK, test, source, callee, call)
    if pickable:
        for pick in picked_runs(flat, calls, taint):
            add(pick.kind, ITERATE if pick.iterated else PICK, pick.node, pick.source, pick.callee)
    for solve in solves:
        ran = _solved_runs(flat, solve, sites + extra, callee_of, runners)
        if ran is not None:
            add(DATA, COUNT, solve, f"{code_of(solve.func)}() with error control", ran)
    if raises and (sites or extra or _backward_sites(flat)):
        ran = (sites + extra)[0][2] if sites or extra else "backward()"
        from_outputs = _from_outputs(flat, sites + extra, taint) if any(r.pending for r in raises) else None
        for r in raises:
            if not r.pending or from_outputs is not None and from_outputs(r.test):
                add(DATA, RAISE, r.test, r.source, ran, r.stop)
    elif raises and isinstance(root, cst.FunctionDef) and root.name.value != "__init__" and (
        taint.cls is not None and taint.cls.is_module or run_around is not None and run_around(root.name.value)
    ):
        # `def validate(self, charge): if (charge > self.max_charge).any(): raise`: a check of a module (or of a
        # trainer holding one) that runs nothing itself; its caller runs it in the pass, before the modules that
        # follow, which this rank then never reaches (a constructor's checks are of its settings, every rank's)
        for r in raises:
            test, stop, source = r.test, r.stop, r.source
            if r.pending or not own_node(flat, stop, root):
                continue  # (a closure's check runs where the closure is called, not in this function's pass)
            owner = f"{taint.cls.name}." if taint.cls is not None else ""
            add(DATA, CHECK, test, source, f"{owner}{root.name.value}()", stop)
    for handler, body, effect in handled:
        ran = next((callee for call, _ctx, callee in sites + extra if flat.within(call, body)), None)
        if ran is None and (sites or extra):  # `loss = self.model(x)` ... `try: loss.backward()`: the backward of
            ran = _backward_in(body)  # what the model computed gathers its parameters again, module by module
        if ran is None and taint.cls is not None and taint.cls.is_module:
            ran = _module_handed_in(flat, body)  # `out = validator.run_model(model=self, batch=batch)`
        if ran is None and taint.cls is not None:
            ran = _backward_helper_in(taint.cls, flat, body)  # `self.backward(loss)` of a base: `loss.backward()`
        if ran is not None:
            caught = handler.type if handler.type is not None else handler
            # (reaching down to where the rank leaves the pass its peers finish: `return`, `continue`, `break`)
            leaves = next((n for n in walk(handler.body) if type(n).__name__ in _EXITS), None)
            source = f"except {code_of(handler.type)}" if handler.type is not None else "except"
            retried = next((call for call, _ctx, callee in sites + extra if callee == ran and flat.within(call, body)), None)
            if effect == RETRY and retried is not None:  # what runs again, reaching down to the handler that repeats it
                add(DATA, effect, retried, source, ran, caught)
            else:
                add(DATA, effect, caught, source, ran, leaves)
    return sorted(found.values(), key=lambda d: flat.position.get(id(d.node), 0))


# A test of whether a value is finite: `torch.isnan(loss)`, `not torch.isfinite(x).all()`, `math.isinf(l)`.
_NONFINITE_CALLS = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf"})
# ... or a raise on any test of the batch's values reduced to one (`if not (ids == sep).any(1).all(): raise`) or of
# a value against a number (`if valid == 0.0: raise`), its `if` line followed by the `raise` within two lines (the
# text trigger; the taint of the test decides).
# A `raise`, or a call leaving the process (`sys.exit(1)`).
_STOPS = r"(?:raise\b|(?:sys\.)?exit\()"
OWN_VALUE_RAISE_TEXT = re.compile(
    r"\b(?:isnan|isinf|isfinite)\(|\b([\w.]+) != \1\b"
    r"|^[ \t]*(?:el)?if\b[^\n]*(?:\.|\btorch\.)(?:any|all)\([^\n]*:[ \t]*\n(?:[^\n]*\n)?[ \t]*" + _STOPS
    + r"|^[ \t]*(?:el)?if\b[^\n]*(?:[=<>] ?-?\d|\b\d[\d.e-]* ?[=<>!])[^\n]*:[ \t]*\n(?:[^\n]*\n)?[ \t]*" + _STOPS,
    re.M,
)


def own_value_raise_text(text: str) -> bool:
    """The text pre-filter of a stop on this rank's own value: a `raise` or an `assert`, then the pattern (the
    literal first: the pattern tries every `if` line of a file)."""
    return ("raise" in text or "assert" in text or "exit(" in text) and OWN_VALUE_RAISE_TEXT.search(text) is not None


def _value_reduction(call: cst.Call) -> bool:
    """`x.any()`, `mask.all(dim=1)`, `torch.any(x)`: a tensor's values reduced to a truth value (not the builtins)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("any", "all")


def _own_value_raises(flat: Flat, taint) -> list[OwnRaise]:
    """(test, the statement that stops, the test's call as text) for a `raise` an `if` on a non-finite value
    governs, and an `assert` of one: the rank whose loss (or output) is NaN stops while its peers run the next step;
    and for a `raise` under a test of the batch's values reduced to one truth value (`if not has_sep.all(): raise`).
    A test of a value a collective agreed on (`dist.all_reduce(loss)` first) is the same on every rank: left out."""
    found = []
    for node, ctx in flat.nodes:
        if type(node) is cst.Assert:
            test, stop = node.test, node
        elif (type(node) is cst.Raise or type(node) is cst.Call and _exits_process(node)) and ctx.conds:
            test, stop = ctx.conds[-1], node  # (`sys.exit(1)` as a `raise`: the process leaves)
        else:
            continue
        # (the test that governs the stop, or one around it that counts what the stop tests: `if not
        # torch.isfinite(loss): count += 1; if count > patience: raise`, the rank's own count of non-finite losses)
        governing = (test,) if type(node) is cst.Assert else (
            test, *(outer for outer in reversed(ctx.conds[:-1]) if _counted_under(flat, outer, test)))
        pending = False
        calls = [
            n for t in governing for n in walk(t)
            if type(n) is cst.Call and (call_name(n) or "").rsplit(".", 1)[-1] in _NONFINITE_CALLS
        ]
        calls += [n for t in governing for n in walk(t) if _self_unequal(n)]  # `if loss != loss:`, the NaN idiom
        if not calls and type(node) is not cst.Assert:  # `if not has_separator.all(): raise`: a test of the batch's
            # or of one number the rank computed against a constant (`if valid == 0.0: raise`, `if loss > 1e4: raise`)
            calls = [n for n in walk(test) if type(n) is cst.Call and _value_reduction(n)]
            if calls and not any(kind == DATA and not taint.extent_only(source) for kind, source in taint.of(test).items()):
                calls = []
            if not calls:  # a number the rank's model computed, whole: `valid = evaluate(model, loader)`, told later
                calls = [n for n in walk(test) if _against_a_number(n) and not _value_reduction_in(n)]
                pending = True
        if not calls:
            continue
        names = {n.value for t in (test, *governing) for n in walk(t) if type(n) is cst.Name}
        if names & set(taint.agreed):
            continue
        found.append(OwnRaise(test, stop, code_of(calls[0]), pending))
    return found


def _exits_process(call: cst.Call) -> bool:
    """`sys.exit(1)`, `exit()`, `quit()`, `os._exit(1)`: the process leaves, as an uncaught `raise` makes it."""
    return dotted(call.func) in _PROCESS_EXITS


_PROCESS_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


@dataclass(frozen=True)
class OwnRaise:
    """A `raise` (or `assert`) on a value of this rank's own; `pending`: only if the value derives from what a call
    running submodules returned (`_from_outputs`), told once the calls are known."""

    test: cst.CSTNode
    stop: cst.CSTNode
    source: str
    pending: bool = False


def _from_outputs(flat: Flat, sites: list, taint) -> Callable[[cst.CSTNode], bool]:
    """Does a test compare a local that holds, whole, what one of `sites` returned (`valid =
    compute_validation(loader, model)`, `loss = model(x).item()`, then `if valid == 0.0: raise`)? Not a size read
    off an output (`batch_size = out.shape[0]`), nor a value every rank agreed on."""
    outputs = {id(call) for call, _ctx, _callee in sites if not taint.agreed_value(call)}
    whole: set[str] = set()
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            value = node.value
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
                "item", "float", "cpu", "detach", "mean", "sum"
            ) and not value.args:
                value = value.func.value  # `model(x).item()`, `loss.detach().cpu()`: the same number
            if id(value) in outputs and not taint.agreed_value(node.targets[0].target):
                whole.add(node.targets[0].target.value)

    def compares(test: cst.CSTNode) -> bool:
        return any(
            type(n) is cst.Comparison and _against_a_number(n)
            and any(type(side) is cst.Name and side.value in whole for side in (n.left, n.comparisons[0].comparator))
            for n in walk(test)
        )

    return compares


def _value_reduction_in(node: cst.CSTNode) -> bool:
    return any(type(n) is cst.Call and _value_reduction(n) for n in walk(node))


_ORDERING = frozenset({"Equal", "NotEqual", "LessThan", "GreaterThan", "LessThanEqual", "GreaterThanEqual"})
# Sizes, counts and kinds, not values: `len(out) == 0`, `x.dim() != 3`, `x.shape[0] > 1`.
_EXTENT_WORDS = re.compile(r"\blen\(|\.(?:shape|size|dim|ndim|ndimension|numel|dtype|device)\b")


def _against_a_number(node: cst.CSTNode) -> bool:
    """`valid == 0.0`, `loss > 1e4`, `-1 < score`: a single value compared with a literal number, not with an
    extent (`len(x) == 0`, `x.dim() != 3`)."""
    if type(node) is not cst.Comparison or len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    if type(target.operator).__name__ not in _ORDERING:  # (names: libcst is loaded only when a file needs parsing)
        return False
    sides = (node.left, target.comparator)
    numbers = [side for side in sides if _number(side)]
    if len(numbers) != 1:
        return False
    other = sides[1] if numbers[0] is sides[0] else sides[0]
    return not _EXTENT_WORDS.search(code_of(other))


def _number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _counted_under(flat: Flat, outer: cst.CSTNode, test: cst.CSTNode) -> bool:
    """Does the `if` testing `outer` write, in its body, a name or attribute that `test` reads (`if not
    isfinite(loss): self.bad += 1` ... `if self.bad > patience:`)?"""
    branch = flat.parent.get(id(outer))
    if not isinstance(branch, cst.If) or branch.test is not outer or not flat.within(test, branch.body):
        return False  # (the stop in its `else`, where the value was finite, is not one it counts)
    metadata = {  # (`x.device != y.device` reads no value of `x`)
        id(n.value) for n in walk(test) if type(n) is cst.Attribute and n.attr.value in VALUE_FREE_ATTRS}
    read = {code_of(n) for n in walk(test) if type(n) in (cst.Name, cst.Attribute) and id(n) not in metadata}
    return any(
        code_of(target) in read
        for n in walk(branch.body) if type(n) in (cst.Assign, cst.AugAssign)
        for target in targets_of(n)[0]
    )


def _drawn_counts_handed_to_forward(taint, flat: Flat) -> list[tuple[cst.Arg, str, str]]:
    """`self(feats=batch, recycling_steps=random.randint(0, n))`: a random draw handed to the module's own forward as
    a parameter that bounds one of its loops (`for i in range(recycling_steps + 1)`), so ranks run its trunk a
    different number of times. (The argument, the draw's taint kind, its source.)"""
    forward = taint.cls.method("forward")
    text = forward.text if forward is not None else ""
    if "range(" not in text:
        return []
    params = set(re.findall(r"\brange\(([^)]*)\)", text))  # (not `rearrange(x, ...)`, `torch.arange(n)`)
    found = []
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Call:
            continue
        func = node.func
        if not (isinstance(func, cst.Name) and func.value == "self" or isinstance(func, cst.Attribute)
                and func.attr.value == "forward" and isinstance(func.value, cst.Name) and func.value.value == "self"):
            continue
        for arg in node.args:
            kinds = taint.of(arg.value)
            kind = next((k for k in (RANDOM, HOST_RANDOM) if k in kinds), None)
            if kind is None or arg.keyword is None:
                continue
            name = arg.keyword.value
            if any(re.search(rf"\b{name}\b", bound) for bound in params):
                found.append((arg, kind, kinds[kind]))
    return found


def _backward_helper_in(cls: ClassInfo, flat: Flat, body: cst.CSTNode) -> str | None:
    """A method of the class (its own or a base's) called in `body` whose text runs a tensor's backward (parlai's
    `self.backward(loss)`, `loss.backward(**kwargs)` in the agent base): the backward gathers the parameters the
    forward ran with, with every rank. The call, as text; None when there is none."""
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Call or not flat.within(node, body):
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            method = cls.inherited_method(func.attr.value)
            if method is not None and ".backward(" in method.text and method.node is not None \
                    and _backward_in(method.node.body) is not None:
                return f"{code_of(func)}()"
    return None


def _module_handed_in(flat: Flat, body: cst.CSTNode) -> str | None:
    """In a module's method, a call in `body` handed the module itself (`validator.run_model(model=self, batch=b)`,
    `self.sampler.sample(self, x)`): what it is handed it runs, under the handler that guards the call. The call, as
    text; None when there is none."""
    for node, _ctx in flat.nodes:
        if type(node) is cst.Call and flat.within(node, body) and any(
                isinstance(arg.value, cst.Name) and arg.value.value == "self" for arg in node.args):
            return f"{code_of(node.func)}()"
    return None


def _self_unequal(node: cst.CSTNode) -> bool:
    """`x != x`: true only for a NaN."""
    return (
        type(node) is cst.Comparison and len(node.comparisons) == 1
        and type(node.comparisons[0].operator) is cst.NotEqual
        and not isinstance(node.left, (cst.Integer, cst.Float, cst.SimpleString))
        and code_of(node.left) == code_of(node.comparisons[0].comparator)
    )


def _tainted_decisions(
    flat: Flat, calls: Calls, taint: Taint, sites: list, add: Callable[..., None], helpers: set[int] = frozenset(),
    model_code: bool = True, plain: Taint | None = None, backwards: list = (),  # type: ignore[assignment]
) -> None:
    """Calls gated, iterated, skipped or cut short by a rank-, random- or data-tainted decision.

    `backwards`: the `loss.backward()` calls (`_backward_sites`), which a `return` or `continue` on this rank's data can
    skip like a submodule call, and a test of this rank's data can gate (a test of settings is every rank's).

    `helpers` are the sites that run submodules through a helper: data decisions about them are left out.
    `plain` (the taint before outputs were read as values, when `_output_exits` runs): a data exit out of a loop
    through the final `else` of a chain of tests on an output is `_output_exits`'s to report, once, at the exit.
    """
    add_all = add

    def add(kind: str, effect: str, node: cst.CSTNode, source: str, callee: str, site: cst.Call,
            reach: cst.CSTNode | None = None) -> None:
        if kind in (DATA, HOST) and id(site) in helpers:
            if not _skipped_helper(flat, node, effect, site, taint, sites, model_code) or (
                effect == ITERATE and not model_code
            ):
                return
        add_all(kind, effect, node, source, callee, site if reach is None else reach)

    rank_gated: dict[str, list] = {}  # callee text -> (rank-test branch, call) of each call of it under a rank test
    for call, ctx, callee in sites:
        tests = [test for test in ctx.conds if RANK in taint.of(test)]
        if tests:
            branch = flat.parent.get(id(tests[-1]))
            side = _side(flat, call, branch) if isinstance(branch, cst.If) else None
            rank_gated.setdefault(callee, []).append((_rank_side(tests[-1], side), id(call)))
    same_both_ways: set[int] | None = None  # read only once a tainted test gates a call
    for call, ctx, callee in sites:
        if ctx.guarded:
            continue
        for test in ctx.conds:
            tainted = taint.of(test)
            if not tainted or _given_object_tested(flat, test):
                continue
            if same_both_ways is None:
                same_both_ways = _same_both_ways(flat, sites)
            if id(test) in same_both_ways:
                continue  # `if coin: y = self.model(x)` / `else: y = jvp(self.model, ...)`: the same modules run
            effect = WHILE if _is_while_test(flat, test) else GATE
            for kind, source in tainted.items():
                if kind == RANK and _made_by_every_rank(rank_gated.get(callee, []), callee):
                    # The same call in another rank-dependent branch (`if main: ... barrier()` /
                    # `else: barrier()`, "main process first"): every rank makes it once. (Two calls in one branch
                    # run on the main rank alone.)
                    continue
                add(kind, effect, test, source, callee, call)
        for loop in ctx.loops:
            iterable = _loop_iter(loop)
            if iterable is None or (_fixed_length(iterable, calls) and not _cut_by(iterable, taint)):
                continue
            # How often a loop runs follows the values it iterates, not the branches they were built in (nor how a
            # progress bar around them is shown: `trange(n, disable=not is_main)`).
            picks = _picks_by_target(loop, call)  # `self.critics[i](s)` for `i` of a draw: which critic runs differs
            for kind, source in _count_taint(flat, taint, iterable, not picks).items():
                add(kind, ITERATE, iterable, source, callee, call)

    for call, ctx, callee in backwards:
        # `if approx_kl <= 1.5 * target_kl: policy_loss.backward()`: a backward run on this rank's values only (its
        # gradients' reduce-scatter waits for the ranks that skipped it); a test of settings is every rank's
        for test in () if ctx.guarded else ctx.conds:
            source = taint.of(test).get(DATA)
            if source is not None and not _given_object_tested(flat, test):
                add(DATA, WHILE if _is_while_test(flat, test) else GATE, test, source, callee, call)
                break
    # Leaf node types, so `type(n) in` is `isinstance` without libcst's ABC check (a microsecond per node that is not one).
    exit_kinds = (cst.Continue, cst.Break, cst.Return)
    exits = [(n, c) for n, c in flat.nodes if not c.guarded and type(n) in exit_kinds]
    if backwards:
        sites = sites + backwards  # (only for the exits: `sites` was read above for gates and loops)
        backward_ids = {id(call) for call, _c, _n in backwards}
        add_exit = add

        def add(kind: str, effect: str, node: cst.CSTNode, source: str, callee: str, site: cst.Call,
                reach: cst.CSTNode | None = None) -> None:
            # (a backward skipped on this rank's data; a rank test before it is one of the calls that computed the loss,
            # and what looks like one is as often a progress bar shown on the main rank: `tqdm(file=...)`)
            if kind == DATA or id(site) not in backward_ids:
                add_exit(kind, effect, node, source, callee, site, reach)
    for node, ctx in exits:
        position = flat.position[id(node)]
        if isinstance(node, cst.Return):
            home = flat.function_of(node)  # (a nested function's `return` skips only its own calls)
            later = [
                (call, c, callee)
                for call, c, callee in sites
                if flat.position[id(call)] > position and not _shares_test(c, ctx) and flat.function_of(call) is home
            ]
            tests = ctx.conds
        else:
            if not ctx.loops:
                continue
            loop = ctx.loops[-1]
            later = [(call, c, callee) for call, c, callee in sites if loop in c.loops]
            if isinstance(node, cst.Continue):  # skips only the rest of this iteration
                later = [site for site in later if flat.position[id(site[0])] > position]
            else:  # `break` skips the rest of the loop; name the first call after it if any
                later.sort(key=lambda site: flat.position[id(site[0])] < position)
            depth = len(ctx.loops)
            tests = tuple(t for t, d in zip(ctx.conds, ctx.depths) if d == depth)
        if not later:
            continue
        if isinstance(node, cst.Return) and node.value is not None:
            returned = {callee for call, _c, callee in sites if call is node.value or flat.within(call, node.value)}
            if returned and {callee for _call, _c, callee in later} <= returned:
                continue  # `if n < text_len: return self.fn(x)` ... `return self.fn(y)`: it runs either way, once
        effect = SKIP if isinstance(node, cst.Continue) else EXIT
        in_else = plain is not None and bool(ctx.loops) and effect == EXIT and bool(tests) and _in_else(
            flat, node, tests[-1])
        for at, test in enumerate(tests):
            if _exits_both_ways(flat, test, type(node), exits):
                continue  # `if rank == 0: return a` / `else: return b`: every rank leaves here
            if _decided_inside(flat, test, list(tests[at + 1:])):
                continue  # `end = done or t == steps` ... `if end: if t == steps: break`: the inner test decides
            if _given_object_tested(flat, test):
                continue  # `if es:` ... `if not es.check_loss(model, valid): break`: the inner test decides
            for kind, source in taint.of(test).items():
                if kind == DATA and in_else and DATA not in plain.of(test):  # type: ignore[union-attr]
                    continue
                add(kind, effect, test, source, later[0][2], later[0][0], node)


def _while_tested(flat: Flat, expr: cst.CSTNode) -> cst.While | None:
    """The `while` loop whose test `expr` is (or is part of), else None."""
    child, parent = expr, flat.parent.get(id(expr))
    while parent is not None and isinstance(parent, cst.BaseExpression | cst.Arg | cst.ComparisonTarget):
        child, parent = parent, flat.parent.get(id(parent))
    return parent if isinstance(parent, cst.While) and parent.test is child else None


def _bound_before(
    flat: Flat, derived: dict[str, str], outputs: dict[int, str], agreed: Callable[[cst.CSTNode], bool] | None,
    sites: dict[str, list[tuple[int, tuple]]],
) -> Callable[[cst.CSTNode], str | None]:
    """`_derived_source` for an expression, seeing only the names bound to an output before it (or in a loop around
    both), by the `sites` `derived_names` recorded: `perceiver = self.resampler(x)` in a later branch does not make
    an earlier test of it an output's, nor does `params["best"] = best` after the loop make `params` one before it."""

    def source(expr: cst.CSTNode) -> str | None:
        at = flat.position.get(id(expr))
        if at is None:
            return _derived_source(expr, derived, outputs, agreed)
        loops = flat.nodes[at][1].loops
        tested = _while_tested(flat, expr)
        if tested is not None:
            loops = (*loops, tested)  # `while not done(seq):` is tested again after each pass of its body
        seen = {
            name: why for name, why in derived.items()
            if name not in sites or any(p < at or any(l is m for l in around for m in loops) for p, around in sites[name])
        }
        return _derived_source(expr, seen, outputs, agreed)

    return source


def _rank_share(flat: Flat, taint: Taint, iterable: cst.BaseExpression) -> tuple[cst.CSTNode, str] | None:
    """`counts.rank_share` with this function's taint."""
    return rank_share(flat, iterable, lambda edge: taint.of(edge).get(RANK))


def _picks_by_target(loop: cst.CSTNode, call: cst.Call) -> bool:
    """Does the callee of `call` name a variable the loop binds (`self.critics[i]` in `for i in ...`)?"""
    target = loop.target if isinstance(loop, cst.For) else loop.for_in.target if hasattr(loop, "for_in") else None
    names = set(bound_names(target)) if target is not None else set()
    return bool(names) and any(isinstance(n, cst.Name) and n.value in names for n in walk(call.func))


def _count_taint(flat: Flat, taint: Taint, iterable: cst.BaseExpression, counted: bool = True) -> dict[str, str]:
    """What the number of items a loop walks follows (`trange(n, disable=not is_main)` walks `n` items on every
    rank; `counts.passed_through`). With `counted` (the call does not run an item the loop picks), a draw of a given
    size (`np.random.choice(n, k)`) walks `k` items on every rank: only its size counts."""
    walked = passed_through(iterable)
    if isinstance(walked, cst.Call) and walked is not iterable and id(walked) not in flat.position:
        found: dict[str, str] = {}  # a `range` made from a `trange`'s positional arguments (its keywords,
        for arg in walked.args:  # `disable=not is_main`, only change what is shown): ask them
            if arg.keyword is not None:
                continue
            for kind, source in taint.of(arg.value, direct=True).items():
                found.setdefault(kind, source)
        return found
    if isinstance(walked, cst.Call) and known.ZIP_LIKE.match((call_name(walked) or "").rsplit(".", 1)[-1]) \
            and walked.args and not any(a.star or a.keyword for a in walked.args):
        # `zip(phases, all_z)`: as many items as the shortest; one walked as long on every rank sets the count (zips
        # pair equals: the others are as long)
        counts = [_count_taint(flat, taint, a.value, counted) for a in walked.args]
        if not all(counts):
            return {}
        found = {}
        for count in counts:
            for kind, source in count.items():
                found.setdefault(kind, source)
        return found
    if isinstance(walked, cst.Call) and call_name(walked) == "enumerate" and walked.args \
            and walked.args[0].keyword is None and not walked.args[0].star:
        return _count_taint(flat, taint, walked.args[0].value, counted)  # as many items as what it numbers
    drawn = drawn_length(flat, walked) if counted else None
    if drawn is not None:  # `for i in np.random.choice(n, k, replace=False)`: `k` items on every rank, which differ
        found = {}
        for size in drawn:
            for kind, source in taint.of(size, direct=True).items():
                found.setdefault(kind, source)
        return found
    grown = _grown_length(flat, taint, walked.value, counted) if isinstance(walked, cst.Name) else None
    if grown is not None:
        return grown  # `s_list = []` ... `s_list.append(torch.lerp(a, b, psi))`: as long as the appends made it
    found = taint.of(walked, direct=True)
    if RANK not in found:  # `for f in feats[start:end]` for `start = rank * step`: this rank's share, of its own length
        share = _rank_share(flat, taint, iterable)
        if share is not None:
            found = {**found, RANK: share[1]}
    return found


def _grown_length(flat: Flat, taint: Taint, name: str, counted: bool) -> dict[str, str] | None:
    """What the length of a list the function starts empty and only appends to follows: the counts of the loops and
    the tests around each `name.append(x)`, not what `x` holds (`s_list.append(torch.lerp(s_avg, s, psi))` in loops
    over settings is as long on every rank, however random its items). None when the list is bound otherwise or
    more than once, changed any other way, or an append sits in a loop that can leave or skip a step early."""
    if name not in _started_empty(flat):
        return None
    found: dict[str, str] = {}
    bound = False
    for node, ctx in flat.nodes:
        targets, value = targets_of(node)
        if any(type(target) is cst.Name and target.value == name for target in targets):
            if bound or type(node) is not cst.Assign or not (type(value) is cst.List and not value.elements):
                return None
            bound = True
            continue
        if type(node) is not cst.Name or node.value != name:
            continue
        parent = flat.parent.get(id(node))
        if type(parent) is cst.Attribute and parent.value is node and parent.attr.value in _LIST_CHANGES:
            if parent.attr.value != "append" or type(flat.parent.get(id(parent))) is not cst.Call:
                return None
            for loop in ctx.loops:
                if _leaves_early(loop):
                    return None
                counted_by = loop.test if type(loop) is cst.While else loop.iter  # type: ignore[attr-defined]
                count = taint.of(counted_by, direct=True) if type(loop) is cst.While else \
                    _count_taint(flat, taint, counted_by, counted)
                for kind, source in count.items():
                    found.setdefault(kind, source)
            for test in ctx.conds:
                for kind, source in taint.of(test, direct=True).items():
                    found.setdefault(kind, source)
        elif type(parent) in (cst.AugAssign, cst.Del, cst.SubscriptElement) or type(parent) is cst.Subscript \
                and parent.value is node and isinstance(flat.parent.get(id(parent)), (cst.AssignTarget, cst.Del)):
            return None
    return found if bound else None


def _started_empty(flat: Flat) -> frozenset[str]:
    """The locals the function binds to an empty list (`s_list = []`), worked out once per function."""
    found = flat.memo.get("started_empty")
    if found is None:
        found = flat.memo["started_empty"] = frozenset(
            node.targets[0].target.value for node, _ctx in flat.nodes
            if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name
            and type(node.value) is cst.List and not node.value.elements
        )
    return found


# Methods that change a list's length.
_LIST_CHANGES = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "__iadd__"})


def _leaves_early(loop: cst.CSTNode) -> bool:
    """Can a step of the loop end before its end (`continue`, `break`, `return`, `raise` in its body)?"""
    body = getattr(loop, "body", None)
    return body is not None and any(type(n) in (cst.Continue, cst.Break, cst.Return, cst.Raise) for n in walk(body))


def _skipped_helper(
    flat: Flat, test: cst.CSTNode, effect: str, site: cst.Call, taint: Taint, sites: list, model_code: bool = True
) -> bool:
    """Does a data decision run a helper of this module or file (`self.refine(h)`, `aux_loss(self, h)`, a method of
    a model it is handed) a number of times that follows the data (a loop over a data-dependent iterable), gate it
    on one side only, or leave (or skip the rest of a loop's step) before it from a branch that runs nothing, the test holding no other taint (a random
    mask's `.any()` is a random decision)?"""
    func = site.func
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    # `self.refine(h)`, `aux_loss(h)`, or a method of a model a function is handed (`model.postnet.postnet(s)`)
    own = isinstance(func, cst.Name) or (
        isinstance(root, cst.Name) and (root.value != "self" or func.value is root)
    ) or (  # `self.high_level.get_next_skill(x)`: a method of a child module of a class we read, which runs its
        # layers (`_indirect_calls` read it)
        isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and func.value.value is root
        and effect == GATE and _built_child(taint.cls, func.value.attr.value)
    )
    if not own or not set(taint.of(test)) <= {DATA, HOST} or not taint.of(test):
        return False
    if effect == SKIP and model_code and isinstance(root, cst.Name) and root.value != "self" and func is not root:
        return False  # `policy.add_exploration_noise(a)` of a child whose class we cannot read: it may run none
    if effect in (EXIT, SKIP):  # `if os.path.isfile(out): return` before `separate(model, wav)`, `if torch.isnan(
        # loss): continue` before `self.log_samples(x)`: skipped outright
        branch = flat.parent.get(id(test))
        return isinstance(branch, cst.If) and not any(_side(flat, call, branch) == "body" for call, _c, _n in sites)
    return effect == ITERATE or (effect == GATE and _one_sided(flat, test, sites, site))


def _built_child(cls: ClassInfo | None, name: str) -> bool:
    """Is `self.<name>` known to hold a module (built by the class or a base, of a class we read or from a registry
    of modules), not an object of unknown kind handed in (a config, a scheduler)?"""
    if cls is None:
        return False
    member = inherited_member(cls, name)
    return member is not None and member.kind is Kind.MODULE


def _one_sided(flat: Flat, test: cst.CSTNode, sites: list, site: cst.Call | None = None) -> bool:
    """Is `test` the test of an `if` whose branch without `site` runs no submodule (`if x.sum() > 0: h =
    self.refine(h)`; `if "cache" in batch: out = batch["cache"]` / `else: out = run(model, batch)`)? Then a helper
    it gates is skipped outright, not swapped for another that may run the same layers."""
    branch = flat.parent.get(id(test))
    if not isinstance(branch, cst.If) or branch.test is not test:
        return False
    other = "body" if site is not None and _side(flat, site, branch) == "orelse" else "orelse"
    if other == "orelse" and branch.orelse is None:
        return True
    return not any(_side(flat, call, branch) == other for call, _ctx, _callee in sites)


def _same_both_ways(flat: Flat, sites: list) -> set[int]:
    """Tests of an `if` with an `else` whose two branches run the same submodules, each once (the decision picks
    how, not which: a plain forward or one through `jvp`). Only direct calls count. An `if` of the function's top
    level, outside any loop, whose body ends in a `return` has the rest of the function for its `else`
    (`if mask.all(): return self.to_out(v)` ... `return self.to_out(out)`: both ways run `to_out` once)."""
    sides: dict[int, dict[str, list[str]]] = {}
    repeated: set[int] = set()  # tests with a call in a loop inside a branch: it may run any number of times
    returning: dict[int, cst.If] = {}  # top-level `if`s without `else` whose body ends in a `return`
    for call, ctx, callee in sites:
        for test in ctx.conds:
            branch = flat.parent.get(id(test))
            if not (isinstance(branch, cst.If) and branch.test is test):
                continue
            if isinstance(branch.orelse, cst.Else):
                side = _side(flat, call, branch)
            elif branch.orelse is None and ctx.conds[0] is test and not ctx.loops and _ends_in_return(branch.body):
                side = "body" if _side(flat, call, branch) == "body" else None
                returning[id(test)] = branch
                if len(ctx.conds) > 1:
                    repeated.add(id(test))  # a call the body runs under a further test: not compared
            else:
                side = None
            if side is not None:
                sides.setdefault(id(test), {"body": [], "orelse": []})[side].append(callee + _constants(call, callee))
                if any(_side(flat, loop, branch) is not None for loop in ctx.loops):
                    repeated.add(id(test))
    for key, branch in returning.items():  # the rest of the function, run when the test is false
        start = flat.position[id(branch)]
        for call, ctx, callee in sites:
            if flat.position[id(call)] <= start or flat.within(call, branch):
                continue
            if ctx.conds or ctx.loops:
                repeated.add(key)  # a call the rest runs only under a test of its own, or in a loop: not compared
            sides[key]["orelse"].append(callee + _constants(call, callee))
    return {
        key
        for key, split in sides.items()
        if key not in repeated and split["body"] and sorted(split["body"]) == sorted(split["orelse"])
    }


def _ends_in_return(body: cst.BaseSuite) -> bool:
    """Does the block's last statement return (`if mask.all(): ... return self.to_out(v)`)?"""
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    if isinstance(body, cst.SimpleStatementSuite):
        last = body
    return isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and any(
        isinstance(small, cst.Return) for small in last.body
    )


def _constants(call: cst.Call, callee: str) -> str:
    """The constants a helper call hands (`self.context_forward(h, t, "uu")`): a helper handed "uu" on one side and
    "ii" on the other may run other submodules for each (its own branches on them); a module's call runs that module
    whatever it is handed."""
    if not callee.endswith("()"):
        return ""
    return "".join(
        f"|{arg.keyword.value if arg.keyword else i}={code_of(arg.value)}"
        for i, arg in enumerate(call.args)
        if isinstance(arg.value, (cst.SimpleString, cst.Integer, cst.Float))
        or (isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False", "None"))
    )


def _picked_calls(flat: Flat, taint: Taint) -> dict[int, tuple[cst.CSTNode, str]]:
    """Calls of a container's item named by a field of this rank's batch: `self.heads[batch["task"]](x)`, or a local
    holding the field, also the items of such an item walked by a loop (`for m in self.routes[task]: x = m(x)`); by
    call, the index expression and the field."""
    found: dict[int, tuple[cst.CSTNode, str]] = {}
    walked: dict[int, tuple[frozenset[str], cst.CSTNode, str]] = {}  # loops over an item picked so -> (variables, ...)
    for node, ctx in flat.nodes:
        if type(node) is cst.For and isinstance(node.target, cst.Name) and (picked := _field_key(node.iter, taint)):
            walked[id(node)] = (frozenset({node.target.value}), *picked)  # `for m in self.routes[batch["task"]]:`
            continue
        if type(node) is not cst.Call:
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
            func = func.value
        if isinstance(func, cst.Name) and walked:  # `m(x)` in that loop: one of the modules the batch picked
            loop = next((loop for loop in ctx.loops if id(loop) in walked and func.value in walked[id(loop)][0]), None)
            if loop is not None:
                found[id(node)] = walked[id(loop)][1:]
            continue
        picked = _field_key(func, taint)
        if picked is not None:
            found[id(node)] = picked
    return found


def _field_key(expr: cst.BaseExpression, taint: Taint) -> tuple[cst.CSTNode, str] | None:
    """(the key, the field) when `expr` is a container's item taken by a field of this rank's batch
    (`self.heads[batch["task"]]`, or a local holding the field)."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    key = expr.slice[0].slice.value
    source = taint.field_of(key)  # (a key a data-tainted loop walks is reported at the loop)
    return (key, source) if source is not None else None


def _chosen_calls(
    flat: Flat, taint: Taint, sites: list, calls: Calls
) -> Iterator[tuple[cst.Call, cst.CSTNode, dict, str]]:
    """Calls of a local bound to one of two modules by a test that differs per rank (`model = self.G_ema if
    self.has_ema else self.G` ... `model(x)`; a side a module, or the local used as one: `model.eval()`): the binding picks which module runs.
    (call, test, kinds, callee)"""
    choices: dict[str, list[tuple[int, cst.IfExp]]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and isinstance(node.value, cst.IfExp) and len(node.targets) == 1:
            target, value = node.targets[0].target, node.value
            if isinstance(target, cst.Name) and code_of(value.body) != code_of(value.orelse):
                if not any(isinstance(side, (cst.Call, cst.Lambda)) for side in (value.body, value.orelse)):
                    choices.setdefault(target.value, []).append((flat.position.get(id(node), -1), value))
    if not choices:
        return
    classes_of = getattr(calls, "classes_of", None)
    known_sites = {id(call) for call, _ctx, _callee in sites}
    used_as_module = {  # `model.eval()`: a local the function itself treats as a module
        node.func.value.value
        for node, _ctx in flat.nodes
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
        and node.func.attr.value in _MODULE_ONLY
    }
    chosen = [  # `block(h)` for `block = self.alt if t else self.sub`: a module either way
        (node, ctx, code_of(node.func))
        for node, ctx in flat.nodes
        if type(node) is cst.Call and id(node) not in known_sites and isinstance(node.func, cst.Name)
        and node.func.value in choices and (node.func.value in used_as_module or (classes_of is not None and any(
            classes_of(side) for _at, c in choices[node.func.value] for side in (c.body, c.orelse)
        )))
    ]
    for call, ctx, callee in [*sites, *chosen]:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
            func = func.value
        if not isinstance(func, cst.Name) or func.value not in choices or ctx.guarded:
            continue
        at = flat.position.get(id(call), -1)
        for position, choice in choices[func.value]:
            if position < at or ctx.loops:
                kinds = {k: v for k, v in taint.of(choice.test).items()}
                if kinds:
                    yield call, choice.test, kinds, callee


# Methods only a module has (of `known.NOT_RUNS`, less those a tensor shares: `to`, `float`, `requires_grad_`).
_MODULE_ONLY = known.NOT_RUNS - {"to", "cuda", "cpu", "half", "float", "bfloat16", "requires_grad_", "apply", "type"}


def _adaptive_solves(index: ModelIndex, flat: Flat) -> list[cst.Call]:
    """Calls of an ODE solver with error control (`known.ADAPTIVE_SOLVERS`: torchdiffeq's `odeint`) given no fixed-grid
    method (none, the default `dopri5`, or another adaptive one written out; not one read from settings, `**kwargs`):
    how often it calls the function it is handed follows the values this rank computes."""
    found = []
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded or not node.args or node.args[0].keyword or node.args[0].star:
            continue
        name = call_name(node) or ""
        if not name.rsplit(".", 1)[-1].startswith("odeint") or index.qualify(name) not in known.ADAPTIVE_SOLVERS:
            continue
        if any(arg.star for arg in node.args[1:]):
            continue  # `odeint(f, y0, t, **self.odeint_kwargs)`: the method is a setting we cannot read
        method = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "method"), None)
        if method is None or (const_str(method) is not None and const_str(method) not in known.FIXED_GRID_METHODS):
            found.append(node)
    return found


def _solved_runs(flat: Flat, solve: cst.Call, sites: list, callee_of: Callable, runners: frozenset[str]) -> str | None:
    """What the function a solver is handed runs: a submodule (`odeint(self.velocity, ...)`), a function defined here
    that runs one (`def ode_fn(t, x): return model(x, t)`), or a lambda whose body calls one."""
    given = solve.args[0].value
    if isinstance(given, cst.Name) and given.value in runners:
        return f"{given.value}()"
    if isinstance(given, cst.Lambda):
        return next((callee for call, _ctx, callee in sites if flat.within(call, given)), None)
    if isinstance(given, (cst.Name, cst.Attribute)):
        return callee_of(cst.Call(func=given))
    return None


def _local_runners(flat: Flat, sites: list) -> frozenset[str]:
    """Functions defined inside this one whose body runs a submodule (or a helper that does), or calls another such
    function defined here (`inner_loop` calling `grow_topk` calling the model handed in)."""
    root = flat.nodes[0][0] if flat.nodes else None

    def around(node: cst.CSTNode) -> cst.FunctionDef | None:
        parent = flat.parent.get(id(node))
        while parent is not None and parent is not root:
            if type(parent) is cst.FunctionDef:
                return parent
            parent = flat.parent.get(id(parent))
        return None

    found: set[str] = set()
    for call, _ctx, _callee in sites:
        if (inner := around(call)) is not None:
            found.add(inner.name.value)
    if not found:
        return frozenset()
    local_calls = [  # (the function defined here a call sits in, the name it calls)
        (inner.name.value, node.func.value) for node, _ctx in flat.nodes
        if type(node) is cst.Call and isinstance(node.func, cst.Name) and (inner := around(node)) is not None
    ]
    grown = True
    while grown:
        grown = False
        for caller, called in local_calls:
            if called in found and caller not in found:
                found.add(caller)
                grown = True
    return frozenset(found)


def _has_loop_exit(flat: Flat) -> bool:
    """Is there a `while` loop, or a `break`/`return` inside a loop (before anything is resolved)?"""
    for node, ctx in flat.nodes:
        kind = type(node)
        if kind is cst.While or (ctx.loops and (kind is cst.Break or kind is cst.Return)):
            return True
    return False


def _no_own_value(taint: Taint) -> Callable[[cst.CSTNode], bool]:
    """`Taint.agreed_value`, and a call of a method of `self` that hands back only extents of what it is given
    (`self._check_end_condition(hyps)` returning `hyps.seq.shape[1] >= self.max_len`: `taint.extent_method`): what
    a rank's outputs hold does not reach the caller through either."""
    agreed, index = taint.agreed_value, taint.index
    return lambda node: agreed(node) or extent_call(index, node)


def _output_exits(flat: Flat, sites: list, taint: Taint, add: Callable[..., None]) -> None:
    """Loops that run submodules and leave on a value derived from this rank's data or their own outputs.

    A decoding loop (`for step in range(max_len): out = self.step(...);
    if finished(out): break`) stops when *this rank's* hypotheses end, while
    other ranks keep calling the decoder and wait in its all-gather.
    """
    # (not what a method returns once a collective made it the same everywhere: `taint.agreed_output`)
    outputs = _outputs(sites, taint)
    agreed = _no_own_value(taint)  # `dist.all_reduce(loss)`: the same on every rank after it
    derived_at: dict[str, list[tuple[int, tuple]]] = {}
    derived = derived_names(flat, outputs, agreed, derived_at)
    exits = [(n, c) for n, c in flat.nodes if not c.guarded and isinstance(n, (cst.Break, cst.Return))]
    # (a name seen as an output's only where bound to one before the test, or in a loop around both: `kl =
    # mpi_avg(info["kl"])` tested in the loop is the agreed value, not the `kl = info["kl"]` logged after it)
    before = _bound_before(flat, derived, outputs, agreed, derived_at)

    def source_of(test: cst.CSTNode, loop: cst.CSTNode | None = None) -> str | None:
        found = before(test) or taint.of(test).get(DATA)
        if found is None:  # `while move_condition():` for `move_condition = lambda: episodes < n_episodes`
            found = next((
                source for node in walk(test) if type(node) is cst.Call and isinstance(node.func, cst.Name)
                for body in taint.predicate_bodies(node.func.value)
                if (source := _derived_source(body, derived, outputs, agreed)) is not None
            ), None)
        if found is None and loop is not None:
            found = _returned_none(flat, test, loop)  # `if batch is None: break` for `batch = hook(data)`
        return found or flag_source(taint.index, test)  # `if self._stop: break`, the flag set on a rank's metric

    for node, ctx in exits:
        if not ctx.loops:
            continue
        if isinstance(node, cst.Return):  # leaves every loop around it: the outermost one decides
            loop, inside = ctx.loops[0], 1
        else:
            loop, inside = ctx.loops[-1], len(ctx.loops)
        later = [site for site in sites if loop in site[1].loops]
        if not later:
            continue
        tests = [t for t, d in zip(ctx.conds, ctx.depths) if d >= inside]
        if tests and _in_else(flat, node, tests[-1]):
            # `if bad: ... elif worse: ... else: break`: the loop leaves when every test fails; one finding, at the exit
            source = next((s for t in tests if (s := source_of(t)) is not None), None)
            if source is not None:
                add(DATA, EXIT, node, source, later[0][2])
            continue
        for at, test in enumerate(tests):
            if _exits_both_ways(flat, test, type(node), exits) or _decided_inside(flat, test, tests[at + 1 :]) \
                    or _given_object_tested(flat, test):
                continue
            source = source_of(test, loop)
            if source is not None:
                add(DATA, EXIT, test, source, later[0][2], node)
    for node, ctx in flat.nodes:
        if type(node) is cst.While and not ctx.guarded and not mentions_guard(node.test):
            later = [site for site in sites if node in site[1].loops]
            source = source_of(node.test) if later else None
            if source is not None:
                add(DATA, WHILE, node.test, source, later[0][2], later[0][0])


def tensor_backward(node: cst.CSTNode) -> bool:
    """`loss.backward()`, `scaler.scale(loss).backward()`, `loss.backward(**kwargs)`: a tensor's backward, given no
    positional argument (not `engine.backward(loss)`, handed the loss: a site of its own when it runs one)."""
    return (
        type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward"
        and not any(arg.keyword is None and arg.star != "**" for arg in node.args)
    )


def _backward_sites(flat: Flat) -> list[tuple[cst.Call, Ctx, str]]:
    """The tensor backwards of the function (`tensor_backward`): the backward of what a model computed gathers its
    parameters again, module by module, and reduce-scatters their gradients, with every rank, wherever the loss
    was computed (a trainer handed in, a loss module)."""
    return [(node, ctx, f"{code_of(node.func)}()") for node, ctx in flat.nodes if tensor_backward(node)]


def _backward_in(body: cst.BaseSuite) -> str | None:
    """A tensor's backward (`tensor_backward`) in a `try` body, as its text."""
    for node in walk(body):
        if tensor_backward(node):
            return f"{code_of(node.func)}()"
    return None


def _rank_side(test: cst.BaseExpression, side: str | None) -> tuple[object, bool | None]:
    """The ranks a call under the rank test `test` (in `side` of its `if`) runs on, as the test's text less its
    negations and whether the call runs where that text holds: `if main:` ... `if main:` is one side twice (the main
    rank alone), `if main:` / `else:` or `if not main:` two. A test that opens no `if` branch is its own."""
    if side is None:
        return id(test), None
    holds = side == "body"
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, holds = test.expression, not holds
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
        test.comparisons[0].operator, cst.NotEqual
    ):
        test, holds = test.with_changes(comparisons=[test.comparisons[0].with_changes(operator=cst.Equal())]), not holds
    return code_of(test), holds


def _made_by_every_rank(calls: list[tuple[tuple[int, str | None], int]], callee: str) -> bool:
    """Is a call made under rank tests more than once such that every rank makes it, and not only by several calls
    the same ranks make (`if rank == 0: out = self.policy.forward(obs)` ... `self.policy.forward(out)`: the main rank
    alone runs them)? A model call is made by every rank when both outcomes of one test run it (`if main:` / `else:`,
    `if not main:` ... `if main:`); two tests that differ (`if is_main:` ... `if is_main and step % k == 0:`) may both
    fail on a rank. A collective under two different rank tests is "main process first" (`if local_rank not in
    [-1, 0]: barrier()` ... `if local_rank == 0: barrier()`): every rank joins it once."""
    if len(calls) < 2:
        return False
    branches = {branch for branch, _call in calls}
    if len({call for _branch, call in calls}) < 2:
        return True
    if callee.removesuffix("()").rsplit(".", 1)[-1] in _COLLECTIVE_NAMES:
        return len(branches) > 1
    return any(holds is not None and (text, not holds) in branches for text, holds in branches)


_COLLECTIVE_NAMES = known.COLLECTIVES | known.ENGINE_COLLECTIVES | known.WRAPPER_COLLECTIVES


def _failure_handlers(index: ModelIndex, flat: Flat) -> list[tuple[cst.ExceptHandler, cst.BaseSuite, str]]:
    """Handlers of a failure this rank raised on its own, after which it does not do what its peers do. Whether a
    call raises (out of memory, a bad batch) is this rank's own, so as (the handler, the `try` body, the effect):
    * RETRY: a `try` inside a loop whose body leaves the loop once it succeeds (`break`, `return`) and whose handler
      neither re-raises nor leaves, so the loop runs the body again (`while True: try: out = self.net(x); break` /
      `except torch.cuda.OutOfMemoryError: chunks *= 2`): the body's submodules run more often on this rank;
    * CAUGHT: any other handler of such a failure (`except RuntimeError`, `except Exception`, a bare `except`) with
      a way through that does not raise again or end the process (`if "out of memory" in str(e): return None`,
      `continue`, a fallback pass): the rank skips the rest of a pass its peers finish, or runs another."""
    found = []
    for node, ctx in flat.nodes:
        if type(node) is not cst.Try or ctx.guarded:
            continue
        leaves_on_success = bool(ctx.loops) and (
            any(type(n) in (cst.Break, cst.Return) for n in walk(node.body)) or _sets_loop_flag(node.body, ctx.loops[-1])
        )
        for handler in node.handlers:
            if leaves_on_success and not any(type(n) in (cst.Raise, cst.Break, cst.Return) for n in walk(handler.body)):
                found.append((handler, node.body, RETRY))
            elif ctx.loops and _exhausted(index, handler) and _leaves(handler.body):
                found.append((handler, ctx.loops[-1], EXHAUSTED))  # (the calls of the whole loop are skipped)
            elif _own_failure(index, handler) and not _always_raises(handler.body):
                found.append((handler, node.body, CAUGHT))
    return found


def _sets_loop_flag(body: cst.BaseSuite, loop: cst.CSTNode) -> bool:
    """Does a `try` body end its `while` loop by setting the flag the loop tests (`while flag is False: try: out =
    self.model(x); flag = True`)? Then it leaves the loop once it succeeds, as a `break` would."""
    if not isinstance(loop, cst.While):
        return False
    tested = {n.value for n in walk(loop.test) if type(n) is cst.Name}
    return any(
        type(n) is cst.Assign and any(type(t.target) is cst.Name and t.target.value in tested for t in n.targets)
        for n in walk(body)
    )


def _exhausted(index: ModelIndex, handler: cst.ExceptHandler) -> bool:
    """Does `handler` catch the end of a data iterator: `StopIteration`, or an exception class of the program
    named for exhausted data (`DataloaderExhaustedError`) or derived from `StopIteration`?"""
    caught = handler.type
    if caught is None:
        return False
    types = [element.value for element in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    for written in (dotted(t) or "" for t in types):
        last = written.rsplit(".", 1)[-1]
        if last == "StopIteration" or "Exhausted" in last:
            return True
        cls = index.local_class(written)
        if cls is not None and any(b.rsplit(".", 1)[-1] == "StopIteration" for info in all_bases(cls) for b in info.span.bases):
            return True
    return False


def _leaves(block: cst.BaseSuite) -> bool:
    """Does a handler's `block` leave the loop around it (`break`, `return`) rather than carry on (a new iterator,
    `it = iter(loader)`, and the next batch)?"""
    return any(type(n) in (cst.Break, cst.Return) for n in walk(block)) and not any(
        type(n) is cst.Call and dotted(n.func) in ("iter", "next") for n in walk(block))


def _own_failure(index: ModelIndex, handler: cst.ExceptHandler) -> bool:
    """Does `handler` catch what a rank raises on its own (`_OWN_FAILURES`, a bare `except`, an exception class of
    the program derived from one)?"""
    caught = handler.type
    if caught is None:
        return True
    types = [element.value for element in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(_own_failure_class(index, dotted(t) or "") for t in types)


def _own_failure_class(index: ModelIndex, written: str) -> bool:
    """Is the exception class `written` one of `_OWN_FAILURES`, or a class of the program (this file or one it
    imports) with such a base, directly or through its bases?"""
    if written.rsplit(".", 1)[-1] in _OWN_FAILURES:
        return True
    cls = index.local_class(written)
    if cls is None:
        found = index.external(index.qualify(written)) if written else None
        cls = found[1] if found is not None else None
    return cls is not None and any(
        base.rsplit(".", 1)[-1] in _OWN_FAILURES for info in all_bases(cls) for base in info.span.bases)


def _always_raises(block: cst.BaseSuite) -> bool:
    """Does every way through a handler's `block` raise or end the process (`raise`, `if oom: ... raise e` / `else:
    raise`, `sys.exit(1)`), none leaving it by `return`, `break` or `continue` (`if "out of memory" in str(e): return
    None` before a `raise`)?"""
    return not any(type(n) in (cst.Return, cst.Break, cst.Continue) for n in walk(block)) and _ends(block)


def _ends(block: cst.BaseSuite) -> bool:
    """Does the last statement of `block` raise or end the process, on every branch of a final `if`?"""
    body = getattr(block, "body", ())
    if not body:
        return False
    last = body[-1] if isinstance(body, (list, tuple)) else body
    if isinstance(last, cst.SimpleStatementLine):
        small = last.body[-1] if last.body else None
        if isinstance(small, cst.Raise):
            return True
        return isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and call_name(small.value) in _ENDS_PROCESS
    if isinstance(last, cst.If):
        orelse = last.orelse
        if orelse is None:
            return False
        rest = orelse.body if isinstance(orelse, cst.Else) else cst.IndentedBlock(body=[orelse])
        return _ends(last.body) and _ends(rest)
    return False


def _returned_none(flat: Flat, test: cst.CSTNode, loop: cst.CSTNode) -> str | None:
    """`sub = self.next_batch_hook(batch)` ... `if sub is None: break` in the same loop: a call handed this
    iteration's values answers None when this rank's data runs out (a hook, an iterator, a lookup), so the loop
    leaves at the iteration this rank's data decides. As the call's text, if so."""
    if not (isinstance(test, cst.Comparison) and _is_none_test(test) and isinstance(test.left, cst.Name)):
        return None
    if any(isinstance(t.operator, cst.IsNot) for t in test.comparisons):
        return None  # `if x is not None: break`: leaves on a value found, not on one missing
    name = test.left.value
    counters: frozenset[str] | None = None
    looped: frozenset[str] = frozenset()
    for node, ctx in flat.nodes:
        if type(node) is not cst.Assign or loop not in ctx.loops or not isinstance(node.value, cst.Call):
            continue
        if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
            call = node.value
            if counters is None:
                counters, looped = _loop_counters(flat, loop)
            if any(not arg.star and not _schedule_argument(arg.value, counters, looped) for arg in call.args):
                return f"{code_of(call.func)}() returning None"
    return None


def _schedule_argument(value: cst.BaseExpression, counters: frozenset[str], looped: frozenset[str]) -> bool:
    """Is `value` what a schedule is computed from, the same on every rank: a literal, a setting (`args.base_lr`), a
    dataset's length (`len(train_set)`) or a step counter of the loop (`step`)? A call handed only such values
    (`get_lr(step, len(train_set), args.base_lr)`) answers None at the same step everywhere."""
    if isinstance(value, (cst.SimpleString, cst.Integer, cst.Float)):
        return True
    if type(value) is cst.Attribute or (
        type(value) is cst.Call and isinstance(value.func, cst.Name) and value.func.value == "len" and value.args
    ):  # (of what the function holds whole, not of this iteration's batch: `len(x)`, `batch.size`)
        return all(type(n) is not cst.Name or n.value not in looped for n in walk(value))
    return type(value) is cst.Name and value.value in counters


def _loop_counters(flat: Flat, loop: cst.CSTNode) -> tuple[frozenset[str], frozenset[str]]:
    """Names the loop only counts up by a literal (`step += 1`), bound nowhere else in it; and the names it binds
    otherwise (its items, what its body computes)."""
    counted: set[str] = set()
    bound: set[str] = set()
    for node, ctx in flat.nodes:
        if loop not in ctx.loops:
            continue
        if type(node) is cst.AugAssign and type(node.target) is cst.Name:
            if isinstance(node.operator, cst.AddAssign) and isinstance(node.value, cst.Integer):
                counted.add(node.target.value)
            else:
                bound.add(node.target.value)
        elif type(node) is cst.Assign:
            bound.update(name for t in node.targets for name in bound_names(t.target))
    if type(loop) is cst.For:
        bound.update(bound_names(loop.target))
    return frozenset(counted - bound), frozenset(bound)


def _decided_inside(flat: Flat, test: cst.CSTNode, inner: list[cst.CSTNode]) -> bool:
    """Is an outer test one of whose `or` alternatives is an inner test around the same exit (`end = done or t ==
    steps` ... `if end: if t == steps: break`)? Both hold exactly when the inner one does: the outer decides nothing."""
    if not inner:
        return False
    value = test
    if isinstance(test, cst.Name):
        bound = [n for n, _c in flat.nodes if type(n) is cst.Assign and any(
            isinstance(t.target, cst.Name) and t.target.value == test.value for t in n.targets)]
        if len(bound) != 1:
            return False
        value = bound[0].value
    alternatives = []
    stack = [value]
    while stack:
        part = stack.pop()
        if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.Or):
            stack += [part.left, part.right]
        else:
            alternatives.append(code_of(part, limit=400))
    return len(alternatives) > 1 and any(code_of(t, limit=400) in alternatives for t in inner)


# What a value's metadata says is the same on every rank for one model: not a data decision.
_META_CALLS = frozenset({"size", "dim", "ndimension", "type", "get_device", "is_contiguous", "is_floating_point"})
_META_FUNCS = frozenset({"isinstance", "type", "hasattr", "callable", "getattr"})


def derived_names(
    flat: Flat, outputs: dict[int, str], agreed: Callable[[cst.CSTNode], bool] | None = None,
    sites: dict[str, list[tuple[int, tuple]]] | None = None,
) -> dict[str, str]:
    """Local names whose value comes from what a submodule-running call returned (or was filled from it); a field
    of an object (`state.flag`) written with an all-reduced value maps to "" (it holds no rank's own value).
    `sites`, when given, receives where each became one (flat position, enclosing loops)."""
    names: dict[str, str] = {}
    containers = set()  # names bound to a list/dict/set the function builds itself
    holders = set()  # locals and arguments: objects an output can be handed to (`strategy.advance(out)`)
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and isinstance(node.value, (cst.List, cst.Dict, cst.Set)):
            for target in node.targets:
                containers.update(bound_names(target.target))
        if type(node) is not cst.CompFor:
            for target in targets_of(node)[0]:
                holders.update(bound_names(target))
    root = flat.nodes[0][0] if flat.nodes else None
    if isinstance(root, cst.FunctionDef):
        holders.update(p.name.value for p in (*root.params.posonly_params, *root.params.params, *root.params.kwonly_params))
    # Where each name became derived (position, enclosing loops): a node before that site sees it only when a loop
    # around both carries it back (the second pass is for loops, not for code that runs before the output exists).
    where: dict[str, list[tuple[int, tuple]]] = {} if sites is None else sites
    all_names = names
    # Names bound to what an object handed a derived value answered (`state, r, done, info = env.step(action)`); a
    # field read from one by key (`info[0]["episodic_return"]`) is marked `name?`: whether it is None is the rank's own
    replies: set[str] = set()

    def mark(name: str, source: str, site: tuple[int, tuple]) -> None:
        all_names.setdefault(name, source)
        sites = where.setdefault(name, [])
        if site not in sites:
            sites.append(site)

    for _ in range(2):  # a second pass carries values around loops
        for node, ctx in flat.nodes:
            kind = type(node)
            if kind is cst.CompFor:
                # `[i for i, r in enumerate(out) if r[1] < t]`: the items of an output, read in the comprehension (a
                # name bound nowhere else in the function, so no local of the same spelling is taken for one)
                source = _derived_source(node.iter, all_names, outputs, agreed) if all_names or outputs else None
                for name in bound_names(node.target) if source is not None else ():
                    if name not in holders:
                        mark(name, source, (flat.position.get(id(node), -1), ctx.loops))
                continue
            targets, value = targets_of(node)
            if value is None and kind not in (cst.Call, cst.Assign, cst.AugAssign):
                continue  # (binds, hands off and fills nothing: which names it sees is never asked)
            at = flat.position.get(id(node), -1)
            site = (at, ctx.loops)
            names = {
                name: why for name, why in all_names.items()
                if name not in where
                or any(p < at or any(l is m for l in around for m in ctx.loops) for p, around in where[name])
            } if all_names else all_names
            if value is not None:
                source = _derived_source(value, names, outputs, agreed)
                if source is None and kind in (cst.Assign, cst.AugAssign) and ctx.conds:
                    # `if done: episodes += 1`: a counter or flag set under a test on what the calls returned
                    source = next((s for t in ctx.conds if (s := _derived_source(t, names, outputs, agreed))), None)
                if source is not None:
                    if kind is cst.Assign and _reply(value, holders, names, outputs, agreed):
                        replies.update(name for target in targets for name in bound_names(target))
                    elif kind is cst.Assign and _keyed_root(value) in replies:
                        # `ret = info[0]["episodic_return"]`: a record's field, there at this rank's episode end only
                        for target in targets:
                            for name in bound_names(target):
                                mark(f"{name}?", source, site)
                    for target in targets:
                        for name in bound_names(target):
                            mark(name, source, site)
                        if kind is cst.Assign and (container := stored_into(target)) is not None:
                            mark(container, source, site)  # `losses[i] = float(loss)`: the list holds it
                        if isinstance(target, cst.Subscript) and (held := holder_key(target, ())) is not None:
                            mark(held, source, site)  # `self.metrics["val_loss"] = total`: the record holds it
                            continue
                        for part, why in _unpacked(target, value, source, names, outputs, agreed, ctx):
                            if isinstance(part, cst.Attribute) and isinstance(part.value, cst.Name) \
                                    and part.value.value == "self":  # `self.stop = result.is_done()`: a flag on it
                                mark(f"self.{part.attr.value}", why, site)
                elif kind is cst.Assign and agreed is not None and isinstance(value, cst.Name) and agreed(value):
                    for target in targets:  # `state.flag = v` for `v` all-reduced: that field holds no rank's own
                        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):  # value, even
                            if target.value.value != "self":  # on an object handed one (`state.step(action)`)
                                all_names.setdefault(code_of(target), "")
            if kind in (cst.Call, cst.Assign, cst.AugAssign):
                # `strategy.advance(out)`, `state.logits = out`, `self.tracker.update(out)`: the object's state
                # follows what it was handed (`state.handoff`)
                found = handoff(node, holders, flat, lambda call: id(call) in outputs)
                if found is not None:
                    source = next((s for v in found.values if (s := _derived_source(v, names, outputs, agreed))), None)
                    if source is None and kind is not cst.Call and ctx.conds:  # `if worse: self.state.bad += 1`
                        source = next((s for t in ctx.conds if (s := _derived_source(t, names, outputs, agreed))), None)
                    if source is not None:
                        mark(found.holder, source, site)
                        for target in targets if kind is not cst.Call else ():
                            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Attribute):
                                mark(code_of(target), source, site)  # (the field written: `self.state.diverged`)
            if kind is cst.Call and containers:
                # `hyps.append(out)` / `self.post_process(best, ended)`: a container of this function
                # that a call fills with derived values becomes derived itself.
                source = next((s for a in node.args if (s := _derived_source(a.value, names, outputs, agreed))), None)
                if source is None:
                    continue
                receivers = [a.value for a in node.args]
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in FILLS:
                    receivers.append(func.value)
                for expr in receivers:
                    if isinstance(expr, cst.Name) and expr.value in containers:
                        mark(expr.value, source, site)
    return all_names


def _reply(
    value: cst.BaseExpression, holders: set[str], names: dict[str, str], outputs: dict[int, str],
    agreed: Callable[[cst.CSTNode], bool] | None,
) -> bool:
    """Is `value` the answer of a method of an object of this function handed a derived value (`env.step(action)`
    for `action` the policy returned), not a submodule's output?"""
    return (
        type(value) is cst.Call and id(value) not in outputs and isinstance(value.func, cst.Attribute)
        and isinstance(value.func.value, cst.Name) and value.func.value.value in holders
        and any(_derived_source(arg.value, names, outputs, agreed) is not None for arg in value.args)
    )


def _keyed_root(value: cst.BaseExpression) -> str | None:
    """The name a keyed read of a record starts from (`info[0]["episodic_return"]`, `info.get("episode")`: `info`)."""
    keyed, node = False, value
    while True:
        if isinstance(node, cst.Subscript):
            keyed = keyed or any(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString) for e in node.slice)
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get" \
                and node.args and isinstance(node.args[0].value, cst.SimpleString):
            keyed, node = True, node.func.value
        else:
            return node.value if keyed and isinstance(node, cst.Name) else None


def _given_object_tested(flat: Flat, test: cst.CSTNode) -> bool:
    """Is `test` an `if` on whether an object is there (`if es:`, `if not tracker:`, `if stopper is not None:`), one
    the function was given or bound only to `None` or to an object it built (`es = EarlyStopper(n)`)? What it was
    handed since (`es.check_loss(model, v)`) changes the object's state, not whether it exists."""
    if not isinstance(flat.parent.get(id(test)), cst.If):
        return False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
            test.comparisons[0].operator, (cst.Is, cst.IsNot)) and _is_none(test.comparisons[0].comparator):
        test = test.left
    if not isinstance(test, cst.Name):
        return False
    root = flat.nodes[0][0] if flat.nodes else None
    if type(root) is not cst.FunctionDef:
        return False
    params = root.params
    given = test.value in {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    values = [value for node, _ctx in flat.nodes for target, value in [targets_of(node)] if value is not None
              and any(test.value in bound_names(t) for t in target)]
    if not given and not values:
        return False
    if not any(type(node) is cst.Call and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
               and node.func.value.value == test.value for node, _ctx in flat.nodes):
        return False  # (a flag, `if is_main:`, not an object whose methods the function calls)
    # (bound only to `None` or to an object built here: `es = None` ... `es = EarlyStopper(patience)`)
    return all(_is_none(value) or isinstance(value, cst.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1][:1].isupper()
               for value in values)


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _unpacked(
    target: cst.CSTNode, value: cst.CSTNode, source: str, names: dict[str, str], outputs: dict[int, str],
    agreed: Callable[[cst.CSTNode], bool] | None, ctx: Ctx,
) -> Iterator[tuple[cst.CSTNode, str]]:
    """Each part an assignment target writes, with why it holds a derived value: the target itself, or each element
    of a tuple target with the element of a tuple value it takes (`self.best, self.patience = metric, n`: `best`
    from the metric, `patience` only from a test on it, if any)."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        yield target, source
        return
    items = value.elements if isinstance(value, (cst.Tuple, cst.List)) else ()
    if len(items) != len(target.elements):
        yield from ((element.value, source) for element in target.elements)
        return
    tested = next((s for t in ctx.conds if (s := _derived_source(t, names, outputs, agreed))), None)
    for element, item in zip(target.elements, items):
        why = _derived_source(item.value, names, outputs, agreed) or tested
        if why is not None:
            yield element.value, why


def _derived_source(
    expr: cst.CSTNode, names: dict[str, str], outputs: dict[int, str],
    agreed: Callable[[cst.CSTNode], bool] | None = None,
) -> str | None:
    """The submodule call whose output `expr` uses as a value (not only its shape or type), if any; a value
    all-reduced or broadcast first (`dist.all_reduce(loss)`: `agreed` says whether a use of a local comes after
    such a collective, or a call hands back what one agreed on, `Taint.agreed_value`) is the same on every rank and
    is no rank's own."""
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Call:
            callee = outputs.get(id(node))
            if callee is not None:
                return callee
            if agreed is not None and agreed(node):
                continue  # a collective's value, every rank's gathered, a method's returning one (`Taint.agreed_value`)
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _META_CALLS:
                continue
            if isinstance(func, cst.Name) and func.value in _META_FUNCS:
                continue
        elif kind is cst.Name:
            if node.value in names and not (agreed is not None and agreed(node)):
                return names[node.value]
            continue
        elif kind is cst.Attribute and (node.attr.value in VALUE_FREE_ATTRS or setting_of_an_object(node)):
            continue  # (`model.args.n_epochs` of a model later loaded with a rank's best state: a setting still)
        elif kind is cst.Attribute and isinstance(node.value, cst.Name) and node.value.value == "self":
            source = names.get(f"self.{node.attr.value}")
            if source is not None:
                return source
            continue
        elif kind is cst.Attribute and isinstance(node.value, cst.Name) and (field := code_of(node)) in names:
            if names[field]:
                return names[field]
            continue  # a field written with a value no rank holds alone (an empty source)
        elif kind is cst.Attribute:
            stack.append(node.value)  # (the attribute's name is no local: `config.input_ids` reads no `input_ids`)
            continue
        elif kind is cst.Arg:
            stack.append(node.value)  # (nor is a keyword's: `f(input_ids=n)` hands `n`)
            continue
        elif kind is cst.Comparison and (_is_none_test(node) or _sentinel_test(node)):
            if isinstance(node.left, cst.Name) and _is_none_test(node) and (why := names.get(f"{node.left.value}?")):
                return why  # `if ret is not None:` for `ret = info[0]["episodic_return"]`: the episode ended here
            continue  # `out is None`, `partial is not True`: which value the name holds, not what it computed
        elif kind is cst.Lambda:
            continue
        stack.extend(children(node))
    return None


def _sentinel_test(node: cst.Comparison) -> bool:
    """`x is True` / `x is not False`: an identity test against a constant the code set as a sentinel."""
    return all(
        isinstance(t.operator, (cst.Is, cst.IsNot)) and isinstance(t.comparator, cst.Name)
        and t.comparator.value in ("True", "False", "None")
        for t in node.comparisons
    )


def _decisions(flat: Flat) -> list[cst.CSTNode]:
    """Every expression that decides what runs: tests, loop iterables."""
    out: list[cst.CSTNode] = []
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind in (cst.If, cst.While, cst.IfExp):
            out.append(node.test)
        elif kind is cst.BooleanOperation:
            out.append(node.left)
        elif kind is cst.For:
            out.append(node.iter)
        elif kind in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            comp = node.for_in
            while comp is not None:
                out.append(comp.iter)
                out.extend(test.test for test in comp.ifs)
                comp = comp.inner_for_in
    return out


class Calls(Protocol):
    """What counts as a synchronising call in a function (submodule calls, collectives)."""

    def callee(self, call: cst.Call) -> str | None: ...

    def is_module_sequence(self, expr: cst.BaseExpression) -> bool: ...


def _fixed_length(iterable: cst.BaseExpression, calls: Calls) -> bool:
    """`zip(self.layers, xs)` / `enumerate(self.layers)`: the module list fixes the trip count."""
    iterable = same_items(iterable)
    if isinstance(iterable, cst.Call) and call_name(iterable) in {"zip", "enumerate"}:
        return any(calls.is_module_sequence(same_items(arg.value)) for arg in iterable.args)
    return calls.is_module_sequence(iterable)


def _cut_by(iterable: cst.BaseExpression, taint: Taint) -> bool:
    """`self.layers[:n]` with a tainted `n`: a module list cut to a length that differs per rank."""
    return isinstance(iterable, cst.Subscript) and any(taint.of(element) for element in iterable.slice)


def _exits_both_ways(flat: Flat, test: cst.CSTNode, kind: type, exits: list) -> bool:
    """Do both branches of the `if` whose test is `test` hold an exit of this kind?"""
    branch = flat.parent.get(id(test))
    if not isinstance(branch, cst.If) or branch.test is not test or branch.orelse is None:
        return False
    sides = set()
    for node, _ctx in exits:
        if type(node) is kind:
            side = _side(flat, node, branch)
            if side:
                sides.add(side)
    return sides == {"body", "orelse"}


def _in_else(flat: Flat, node: cst.CSTNode, test: cst.CSTNode) -> bool:
    """Does `node` sit in the final `else` of the `if` whose test is `test` (not in a further `elif`)?"""
    branch = flat.parent.get(id(test))
    return isinstance(branch, cst.If) and isinstance(branch.orelse, cst.Else) and _side(flat, node, branch) == "orelse"


def _side(flat: Flat, node: cst.CSTNode, branch: cst.If) -> str | None:
    """'body' or 'orelse' if `node` sits in that branch of `branch`, else None."""
    child, parent = node, flat.parent.get(id(node))
    while parent is not None:
        if parent is branch:
            return "body" if child is branch.body else "orelse" if child is branch.orelse else None
        child, parent = parent, flat.parent.get(id(parent))
    return None


def _is_while_test(flat, test: cst.CSTNode) -> bool:
    parent = flat.parent.get(id(test))
    return isinstance(parent, cst.While) and parent.test is test


def _loop_iter(loop: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(loop, cst.For):
        return loop.iter
    if isinstance(loop, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        return loop.for_in.iter
    return None


def _shares_test(a: Ctx, b: Ctx) -> bool:
    """Do two nodes sit under the same if statement (same or other branch)?"""
    return any(any(t is u for u in b.conds) for t in a.conds)


_EFFECT = {
    GATE: "whether `{callee}` runs depends on `{test}`",
    ITERATE: "`{callee}` runs once per item of `{test}`",
    SKIP: "the loop skips `{callee}` when `{test}`",
    EXIT: "the remaining calls of `{callee}` are skipped when `{test}`",
    WHILE: "`{callee}` runs for as long as `{test}`",
    COUNT: "`{callee}` runs once per step of `{test}`",
    PICK: "`{test}` picks which module runs as `{callee}`",
    RETRY: "`{callee}` runs again whenever it raises (`{test}`)",
    CAUGHT: "when `{callee}` fails on this rank the failure is caught and the rank carries on (`{test}`)",
    EXHAUSTED: "this rank leaves the loop when its own data runs out (`{test}`), while its peers run `{callee}` again",
    RAISE: "this rank stops with an error when `{test}`, while its peers run `{callee}` again",
    CHECK: "this rank stops with an error in `{callee}` when `{test}`, while its peers go on to the modules its caller "
    "runs next",
}
_REASON = {
    RANK: "the process rank",
    RANDOM: "a random draw",
    HOST_RANDOM: "a host random draw",
    DATA: "this rank's data",
    HOST: "the files this host holds",
    CLOCK: "this host's clock",
}


def message(d: Divergence, test: str) -> str:
    """The finding text for a divergence: what decides the call, and what differs between ranks."""
    if isinstance(d.node, (cst.Break, cst.Return)):  # reached when every test of an `if`/`elif` chain failed
        what = f"the remaining calls of `{d.callee}` are skipped when this `{test.split()[0]}` is reached"
    elif d.effect == PICK and d.callee == test:  # `self.heads[key](x)`: the item is what runs
        what = f"`{test}` picks which module runs"
    elif d.effect in (RETRY, CAUGHT, EXHAUSTED):  # reported at the handler: a bare `except:` has no type to quote
        what = _EFFECT[d.effect].format(callee=d.callee, test=d.source)
    else:
        what = _EFFECT[d.effect].format(callee=d.callee, test=test)
    waits = "gradient reduce-scatter" if d.callee.endswith(".backward()") else "parameter all-gather"
    return f"{what}, which depends on {_REASON[d.kind]} (`{d.source}`); ranks that skip the call hang in its {waits}"
