"""What a value is: a built model, one of its partitioned parameters, an iterable or mapping of them.

The ZG1 rules ask of an expression where its value came from, not how the path
to it is spelt. One small lattice (`Model`, `Param`, `Items`, `Tup`, `Mapping`,
`Union`) and one set of transfer rules carry a built model from its sources to
the operations on its parameters, through every binding form:

* sources: the model arguments and held attributes of code a training loop
  hands the built model to (`handed.holders`: `holds.module_arguments`,
  `holds.other_objects_models`, `holds.held_attributes`), and the model
  arguments of any class's `__init__` (an EMA, a meta-learning or data-parallel
  wrapper given the built model: under `zero.Init` a module is partitioned
  once its constructor returned, so whatever a constructor is handed is);
  a mapping's entry under a constant key the package keeps a model under
  (`state[MODEL]`, `program/keyed`); and the other methods of a plain class
  one of whose methods kept a model's parameters on `self` (`self.params =
  state[MODEL].parameters()` in `on_start`, clipped in `on_backward`); and
  an optimizer's parameter groups in its constructor (`self._params =
  self.param_groups[0]["params"]`, LBFGS: the ZeRO-3 optimizer swaps each
  group's list for its partitions afterwards, so a list kept then stays the
  model's parameters, while `step`'s walk of the groups reaches partitions);
* transfer: `.parameters()`/`.named_parameters()`/`.modules()`/`.children()`/
  `.state_dict()`, attribute paths to children and parameters, `getattr`,
  `deepcopy`, `.data`, assignment, tuple unpacking, `for` targets over
  `zip`/`enumerate`/`.items()`/`.values()`, comprehensions, containers
  (literals, `.append`/`.extend`, subscripts), attributes of `self` written in
  any method and read in any other (also through `@property`), and the return
  and `yield` values of the file's functions and methods, summarised once per
  signature of argument values (memoised, recursion cut);
* operations (`effects.usage`): `.data` reads and writes, in-place methods,
  `_foreach_*_`, sizes, initialisers, deep copies, state dicts, `torch.save`,
  clipping, flattening, averaging and `apply` on the built model.

Each operation becomes a `ParamAccess` in `Scope.HANDED` at the line of the
operation (`handed.handed_accesses` adds them after its own, so a node both
find is reported once). What keeps code safe keeps it safe here: gathered
contexts, a module built in the same scope (never a source), `detach_()` and
metadata, sizes of a model as a whole, plain tensors.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union as _U

from ..program import known
from ..program.class_values import attribute_strings, string_list
from ..program.holds import (
    averager, config_like, may_have_module_arguments, may_have_module_containers, module_arguments, module_container_arguments,
)
from ..program.index import PROPERTY_DEF, ClassInfo, MethodInfo, ModelIndex, entry_name, super_method
from ..program.keyed import constant_key, keyed_model
from ..program.members import UNKNOWN_CLASS, Kind, classify, classify_unpacked, has_params, member_of, member_param
from ..program.skeleton import FunctionSpan
from ..program.tree import call_name, code_of, cst, dotted
from .access import CHECK, COPY, GRAD, META, READ, SIZE, STATE, WRITE, INIT, ParamAccess, Reach, Scope, Via
from .effects import (
    GRAD_WRITES, WHOLE_ORDER, WHOLE_USE, argument_effects, bulk_written, clipped, computed_with, inherited_argument_effects,
    state_keys_only, resolve_function, usage, writes_module_params, written_in_bulk,
)
from .flow import Flat, own_only, runs_gathered
from .grads import gradient_cancelled, gradient_read, gradient_write
from .own import answering_classes
from .persistence import persistent_param
from .returned import getter_paths, is_property, property_attributes
from .script import class_partitions, function_scope

__all__ = [
    "Model", "Param", "Items", "Tup", "Mapping", "Averaged", "Container", "Holder", "Union", "Value", "join", "item_of", "provenance_accesses",
    "factory_made",
    "Params", "Pairs", "OPERATIONS", "reaches_operation", "contained", "module_constructor",
]

# transformers' getters of a model's embedding layers (`PreTrainedModel.get_input_embeddings`).
_EMBEDDING_GETTERS = frozenset({"get_input_embeddings", "get_output_embeddings"})


# --- the lattice --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Model:
    """A built module, partitioned by ZeRO-3 (or a copy made of one); `origin` is how the source spelt it."""

    origin: str
    classes: tuple[str, ...] = ()
    child: bool = False  # a submodule reached by its path (its state dict may hold buffers alone)


@dataclass(frozen=True, slots=True)
class Param:
    """A partitioned parameter of a built model (or a view of its `.data`)."""

    origin: str  # what it came from (`model.parameters()`, `model.fc.weight`)
    walked: bool = False  # an item of a parameter walk, not reached by its attribute path
    state: bool = False  # a tensor of a state dict: its reads are ZG108's, at the `state_dict()` call
    owner_classes: tuple[str, ...] = ()  # the classes the module it was reached on may have (all known), and
    name: str = ""  # its name there: how large it is, where those classes tell (`analysis/persistence`)


@dataclass(frozen=True, slots=True)
class Items:
    """An iterable or a list of values of one kind (`Items(Param)`: parameters; of `Tup`: named pairs)."""

    item: Value


@dataclass(frozen=True, slots=True)
class Tup:
    """A tuple of known length, item by item (`None`: a value of no interest)."""

    items: tuple[Value | None, ...]


@dataclass(frozen=True, slots=True)
class Mapping:
    """A dict from keys of no interest to values of one kind (`dict(model.named_parameters())`, a state dict); or,
    written out with constant keys (`{"model": model, "optimizer": opt, "step": 0}`), the value under each key:
    `state["optimizer"]` is the optimizer, not the model beside it."""

    value: Value
    entries: tuple[tuple[str, Value | None], ...] | None = None  # constant key -> its value, when every key is one


@dataclass(frozen=True, slots=True)
class Averaged:
    """An object a built model was handed to that keeps a copy of its weights and updates from it later (a weight
    average: `EMA(model)`; `ema.update()` reads the model's partitioned parameters)."""

    model: Model


@dataclass(frozen=True, slots=True)
class Container:
    """A container of a built model's parameters that a call of unknown effect made from the model or its parameters
    (`TensorDict.from_module(model)`, `make_functional(model)`, `OrderedDict(model.named_parameters())`, a library's
    `get_params(model)`): its items, values, subscripts, attributes and leaves are those parameters (or copies of their
    placeholders), and an in-place write or a `.data` read of the container itself touches every one of them."""

    origin: str


@dataclass(frozen=True, slots=True)
class Holder:
    """A plain object (of a class of the file that is no module) that keeps a built model it was handed, or `self` in
    the methods of such a class: copying or pickling it whole copies or pickles the model's placeholders. Nothing
    else is followed through it (its attributes are typed where the class is read)."""

    origin: str
    cls: str  # its class


@dataclass(frozen=True, slots=True)
class Union:
    """One of several kinds (`self.m = model` in one branch, `self.m = [model]` in another)."""

    options: tuple[Value, ...]  # in the order the paths were joined: which option answers first is the same every run


Value = _U[Model, Param, Items, Tup, Mapping, Averaged, Container, Holder, Union]


def Params(origin: str) -> Items:  # noqa: N802  (a constructor of the lattice)
    """An iterable of partitioned parameters (`model.parameters()`)."""
    return Items(Param(origin, walked=True))


def Pairs(origin: str) -> Items:  # noqa: N802
    """An iterable of (name, parameter) pairs (`model.named_parameters()`)."""
    return Items(Tup((None, Param(origin, walked=True))))


def contained(origin: str, shape: tuple) -> Value | None:
    """The value of an argument annotated as a container of modules (`holds.module_container_arguments`'s shape):
    `list[Net]` is `Items(Model)`, `dict[str, Net]` a `Mapping` of them, `tuple[DataLoader, Net]` a `Tup`."""
    kind, inner = shape
    if kind == "model":
        return Model(origin, inner)
    if kind == "tuple":
        return Tup(tuple(contained(origin, s) if s is not None else None for s in inner))
    value = contained(origin, inner)
    return (Items(value) if kind == "items" else Mapping(value)) if value is not None else None


def join(a: Value | None, b: Value | None) -> Value | None:
    """What a value is when it is `a` on one path and `b` on another (a may-analysis: either counts)."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if type(a) is type(b) and isinstance(a, Model):
        classes = tuple(dict.fromkeys(a.classes + b.classes))  # type: ignore[union-attr]
        return Model(a.origin, classes, a.child and b.child)  # type: ignore[union-attr]
    if type(a) is type(b) and isinstance(a, Items):
        inner = join(a.item, b.item)  # type: ignore[union-attr]
        return Items(inner) if inner is not None else None
    options = tuple(dict.fromkeys((*_options(a), *_options(b))))
    return Union(options) if len(options) > 1 else options[0]


def _options(value: Value | None) -> tuple[Value, ...]:
    if value is None:
        return ()
    return value.options if isinstance(value, Union) else (value,)


def _each(value: Value | None, step) -> Value | None:
    """`step` applied to each option of `value`, joined."""
    found = None
    for option in _options(value):
        found = join(found, step(option))
    return found


def leaf(container: Container) -> Value:
    """What an item, value or subscript of a container of parameters is: one of the parameters, or a container of
    some of them (nested: `params["encoder"]`). (An attribute stays the container: an object made from a model
    may keep other things there, `ema.ema_model`, whose methods are no reads.)"""
    return Union((Param(container.origin, walked=True), container))


def item_of(value: Value | None) -> Value | None:
    """What iterating `value` yields: an item of `Items`, a submodule of a module container, a tuple's items, a
    container's leaves."""

    def step(v: Value) -> Value | None:
        if isinstance(v, Items):
            return v.item
        if isinstance(v, Container):
            return leaf(v)
        if isinstance(v, Model):
            return v  # a `ModuleList` walked: its modules
        if isinstance(v, Tup):
            found = None
            for part in v.items:
                found = join(found, part)
            return found
        return None  # a mapping's keys, a parameter's rows

    return _each(value, step)


def _contains_model(value: Value | None, containers: bool = True) -> bool:
    """Does `value` hold a built model or its parameters, anywhere in its items (with `containers`, also a
    container another call made of them)?"""
    for v in _options(value):
        if isinstance(v, Model | Param) or containers and isinstance(v, Container):
            return True
        if isinstance(v, Items) and _contains_model(v.item, containers) \
                or isinstance(v, Mapping) and _contains_model(v.value, containers):
            return True
        if isinstance(v, Tup) and any(_contains_model(p, containers) for p in v.items):
            return True
    return False


def _model(value: Value | None) -> Model | None:
    return next((v for v in _options(value) if isinstance(v, Model)), None)


def _whole(value: Value | None) -> bool:
    """Is `value` a built model itself, not a submodule reached by its path?"""
    return any(isinstance(v, Model) and not v.child for v in _options(value))


def _param(value: Value | None) -> Param | None:
    return next((v for v in _options(value) if isinstance(v, Param)), None)


def _holds_parameters(value: Value | None) -> bool:
    """Does `value` hold a built model or its parameters themselves (not a container another call made)?"""
    return _contains_model(value, containers=False)


def _container(value: Value | None) -> Container | None:
    return next((v for v in _options(value) if isinstance(v, Container)), None)


def _params(value: Value | None) -> Param | None:
    """The parameter an iterable of parameters yields (a module's `.parameters()`, a list of them)."""
    return next((v.item for v in _options(value) if isinstance(v, Items) and isinstance(v.item, Param)), None)


# --- transfer rules ------------------------------------------------------------------------------------------

_WALKS = {
    "parameters": lambda o: Params(o),
    "named_parameters": lambda o: Pairs(o),
    "modules": lambda o: Items(Model(o)),
    "children": lambda o: Items(Model(o)),
    "named_modules": lambda o: Items(Tup((None, Model(o)))),
    "named_children": lambda o: Items(Tup((None, Model(o)))),
    "state_dict": lambda o: Mapping(Param(o, walked=True, state=True)),
    # a `ModuleDict`'s entries (only a container of modules answers these on a module)
    "values": lambda o: Items(Model(o)),
    "items": lambda o: Items(Tup((None, Model(o)))),
}
# A `ModuleDict`'s walks of its entries, which take no arguments (a tensor dict's `items(True, True)` is its own).
_ENTRIES = frozenset({"values", "items"})
# Module methods that return the module itself.
# Text of a method that may hand back a walk of its module (`return self.parameters()`, `params =
# list(self.named_parameters()) ... return params`): the trigger of `_Engine._model_method`.
_RETURNS_WALK = re.compile(r"\breturn\b.*\bself\.(?:" + "|".join(_WALKS) + r")\(", re.DOTALL)
_RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16", "requires_grad_", "to_empty",
     "share_memory", "type"}
)  # fmt: skip
# Builtins whose result holds the items of their (first, or `filter`'s second) argument.
_SAME_ITEMS = frozenset({"list", "tuple", "iter", "sorted", "reversed", "set", "frozenset", "filter"})
_SIZE_NAME = re.compile(
    r"(?:^|_)(?:dim|dims|size|sizes|len|length|count|idx|index|shape|device|dtype|features|channels|heads|classes)$"
    r"|^n_|^num_"
)
# Calls that return something other than the module they are given (never a wrapper passing it on).
_NOT_PASSED_ON = frozenset(
    {"len", "list", "tuple", "print", "str", "repr", "isinstance", "id", "type", "sum", "hasattr", "getattr",
     "sorted", "dict", "set", "iter", "next", "vars", "callable", "any", "all", "max", "min", "format"}
)  # fmt: skip
_MAX_DEPTH = 6  # helper calls followed from one entry function
# Text without which a method other than the constructor writes no attribute of `self` itself: an
# assignment, a container filled (helpers the constructor calls are read with its arguments there).
_WRITES_SELF = re.compile(r"self\.\w+(?:\[[^\]\n]*\])?\s*(?::[^=\n]*)?[-+*/|]?=(?!=)|self\.\w+\.(?:append|extend|insert)\(")


def _literal_str(expr: cst.BaseExpression) -> str | None:
    return expr.evaluated_value if isinstance(expr, cst.SimpleString) else None  # type: ignore[return-value]


def module_constructor(cls: ClassInfo | None, name: str) -> bool:
    """Is the function `name` of `cls` a module's `__init__`? It runs under `zero.Init` when the model is built, and
    `apply` there gathers each module it visits (`self.generator = image_generator.apply(weights_init)`)."""
    return name == "__init__" and cls is not None and cls.is_module


@dataclass(eq=False)
class _Run:
    """One function read with the values of its arguments: the names it binds, what it returns or yields."""

    index: ModelIndex
    span: FunctionSpan
    cls: ClassInfo | None
    flat: Flat
    env: dict[str, Value] = field(default_factory=dict)
    returned: Value | None = None
    yielded: Value | None = None
    self_writes: dict[str, Value] = field(default_factory=dict)  # `self.X = value` in this function
    items_set: bool = False  # an item was assigned (`model._modules[name] = Linear(...)`): its text is bound
    # `ws = [f(p) for p in ws]`: what the first `for` of a comprehension assigned to a name walks, taken before
    # the assignment rebinds that name (Python evaluates that iterable first), by id of the `for`
    first_items: dict[int, Value | None] = field(default_factory=dict)


class _Engine:
    """The provenance of one file's values, computed lazily: per function and signature, once."""

    def __init__(self, index: ModelIndex, engines: dict[int, _Engine] | None = None) -> None:
        self.index = index
        self.engines = engines if engines is not None else {}  # id(index) -> its engine: one per file, shared
        self.engines[id(index)] = self
        self.summaries: dict[tuple, Value | None] = {}
        self.accesses: dict[tuple[int, str], ParamAccess] = {}
        self.attrs: dict[int, dict[str, Value]] = {}  # id(class) -> attribute -> value, from every method
        self.uses: dict[tuple, set[str]] = {}  # a summary's key -> the uses its run (and its callees) recorded
        self.frames: list[set[str]] = []  # the uses recorded by each run in progress
        self.follow_self = True  # whether `self.m(...)` is read with its arguments
        self.holding: set[int] = set()  # id() of the classes whose methods a caller knows to hold a model
        self.seeded: dict[int, dict[str, Value]] = {}  # id(constructor span) -> its arguments holding a model
        self.depth = 0

    # class state ------------------------------------------------------------------------------------------

    def class_attrs(self, cls: ClassInfo) -> dict[str, Value]:
        """What each attribute of `self` holds, from the assignments of every method (two rounds, so that one
        method's attribute read by another's assignment is seen)."""
        key = id(cls)
        if key in self.attrs:
            return self.attrs[key]
        self.attrs[key] = {}
        init = cls.method("__init__")
        if key not in self.holding and (init is None or not self._seed_arguments(init.span, cls)):
            return {}  # nothing of a model was handed to it: its attributes hold none (and are not read)
        for _round in range(2):
            found: dict[str, Value] = {}
            for method in cls.all_methods():
                if method.owner is not cls and not method.owner.is_module and cls.is_module:
                    continue
                if method.name != "__init__" and not _WRITES_SELF.search(method.text):
                    continue  # binds nothing on `self` (most forwards): nothing to read for its state
                run = self._read(method.span, cls, self._seed_arguments(method.span, cls), report=False)
                for name, value in run.self_writes.items() if run is not None else ():
                    found[name] = join(found.get(name), value)  # type: ignore[assignment]
            if found == self.attrs[key]:
                break
            self.attrs[key] = found
        return self.attrs[key]

    def _seed_arguments(self, span: FunctionSpan, cls: ClassInfo | None) -> dict[str, Value]:
        """Arguments that hold a built model on entry: those of a constructor (built before it was called), and of
        a property setter (`@critic.setter`, run by `self.critic = critic`: handed what its caller had built)."""
        if span.name != "__init__" and not _setter(self.index, span):
            return {}
        if id(span) not in self.seeded and not may_have_module_arguments(self.index, span) \
                and not may_have_module_containers(self.index, span):
            self.seeded[id(span)] = {}  # told from the `ast` tree: no libcst parse of a constructor that takes none
        if id(span) not in self.seeded:
            scope = function_scope(self.index, span)
            node = scope.node if scope is not None else None
            self.seeded[id(span)] = {} if not isinstance(node, cst.FunctionDef) else {
                **{name: contained(name, shape) for name, shape in module_container_arguments(self.index, node).items()},
                **{name: Model(name, classes) for name, classes in module_arguments(self.index, node).items()},
            }
        if span.name == "__init__" and cls is not None and _PARAMETERS_KEPT.search(cls.text) \
                and not cls.is_module and not _optimizer(cls) and (key := (id(span), "walks")) not in self.seeded:
            self.seeded[key] = {}
            scope = function_scope(self.index, span)
            if scope is not None and isinstance(scope.node, cst.FunctionDef):
                self.seeded[key] = {name: Union((Params(name), Pairs(name)))
                                    for name in parameter_walk_arguments(scope.node)}
        return {**self.seeded[id(span)], **self.seeded.get((id(span), "walks"), {})}

    # reading a function --------------------------------------------------------------------------------------

    def _read(self, span: FunctionSpan, cls: ClassInfo | None, seeds: dict[str, Value], report: bool) -> _Run | None:
        scope = function_scope(self.index, span)
        if scope is None or not isinstance(scope.node, cst.FunctionDef):
            return None
        run = _Run(self.index, span, cls, scope.flat, dict(seeds))
        self.depth += 1
        try:
            self._walk(run, scope, report)
        finally:
            self.depth -= 1
        return run

    def _attrs_key(self, cls: ClassInfo | None) -> tuple:
        if cls is None or id(cls) not in self.attrs:
            return ()
        return tuple(sorted(self.attrs[id(cls)].items(), key=lambda kv: kv[0]))

    def call(
        self, span: FunctionSpan, cls: ClassInfo | None, args: tuple[tuple[str, Value | None], ...],
    ) -> tuple[Value | None, dict[str, Value]]:
        """What a function returns (or the items it yields) given these argument values, and what it writes on
        `self`; its operations on them are recorded once per signature (and state of its class)."""
        key = (id(span), id(cls), args, self._attrs_key(cls))
        if key in self.summaries:
            for frame in self.frames:
                frame |= self.uses.get(key, set())
            return self.summaries[key]
        self.summaries[key] = (None, {})  # recursion: no answer from the cycle
        if self.depth >= _MAX_DEPTH:
            return self.summaries[key]
        seeds = {name: value for name, value in args if value is not None}
        self.frames.append(set())
        try:
            run = self._read(span, cls, seeds, report=True)
        finally:
            uses = self.uses[key] = self.frames.pop()
        for frame in self.frames:
            frame |= uses
        result: tuple[Value | None, dict[str, Value]] = (None, {})
        if run is not None:
            result = (join(run.returned, Items(run.yielded) if run.yielded is not None else None), run.self_writes)
        self.summaries[key] = result
        return result

    def _walk(self, run: _Run, scope, report: bool) -> None:
        func = scope.node
        for node, ctx in run.flat.nodes:
            kind = type(node)
            if node is not func and kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                continue  # (their bodies are walked as part of the flat list; their returns are not ours)
            if kind is cst.Assign:
                if isinstance(node.value, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                    first = node.value.for_in
                    run.first_items[id(first)] = item_of(self.ev(run, first.iter))
                value = self.ev(run, node.value)
                if isinstance(node.value, cst.Call) and len(node.targets) == 1:
                    value = join(value, factory_made(self.index, run.flat, node.value, node.targets[0].target))
                handler = None
                for target in node.targets:
                    if isinstance(target.target, cst.Name) and (ctx.conds or (handler := _in_handler(run.flat, node))):
                        # under a test the old value may stand: `if isinstance(g, dict): g = Generator(**g)`; so
                        # does the `try` body's in its `except` (`except ValueError: layers = None`)
                        value = join(run.env.get(target.target.value), value)
                    self.bind(run, target.target, value)
            elif kind is cst.AnnAssign and node.value is not None:
                self.bind(run, node.target, self.ev(run, node.value))
            elif kind is cst.AugAssign:
                value = self.ev(run, node.value)
                name = dotted(node.target)
                if name is not None and value is not None:
                    self.bind(run, node.target, join(self.ev(run, node.target), value))
            elif kind is cst.NamedExpr:
                self.bind(run, node.target, self.ev(run, node.value))
            elif kind is cst.For or kind is cst.CompFor:
                if id(node) in run.first_items:
                    self.bind(run, node.target, run.first_items.pop(id(node)))
                else:
                    self.bind(run, node.target, item_of(self.ev(run, node.iter)))
            elif kind is cst.WithItem and node.asname is not None:
                self.bind(run, node.asname.name, None)
            elif kind is cst.Return and node.value is not None and self._own(run, node):
                run.returned = join(run.returned, self.ev(run, node.value))
            elif kind is cst.Yield and node.value is not None and self._own(run, node):
                value = node.value
                if isinstance(value, cst.From):
                    run.yielded = join(run.yielded, item_of(self.ev(run, value.item)))
                else:
                    run.yielded = join(run.yielded, self.ev(run, value))
            elif kind is cst.Call:
                self._fills(run, node)
                self._handed_to_base(run, node)
                self._mapped(run, node)
                if report and not ctx.guarded:
                    self._call_uses(run, node, ctx)
                else:
                    self._follow(run, node)  # a helper of the class may write `self.X`
                continue
            if report and not ctx.guarded and kind in (cst.Name, cst.Attribute, cst.Subscript):
                self._param_use(run, node, ctx)
                if kind is cst.Attribute:
                    self._property_use(run, node, ctx)

    def _mapped(self, run: _Run, call: cst.Call) -> None:
        """`map(lambda p: p.numel(), model.parameters())`, `filter(lambda p: ..., params)`: the lambda's
        parameters are the items of the iterables, like a comprehension's targets (its body follows in the walk)."""
        if not isinstance(call.func, cst.Name) or call.func.value not in ("map", "filter") or len(call.args) < 2:
            return
        func = call.args[0].value
        if not isinstance(func, cst.Lambda) or any(a.star or a.keyword is not None for a in call.args):
            return
        params = func.params.params
        for param, arg in zip(params, call.args[1:] if call.func.value == "map" else call.args[1:2]):
            self.bind(run, param.name, item_of(self.ev(run, arg.value)))

    def _own(self, run: _Run, node: cst.CSTNode) -> bool:
        """Is `node` in the function itself, not in a function or lambda defined inside it?"""
        parent = run.flat.parent.get(id(node))
        while parent is not None:
            if isinstance(parent, (cst.FunctionDef, cst.Lambda)):
                return parent is function_scope(self.index, run.span).node  # type: ignore[union-attr]
            parent = run.flat.parent.get(id(parent))
        return True

    # binding ---------------------------------------------------------------------------------------------------

    def bind(self, run: _Run, target: cst.BaseExpression, value: Value | None) -> None:
        if isinstance(target, cst.Name):
            if value is None:
                run.env.pop(target.value, None)
            else:
                run.env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            parts = [e.value for e in target.elements]
            tup = next((v for v in _options(value) if isinstance(v, Tup) and len(v.items) == len(parts)), None)
            container = _container(value) if tup is None else None
            part_value = leaf(container) if container is not None else None  # `fmodel, params = make_functional(m)`
            for at, part in enumerate(parts):
                if isinstance(part, cst.StarredElement):
                    self.bind(run, part.value, Items(value) if value is not None and tup is None else None)
                else:
                    self.bind(run, part, tup.items[at] if tup is not None else part_value)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            name = target.attr.value
            if config_like(name):  # `self.optim_wrapper = build_optim_wrapper(model, cfg)`: made of it, not it
                value = _each(value, lambda v: None if isinstance(v, Model) else v)
            if value is not None:
                run.self_writes[name] = join(run.self_writes.get(name), value)  # type: ignore[assignment]
        elif isinstance(target, cst.Subscript):
            run.items_set = True  # `container[key] = value`: that item is the value now, whatever it was
            run.env[code_of(target)] = value  # type: ignore[assignment]
        elif isinstance(target, cst.Attribute):
            name = dotted(target)
            if name is not None:
                if value is None:
                    run.env.pop(name, None)
                else:
                    run.env[name] = value

    def _handed_to_base(self, run: _Run, call: cst.Call) -> None:
        """`super().__init__(policy=policy)` in a constructor: a base class keeps what it is handed under the
        argument's name (`self.policy`), unless this class sets that attribute itself."""
        func = call.func
        if run.span.name != "__init__" or not isinstance(func, cst.Attribute) or func.attr.value != "__init__":
            return
        if not (isinstance(func.value, cst.Call) and call_name(func.value) == "super"):
            return
        for arg in call.args:
            if arg.keyword is not None and (value := self.ev(run, arg.value)) is not None:
                run.self_writes.setdefault(arg.keyword.value, value)

    def _fills(self, run: _Run, call: cst.Call) -> None:
        """`xs.append(v)`, `xs.extend(vs)`, `self.xs.append(v)`: the container now holds `v` too."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("append", "extend", "insert") or not call.args:
            return
        value = self.ev(run, call.args[-1].value)
        if value is None:
            return
        added = Items(value) if func.attr.value != "extend" else Items(item_of(value)) if item_of(value) else None
        if added is not None:
            self.bind(run, func.value, join(self.ev(run, func.value), added))

    # evaluating --------------------------------------------------------------------------------------------

    def ev(self, run: _Run, expr: cst.BaseExpression) -> Value | None:
        """What `expr` is, in `run`'s bindings."""
        kind = type(expr)
        if kind is cst.Name:
            value = run.env.get(expr.value)
            if value is None and expr.value == "self" and run.cls is not None and not run.cls.is_module:
                return self._holder(run, expr)  # `agent = self` in a plain class keeping a built model
            return value
        if kind is cst.Attribute:
            name = dotted(expr)
            if name is not None and name in run.env:
                return run.env[name]
            if isinstance(expr.value, cst.Name) and expr.value.value == "self" and run.cls is not None:
                if expr.attr.value == "param_groups" and _constructing(run.cls, run.span.name) and _optimizer(run.cls):
                    # the groups an optimizer's constructor was handed: the model's parameters (the ZeRO-3
                    # optimizer swaps each group's list for its partitions later; a list kept now stays the model's)
                    return Items(Mapping(Params("self.param_groups")))
                if isinstance(run.env.get("self"), Model) and run.cls.is_module and is_property(run.cls, run.span.name):
                    # a property read with `self` the built model (`_property_parameter`): its children are the model's
                    return self._attribute(run.env["self"], expr.attr.value, code_of(expr))
                return self._self_attribute(run.cls, expr.attr.value)
            return self._attribute(self.ev(run, expr.value), expr.attr.value, code_of(expr))
        if kind is cst.Subscript:
            if run.items_set and (code := code_of(expr)) in run.env:
                return run.env[code]
            base = self.ev(run, expr.value)
            if base is None and keyed_model(self.index, expr):
                return Model(code_of(expr))  # `state[MODEL]`: the entry a mapping of the program keeps a model under
            if len(expr.slice) > 1:  # `out[:, 0]`: a tensor sliced in two dimensions, never a module of a container
                base = _each(base, lambda v: None if isinstance(v, Model) else v)
            index, named, text = None, None, False
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                key = expr.slice[0].slice.value
                index = int(key.value) if isinstance(key, cst.Integer) else None
                named = _key_name(key)
                text = isinstance(key, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
            return _each(base, lambda v: _subscript(v, index, named, text))
        if kind is cst.Call:
            return self._follow(run, expr)
        if kind is cst.Tuple:
            parts = [e.value for e in expr.elements]
            if any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return _items_of_literal(self, run, expr.elements)
            values = tuple(self.ev(run, p) for p in parts)
            return Tup(values) if any(v is not None for v in values) else None
        if kind in (cst.List, cst.Set):
            return _items_of_literal(self, run, expr.elements)
        if kind is cst.Dict:
            found = None
            entries: list[tuple[str, Value | None]] | None = []
            for element in expr.elements:
                value = self.ev(run, element.value) if isinstance(element, cst.DictElement) else None
                found = join(found, value)
                key = _key_name(element.key) if isinstance(element, cst.DictElement) else None
                if key is None or entries is None:
                    entries = None  # (a key computed, or `**other` spread in: any key may hold any value)
                else:
                    entries.append((key, value))
            return Mapping(found, tuple(entries) if entries is not None else None) if found is not None else None
        if kind in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            saved = dict(run.env)
            comp = expr.for_in
            while comp is not None:
                self.bind(run, comp.target, item_of(self.ev(run, comp.iter)))
                comp = comp.inner_for_in
            if kind is cst.DictComp:
                inner = self.ev(run, expr.value)
                result = Mapping(inner) if inner is not None else None
            else:
                inner = self.ev(run, expr.elt)
                result = Items(inner) if inner is not None else None
            run.env = saved
            return result
        if kind is cst.IfExp:
            return join(self.ev(run, expr.body), self.ev(run, expr.orelse))
        if kind is cst.BinaryOperation and type(expr.operator) is cst.Add:
            # `named_params + named_buffers`: lists joined hold the items of both (a sum of tensors is a new one)
            left, right = self.ev(run, expr.left), self.ev(run, expr.right)
            lists = [v for v in (left, right) if isinstance(v, Items)]
            return join(*lists) if len(lists) == 2 else lists[0] if lists else None
        if kind is cst.BooleanOperation:
            return join(self.ev(run, expr.left), self.ev(run, expr.right))
        if kind is cst.NamedExpr:
            return self.ev(run, expr.value)
        return None

    def _self_attribute(self, cls: ClassInfo, name: str) -> Value | None:
        value = self.class_attrs(cls).get(name)
        method = cls.method(name)
        if value is None and method is not None and "@property" in method.text:
            return self.call(method.span, cls, ())[0]
        if value is None and method is not None and re.search(rf"@{name}\.(?:setter|deleter)\b", method.text):
            getter = _property_getter(self.index, method.owner, name)  # the setter is defined last, under the name
            return self.call(getter, cls, ())[0] if getter is not None else None
        return value

    def _attribute(self, base: Value | None, attr: str, text: str) -> Value | None:
        def step(v: Value) -> Value | None:
            if isinstance(v, Param):
                return v if attr == "data" else None
            if isinstance(v, Container):
                if attr == "data":
                    return v
                if config_like(attr) or _SIZE_NAME.search(attr) or attr in known.METADATA_ATTRS or attr.startswith("_"):
                    return None
                return v  # a nested container or a leaf: judged as the container (`.data` reads, in-place writes)
            if not isinstance(v, Model):
                return None
            if attr == "module":
                return v  # a wrapper's module: the model it wraps
            if attr in self.index.param_names or attr in ("weight", "bias"):
                if self._not_a_parameter(v, attr):
                    return None  # `r.weight` of a regulariser that registers `weight` as a buffer
                return Param(text, owner_classes=_all_known(v.classes), name=attr)
            if attr in _WALKS or attr in _RETURNS_SELF or attr == "training" or attr in known.METADATA_ATTRS:
                return None
            if (param := self._property_parameter(v, attr, text)) is not None:
                return param  # `model.ar_weights`, a property handing back `self.ar_net[0].weight`
            if config_like(attr) or _SIZE_NAME.search(attr) or attr.startswith("_"):
                return None
            return self._child(v, attr, text)

        return _each(base, step)

    def _answering_modules(self, model: Model, name: str) -> Iterator[tuple[str, ModelIndex, ClassInfo]]:
        """(class name, its file's index, its class) of each module class the model may be that defines `name`, of
        this file or another (for a model of no class we can tell, those of its file or package:
        `own.answering_classes`)."""
        for ref in answering_classes(self.index, model.classes or (UNKNOWN_CLASS,), name, package=True):
            local = self.index.class_of(ref)
            where = (self.index, local) if local is not None else self.index.external(ref) if ref != UNKNOWN_CLASS else None
            if where is not None and where[1].is_module:
                yield ref, where[0], where[1]

    def _property_parameter(self, model: Model, name: str, text: str) -> Param | None:
        """`model.ar_weights` where a module class the model may be (of this file or another) defines the property
        `ar_weights` to hand back one of its parameters (`return self.ar_net[0].weight`): that parameter, read with
        `self` the built model (for a model of no class we can tell, the classes of its file or package defining
        the property: `own.answering_classes`)."""
        for ref, other, info in self._answering_modules(model, name):
            method = info.inherited_method(name)
            if method is None or method.node is None or not PROPERTY_DEF.match(method.text.lstrip()):
                continue
            engine = self.engines.get(id(other)) or _Engine(other, self.engines)
            value, _writes = engine.call(method.span, method.owner, (("self", Model(model.origin, (ref,), model.child)),))
            param = _param(value)
            if param is not None and not param.walked and not param.state:
                return Param(text, owner_classes=param.owner_classes, name=param.name)
        return None

    def _not_a_parameter(self, model: Model, attr: str) -> bool:
        """Does every class the model may be (all known) register `attr` as a buffer or a plain value?"""
        if not model.classes or UNKNOWN_CLASS in model.classes:
            return False
        for ref in model.classes:
            member = member_of(self.index, ref, attr)
            if member is None or member.kind not in (Kind.BUFFER, Kind.VALUE):
                return False
        return True

    def _child(self, model: Model, attr: str, text: str) -> Value | None:
        """A child of a model, through the members of its classes where they can be read: none when no class has
        such a module member, or when no child it may be holds a parameter (a normaliser of buffers)."""
        known_classes = [c for c in model.classes if c != UNKNOWN_CLASS]
        if not known_classes:
            return Model(text, child=True)
        found: list[str] = []
        for ref in model.classes:
            member = member_of(self.index, ref, attr) if ref != UNKNOWN_CLASS else None
            if member is None:
                if ref == UNKNOWN_CLASS or self.index.class_of(ref) is None:
                    found.append(UNKNOWN_CLASS)
                continue
            if member.kind == Kind.PARAM:
                return Param(text, owner_classes=_all_known(model.classes), name=attr)
            if member.kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                found += member.classes or [UNKNOWN_CLASS]
        if not found or all(has_params(self.index, c) is False for c in found):
            return None
        return Model(text, tuple(dict.fromkeys(found)), child=True)

    def _getter_child(self, model: Model, name: str, text: str) -> Value | None:
        """`model.get_input_embeddings()`, `m.get_base_layer()`: the child a getter of the model's classes returns
        (`return self.tok`, `returned.property_attributes`); for a model of no class we can tell, of the classes of
        its file or package defining the method (`own.answering_classes`)."""
        found = None
        for ref in answering_classes(self.index, model.classes or (UNKNOWN_CLASS,), name, package=True):
            if ref == UNKNOWN_CLASS:
                continue
            local = self.index.class_of(ref)
            info = local if local is not None else (self.index.external(ref) or (None, None))[1]
            attrs = sorted(property_attributes(info, name)) if info is not None else []
            for attr in attrs:
                found = join(found, self._child(Model(model.origin, (ref,), model.child), attr, text))
            if attrs or info is None or not info.is_module:
                continue
            for path in sorted(getter_paths(info, name)):  # `return self.embedding_layer.cat_embeddings`
                step: Value | None = Model(model.origin, (ref,), model.child)
                for attr in path:
                    step = self._child(step, attr, text) if isinstance(step, Model) else None
                found = join(found, step) if isinstance(step, Model) else found
        if found is None and name in _EMBEDDING_GETTERS:
            # `model.get_input_embeddings()` of a model whose class we cannot read: transformers' getter of the
            # embedding layer, a child with parameters
            found = Model(text, (UNKNOWN_CLASS,), child=True)
        return found

    def _model_method(self, model: Model, name: str) -> Value | None:
        """`model.get_grad_params()`: what a method of the built model's classes (of this file or another) hands
        back when it walks the model's own parameters or modules, read with `self` the built model (`return
        filter(lambda p: p.requires_grad, self.parameters())`). A method that walks nothing hands back none of them."""
        found = None
        for ref, other, info in self._answering_modules(model, name):
            method = info.span.methods.get(name)
            if method is None or name in ("forward", "__call__") or not _RETURNS_WALK.search(
                    other.skeleton.text(method.start, method.end)):
                continue
            engine = self.engines.get(id(other)) or _Engine(other, self.engines)
            value, _writes = engine.call(method, info, (("self", Model(model.origin, (ref,), model.child)),))
            found = join(found, value)
        return found

    def _follow(self, run: _Run, call: cst.Call) -> Value | None:
        """What a call returns: a walk of a model, the same items, a copy, a helper's summary."""
        func = call.func
        args = [a for a in call.args if a.keyword is None and not a.star]
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if isinstance(func.value, cst.Name) and func.value.value == "self" and run.cls is not None:
                target = run.cls.method(method)
                if target is not None:
                    if not self.follow_self:
                        return None
                    found = self._helper(run, target.span, run.cls, call)
                    for sub in _overriding(self.index, run.cls, method):
                        # `self._step(p_source, p_target)` in a base class: each subclass's override may run
                        found = join(found, self._helper(run, sub.span.methods[method], sub, call))
                    return found
            if isinstance(func.value, cst.Call) and call_name(func.value) == "super" and run.cls is not None \
                    and self.follow_self and (target := super_method(run.cls, method)) is not None \
                    and target.index is self.index and target.node is not None:
                # `super().__init__(model, likelihood)` of a base of this file: what it keeps on `self` is this
                # object's state (`self.params` it lists from the model)
                return self._helper(run, target.span, run.cls, call)
            base = self.ev(run, func.value)
            if base is None:
                return self._module_function(run, call)
            text = code_of(func.value)

            def step(v: Value) -> Value | None:
                if isinstance(v, Model):
                    if method in _WALKS and not own_only(call) and not (method in _ENTRIES and call.args):
                        return _WALKS[method](f"{text}.{method}()")
                    if method in _RETURNS_SELF:
                        return v
                    if method == "get_submodule":
                        return Model(f"{text}.get_submodule()")
                    if method == "get_parameter":
                        return Param(f"{text}.get_parameter()")
                    child = None if call.args else self._getter_child(v, method, f"{text}.{method}()")
                    return child if child is not None else self._model_method(v, method)
                if isinstance(v, Mapping):
                    if method == "items":
                        return Items(Tup((None, v.value)))
                    if method == "values":
                        return Items(v.value)
                    if method in ("get", "pop", "setdefault"):
                        return v.value
                    if method == "copy":
                        return v
                    return None
                if isinstance(v, Container):
                    return self._container_method(run, call, v, method)
                if isinstance(v, Items) and method in ("copy", "pop"):
                    return v if method == "copy" else v.item
                if isinstance(v, Param) and method in ("detach_", "requires_grad_"):
                    return v
                return None

            return _each(base, step)
        return self._module_function(run, call, args)

    def _module_function(self, run: _Run, call: cst.Call, args: list[cst.Arg] | None = None) -> Value | None:
        if args is None:
            args = [a for a in call.args if a.keyword is None and not a.star]
        name = call_name(call) or ""
        if not name or name.startswith("."):
            return None
        qualified = self.index.qualify(name)
        last = qualified.rsplit(".", 1)[-1]
        if ("." not in name and last in _SAME_ITEMS or last in known.PASS_THROUGH) and args:
            # (`tqdm.tqdm(model.layers, desc=...)`: a progress bar hands out the items it shows)
            source = args[1].value if last == "filter" and len(args) > 1 else args[0].value
            inner = item_of(self.ev(run, source))
            return Items(inner) if inner is not None else None
        if last == "zip" and "." not in name and len(call.args) == 1 and call.args[0].star == "*":
            # `loaders, losses = zip(*objectives)`: the columns of rows of known parts, each the items of one part
            rows = item_of(self.ev(run, call.args[0].value))
            if isinstance(rows, Tup) and any(part is not None for part in rows.items):
                return Tup(tuple(Items(part) if part is not None else None for part in rows.items))
            return None
        if last == "zip" and "." not in name and args:
            items = tuple(item_of(self.ev(run, a.value)) for a in args)
            return Items(Tup(items)) if any(i is not None for i in items) else None
        if qualified in _MODULE_CONTAINERS and len(call.args) == 1 and call.args[0].keyword is None:
            # `nn.ModuleList(critics)`, `nn.Sequential(*layers)` of built models: a module holding them, whose
            # parameters are theirs (a list of modules built here is no source, so it stays unknown)
            inner = self.ev(run, call.args[0].value)
            return _model(item_of(inner)) if inner is not None else None
        if last == "enumerate" and args:
            inner = item_of(self.ev(run, args[0].value))
            return Items(Tup((None, inner))) if inner is not None else None
        if last == "chain" and args:
            found = None
            for a in args:
                found = join(found, item_of(self.ev(run, a.value)))
            return Items(found) if found is not None else None
        if last == "dict" and "." not in name and len(args) == 1:
            pairs = item_of(self.ev(run, args[0].value))
            second = _each(pairs, lambda v: v.items[1] if isinstance(v, Tup) and len(v.items) == 2 else None)
            return Mapping(second) if second is not None else None
        if last == "next" and "." not in name and args:
            return item_of(self.ev(run, args[0].value))
        if qualified in known.DEEP_COPY and args:
            return _model(self.ev(run, args[0].value))
        if args and averager(self.index, qualified) and (model := _model(self.ev(run, args[0].value))) is not None:
            return Averaged(model)
        if last == "getattr" and "." not in name and len(call.args) >= 2:
            attr = _literal_str(call.args[1].value)
            owner = self.ev(run, call.args[0].value)
            names = (attr,) if attr else self._names_walked(run, call.args[1].value)
            if names and _is_self(call.args[0].value) and run.cls is not None:
                # `for n in self.saved_attributes: getattr(self, n)`: each attribute the names list
                found = None
                for each in names:  # (bound here as `self.<name>`: a model the class holds, seeded by its holder)
                    found = join(found, run.env.get(f"self.{each}") or self._self_attribute(run.cls, each))
            elif names:
                found = None
                for each in names:
                    found = join(found, self._attribute(owner, each, code_of(call)))
            elif _model(owner) is not None:
                # a part named at run time (`getattr(self, name + "_params")`): a child, or what holds parameters
                found = join(Model(code_of(call), child=True), Container(code_of(call)))
            else:
                found = None
            if len(call.args) >= 3:
                found = join(found, self.ev(run, call.args[2].value))
            return found
        cls = self.index.class_of(name) if "." not in name else None
        if cls is not None and not cls.is_module and any(_whole(self.ev(run, a.value)) for a in args):
            return Holder(code_of(call), cls.name)  # `agent = Agent(model)`: a plain object keeping the model
        if "." not in name and name in self.index.skeleton.functions:
            return self._helper(run, self.index.skeleton.functions[name], None, call)
        if (static := self._class_function(run, name)) is not None:
            # `Plugin.allowed_parameters(model, excluded)`: a static or class method of a class of this file, a
            # function of the file reached through its class
            return self._helper(run, static[1].span, static[0], call)
        if name not in _arguments(run) and (foreign := self._foreign_function(run, name)) is not None:
            # a function of another file of the package (`unwrap(self.model)`, `trainable(model)`): what it returns
            # given these values, read there (its uses of them are judged at this call, `_handed_on`)
            return self._helper(run, foreign[1], None, call, foreign[0])
        if name in _arguments(run) or resolve_function(self.index, run.flat, name) is not None:
            return None  # a callable handed in, or a function we can read (its effects are judged at the call)
        passed_on = None
        if args and last[:1].islower() and last not in _NOT_PASSED_ON:
            first = self.ev(run, args[0].value)
            model = _model(first)
            if model is not None and not known.is_gather_context(name):
                passed_on = model  # an unreadable wrapper given the model first: `accelerator.unwrap_model(model)`
        return join(passed_on, self._made_container(run, call, name, qualified))

    def _names_walked(self, run: _Run, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """The attribute names a loop variable walks when they are written down: `for n in ("model", "target")`,
        `for n in self.saved_attributes` where the class family lists them as strings; else None."""
        if not isinstance(expr, cst.Name):
            return None
        node: cst.CSTNode | None = expr
        while node is not None:
            walked = None
            if isinstance(node, cst.For):
                walked = node.iter if isinstance(node.target, cst.Name) and node.target.value == expr.value else None
            elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                comp = node.for_in
                while comp is not None and walked is None:
                    if isinstance(comp.target, cst.Name) and comp.target.value == expr.value:
                        walked = comp.iter
                    comp = comp.inner_for_in
            if walked is not None:
                if isinstance(walked, cst.Attribute) and _is_self(walked.value) and run.cls is not None:
                    return attribute_strings(self.index, run.cls, walked.attr.value)
                return string_list(walked)
            node = run.flat.parent.get(id(node))
        return None

    def _made_container(self, run: _Run, call: cst.Call, name: str, qualified: str) -> Value | None:
        """A call of unknown effect handed a built model (and settings alone), its named parameters or a mapping of
        its parts: what it makes holds those parameters (`TensorDict.from_module(model)`, `make_functional(model)`,
        `OrderedDict(model.named_parameters())`, `TensorDict({n: getattr(model, n) for n in names}, [])`). Not a call
        handed a bare parameter iterable (an optimizer) or data beside the model (a call that runs it), nor torch's
        functions, the file's classes, gathering contexts."""
        last = qualified.rsplit(".", 1)[-1]
        if last in _NOT_PASSED_ON or qualified.startswith("torch.") or known.is_gather_context(name):
            return None
        if "." not in name and name in _BUILTINS or qualified.partition(".")[0] in _STDLIB_NOT_CONTAINERS:
            return None  # `range(n)`, `math.sin(x)`: Python's own functions make no container of parameters
        if "." not in name and self.index.class_of(name) is not None:
            return None  # a class of the file (its instances are typed elsewhere)
        if name.startswith("self."):
            return None  # the object's own method or a callable it keeps (`self.evaluate(actor)`): it computes
        if self.ev(run, call.func) is not None:
            return None  # a model, a parameter or a container called (`self.tokenizer(text)`): what it computes
        made = False
        for arg in call.args:
            value = self.ev(run, arg.value)
            if arg.star:
                value = item_of(value) if arg.star == "*" else None
            if value is None:
                if arg.keyword is None and not arg.star and not _literal(arg.value):
                    return None  # data beside the model: a call that computes with it
                continue
            if arg.keyword is not None:
                continue  # (a setting, or a model handed by name to a trainer-like object)
            if _whole(value) or _model(value) is not None and _all_known(_model(value).classes) or any(
                isinstance(v, Mapping) and _holds_parameters(v.value)
                or isinstance(v, Items) and isinstance(v.item, Tup) and _holds_parameters(v.item)
                for v in _options(value)
            ):
                made = True
            else:
                return None
        return Container(f"{name}()") if made else None

    def _container_method(self, run: _Run, call: cst.Call, container: Container, method: str) -> Value | None:
        """What a method of a container of parameters returns: its leaves walked or taken, the container itself
        (selected, moved, cloned: copies of the placeholders); `.apply(fn)` runs `fn` of the file on each leaf."""
        if method == "items":
            return Items(Tup((None, leaf(container))))
        if method == "values":
            return Items(leaf(container))
        if method in ("get", "pop", "setdefault", "get_parameter"):
            return leaf(container)
        if method not in _SAME_CONTAINER:
            return None  # its keys, sizes, or what a method of the object computes (`model.generate(x)`)
        if method in ("apply", "apply_", "named_apply") and call.args:
            fn = call.args[0].value
            span = self.index.skeleton.functions.get(fn.value) if isinstance(fn, cst.Name) else None
            node = function_scope(self.index, span).node if span is not None else None  # type: ignore[union-attr]
            if isinstance(node, cst.FunctionDef):
                params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
                at = 1 if method == "named_apply" else 0
                if len(params) > at:
                    self.call(span, None, ((params[at], leaf(container)),))  # type: ignore[arg-type]
        return container

    def _class_function(self, run: _Run, name: str) -> tuple[ClassInfo | None, MethodInfo] | None:
        """`Cls.helper` of a class of this file (`cls.helper` in a class method of it), when `helper` is a
        `@staticmethod` (with no class: no `self`) or a `@classmethod` (with its class, whose `cls` argument the
        call does not pass)."""
        owner_name, _, attr = name.rpartition(".")
        owner = run.cls if owner_name == "cls" else self.index.classes.get(owner_name) if "." not in owner_name else None
        method = owner.method(attr) if owner is not None else None
        node = method.node if method is not None else None
        decorators = {dotted(d.decorator) for d in node.decorators} if node is not None else set()
        if "staticmethod" in decorators:
            return None, method  # type: ignore[return-value]
        if "classmethod" in decorators:
            return owner, method  # type: ignore[return-value]
        return None

    def _foreign_function(self, run: _Run, name: str) -> tuple[_Engine, FunctionSpan] | None:
        """A module-level function of another file that `name` calls, with the engine of that file."""
        found = resolve_function(self.index, run.flat, name)
        if found is None or found[0] is self.index:
            return None  # (unreadable, or this file's function or one defined inside the function read)
        external = self.index.external_function(self.index.qualify(name))
        if external is None or external[1].owner is not None:
            return None
        other, info = external
        engine = self.engines.get(id(other))
        if engine is None:
            engine = self.engines[id(other)] = _Engine(other, self.engines)
        return engine, info.span

    def _helper(
        self, run: _Run, span: FunctionSpan, cls: ClassInfo | None, call: cst.Call, engine: _Engine | None = None,
    ) -> Value | None:
        """A function or method of this file (or, with the `engine` of another file, a function there) called with
        these arguments: its summary."""
        engine = engine or self
        scope = function_scope(engine.index, span)
        node = scope.node if scope is not None else None
        if not isinstance(node, cst.FunctionDef):
            return None
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        keyword = {p.name.value for p in (*node.params.params, *node.params.kwonly_params)}
        bound: dict[str, Value | None] = {}
        at = 0
        for arg in call.args:
            if arg.star:
                break
            if arg.keyword is None:
                if at < len(params):
                    bound[params[at]] = self.ev(run, arg.value)
                at += 1
            elif arg.keyword.value in keyword:
                bound[arg.keyword.value] = self.ev(run, arg.value)
        if cls is not None and cls is run.cls and "self" in run.env:
            bound["self"] = run.env["self"]  # a method of the built model: its `self` is the built model too
        signature = tuple(sorted(((k, v) for k, v in bound.items() if v is not None), key=lambda kv: kv[0]))
        if not signature and (cls is None or not self.class_attrs(cls)) and not (
            cls is not None and _constructing(cls, span.name) and _optimizer(cls)
        ):  # (an optimizer's constructor helpers read the groups it was handed: `self.param_groups`)
            return None  # nothing of a model goes in: nothing of one comes out
        value, writes = engine.call(span, cls, signature)
        if cls is not None and cls is run.cls:  # `self.set_model(model)`: the object's state, written by its helper
            for name, written in writes.items():
                run.self_writes[name] = join(run.self_writes.get(name), written)  # type: ignore[assignment]
        return value

    # operations ------------------------------------------------------------------------------------------

    def _record(self, access: ParamAccess) -> None:
        self.accesses.setdefault((id(access.node), access.use), access)
        for frame in self.frames:
            frame.add(access.use)

    def _access(
        self, run: _Run, node, ctx, use: str, op: str, via: Via, owner: str, param: str = "", holder: str = "",
        effect: str = "",
    ) -> None:
        scope = function_scope(self.index, run.span)
        if scope is None:
            return
        self._record(ParamAccess(
            node, ctx, use, op, via, owner=owner, param=param, scope=Scope.HANDED, where=run.span.name,
            snippet=scope.snippet, order=run.flat.position.get(id(node), 0), given=True, holder=holder, effect=effect,
        ))

    def _param_use(self, run: _Run, node, ctx) -> None:
        """A use of a partitioned parameter: its values read or written, its size, an initialiser."""
        flat = run.flat
        parent = flat.parent.get(id(node))
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
            return
        if isinstance(parent, (cst.Tuple, cst.Param, cst.AssignTarget, cst.List)) and not isinstance(parent, cst.List):
            if not isinstance(parent, cst.AssignTarget) or not isinstance(node, (cst.Attribute, cst.Subscript)):
                return
        if isinstance(node, cst.Attribute) and node.attr.value == "data":
            return  # `p.data`: judged at `p`, whose use reads through it
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        value = self.ev(run, node)
        param = _param(value)
        container = _container(value)
        if param is None and container is None:
            return
        use, op = usage(self.index, flat, node)
        if use == READ:
            use, op = written_in_bulk(self.index, flat, node, op)
        if op.startswith(".grad"):
            if param is not None and not param.state and isinstance(parent, cst.Attribute) and parent.attr.value == "grad":
                read = gradient_read(self.index, flat, parent)  # `p.grad.data.norm()`: ZeRO-3 left `p.grad` None
                via = Via(Reach.PARAMETERS) if param.walked else Via(Reach.PATH)
                if read is not None:
                    self._access(run, node, ctx, READ, read, via, param.origin)
                elif (written := gradient_write(flat, parent) or gradient_cancelled(flat, parent, ctx)) is not None:
                    # `p.grad = delta`: a gradient the engine's optimizer never steps from
                    self._access(run, node, ctx, GRAD, written, via, param.origin, effect=GRAD_WRITES)
            return
        if use in (CHECK, META) or use not in (READ, SIZE, WRITE, INIT):
            return
        method = op.lstrip(".").split(".")[0].split("(")[0].split("[")[0]
        if method in _IDENTITY_METHODS:
            return  # `p.data_ptr()`: which storage, not what it holds
        if container is not None:
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value != "data":
                grand = flat.parent.get(id(parent))
                if not (isinstance(grand, cst.Call) and grand.func is parent):
                    return  # `params.fc.weight`: a step to a nested leaf, judged where that leaf is used
            if method in _CONTAINER_API or op.startswith(("[", ".data[")) or (method == "data" and ".data." not in op + "."):
                # (walking, selecting or setting entries is the container's own bookkeeping; `.data` alone is judged
                # where it is used: `c.data` handed on below)
                if not (method == "data" and use == READ and op == ".data"):
                    return
            if param is None:
                if use == SIZE or use == READ and not op.startswith(".data") and not _torch_argument(self.index, flat, parent):
                    return  # the container's own size or methods, not the values it holds
                param = Param(container.origin, walked=True)
        if use == READ and (not computed_with(self.index, flat, parent, op, follow=False) or _metadata_call(self.index, flat, parent)):
            return
        if use == READ and op == ".data" and _metadata_call(self.index, flat, flat.parent.get(id(parent))):
            return  # `t.is_set_to(p.data)`
        if use == READ and not op and _constructor_arg(flat, parent):
            return  # `nn.Parameter(embed.weight)`: tied, not read
        if param.state and use not in (WRITE, INIT):
            return  # reading a state dict is ZG108's, at the `state_dict()` call
        if use in (READ, SIZE) and _stays_gathered(self.index, param):
            return  # small enough that ZeRO-3 keeps it gathered everywhere: reading it is free (writing is not)
        via = Via(Reach.PARAMETERS) if param.walked else Via(Reach.PATH)
        self._access(run, node, ctx, use, op, via, param.origin)

    def _property_use(self, run: _Run, node: cst.Attribute, ctx) -> None:
        """`generator.total_params` on a built model of a class of the file whose property walks its own
        parameters (`sum(p.numel() for p in self.parameters())`): the property's uses, where it is read."""
        if _is_self(node.value):
            return
        model = _model(self.ev(run, node.value))
        if model is None or not model.classes:
            return
        for cls in self._classes_answering(model, node.attr.value):
            method = cls.method(node.attr.value)
            if method is None or "@property" not in method.text[: method.text.find("def ")]:
                continue
            self.frames.append(set())
            try:
                self.call(method.span, cls, (("self", model),))
            finally:
                uses = self.frames.pop()
            for frame in self.frames:
                frame |= uses
            use = next((u for u in (WRITE, INIT, SIZE, READ) if u in uses), None)
            if use is not None:
                self._access(run, node, ctx, use, "", Via(Reach.HELPER, node.attr.value), code_of(node.value),
                             param="parameters()")
            return

    def _classes_answering(self, model: Model, name: str) -> list[ClassInfo]:
        """The classes of the file a model of these classes may be that define `name`: each class, or where it
        does not, its subclasses of the file that do (an abstract base annotated, a subclass built)."""
        found: list[ClassInfo] = []
        for ref in model.classes:
            cls = self.index.class_of(ref)
            if cls is None:
                continue
            if cls.method(name) is not None:
                found.append(cls)
                continue
            found += [sub for sub in self.index.classes.values() if sub is not cls and cls in sub.mro
                      and sub.method(name) is not None and sub not in found]
        return found

    def _call_uses(self, run: _Run, call: cst.Call, ctx) -> None:
        """Uses of a built model as a whole in one call, and the helpers it is handed to (read with its value)."""
        func = call.func
        args = [a for a in call.args if a.keyword is None and not a.star]
        name = call_name(call) or ""
        qualified = self.index.qualify(name) if name and not name.startswith(".") else name
        last = qualified.rsplit(".", 1)[-1]
        first = self.ev(run, args[0].value) if args else None

        def whole(use: str, owner_expr: cst.BaseExpression, via_name: str) -> None:
            self._access(run, call, ctx, use, "", Via(Reach.MODULE, via_name), code_of(owner_expr))

        if isinstance(func, cst.Attribute):
            base = self.ev(run, func.value)
            method = func.attr.value
            averaged = next((v for v in _options(base) if isinstance(v, Averaged)), None)
            if averaged is not None and method in known.AVERAGER_UPDATES:
                # `self.ema.update()`: the average reads (or writes back) every parameter of the model it was made of
                self._access(run, call, ctx, WRITE, "", Via(Reach.MODULE, code_of(func)), averaged.model.origin)

            if _model(base) is not None and not _is_self(func.value):
                if method in known.STATE_CALLS and _whole(base) and not (
                    run.cls is not None and run.cls.is_module and _on_self_path(func.value)
                ) and not state_keys_only(run.flat, call):
                    # (in a module's methods, a model handed to its constructor and used through a local or an
                    # argument; a module's children by their `self.` path are judged by `own.own_state_calls` and
                    # `moved`)
                    whole(STATE, func.value, method)
                elif method in known.TORCH_INITIALISERS and not call.args:
                    whole(WRITE, func.value, method)
                elif method == "apply" and args and not module_constructor(run.cls, run.span.name) and (
                    fn := writes_module_params(self.index, run.flat, args[0].value)
                ):
                    self._access(run, call, ctx, WRITE, "", Via(Reach.APPLY, fn), code_of(func.value))
        copies = qualified in known.DEEP_COPY
        pickles = qualified in known.PICKLERS or (
            isinstance(func, cst.Attribute) and func.attr.value in known.PICKLING_SENDS and len(call.args) == 1
        )  # `pipe.send(model)`: pickled for another process
        holder = self._holder(run, args[0].value) if args and (copies or pickles) else None
        if holder is not None:  # `copy.deepcopy(agent)`, `torch.save(self)` in a plain class keeping a built model
            self._access(run, call, ctx, COPY if copies else STATE, "", Via(Reach.MODULE, qualified if copies else name),
                         code_of(args[0].value), holder=holder.cls)
        if copies and _model(first) is not None and not _is_self(args[0].value) \
                and not known.BUFFER_PART.search(code_of(args[0].value)):  # (`deepcopy(model.buffer)`: data)
            whole(COPY, args[0].value, "copy.deepcopy")
        elif pickles and _model(first) is not None:
            whole(STATE, args[0].value, qualified if qualified in known.PICKLERS else name)
        elif last in known.CLIP_GRAD and (target := clipped(call)) is not None and not _method_of_object(self.index, name):
            given = first if args and target is args[0].value else self.ev(run, target)
            if _params(given) is not None or _model(given) is not None:
                whole(GRAD, target, last)
        elif qualified in known.PARAMETER_VECTORS:
            position, kind = known.PARAMETER_VECTORS[qualified]
            if len(args) > position:
                given = self.ev(run, args[position].value)
                if _params(given) is not None or _model(given) is not None:
                    whole(WRITE if kind == "write" else READ, args[position].value, last)
        elif args and averager(self.index, qualified) and (_whole(first) or _params(first) is not None):
            whole(COPY, args[0].value, last)
        foreach = last.startswith("_foreach_") and qualified.startswith("torch.")
        for position, arg in enumerate(args):  # `torch._foreach_lerp_(ema_params, params, w)`: every parameter of the list written
            if isinstance(arg.value, cst.Name) and _params(self.ev(run, arg.value)) is not None:
                if (bulk := bulk_written(self.index, run.flat, arg.value)) is not None:
                    param = _params(self.ev(run, arg.value))
                    self._access(run, arg.value, ctx, WRITE, f" (the target of `{bulk}()`)", Via(Reach.PARAMETERS),
                                 param.origin if param else "")
                    continue
            if foreach and not (position == 0 and known.FOREACH_INPLACE.match(last)) and (
                    param := _params(self.ev(run, arg.value))) is not None:
                # `torch._foreach_lerp_(ema, list(model.parameters()), w)`: computed with every parameter of the list
                # (an in-place operation's target is written: judged as such where it is listed)
                self._access(run, arg.value, ctx, READ, f" (an operand of `{name}()`)", Via(Reach.PARAMETERS),
                             param.origin)
        self._follow(run, call)  # a helper of this file: read with these values (its uses recorded there)
        if name and not name.startswith(".") and resolve_function(self.index, run.flat, name) is not None:
            if "." in name or name not in self.index.skeleton.functions:  # another file's helper: judged here
                self._handed_on(run, call, ctx, argument_effects(self.index, run.flat, call))
        elif isinstance(func, cst.Attribute) and _is_self(func.value) and run.cls is not None:
            # `self._add_lagged_network(self.policy.model)`: a base class's method of another file
            self._handed_on(run, call, ctx, inherited_argument_effects(run.cls, call))

    def _holder(self, run: _Run, expr: cst.BaseExpression) -> Holder | None:
        """The plain object holding a built model that `expr` is: `self` in a class of the file that is no module and
        keeps one in an attribute, or a value bound to a construction of such a class handed one."""
        if _is_self(expr):
            cls = run.cls
            if cls is None or cls.is_module or not any(_model(v) for v in self.class_attrs(cls).values()):
                return None
            return Holder("self", cls.name)
        return next((v for v in _options(self.ev(run, expr)) if isinstance(v, Holder)), None)

    def _handed_on(self, run: _Run, call: cst.Call, ctx, effects: list[tuple[int, frozenset[str]]]) -> None:
        """A helper of another file handed a built model: what its summary says it does, most telling first."""
        handed = []
        for position, done in effects:
            value = self.ev(run, call.args[position].value)
            effect = next((e for e in WHOLE_ORDER if e in done), "")
            if effect and (_model(value) is not None or _params(value) is not None):
                handed.append((WHOLE_ORDER.index(effect), WHOLE_USE[effect], call.args[position].value, effect))
        if handed:
            _rank, use, owner, effect = min(handed, key=lambda h: h[0])
            via = Via(Reach.MODULE, call_name(call) or "")
            self._access(run, call, ctx, use, "", via, code_of(owner), effect=effect)


def _arguments(run: _Run) -> frozenset[str]:
    """The names of the function's own parameters (`cls`, a factory handed in: no wrapper of what it is given)."""
    node = function_scope(run.index, run.span).node  # type: ignore[union-attr]
    params = node.params  # type: ignore[union-attr]
    return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))


def _key_name(key: cst.BaseExpression) -> str | None:
    """A constant key as a dict literal and a subscript both spell it: a string, or a named constant (`MODEL`)."""
    text = _literal_str(key)
    if text is not None:
        return repr(text)
    return constant_key(key)


def _subscript(v: Value, index: int | None, key: str | None = None, text: bool = False) -> Value | None:
    if isinstance(v, Items):
        # (`params["type"]`: an iterable is never keyed by a string; what was handed is a mapping of settings named
        # like parameters, `bnn_prior_parameters`)
        return None if text else v.item
    if isinstance(v, Container):
        return leaf(v)
    if isinstance(v, Mapping):
        if v.entries is not None and key is not None:
            return next((value for name, value in v.entries if name == key), None)
        return v.value
    if isinstance(v, Model):
        return v  # `model.layers[0]`: a module of a container
    if isinstance(v, Tup):
        if index is not None and -len(v.items) <= index < len(v.items):
            return v.items[index]
        return item_of(v)
    return None


def _items_of_literal(engine: _Engine, run: _Run, elements) -> Value | None:
    found = None
    for element in elements:
        if isinstance(element, cst.StarredElement):
            found = join(found, item_of(engine.ev(run, element.value)))
        elif isinstance(element, cst.Element):
            found = join(found, engine.ev(run, element.value))
    return Items(found) if found is not None else None


def _all_known(classes: tuple[str, ...]) -> tuple[str, ...]:
    """The classes, where every one is known (else none: a size cannot be told)."""
    return classes if classes and UNKNOWN_CLASS not in classes else ()


def _stays_gathered(index: ModelIndex, param: Param) -> bool:
    """Is a parameter reached by its name on a module of known classes below the persistence threshold in every
    class that has it (a class token, a norm's weight), as `persistence` judges the members of a module?"""
    if not param.owner_classes or not param.name:
        return False
    classes = [ref for ref in param.owner_classes if member_param(index, ref, param.name) is not False]
    return bool(classes) and all(persistent_param(index, ref, param.name) for ref in classes)


def _overriding(index: ModelIndex, cls: ClassInfo, name: str) -> list[ClassInfo]:
    """The file's subclasses of `cls` that define their own `name` (what `self.name(...)` in `cls` may run)."""
    return [sub for sub in index.classes.values() if sub is not cls and cls in sub.mro and name in sub.span.methods]


def _property_getter(index: ModelIndex, cls: ClassInfo, name: str) -> FunctionSpan | None:
    """The getter of property `name` of `cls`, where a setter or deleter defined after it took the name."""
    tree = index.skeleton.tree
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.ClassDef) or node.name != cls.name or not cls.span.start <= node.lineno <= cls.span.end:
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name and any(
                isinstance(d, ast.Name) and d.id == "property" for d in stmt.decorator_list
            ):
                return FunctionSpan(name, stmt.decorator_list[0].lineno, stmt.end_lineno or stmt.lineno, stmt.col_offset)
    return None


def _setter(index: ModelIndex, span: FunctionSpan) -> bool:
    """Is the function at `span` a property's setter (`@critic.setter`)?"""
    head = index.skeleton.text(span.start, span.end)
    return _SETTER.match(head) is not None


_SETTER = re.compile(r"\s*(?:@[^\n]*\n\s*)*@\w+\.setter\b")


def _literal(expr: cst.BaseExpression) -> bool:
    """A literal setting (`[]`, `True`, `"cpu"`, `None`), no data."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _literal(e.value) for e in expr.elements)
    return False


def _on_self_path(expr: cst.BaseExpression) -> bool:
    """`self.encoder`, `self.models[0]`: a path from `self`."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return _is_self(expr)


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _method_of_object(index: ModelIndex, name: str) -> bool:
    """`engine.clip_grad_norm_(...)`, `self.accelerator.clip_grad_norm_(...)`: the engine's own clipping."""
    owner = name.rsplit(".", 1)[0] if "." in name else ""
    head = owner.partition(".")[0]
    return bool(owner) and index.qualify(owner) == owner and head not in index.imports and head != "torch"


# A container's own methods: walking, selecting, setting or locking its entries, not computing with their values;
# and a module's walks, for a leaf that is a submodule (`layers[0].children()`).
_CONTAINER_API = frozenset(
    {"items", "values", "keys", "get", "pop", "setdefault", "update", "set", "set_", "apply", "apply_", "named_apply",
     "select", "exclude", "to_module", "lock_", "unlock_", "flatten_keys", "unflatten_keys", "copy", "is_empty",
     "batch_size", "names", "filter_non_tensor_data", "is_locked", "requires_grad_", "detach_", "share_memory_",
     "children", "modules", "parameters", "named_parameters", "named_children", "named_modules", "buffers",
     "named_buffers", "train", "eval", "zero_grad", "register_forward_hook", "register_forward_pre_hook"}
)  # fmt: skip
# Methods of a container that return it (or a copy or selection of it): what a method not listed returns is no
# container (`model.generate(x)` on an object made from a model computes with it).
_SAME_CONTAINER = frozenset(
    {"copy", "clone", "detach", "to", "cpu", "cuda", "float", "half", "double", "bfloat16", "select", "exclude",
     "lock_", "unlock_", "flatten_keys", "unflatten_keys", "apply", "apply_", "named_apply", "contiguous", "update",
     "update_", "data", "detach_", "requires_grad_", "parameters", "named_parameters", "state_dict", "flatten"}
)  # fmt: skip
_BUILTINS = frozenset(dir(builtins))
# Standard library modules whose functions compute with numbers, iterables or text.
_MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential"})
_STDLIB_NOT_CONTAINERS = frozenset({"math", "itertools", "functools", "operator", "random", "os", "re", "json", "time"})


def _torch_argument(index: ModelIndex, flat: Flat, parent) -> bool:
    """Is `parent` handed to `torch.save` or to an in-place list operation (`torch._foreach_mul_(c, w)`)?"""
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    if not name or name.startswith("."):
        return False
    qualified = index.qualify(name)
    return qualified == "torch.save" or qualified.startswith("torch.") and bool(known.FOREACH_INPLACE.match(qualified.rsplit(".", 1)[-1]))


# Torch functions that look at a tensor's type or layout only.
_METADATA_FUNCTIONS = frozenset({"is_floating_point", "is_complex", "is_tensor", "numel", "is_nonzero", "result_type"})
# Tensor methods that look at a parameter's identity or storage address, not its values.
_IDENTITY_METHODS = frozenset({"data_ptr", "untyped_storage", "storage_offset", "is_contiguous", "stride", "is_set_to"})


def _constructor_arg(flat: Flat, parent) -> bool:
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    return bool(name) and name.rsplit(".", 1)[-1][:1].isupper()


def _metadata_call(index: ModelIndex, flat: Flat, parent) -> bool:
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in _IDENTITY_METHODS:
        return True  # `t.is_set_to(p.data)`: whether two tensors share storage
    name = call_name(call) if isinstance(call, cst.Call) else None
    return bool(name) and index.qualify(name).rsplit(".", 1)[-1] in _METADATA_FUNCTIONS


def _in_handler(flat: Flat, node: cst.CSTNode) -> bool:
    """Is `node` in an `except` handler of the function (the `try` body's bindings may stand there)?"""
    parent = flat.parent.get(id(node))
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.Lambda)):
        if isinstance(parent, cst.ExceptHandler):
            return True
        parent = flat.parent.get(id(parent))
    return False


# --- entry points -----------------------------------------------------------------------------------------

# Text without which a class or function does nothing to a parameter this module reports.
OPERATIONS = re.compile(
    r"\.data\b|_\(|numel|nelement|\.shape\b|\.size\(|_like\(|deepcopy|state_dict|save(?<!\wsave)\(|clip_grad|_to_vector|"
    r"_to_parameters|\.apply\(|broadcast|all_reduce|init(?<!\winit)\.|\.(?:norm|clone|min|max|detach|cpu|numpy|tolist|item)\(|\.grad\b|dump(?<!\wdump)s?\(|\.send\("
)


_CALLED = re.compile(r"(?<![\w.])(?:self\.)?(\w+)\(")


def reaches_operation(index: ModelIndex, text: str, cls: ClassInfo | None) -> bool:
    """Does code of this text do an operation `provenance` reports, itself or in a function of the file (or a
    method of `cls`) it calls?"""
    if OPERATIONS.search(text):
        return True
    for name in set(_CALLED.findall(text)):
        span = index.skeleton.functions.get(name)
        if span is not None and OPERATIONS.search(index.skeleton.text(span.start, span.end)):
            return True
        method = cls.method(name) if cls is not None else None
        if method is not None and OPERATIONS.search(method.text):
            return True
    return False


def factory_made(index: ModelIndex, flat: Flat | None, call: cst.Call, target: cst.BaseExpression) -> Value | None:
    """The built models a call of a factory function of the program hands back to the names it is bound to (`agent,
    player = build_agent(cfg)`, `net = make_net(d)`, of this file or another): the factory built them (under
    `zero.Init`, partitioned once each constructor returned), so here they are built models, as if handed in. A
    class constructed here is not one (a module built in the scope is never a source); a tuple is read position by
    position (`members.classify_unpacked`)."""
    func = call.func
    if type(func) is not cst.Name:
        return None  # (a factory is called by its name: `build_agent(cfg)`)
    name = func.value
    if name not in index.skeleton.functions and name not in index.imports or index.class_of(name) is not None:
        return None
    if index.qualify(name).partition(".")[0] in _NOT_PROGRAM or resolve_function(index, flat, name) is None:
        return None  # (a class, or nothing the program defines)
    if isinstance(target, cst.Name):
        kind, classes = classify(index, call, resolve=True)
        return Model(code_of(call), classes) if _builds(index, kind, classes) else None
    if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return None
    made = classify_unpacked(index, call, len(target.elements))
    items = tuple(
        Model(f"{code_of(call)}[{at}]", classes) if _builds(index, kind, classes) else None
        for at, (kind, classes) in enumerate(made)
    )
    return Tup(items) if any(item is not None for item in items) else None


# Roots of imports that are no part of the checked program: their functions are not read as factories.
_NOT_PROGRAM = frozenset({"torch", "numpy", "np", "copy", "os", "typing", "functools", "itertools", "math"})


def _builds(index: ModelIndex, kind: Kind, classes: tuple[str, ...]) -> bool:
    """A module of a class we know, with parameters (or a container of them), as `members` classifies a value (not
    a value of unknown kind or class: `x.reshape(n, a)` of an array is no model)."""
    return kind in (Kind.MODULE, Kind.CONTAINER) and any(
        c != UNKNOWN_CLASS and has_params(index, c) is not False for c in classes
    )


def provenance_accesses(
    index: ModelIndex, entries: list[tuple[FunctionSpan, ClassInfo | None, dict[str, Value]]],
) -> list[ParamAccess]:
    """Uses of a built model's parameters reached through any binding path (see the module docstring): from the
    `entries` a caller knows to be handed a built model (a function, its class, the names holding it), and from
    the constructors of classes handed one, with every method a training loop may call on them."""
    if index.other_framework:
        return []
    engine = _Engine(index)
    try:
        return _accesses_from(engine, entries)
    finally:  # the engines refer to each other through their registry: freed now, not by the cycle collector
        engine.engines.clear()


# A constructor argument that is a walk of a model's parameters (`EMA(model.parameters())`,
# `MovingAverage(model.named_parameters())`): named so, or annotated so, and iterated where it is kept.
_PARAMETER_WALK_NAME = re.compile(r"^(?:named_)?param(?:eter)?s$|^\w+_(?:named_)?param(?:eter)?s$")
_PARAMETER_WALK_TYPE = re.compile(r"\b(?:Iterable|Iterator|Sequence|list|List)\[\s*(?:[\w.]+\.)?Parameter\b")
_NOT_A_WALK_TYPE = re.compile(r"\b(?:dict|Dict|Mapping|int|float|str|bool|Namespace|DictConfig)\b")
# What a class that keeps such a walk does with it (the trigger: its text holds one of these).
_PARAMETERS_KEPT = re.compile(r"\.data\b|\.clone\(|\.copy_\(|\.detach\(|\.mul_\(|\.add_\(|\.lerp_\(")


def parameter_walk_arguments(function: cst.FunctionDef) -> list[str]:
    """Arguments of a constructor that hold a walk of a built model's parameters: annotated as an iterable of
    `Parameter`, or named as parameters (`params`, `named_parameters`, `model_params`) and iterated in the constructor
    (`list(params)`, `for p in params`, `[p.clone() for p in params]`), not annotated as a setting (`dict`, `int`).
    An optimizer takes its `params` the same way, but ZeRO-3 hands it partitions: optimizers are left out by the
    caller; so are modules (a module's `params` are its own registration)."""
    found = []
    body = code_of(function.body, limit=1 << 30)
    for param in (*function.params.params, *function.params.kwonly_params):
        name = param.name.value
        annotation = code_of(param.annotation.annotation, limit=200) if param.annotation is not None else ""
        if _PARAMETER_WALK_TYPE.search(annotation):
            found.append(name)
            continue
        if not _PARAMETER_WALK_NAME.match(name) or _NOT_A_WALK_TYPE.search(annotation) \
                or isinstance(param.default, (cst.Integer, cst.Float, cst.SimpleString, cst.Dict)):
            continue
        if re.search(rf"\bfor\s+[^:]+?\s+in\s+{name}\b|\b(?:list|tuple|iter|enumerate)\(\s*{name}\s*\)", body):
            found.append(name)
    return found


def _module_parameters(index: ModelIndex, method: MethodInfo) -> tuple[tuple[str, Value], ...]:
    """The arguments of a built model's method that hold a module (`def parameter_norm(self, module)`): what the
    training loop hands it is the built model or one of its children, partitioned."""
    if not may_have_module_arguments(index, method.span):
        return ()
    scope = function_scope(index, method.span)
    if scope is None or not isinstance(scope.node, cst.FunctionDef):
        return ()
    found = module_arguments(index, scope.node)
    return tuple((name, Model(name, classes)) for name, classes in sorted(found.items()))


def _optimizer(cls: ClassInfo) -> bool:
    """Is `cls` an optimizer (a base named `Optimizer`, `torch.optim.Optimizer`, in its file or another)?"""
    return any(base.rsplit(".", 1)[-1] == "Optimizer" for info in cls.mro for base in info.span.bases)


def _constructing(cls: ClassInfo, name: str) -> bool:
    """Does the method `name` of `cls` run while an object is built: `__init__`, or a method of `cls` its own
    `__init__` calls (`self.sync_parameters()` broadcasting the groups' parameters as they were handed in)?"""
    if name == "__init__":
        return True
    init = cls.inherited_method("__init__")
    return init is not None and any(called == name and not through_super for called, through_super in init.self_calls)


def _params_kept(engine: _Engine) -> list[ClassInfo]:
    """Optimizers of the file whose constructor keeps its parameter groups' parameters (`self._params =
    self.param_groups[0]["params"]`, LBFGS): read with the model's parameters there, for `_held_by_methods`."""
    found = []
    for cls in engine.index.classes.values():
        init = cls.method("__init__")
        if init is None or init.owner is not cls or not _optimizer(cls) or not (
            "self.param_groups" in init.text or any(
                "self.param_groups" in method.text for name, _ in init.self_calls if (method := cls.method(name))
            )
        ):
            continue
        engine.holding.add(id(cls))
        found.append(cls)
    return found


def _held_by_methods(engine: _Engine, classes: list[ClassInfo]) -> None:
    """The other methods of a plain class one of whose methods kept a built model's parameters on `self`
    (`self.params = state[MODEL].parameters()` in `on_start`): a later call reads them (`clip_grad_norm_(self.params)`
    in `on_backward`), whether or not it is handed the model itself."""
    for cls in dict.fromkeys(classes):
        if cls.is_module or class_partitions(engine.index, cls):
            continue
        if not any(_holds_parameters(v) for v in engine.class_attrs(cls).values()):
            continue
        for method in cls.all_methods():
            if method.owner is not cls or method.name == "__init__" or not entry_name(method.name, False):
                continue
            if OPERATIONS.search(method.text) and not runs_gathered(cls, method):
                engine.call(method.span, cls, ())


def _accesses_from(engine: _Engine, entries: list[tuple[FunctionSpan, ClassInfo | None, dict[str, Value]]]) -> list[ParamAccess]:
    """`provenance_accesses` with the file's engine."""
    index = engine.index
    engine.holding = {id(cls) for _span, cls, _seeds in entries if cls is not None}
    for span, cls, seeds in entries:
        engine.call(span, cls, tuple(sorted(seeds.items(), key=lambda kv: kv[0])))
    kept = _params_kept(engine)
    _held_by_methods(engine, [*(cls for _span, cls, _seeds in entries if cls is not None), *kept])
    for cls in kept:  # a constructor's own use of the groups it was handed (`self.sync_parameters()` broadcasting them)
        engine.call(cls.method("__init__").span, cls, ())  # type: ignore[union-attr]
    for cls in index.classes.values():
        init = cls.method("__init__")
        if init is None or init.owner is not cls or not OPERATIONS.search(cls.text):
            continue  # (what a constructor is handed was built before it ran, whatever the class wraps later)
        seeds = engine._seed_arguments(init.span, cls)
        if not seeds:
            continue
        wraps = class_partitions(index, cls)
        # (a class that wraps the model itself runs its other methods, and its constructor's helpers, on what it
        # wrapped: only its constructor's own code is read)
        engine.follow_self = not wraps
        engine.call(init.span, cls, tuple(sorted(seeds.items(), key=lambda kv: kv[0])))
        engine.follow_self = True
        if wraps or not any(_contains_model(v) for v in engine.class_attrs(cls).values()):
            continue
        methods = cls.entry_methods if cls.is_module else [m for m in cls.all_methods() if m.owner is cls]
        for method in methods:
            if method.name == "__init__" or method.owner is not cls or not entry_name(method.name, cls.is_module):
                continue
            if cls.is_module and "@property" in method.text[: method.text.find("def ")]:
                continue  # a module's property is read where it is used (a forward, often), not run on its own
            engine.call(method.span, cls, ())
    for cls in index.classes.values():
        # a property setter (`self.critic = critic` in the constructor, or later) is handed a model built before it
        if "setter" not in cls.text or not OPERATIONS.search(cls.text):
            continue
        for method in cls.all_methods():
            if method.owner is not cls or method.name == "__init__" or not OPERATIONS.search(method.text):
                continue
            seeds = engine._seed_arguments(method.span, cls)
            if seeds and not runs_gathered(cls, method):
                engine.call(method.span, cls, tuple(sorted(seeds.items(), key=lambda kv: kv[0])))
    for cls in index.module_classes():
        # the built model's own methods a training loop calls (`count_parameters()`): `self` is the built model,
        # and walking its parameters yields partitioned ones
        if "parameters(" not in cls.text or class_partitions(index, cls):
            continue
        for method in cls.entry_methods:
            if method.owner is not cls or "parameters(" not in method.text or not OPERATIONS.search(method.text):
                continue
            if "@property" in method.text[: method.text.find("def ")] or runs_gathered(cls, method):
                continue
            # (and what it is handed as a module: `self.parameter_norm(self)` for `def parameter_norm(self, module)`)
            engine.call(method.span, cls, (("self", Model("self")), *_module_parameters(index, method)))
        for method in cls.repr_methods:
            # printing the model (`__str__` counting its parameters): the values and sizes of a walk of its
            # parameters; the sizes it prints of one weight are a display matter (`scopes.scoped_accesses`)
            if method.owner is not cls or "parameters(" not in method.text or not OPERATIONS.search(method.text):
                continue
            before = set(engine.accesses)
            engine.call(method.span, cls, (("self", Model("self")),))
            for key in set(engine.accesses) - before:
                access = engine.accesses[key]
                if access.use == SIZE and access.via.reach is not Reach.PARAMETERS:
                    del engine.accesses[key]
    return list(engine.accesses.values())
