"""Code outside the model classes that is handed a built model, or walks or builds modules itself.

A training loop hands a built model, or its parameters, to helpers that are
not modules themselves: an EMA object's `copy_to(model.parameters())`, a
trainer holding `self.model`, a function `convert_to_fp16(model)`, an
initialiser `def initialize(model): for p in model.parameters(): ...`. A
construction helper that a module's `__init__` calls (`parse_model(cfg)`)
builds modules and may count or initialise them. Under ZeRO-3 those modules
are partitioned by then (by `deepspeed.initialize`, or by `zero.Init` once
their constructor returned), and nothing gathers their parameters there: no
module's forward runs, and `nn.Module.apply` gathers only inside `zero.Init`.

`holders` is the one finder of the names that hold such a module, in
module-level functions and in methods of classes that are not modules:

* handed (`Scope.HANDED`): an argument named or annotated as a model
  (`model`, `ema_model`, `nn.Module`), `self.X` that `__init__` set from one
  (a trainer), or a parameter iterable (annotated with `Parameter`, or named
  `parameters`), in functions a training loop calls (not initialisers,
  hooks or loaders by name, not functions that partition the model
  themselves);
* built (`Scope.BUILT`): an argument the function walks like a model
  (`.parameters()`, `.modules()`, `.children()`) unless the function is
  passed around as a callback, and, in construction helpers, a local
  assigned a module construction, from that assignment on.

`handed_accesses` follows handed parameters through parameter iterables and
`X.apply(fn)` (where `fn` writes its module's parameters); `built_accesses`
follows built modules through parameter and module walks and attribute
paths. Uses inside `GatheredParameters` (or under a ZeRO-3 test) are left
out. A node both reach is reported once per code, with the handed story (the
checker keeps a code's first finding on a node, and rules read HANDED first).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..program import known
from ..program.holds import (
    HANDED_PATH_TEXT, MODULE_NAMED_TEXT, MODULE_WORDS, MOVES, annotated_module, annotated_properties,
    averaged_attributes, averager, built_from_class_value, config_like, constructed_models, container_elements,
    held_attributes, held_paths, keyed_model_dicts,
    module_arguments, module_container_arguments, other_objects_models, registered_models, trainer_module,
    wraps_itself,
)
from ..program.index import INIT_NAME, ClassInfo, MethodInfo, ModelIndex, entry_name, memoised
from ..program.keyed import reads_keyed_model
from ..program.members import UNKNOWN_CLASS, Kind, Member, classify, facts_of, has_params
from ..program.skeleton import FunctionSpan
from ..program.tree import (
    access_path, body_start, call_name, choice_leaves, code_of, cst, dotted, parameter_for, positional_parameters,
    unwrapped_argument, walk, walk_own,
)
from ..program.trigger import Trigger, word_first
from .access import CHECK, COPY, GRAD, INIT, READ, SIZE, STATE, WRITE, ParamAccess, Reach, Scope, Via
from .built import layer_factory
from .effects import (
    CLIPS, GRADS, READS, REPARAMETRIZES, WHOLE_ORDER, WHOLE_USE, argument_effects, bulk_written, clipped, computed_with,
    own_helper_effects, resolve_function, returns_argument, usage, writes_module_params,
    state_keys_only, written_in_bulk,
)
from .flow import Flat, bound_names, loop_items, mapping_walked, own_only, runs_gathered, same_items
from .grads import gradient_read
from .own import NOT_USES, answering_classes, method_uses
from .plain import attribute_instances
from .returned import is_property
from .provenance import (
    Model, Params, Value, contained, factory_made, module_constructor, provenance_accesses, reaches_operation,
)
from .script import (
    ScriptScope, bound_here, class_partitions, function_scope, global_models, module_code_partitions,
    module_code_scope, partitions_here, script_text,
)

__all__ = ["METHOD_WRITE", "Holders", "holders", "handed_accesses", "built_accesses", "built_holder", "outside_functions"]

# Text without which a function cannot reach a handed model's parameters.
_HANDED_TRIGGER = re.compile(r"\.(?:named_)?parameters\(|Parameter\b|\.apply\(|parameters(?<!\wparameters)\s*[:,)=]|\.state_dict\(\)")
# Text without which a function walks no module's parameters or submodules.
_WALK_TRIGGER = Trigger(
    "parameters(", "modules(", "children(",
    pattern=r"\.(?:modules|parameters|named_parameters|named_modules|children|named_children)\(",
)
_PARAMS_NAME = re.compile(r"^(?:\w+_)?parameters$")
# An argument named as the parameters a clipping helper is handed (`params`, `model_params`, `parameters`).
_CLIPPED_NAME = re.compile(r"^(?:\w+_)?(?:params|parameters)$")
# A hand-written data-parallel helper by its name (`sync_params(params)`, `sync_grads(params)`, `mpi_avg_grads(m)`,
# `average_gradients(model)`): it broadcasts or averages the parameters or gradients it is handed, a model's.
_SYNC_NAME = re.compile(
    r"^_?(?:\w+_)?(?:sync|synchroni[sz]e|broadcast|average|avg|allreduce|all_reduce|allmean|all_mean)_(?:\w+_)?"
    r"(?:params|parameters|grads?|gradients|weights)$"
)
_OWNS_STORAGE = re.compile(r"(?:Parameter|Tensor|Optimizer)$")
# Names of initialisers and loaders (not hooks, gathers, dunders or state-dict helpers: `index._NOT_ENTRY`'s rest).
_REINIT_NAME = re.compile(INIT_NAME + r"|reset|^_?(?:load|save)_?")
_PARAM_WALKS = frozenset({"parameters", "named_parameters"})
_MODULE_WALKS = frozenset({"modules", "named_modules", "children", "named_children"})


@dataclass
class Holders:
    """What holds a built module, or its parameters, in one function (see the module docstring)."""

    models: set[str] = field(default_factory=set)  # handed: a model argument, or `self.X` set from one (dotted)
    iterables: set[str] = field(default_factory=set)  # handed: arguments that are parameter iterables
    walked: dict[str, tuple[int, bool]] = field(default_factory=dict)  # built: name -> (from flat position, passed in)


def handed_accesses(index: ModelIndex) -> list[ParamAccess]:
    """Unguarded uses of the parameters of a model handed to code outside the model classes (`Scope.HANDED`)."""
    return _outside(index)[0]


def built_accesses(index: ModelIndex) -> list[ParamAccess]:
    """Unguarded uses of the parameters of a module a function walks or built itself (`Scope.BUILT`)."""
    return _outside(index)[1]


def built_holder(access: ParamAccess) -> str:
    """How a message names the module of a `Scope.BUILT` access: handed in built, or built earlier in the function."""
    if access.given:
        return f"`{access.owner}`, a module this function is given after it was built"
    where = "script" if access.where == "__main__" else "function"  # (module-level code: `module_code_scope`)
    if isinstance(access.node, cst.Attribute) and isinstance(access.node.value, cst.Subscript):
        return f"`{code_of(access.node.value)}`, a module built earlier in this {where} into `{access.owner}`"
    return f"`{access.owner}`, a module built earlier in this {where}"


@memoised
def _outside(index: ModelIndex) -> tuple[list[ParamAccess], list[ParamAccess]]:
    """The handed and the built accesses of the file, from one pass over its functions, in source order."""
    handed: list[ParamAccess] = []
    built: list[ParamAccess] = []
    if index.other_framework:
        return handed, built
    for span, cls in outside_functions(index):
        text = index.skeleton.text(span.start, span.end)
        # parameters reached by path: not in a function run by a module on itself or on what it builds, or
        # handed on as a callback (judged at those calls), nor in a constructor, whose modules it may build
        named = _handed_name(index, span, cls)
        paths = named and span.name != "__init__" and _param_path_trigger(index).search(text) is not None and (
            cls is not None or not (_callback(index, span.name) or _called_by_modules(index, span.name))
        )
        # (a function that partitions the model itself: the script rules know what runs before; they read no
        # module's methods, so a module trainer's `__init__` preparing the model it is handed is judged here)
        scripted = partitions_here(index, span) and (cls is None or not cls.is_module)
        synced = cls is None and _SYNC_NAME.match(span.name) is not None
        # a list of a model's parameters a plain class keeps (`self.to_optim`, filled by another of its methods)
        kept_lists = frozenset(
            name for name in held_parameter_lists(index, cls) if name in text
        ) if cls is not None and not cls.is_module and "self." in text else frozenset()
        may_be_handed = named and bool(paths or synced or kept_lists or _HANDED_TRIGGER.search(text)) and not scripted
        walks = _WALK_TRIGGER.search(text) or _factory_text(text) or _PATH_VALUE.search(text)
        whole = _whole_trigger(index, cls).search(text) and not scripted
        if whole and (_runs_guarded(cls, span) or cls is None and _construction_helper(index, span.name)):
            whole = None  # called only where ZeRO-3 is off or handled; or at construction (judged at the call)
        if not may_be_handed and not walks and not whole:
            continue
        scope = function_scope(index, span)
        if scope is None or not isinstance(scope.node, cst.FunctionDef):
            continue
        held = holders(index, scope, cls if may_be_handed or whole else None, may_be_handed or bool(whole), walks)
        if may_be_handed:
            constructing = module_constructor(cls, span.name)  # (`apply` gathers there)
            handed += _handed_uses(index, scope, set(held.models), held.iterables | kept_lists, paths, constructing)
        lists = held_parameter_lists(index, cls) if whole and cls is not None else frozenset()
        kept = cls is not None and bool(held_containers(index, cls) or module_properties(index, cls))
        if whole and (held.models or lists or kept or "param_groups" in text or "clip_grad" in text
                      or cls is not None and _names_a_member(text)):
            handed += _whole_uses(index, scope, cls, held.models, lists, clip_arguments=True)
        if held.walked:
            built += _walked_uses(index, scope, held.walked)
    for scope in _handing_scopes(index):
        handed += _built_handed_on(index, scope)
    handed += _module_code_uses(index)
    built += _module_code_built(index)
    handed += _self_whole_uses(index)
    handed += _own_parameters_handed_on(index)
    handed += provenance_accesses(index, _provenance_entries(index))
    return handed, built


# A module-level assignment of a construction (`q_network = QNetwork(env).to(device)`, `model: nn.Module = GPT()`,
# `algorithm = algorithm_class(shape)`, also indented under `if __name__ == "__main__":`), or of what a factory hands
# back unpacked (`model, tokenizer, meta = load_model(tag)`), or of a class a registry names (`model =
# DIT_MODELS[args.model](args)`).
_BUILDS_AT_TOP = re.compile(
    r"(?m)^[ \t]*(?:\w+(?:[ \t]*:[^=\n]+)?[ \t]*=[ \t]*(?:[\w.]+\.)?(?:[A-Z]\w*|\w+_(?:class|cls|config))"
    r"(?:\[[^\]\n]*\])?|\w+(?:[ \t]*,[ \t]*\w+)+[ \t]*=[ \t]*[\w.]+)\("
)


def _module_code_uses(index: ModelIndex) -> list[ParamAccess]:
    """Uses of the models a script's module-level code builds and keeps (`q_network = QNetwork(env)`): partitioned
    under `zero.Init` once built, like a model a function is handed."""
    text = script_text(index)  # (the module-level code alone)
    if not _BUILDS_AT_TOP.search(text):
        return []  # (no model built at module level: `logger = logging.get_logger(__name__)`, imports, constants)
    if not (_HANDED_TRIGGER.search(text) or _whole_trigger(index, None).search(text)) or module_code_partitions(index):
        return []  # (module code that partitions the model itself: the script rules judge what follows)
    scope = module_code_scope(index, True)
    if scope is None:
        return []
    models = set(scope.built_models)
    models |= scope.looked_up  # `model = model_config()` of `model_config = utils.Config(GPT, ...)`, used as a model
    if not models:
        return []
    return _handed_uses(index, scope, models, set(), False) + _whole_uses(index, scope, None, models)


def _handing_scopes(index: ModelIndex) -> Iterator[ScriptScope]:
    """The plain functions of the file (and its module-level code) that call an imported function: where a model they
    built may be handed to a helper of another file."""
    source = index.source
    imported = [f"{name}(" for name in index.imports if name and name[:1].islower() and f"{name}(" in source]
    imported += [  # `core.count_vars(module)` of `import spinup.algos.pytorch.ppo.core as core`: a module of the program
        f"{name}." for name, target in index.imports.items()
        if name and f"{name}." in source and _program_module(index, target)
    ]
    if not imported:
        return
    for span in index.skeleton.functions.values():
        text = index.skeleton.text(span.start, span.end)
        if any(call in text for call in imported):
            scope = function_scope(index, span)
            if scope is not None and isinstance(scope.node, cst.FunctionDef):
                yield scope
    text = script_text(index)
    if any(call in text for call in imported) and (module := module_code_scope(index, True)) is not None:
        yield module


# What a helper handed a built model does with its parameters that `_built_handed_on` tells: reads, sizes, measures.
_READ_EFFECTS = frozenset({READS, SIZE, GRADS, CLIPS})


def _program_module(index: ModelIndex, target: str) -> bool:
    """Is `target` (what an import binds) a module of the checked program, not an installed library's?"""
    if index.project is None:
        return False
    path = index.project.module_file(target)
    return path is not None and "site-packages" not in path and "dist-packages" not in path


def _built_handed_on(index: ModelIndex, scope: ScriptScope) -> list[ParamAccess]:
    """A model the code built itself (or a child of it) handed to a function of another file that reads, sizes,
    measures or clips its parameters (`sync_params(ac)`, `count_vars(ac.pi)`, `mpi_avg_grads(ac.pi)` of a library's
    MPI helpers): under `zero.Init` it was partitioned when built, and the helper, read in its own file, meets
    placeholders. Reported at the call, where the model flows in; a helper of this file is judged in its body."""
    flat = scope.flat
    returned = {  # (a factory's product, `return model, count_params(model)`: built where its caller builds)
        n.value for node, _ctx in flat.nodes if type(node) is cst.Return and node.value is not None
        for n in ([node.value] if isinstance(node.value, cst.Name) else
                  [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [])
        if isinstance(n, cst.Name)
    }
    built = {name: classes for name, classes in scope.program_models.items() if name not in returned}
    if not built:
        return []
    parts: dict[str, str] = {}  # `for module in [ac.pi, ac.v]`: module -> the built model its items are parts of
    for node, _ctx in flat.nodes:
        if type(node) in (cst.For, cst.CompFor) and isinstance(node.target, cst.Name) and isinstance(
                node.iter, (cst.List, cst.Tuple)) and node.iter.elements:
            roots = {(dotted(e.value) or "").partition(".")[0] for e in node.iter.elements}
            if len(roots) == 1 and (root := roots.pop()) in built:
                parts[node.target.value] = root
    found = []
    for node, ctx in flat.nodes:
        if type(node) is not cst.Call or ctx.guarded or not node.args:
            continue
        name = call_name(node)
        if not name or name.startswith(".") or "." in name and name.partition(".")[0] in built:
            continue  # (a method of the model itself: its own rules)
        if name.partition(".")[0] not in index.imports or index.external_function(index.qualify(name)) is None:
            continue
        handed_on = []
        for position, done in argument_effects(index, flat, node):
            arg = node.args[position].value
            root = (dotted(arg) or "").partition(".")[0]
            if root not in built and not (isinstance(arg, cst.Name) and arg.value in parts):
                continue
            # (writes, copies and state loads of a model built then handed on: `loaded.built_then_*`, told there)
            effect = next((e for e in WHOLE_ORDER if e in done and e in _READ_EFFECTS), "")
            if effect:
                handed_on.append((WHOLE_ORDER.index(effect), WHOLE_USE[effect], code_of(arg), effect))
        if handed_on:
            _rank, use, owner, effect = min(handed_on, key=lambda h: h[0])
            where = scope.node.name.value  # type: ignore[union-attr]
            found.append(ParamAccess(
                node, ctx, use, "", Via(Reach.MODULE, name), owner=owner, scope=Scope.HANDED, where=where,
                snippet=scope.snippet, order=flat.position.get(id(node), 0), given=True, effect=effect,
            ))
    return found


def _own_parameters_handed_on(index: ModelIndex) -> list[ParamAccess]:
    """A module handing its parameters, or a child's, to a function or a plain object's method of another file of the
    program that reads or writes their values (`self.ema = ExponentialMovingAverage(self.backbone.parameters())` in
    `__init__` once the backbone was built, `self.ema.update(itertools.chain(self.backbone.parameters(), ...))` in a
    method the training loop runs): the helper, read in its own file, meets placeholders. Reported at the call; a
    helper of this file is judged in its body."""
    found: list[ParamAccess] = []
    for cls in index.module_classes():
        if "parameters()" not in cls.text:
            continue
        members = facts_of(cls).members
        entry = {id(m) for m in cls.entry_methods}
        for rank, method in [(-1, m) for m in cls.entry_methods] + list(enumerate(cls.init_methods)):
            if method.owner is not cls or "parameters()" not in method.text or _runs_guarded(cls, method.span):
                continue
            scope = function_scope(index, method.span)
            if scope is None or not isinstance(scope.node, cst.FunctionDef):
                continue
            flat = scope.flat
            for node, ctx in flat.nodes:
                if type(node) is not cst.Call or ctx.guarded or not node.args:
                    continue
                name = call_name(node)
                if not name or name.startswith(".") or name.startswith("self.") and name.count(".") == 1 \
                        or name in known.PYTHON_BUILTINS:
                    continue  # (its own methods: `own_helper_effects`; `next(self.parameters())`)
                owners = {  # argument position -> whose parameters it lists, partitioned by then
                    position: owner for position, arg in enumerate(node.args)
                    if (owner := _parameters_listed(index, arg.value, members)) is not None
                    and (id(method) in entry or _built_before(members, owner, rank, method, node))
                }
                handed_on = []
                for position, done in argument_effects(index, flat, node) if owners else ():
                    effect = next((e for e in WHOLE_ORDER if e in done and e in (READS, WRITE)), "")
                    if effect and position in owners:
                        handed_on.append((WHOLE_ORDER.index(effect), WHOLE_USE[effect], owners[position], effect))
                if not handed_on:
                    continue
                found_at = resolve_function(index, flat, name)
                if found_at is None or found_at[0] is index:
                    continue  # (a helper of this file: judged in its body, `Scope.HANDED`)
                _rank, use, owner, effect = min(handed_on, key=lambda h: h[0])
                found.append(ParamAccess(
                    node, ctx, use, "", Via(Reach.MODULE, name), owner=owner, scope=Scope.HANDED,
                    where=method.name, snippet=scope.snippet, order=flat.position.get(id(node), 0), given=True,
                    effect=effect,
                ))
    return found


def _parameters_listed(index: ModelIndex, value: cst.BaseExpression, members: dict[str, Member]) -> str | None:
    """`self.backbone` for `self.backbone.parameters()` of a child with parameters (`list(...)` of it, or one of the
    iterables `itertools.chain(...)` joins), `self` for `self.parameters()`, else None."""
    if type(value) is cst.Call and (call_name(value) or "").rsplit(".", 1)[-1] in ("list", "tuple", "chain"):
        for arg in value.args:
            owner = _parameters_listed(index, arg.value, members)
            if owner is not None:
                return owner
        return None
    if not (type(value) is cst.Call and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "parameters" and not value.args):
        return None
    path = dotted(value.func.value)
    if path == "self":
        return path
    member = members.get(path[5:]) if path and path.startswith("self.") and path.count(".") == 1 else None
    if member is None or member.kind not in (Kind.MODULE, Kind.CONTAINER):
        return None
    return path if any(has_params(index, c) is not False for c in member.classes) else None


def _built_before(members: dict[str, Member], owner: str, rank: int, method: MethodInfo, node: cst.CSTNode) -> bool:
    """In the `rank`-th of a class's `__init__` methods, was the child `owner` (`self` for all of them) built, and
    so partitioned, before `node`?"""
    at = (rank, method.order.get(id(node), 0))
    if owner == "self":
        return any(m.kind in (Kind.MODULE, Kind.CONTAINER) and m.order < at for m in members.values())
    member = members.get(owner[5:])
    return member is not None and member.order < at


def _module_code_built(index: ModelIndex) -> list[ParamAccess]:
    """A script's module-level code reaching a weight of a model it built by path or by a walk (`model =
    SNLIClassifier(config)` ... `model.embed.weight.data.copy_(vectors)`), as a function's own would
    (`_built_then_walked`)."""
    text = script_text(index)
    if not _BUILDS_AT_TOP.search(text) or not (_PATH_VALUE.search(text) or _WALK_TRIGGER.search(text)):
        return []
    scope = module_code_scope(index, True)
    if scope is None or not isinstance(scope.node, cst.FunctionDef):
        return []
    held = _built_then_walked(index, scope, scope.node)
    return _walked_uses(index, scope, held) if held else []


def _provenance_entries(index: ModelIndex) -> list[tuple[FunctionSpan, ClassInfo | None, dict[str, Value]]]:
    """The functions a training loop may hand a built model, with the names that hold it there (`holders`): where
    `provenance` starts following it."""
    entries = []
    for span, cls in outside_functions(index):
        text = index.skeleton.text(span.start, span.end)
        # a mapping's model entry read (`state[MODEL]`), also in a constructor: the model its caller built
        # (its name does not matter there, `on_init` of a callback: the mapping was filled with the built model)
        keyed = reads_keyed_model(index, text) and not (cls is not None and _owns_storage(cls))
        if not keyed and (span.name == "__init__" or not _handed_name(index, span, cls)) or _runs_guarded(cls, span):
            continue  # (a constructor's arguments are `provenance`'s own source; its attributes it may build)
        if not keyed and cls is None and (_callback(index, span.name) or _called_by_modules(index, span.name)):
            continue  # handed on as a callback, or run by a module on itself: judged at those calls
        if partitions_here(index, span) or not (keyed or reaches_operation(index, text, cls)):
            continue
        if cls is not None and class_partitions(index, cls):
            continue  # a class that wraps the model itself (a trainer): its methods run on what it wrapped
        scope = function_scope(index, span)
        if scope is None or not isinstance(scope.node, cst.FunctionDef):
            continue
        held = holders(index, scope, cls, True, False)
        typed = module_arguments(index, scope.node)  # `vit: VisionTransformer`: its members tell sizes and children
        seeds: dict[str, Value] = {name: Model(name, typed.get(name, ())) for name in held.models}
        seeds.update((name, Params(name)) for name in held.iterables)
        if cls is not None and not cls.is_module:  # `@property def model(self) -> Model`: the model it hands out
            for name, classes in module_properties(index, cls).items():
                seeds.setdefault(f"self.{name}", Model(f"self.{name}", classes))
        for name, shape in module_container_arguments(index, scope.node).items():  # `models: list[nn.Module]`
            seeds.setdefault(name, contained(name, shape))
        if seeds or keyed or _binds_factory_models(index, scope):
            entries.append((span, cls, seeds))  # (`agent, player = build_agent(cfg)`: models a factory built)
    return entries


# A name for a weight average (`ema`, `model_ema`, `generator_ema`, `ema_model`, `swa_model`).
_EMA_NAME = re.compile(r"(?:^|_)(?:ema|swa)(?:_|$)", re.I)


def _unwrapped_path(expr: cst.BaseExpression) -> str:
    """`self.generator`, also of `self.generator.module if is_model_wrapper(self.generator) else self.generator`."""
    if isinstance(expr, cst.IfExp):
        expr = expr.orelse
    return dotted(expr) or ""


def _binds_factory_models(index: ModelIndex, scope: ScriptScope) -> bool:
    """Does the function bind a local to a built model a factory function of the program hands back
    (`provenance.factory_made`)?"""
    for node, _ctx in scope.flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.value, cst.Call):
            if factory_made(index, scope.flat, node.value, node.targets[0].target) is not None:
                return True
    return False


# Whole uses of `self` in `__init__`, once children are built: loading or copying reaches their placeholders
# (reading the state dict there is often for its keys, and clipping has no gradients yet).
_INIT_WHOLE = frozenset({"load_state_dict", "copy.deepcopy", *(n.rsplit(".", 1)[-1] for n in known.PARAMETER_VECTORS)})


def _self_whole_uses(index: ModelIndex) -> list[ParamAccess]:
    """A module used as a whole by its own methods (`parameters_to_vector(self.parameters())`,
    `clip_grad_norm_(self.parameters(), c)`, `self.apply(init_fn)`, `copy.deepcopy(self)`,
    `self.load_state_dict(sd)`): in a method a
    training loop runs on the built model every parameter is partitioned; in `__init__`, its children's are once
    built (only loads, copies and flattening count there)."""
    trigger = _whole_trigger(index, None)
    found: list[ParamAccess] = []
    for cls in index.module_classes():
        applies = ".apply(" in cls.text
        if not applies and not trigger.search(cls.text):
            continue
        entry = {id(m) for m in cls.entry_methods}
        inits = [m for m in cls.init_methods if trigger.search(m.text)]
        if inits and not any(  # children built (and partitioned) by then
            m.kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in m.classes)
            for m in facts_of(cls).members.values()
        ):
            inits = []
        for method in (*cls.entry_methods, *inits):
            applied = applies and id(method) in entry and ".apply(" in method.text
            if method.owner is not cls or _runs_guarded(cls, method.span):
                continue
            if not applied and not trigger.search(method.text):
                continue
            scope = function_scope(index, method.span)
            if scope is None or not isinstance(scope.node, cst.FunctionDef):
                continue
            uses = _whole_uses(index, scope, None, {"self"}, subpaths=False)
            if id(method) not in entry:
                uses = [u for u in uses if u.via.name in _INIT_WHOLE]
            else:  # its own state dict there is `own.own_state_calls`' (which knows a read of the keys alone)
                uses = [u for u in uses if u.via.name not in _STATE_METHODS]
            if applied:  # `self.apply(init_fn)` on the built model: outside `zero.Init`, `apply` gathers nothing
                uses += [u for u in _handed_uses(index, scope, {"self"}, set(), False) if u.via.reach is Reach.APPLY]
            found += uses
    return found


@memoised
def _whole_trigger(index: ModelIndex, cls: ClassInfo | None) -> Trigger:
    """Text without which a function uses no held module as a whole (copies, state dicts, clipping, averaging)."""
    words = [r"deepcopy\(", r"state_dict\(", r"clip_grad", r"_to_vector\(", r"_to_parameters\(", r"reset_parameters\(",
             r"save(?<!\wsave)\(", HANDED_PATH_TEXT, r"param_groups(?<!\wparam_groups)\b",
             _INITIALISER_METHOD_TEXT, r"\.(?:save_pretrained|push_to_hub)\(",
             r"(?:remove_weight_norm|remove_spectral_norm|remove_parametrizations)\(",
             r"\.(?:modules|children)\(\)", r"(?:save|load)_model\("]  # (word first: trigger.py)
    names = sorted(known.AVERAGER_NAMES)
    # what each word needs literally: the regex runs only over a text holding one
    literals = ["deepcopy(", "state_dict(", "clip_grad", "_to_vector(", "_to_parameters(", "reset_parameters(", "save(",
                "param_groups", "update_parameters(", "update_moving_average(", ".init", "._init", ".reinit", "._reinit",
                ".reset", "._reset", "rereset", "save_pretrained(", "remove_weight_norm(", "remove_spectral_norm(",
                "remove_parametrizations(", ".modules()", ".children()", "save_model(", "load_model(",
                "push_to_hub(", *MODULE_WORDS, *names]
    words += [re.escape(name) + r"\(" for name in names]  # (sorted: the same pattern text in every process)
    # a model argument handed to a helper: `clone_via(model)`, `count_parameters(net)`, also in a plain class's
    # method (`def fix(cls, module): module = clone_module(module)`)
    words.append(r"[(,]\s*" + MODULE_NAMED_TEXT)
    averagers = "|".join(re.escape(name) for name in names)
    words.append(r":\s*(?:Optional\[)?(?:\w+\.)*(?:" + averagers + r")\b")  # `ema: Optional[EMA]`: one handed in
    # `avg.update_parameters(x)`; `ema.update(runner.model)`, `swa.step(self.net)`: an average updated from a model
    words.append(r"\.(?:update_parameters|update_moving_average)\(\s*[A-Za-z_]")
    words.append(r"\.(?:" + "|".join(sorted(known.AVERAGER_UPDATES)) + r")\(\s*" + MODULE_NAMED_TEXT)
    if cls is not None:
        averaged = [r"self\." + re.escape(name) + r"\.\w+\(" for name in averaged_attributes(index, cls)]
        words += averaged
        held = "|".join(
            [re.escape(name) for name in held_attributes(index, cls)]
            + [re.escape(path[len("self."):]) for path in held_paths(index, cls) | held_fields(index, cls)]
            + [re.escape(name) for name in module_properties(index, cls)]
            + [re.escape(path[len("self."):]) for path in held_containers(index, cls)]
        )
        if held and not cls.is_module:  # a trainer calling a held model's method (`_writing_method`)
            words.append(r"self\.(?:" + held + r")\.(?!(?:" + _NOT_USES_TEXT + r")\()\w+\(")
        if held:  # a held module, or its parameters, handed to a helper: `sync(self.model, self.target)`
            # (also an item of a held container: `soft_update(source=self.nets["critic"][i], ...)`)
            words.append(r"[(,=]\s*self\.(?:" + held + r")(?:\[[^\]\n]*\])*(?:\.parameters\(\))?\s*[,)]")
            words.append(r"\(self\.(?:" + held + r")\.parameters\(\)\)")  # `params = list(self.policy.parameters())`
        lists = "|".join(re.escape(path[len("self."):]) for path in sorted(held_parameter_lists(index, cls)))
        if lists:  # `self.clip_fun(self.parameters, c)`: a list of the model's parameters kept on `self`, handed on
            words.append(r"[(,]\s*self\.(?:" + lists + r")\s*[,)]")
            words.append(r"\bin\s+self\.(?:" + lists + r")\s*:")  # `for n, p in self.to_optim:`, walked
        if averaged or held or lists:
            literals.append("self.")
    return Trigger(*literals, pattern="|".join(words))


def _runs_guarded(cls: ClassInfo | None, span: FunctionSpan) -> bool:
    """A private method its class calls only under a ZeRO-3 test or inside a gather (`flow.runs_gathered`)."""
    method = cls.method(span.name) if cls is not None else None
    return method is not None and runs_gathered(cls, method)


# torch's removals of a re-parametrisation (a weight recomputed from its parts, registered again). (Applying one to
# a module handed in, `spectral_norm(module)` in a layer factory, is judged where the module is built: ZG104.)
_REMOVES = frozenset(name for name in known.REPARAMETRIZE if name.startswith("remove_"))


def _module_walk(items: cst.BaseExpression) -> cst.BaseExpression | None:
    """The module `items` walks the submodules of (`net.modules()`, `net.children()`), else None."""
    if isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and not items.args \
            and items.func.attr.value in ("modules", "children"):
        return items.func.value
    return None


def _listed_values(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The items a list or tuple display lists (`[self.a, self.b]`); [] for anything else."""
    return [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else []


def _whole_uses(
    index: ModelIndex, scope: ScriptScope, cls: ClassInfo | None, models: set[str],
    lists: frozenset[str] = frozenset(), subpaths: bool = True, clip_arguments: bool = False,
) -> list[ParamAccess]:
    """Uses of a held module as a whole: deep-copied, its state dict read or loaded, its gradients clipped, its
    parameters flattened into or out of a vector, or handed to a library's weight-averaging helper (and that
    helper updated). With `clip_arguments` (code outside the model classes), an argument named as parameters that
    the function clips (`def _clip(params: Iterable[Tensor], max_norm): clip_grad_norm_(params, max_norm)`) is the
    parameters of a model by that use (not one named as plain tensors: `tensors: List[Tensor]`)."""
    func, flat = scope.node, scope.flat
    arguments = {
        p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
        if _CLIPPED_NAME.match(p.name.value)
    } if clip_arguments and isinstance(func, cst.FunctionDef) else set()
    held = set(models)  # plus locals bound to one (`model = self.accelerator.unwrap_model(self.model)`)
    elements = container_elements(func) if cls is not None else set()  # `policy = self.policies[uid]`
    averaged = set(averaged_attributes(index, cls)) if cls is not None else set()
    averaged_args = _averager_arguments(index, func)  # `def take_step(model, ema: EMA)`: an average of the model

    listed: dict[str, str] = {name: name for name in lists}  # lists of a held module's parameters -> that module
    clips = _clip_functions(index, cls, flat)  # `self.clip_func = torch.nn.utils.clip_grad_norm_`
    groups: dict[str, str] = {}  # `for group in self.optimizer.param_groups`: group -> its parameters' source
    getters: set[str] = set()  # `self.getOriginalG` of a method handing back a held model (filled below)

    def holds(expr: cst.BaseExpression, whole_only: bool = False) -> str | None:
        name = dotted(expr)
        if name is None and type(expr) is cst.Call and not expr.args and dotted(expr.func) in getters:
            return code_of(expr)  # `deepcopy(self.getOriginalG())`: the model the getter hands back
        if name is None and type(expr) is cst.Call and cls is not None and _named_member(expr):
            return code_of(expr)  # `getattr(self, "net" + name)`: one of the networks the object keeps by name
        if name is None and type(expr) is cst.Call and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in MOVES and (moved := holds(expr.func.value, whole_only)) is not None:
            return moved  # `net.module.cpu()`: the module itself, moved
        if name in listed:
            return listed[name]
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and expr.for_in.inner_for_in is None:
            walked = dotted(expr.for_in.iter)  # `[p for n, p in self.model_parameters]` of a kept list
            if walked in listed:
                return listed[walked]
        if name is None and (source := _group_parameters(expr, groups)) is not None:
            return source  # `opt.param_groups[0]["params"]`
        if name is None and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in ("parameters", "named_parameters"):
                return holds(expr.func.value) or _child_of(dotted(expr.func.value), held)
        if name is None and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in (
            "list", "tuple") and len(expr.args) == 1 and not expr.args[0].star:
            return holds(expr.args[0].value, whole_only)  # `params=list(model.parameters())`: the same parameters
        if name is None and isinstance(expr, cst.Call) and (source := _groups_handed_back(index, flat, cls, expr)):
            return source  # `clip_grad_norm_(master_params(opt))`: a helper yielding the groups' parameters
        if name is not None and name.startswith("self.") and name.count(".") == 1 and cls is not None:
            method = cls.inherited_method(name[5:])  # `self.params` of a property yielding the groups' parameters
            if method is not None and method.node is not None and is_property(cls, name[5:]):
                if (source := yielded_group_parameters(method.index, method.node)) is not None:
                    return source
        if name is None and isinstance(expr, cst.Call) and (inner := unwrapped_argument(expr)) is not None:
            return holds(inner)  # `cast(BaseModel, model).init_weights()`: the model itself
        if name is None and isinstance(expr, cst.IfExp):
            # `self.generator.module if is_model_wrapper(self.generator) else self.generator`: the model either way
            return holds(expr.body, whole_only) or holds(expr.orelse, whole_only)
        if name is None and isinstance(expr, cst.Call) and returns_argument(index, flat, expr):
            return holds(expr.args[0].value)  # `self.accelerator.unwrap_model(self.model).state_dict()`
        grouping = isinstance(expr, cst.Call) and index.qualify(call_name(expr) or "") in known.MODULE_GROUPINGS
        if name is None and grouping:
            # `nn.Sequential(self.backbone, self.neck)`: a container made of held models holds them
            parts = [a.value for a in expr.args if not a.star]
            parts = [e for p in parts for e in (_listed_values(p) or [p])]
            return next((found for part in parts if (found := holds(part, whole_only)) is not None), None)
        if name is None and isinstance(expr, cst.Subscript):
            base = expr.value  # `self.nets["critic"][i]`: an item of a held container of modules is a module
            while isinstance(base, cst.Subscript):
                base = base.value
            held_base = holds(base) if isinstance(base, (cst.Name, cst.Attribute)) else None
            if held_base is None and dotted(base) in containers:
                held_base = dotted(base)  # `self.qs_t[i]` of `self.qs_t = [Critic(d) for _ in range(n)]`
            return code_of(expr) if held_base is not None else None
        if name is not None and name not in held and name.endswith(".module"):
            name = name[: -len(".module")]  # a wrapper's `.module`: the model it wraps
        if name is not None and name not in held and subpaths and not whole_only and _held_prefix_of(name, held):
            if not _through_settings(name, held):  # `model.cfg.model` is a setting the model keeps
                return name  # `model.fc`: a submodule of a held model (one of buffers alone has a state dict too)
        return name if name in held else None

    def access(
        node: cst.CSTNode, ctx, use: str, owner: str, name: str, holder: str = "", effect: str = ""
    ) -> ParamAccess | None:
        if "." not in owner and _not_narrowed(flat, node, owner):
            return None  # `if isinstance(obj, nn.Module): ... else: obj.load_state_dict(sd)`: no module there
        where = func.name.value  # type: ignore[union-attr]
        return ParamAccess(node, ctx, use, "", Via(Reach.MODULE, name), owner=owner, scope=Scope.HANDED, where=where,
                           snippet=scope.snippet, order=flat.position.get(id(node), 0), given=True, holder=holder,
                           effect=effect)

    # `copy.deepcopy(self)` in a plain class (an agent) whose attributes hold built models, however it got them
    keeper = cls.name if cls is not None and not cls.is_module and held_attributes(index, cls) else ""

    containers = set(held_containers(index, cls)) if cls is not None else set()  # `for k, v in self.nets.items()`
    if cls is not None:  # `@property def unwrapped_model(self): return self.accelerator.unwrap_model(self.model)`
        held |= {f"self.{name}" for name, value in _returning_properties(cls) if _passes_on(index, flat, value, holds)}
        held |= {f"self.{name}" for name in module_properties(index, cls)}  # `def policy(self) -> Policy`
        getters |= {  # `def getOriginalG(self): return self.netG.module if ... else self.netG`
            f"self.{name}" for name, values in _getter_methods(cls)
            if all(_passes_on(index, flat, v, holds) for v in values)
        }

    found = []
    rebound: dict[str, int] = {}  # a held name rebound to something else -> the last node of the new value
    defined: set[str] = set()  # looked-up models whose binding was seen
    for at, (node, ctx) in enumerate(flat.nodes):
        for name, end in list(rebound.items()) if rebound else ():
            if at > end:  # `model = copy.deepcopy(model)`: the value used the held model, the name no longer holds it
                held.discard(name)
                del rebound[name]
        if type(node) is cst.For or type(node) is cst.CompFor:
            for bound, items in loop_items(node.target, node.iter):
                if isinstance(bound, cst.Name) and (source := _param_groups_of(items)) is not None:
                    groups[bound.value] = source
                elif isinstance(bound, cst.Name) and _models_listed(items, holds):
                    held.add(bound.value)  # `for net_ in [net]`, `for m in nets` after `nets = n if ... else [n]`
                elif isinstance(bound, cst.Name) and (walked := _module_walk(items)) is not None and holds(walked):
                    held.add(bound.value)  # `for m in self.net_g.modules()`: each a module of the held model
        if containers and (type(node) is cst.For or type(node) is cst.CompFor):
            for bound, items in loop_items(node.target, node.iter):
                if isinstance(bound, cst.Name) and _items_of(items, containers):
                    held.add(bound.value)
            continue
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            target = node.targets[0].target.value
            value = node.value
            source = _group_parameters(value, groups) or listed.get(dotted(same_items(value)) or "")
            listed.pop(target, None)
            if source is not None:  # `params = list(filter(keep, params))`, `params = group["params"]`
                listed[target] = source
                continue
            if isinstance(value, (cst.DictComp, cst.ListComp, cst.GeneratorExp)) and containers:
                if _items_of(value.for_in.iter, containers):
                    containers.add(target)  # `modules = {k: unwrap(v) for k, v in self._modules.items()}`
            if (_passes_on(index, flat, node.value, holds) or target in elements
                    or target in held and _rebuilt(index, node.value)
                    or isinstance(value, (cst.List, cst.Tuple, cst.IfExp)) and _models_listed(value, holds)):
                held.add(target)
            elif target in scope.looked_up and target not in defined:
                defined.add(target)  # `model = model_config()`: the binding that makes it the model, no rebinding
            else:
                if target in held:
                    rebound[target] = max(flat.position.get(id(n), at) for n in walk(node.value))
                owner = _parameter_list_of(node.value, holds)
                if owner is not None:
                    listed[target] = owner  # `params = list(self.policy.parameters())`
            continue
        if type(node) is cst.AugAssign and isinstance(node.target, cst.Name):
            if (source := _group_parameters(node.value, groups)) is not None:
                listed[node.target.value] = source  # `params += group["params"]`
            continue
        if type(node) is not cst.Call or ctx.guarded:
            continue
        name = call_name(node) or ""
        qualified = index.qualify(name) if name and not name.startswith(".") else name
        last = qualified.rsplit(".", 1)[-1]
        func_node = node.func
        if isinstance(func_node, cst.Attribute) and func_node.attr.value in ("extend", "append") and node.args:
            if isinstance(func_node.value, cst.Name) and (source := _group_parameters(node.args[0].value, groups)):
                listed[func_node.value.value] = source  # `params.extend(group["params"])`
                continue
        if isinstance(func_node, cst.Attribute) and func_node.attr.value in _STATE_METHODS:
            # (a part reached by attributes too, `model.module.encoder.load_state_dict(sd)`, unless it keeps a
            # state of its own, `agent.optimizer.state_dict()`)
            part = _state_part(func_node.value)
            owner = holds(func_node.value, whole_only=not part) if not state_keys_only(flat, node) else None
            if owner is not None:
                found.append(access(node, ctx, STATE, owner, func_node.attr.value))
            continue
        if isinstance(func_node, cst.Attribute) and func_node.attr.value in known.HUB_MIXIN_SAVES and not any(
            a.keyword is not None and a.keyword.value == "state_dict" for a in node.args
        ):
            # `model_to_save.save_pretrained(output_dir)`: serialised through its own state dict (one handed in,
            # `state_dict=accelerator.get_state_dict(model)`, was gathered first)
            owner = holds(func_node.value, whole_only=True)
            if owner is not None:
                found.append(access(node, ctx, STATE, owner, func_node.attr.value))
            continue
        args = [a for a in node.args if a.keyword is None and not a.star]
        whole_self = keeper if args and isinstance(args[0].value, cst.Name) and args[0].value.value == "self" else ""
        if qualified in known.DEEP_COPY and args:
            owner = holds(args[0].value)
            if owner is not None and "." in owner and known.BUFFER_PART.search(owner):
                owner = None  # `copy.deepcopy(model.buffer)`: a replay buffer or a registered tensor, no parameter
            if owner is not None or whole_self:
                found.append(access(node, ctx, COPY, owner or "self", "copy.deepcopy", holder=whole_self))
        elif qualified == "torch.save" and args:
            owner = holds(args[0].value)  # the whole module pickled: its parameters as they are, placeholders
            if owner is not None or whole_self:
                found.append(access(node, ctx, STATE, owner or "self", "torch.save", holder=whole_self))
        elif (last in known.CLIP_GRAD or name in clips) and (target := clipped(node)) is not None and not _engine_method(
            index, name, clips
        ):
            owner = holds(target)
            if owner is None and isinstance(target, cst.Name) and target.value in arguments:
                owner = target.value  # an argument clipped: the parameters handed in
            if owner is not None:
                found.append(access(node, ctx, GRAD, owner, last))
        elif qualified in known.PARAMETER_VECTORS:
            position, use = known.PARAMETER_VECTORS[qualified]
            owner = holds(args[position].value) if len(args) > position else None
            if owner is not None:
                found.append(access(node, ctx, WRITE if use == "write" else READ, owner, last))
        elif qualified in known.MODEL_READERS:
            position = known.MODEL_READERS[qualified]  # `torch.quantization.quantize_dynamic(model, {nn.Linear})`
            owner = holds(args[position].value, whole_only=True) if len(args) > position else None
            if owner is not None:
                found.append(access(node, ctx, READ, owner, last))
        elif last in _REMOVES and qualified.startswith("torch.") and args and (
            owner := holds(args[0].value)
        ) is not None:
            # `remove_weight_norm(m)` for `m` of `self.net_g.modules()`: the weight recomputed from its parts
            found.append(access(node, ctx, WRITE, owner, last, effect=REPARAMETRIZES))
        elif isinstance(func_node, cst.Attribute) and (
            func_node.attr.value in known.TORCH_INITIALISERS and not node.args
            or _INITIALISER_METHOD.match(func_node.attr.value) and not any(a.keyword is None for a in node.args)
            and _may_initialise(index, func_node.attr.value)
        ):  # (one handed a module, `self._init_weights(new_head)`, initialises that module: an `apply` visit)
            # `model.fc.reset_parameters()`, `self.model.init_weights()`, `model.init_model_randomly(config=c)`:
            # every parameter of it set afresh
            owner = holds(func_node.value)
            if owner is not None:
                found.append(access(node, ctx, WRITE, owner, func_node.attr.value))
        elif args and averager(index, qualified):
            # `EMA(model.fc)` or `EMA(model.parameters())`; a bare attribute of a held model may be a list of
            # plain tensors (`EMA(task.loss_weights)`), so only a module it holds by name counts
            owner = holds(args[0].value, whole_only=True)
            if owner is not None:
                found.append(access(node, ctx, COPY, owner, last))
        elif isinstance(func_node, cst.Attribute) and func_node.attr.value in known.AVERAGER_UPDATES:
            path = access_path(func_node.value)
            if path is not None and path.root == "self" and len(path.parts) == 1 and path.parts[0] in averaged:
                found.append(access(node, ctx, WRITE, f"self.{path.parts[0]}", code_of(func_node)))
            elif path is not None and not path.parts and path.root in averaged_args:
                found.append(access(node, ctx, WRITE, path.root, code_of(func_node)))
            elif args and (owner := holds(args[0].value, whole_only=True)) is not None:
                # `avg.update_parameters(model)`, `ema.update(self.net)`: whatever the average is, it reads every
                # parameter of the model it is handed
                found.append(access(node, ctx, READ, owner, code_of(func_node)))
            elif len(args) == 1 and not subpaths and func_node.attr.value in known.AVERAGER_BLENDS \
                    and _EMA_NAME.search((dotted(func_node.value) or "").rsplit(".", 1)[-1]) \
                    and _held_prefix_of(owner := _unwrapped_path(args[0].value), held):
                # `self.generator_ema.update_parameters(self.generator)` in a module's method: an average (of a class
                # a registry built) blends in every parameter of the child it is handed
                found.append(access(node, ctx, READ, owner, code_of(func_node)))
        elif keeper and isinstance(func_node, cst.Attribute) and (owner := holds(func_node.value)) is not None \
                and _writing_method(index, func_node.attr.value):
            # `self.model.normalize_parameters()` in a trainer: a method of the model that writes its parameters
            found.append(access(node, ctx, WRITE, owner, func_node.attr.value, effect=METHOD_WRITE))
        elif name and not name.startswith("."):
            handed_on = []  # (rank of the effect, use, owner, effect) of each built model the call hands the helper
            effects = argument_effects(index, flat, node)
            if not effects and name.startswith("self."):
                effects = own_helper_effects(index, flat, node)  # `self._update_ema(self.target.parameters(), ...)`
            for position, done in effects:
                owner = holds(node.args[position].value)
                effect = next((e for e in WHOLE_ORDER if e in done), "")
                if owner is not None and effect:
                    handed_on.append((WHOLE_ORDER.index(effect), WHOLE_USE[effect], owner, effect))
            if handed_on:  # one finding per call, its most telling use (`sync(dst, src)` writes, not only reads)
                _rank, use, owner, effect = min(handed_on, key=lambda h: h[0])
                found.append(access(node, ctx, use, owner, name, effect=effect))
    del holds  # (it calls itself: kept, its cycle would hold the file's index and parse for the cycle collector)
    return [a for a in found if a is not None]


# The effect of a held model's own method that writes some of its parameters (`_writing_method`), as told.
METHOD_WRITE = "writes through its own method"
# The names `_writing_method` answers for, as regex text: any but the methods that never touch parameter values.
_NOT_USES_TEXT = "|".join(sorted(re.escape(name) for name in NOT_USES))


@memoised
def _writing_method(index: ModelIndex, name: str) -> bool:
    """Does `<model>.<name>()`, called by a trainer (a plain class) on a model it holds of a class nothing names,
    write or initialise the model's parameters (`self.model.normalize_parameters()` after each epoch, where the
    knowledge-graph models renormalise their embedding tables through `.data`)? The module classes that answer the
    call (this file's, those it imports, or the package's, `own.answering_classes`) decide: at least half of those
    whose method does something (not a stub left to subclasses: `raise NotImplementedError`, `pass`) write."""
    if name in NOT_USES or name.startswith("__"):
        return False
    classes = [ref for ref in answering_classes(index, (UNKNOWN_CLASS,), name, "", True) if ref != UNKNOWN_CLASS]
    writes = done = 0
    for ref in classes:
        info = index.classes.get(ref) or (external := index.external(ref)) and external[1]
        method = info.inherited_method(name) if info else None
        if method is None or _STUB_BODY.match(_body_text(method.text)):
            continue
        done += 1
        writes += any(u.use in (WRITE, INIT) for u in method_uses(index, ref, name))
    return writes > 0 and 2 * writes >= done


def _body_text(text: str) -> str:
    """The body of a method's text: what follows the colon that ends its header (`tree.body_start`)."""
    start = body_start(text)
    return text[start:] if start >= 0 else text


# A method named as initialising a model's weights: `init_weights`, `_init_weights`, `initialize_weights`,
# `reset_parameters`, `init_model_randomly`, `reinit_params` (not `init_hidden`, `reset_cache`,
# `init_rotary_embeddings`).
_INITIALISER_METHOD = re.compile(
    r"_?(?:re)?(?:init(?:iali[sz]e)?|reset)_?(?:\w+_)?(?:weights?|param(?:eter)?s|model)(?:_\w+)?$"
)
_INITIALISER_METHOD_TEXT = r"\._?(?:re)?(?:init|reset)\w*(?:weights?|param\w*|model)\w*\("
# What a body that sets parameters says: an `nn.init` call, an in-place or `.data` write, `apply`, another initialiser.
_SETS_PARAMETERS = re.compile(
    r"\binit\.|(?<!utils)\.data\b|[a-z0-9]_\(|\.apply\(|reset_param\w*\(|init\w*_(?:weights?|param\w*)\("
)
# A body that does nothing: `...`, `pass`, `raise NotImplementedError`, a docstring alone.
_STUB_BODY = re.compile(
    r'^\s*(?:(?:[rRbBuU]?"""[\s\S]*?"""|[rRbBuU]?\'\'\'[\s\S]*?\'\'\')\s*)?'
    r'(?:\.\.\.|pass|raise\s+NotImplementedError\b.*)?\s*$'
)


@memoised
def _may_initialise(index: ModelIndex, name: str) -> bool:
    """Does a method `name` (an initialiser by its name) set the parameters of the module it is called on? Yes
    unless every definition of it in the file's module classes reads as doing none of that (`def init_weights(self):
    self.rope.cache = build_cache()`); a stub (`...`, `raise NotImplementedError`) stands for the subclasses'
    overrides, which an abstract base's users run."""
    found = False
    for cls in index.classes.values():
        method = cls.method(name) if cls.is_module else None
        if method is None or method.owner is not cls:
            continue
        found = True
        body = _body_text(method.text)
        if _STUB_BODY.match(body) or _SETS_PARAMETERS.search(body):
            return True
    return not found


def _models_listed(items: cst.BaseExpression, holds) -> bool:
    """Does a loop over `items` bind held models: a list or tuple written with one (`[net]`), one side of a
    conditional choosing such a list (`net if isinstance(net, list) else [net]`), or a name holding one (a list
    of models, or a container module whose items are its submodules)? Not a walk of one (`model.parameters()`)."""
    if isinstance(items, cst.IfExp):
        return _models_listed(items.body, holds) or _models_listed(items.orelse, holds)
    if isinstance(items, (cst.List, cst.Tuple)):
        return any(not isinstance(e, cst.StarredElement) and holds(e.value) is not None for e in items.elements)
    items = mapping_walked(items)  # `self.nets.values()` of a mapping of models held
    return isinstance(items, (cst.Name, cst.Attribute)) and holds(items, whole_only=True) is not None


def _param_groups_of(items: cst.BaseExpression) -> str | None:
    """`opt.param_groups` (or a slice or item of it): the groups of an optimizer, whose `"params"` are the
    parameters of the model it was built over. Returns the optimizer's path."""
    if isinstance(items, cst.Subscript):
        items = items.value
    if isinstance(items, cst.Attribute) and items.attr.value == "param_groups":
        owner = dotted(items.value)
        return f"{owner}.param_groups" if owner else None
    return None


def _group_parameters(value: cst.BaseExpression, groups: dict[str, str]) -> str | None:
    """The source of a value that is the parameters of optimizer groups: `group["params"]` for a group a loop walks,
    `opt.param_groups[0]["params"]`, `[p for g in opt.param_groups for p in g["params"]]`, `tuple(...)` of one."""
    value = same_items(value)
    if isinstance(value, cst.Call) and len(value.args) == 1 and (dotted(value.func) or "").endswith(
            ("chain.from_iterable", "chain")) and isinstance(value.args[0].value, (cst.ListComp, cst.GeneratorExp)):
        # `itertools.chain.from_iterable([g["params"] for g in opt.param_groups])`: every group's parameters in turn
        lists = value.args[0].value
        comp = lists.for_in
        source = _param_groups_of(comp.iter) if isinstance(comp.target, cst.Name) and comp.inner_for_in is None \
            else None
        return _group_parameters(lists.elt, {comp.target.value: source}) if source else None  # type: ignore[union-attr]
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        comp = value.for_in
        source = _param_groups_of(comp.iter) if isinstance(comp.target, cst.Name) else None
        if source is not None and comp.inner_for_in is not None:
            return _group_parameters(comp.inner_for_in.iter, {comp.target.value: source})  # type: ignore[union-attr]
        return None
    if not isinstance(value, cst.Subscript) or len(value.slice) != 1:
        return None
    key = value.slice[0].slice
    if not (isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) and key.value.evaluated_value == "params"):
        return None
    group = value.value
    if isinstance(group, cst.Name):
        return groups.get(group.value)
    return _param_groups_of(group)


def _groups_handed_back(
    index: ModelIndex, flat: Flat, cls: ClassInfo | None, call: cst.Call
) -> str | None:
    """The optimizer groups whose parameters a call of a readable helper yields or returns (`master_params(opt)`,
    `self.master_params(self.optimizer)`, `self.get_params()`): the groups' path with the helper's parameter
    replaced by the argument the call binds to it."""
    name = call_name(call) or ""
    if "param" not in name:
        return None  # (cheap: a helper handing back parameters says so in its name)
    if name.startswith("self.") and name.count(".") == 1 and cls is not None:
        method = cls.inherited_method(name[5:])
        found = (method.index, method.node) if method is not None and method.node is not None else None
    else:
        found = resolve_function(index, flat, name) if not name.startswith(".") else None
    func = found[1] if found is not None else None
    source = yielded_group_parameters(found[0], func) if isinstance(func, cst.FunctionDef) and found else None
    if source is None:
        return None
    root, dot, rest = source.partition(".")
    for position, arg in enumerate(call.args):
        if parameter_for(func, call, position) == root and not arg.star:  # type: ignore[arg-type]
            bound = dotted(arg.value)
            return f"{bound}{dot}{rest}" if bound is not None else None
    return source if root == "self" else None


@memoised
def yielded_group_parameters(index: ModelIndex, func: cst.FunctionDef) -> str | None:
    """The optimizer groups (`optimizer.param_groups`, `self.optimizer.param_groups`, named as in `func`, a function
    of `index`'s file) whose parameters every value `func` yields or returns is: `for g in opt.param_groups: for p in
    g["params"]: yield p`, `return [p for g in opt.param_groups for p in g["params"]]`, a list filled from the
    groups and returned."""
    _items, handed = _group_parameter_locals(func)
    sources = set(handed)
    return handed[0] if handed and len(sources) == 1 and None not in sources else None


def _group_parameter_locals(func: cst.FunctionDef) -> tuple[dict[str, str], list[str | None]]:
    """The locals of `func` holding parameters of optimizer groups (a loop variable over `group["params"]`, a list
    filled from them: name -> the groups' path, "" for a list none was put in yet), and what each `yield` or
    `return` hands back (the groups' path, or None for anything else). Nothing for a function defining others."""
    groups: dict[str, str] = {}  # `for group in opt.param_groups`: group -> the groups' path
    items: dict[str, str] = {}  # a parameter of a group (a loop variable) or a list of them -> the groups' path
    handed: list[str | None] = []  # the groups each yield or return hands back (None: something else)
    for node in walk(func.body):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return {}, []
        if isinstance(node, (cst.For, cst.CompFor)):
            for bound, iterable in loop_items(node.target, node.iter):
                if not isinstance(bound, cst.Name):
                    continue
                if (source := _param_groups_of(iterable)) is not None:
                    groups[bound.value] = source
                elif (source := _group_parameters(iterable, groups)) is not None:
                    items[bound.value] = source
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            source = _group_parameters(node.value, groups)
            if source is not None:
                items[node.targets[0].target.value] = source
            elif isinstance(node.value, (cst.List, cst.Tuple)) and not node.value.elements:
                items.setdefault(node.targets[0].target.value, "")  # `params = []`, filled below
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value in items:
            if (source := _group_parameters(node.value, groups)) is not None:
                items[node.target.value] = source  # `params += group["params"]`
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args:
            holder = node.func.value
            if isinstance(holder, cst.Name) and node.func.attr.value in ("append", "extend") and holder.value in items:
                value = node.args[0].value
                source = items.get(value.value) if isinstance(value, cst.Name) else _group_parameters(value, groups)
                items[holder.value] = source or ""
        elif isinstance(node, (cst.Yield, cst.Return)):
            value = node.value
            if isinstance(value, cst.From):
                handed.append(_group_parameters(value.item, groups))
            elif isinstance(value, cst.Name):
                handed.append(items.get(value.value) or None)
            elif value is not None:
                handed.append(_group_parameters(value, groups))
    return items, handed


def _clip_functions(index: ModelIndex, cls: ClassInfo | None, flat: Flat) -> frozenset[str]:
    """Names bound to torch's gradient clipping in the function or on `self` in any method of its class
    (`clip = torch.nn.utils.clip_grad_norm_`, `self.clip_func = clip_grad_norm_`): calling them clips."""
    nodes = [n for n, _ctx in flat.nodes if type(n) is cst.Assign]
    if cls is not None:
        for method in cls.all_methods():
            if "clip_grad" in method.text and method.node is not None:
                nodes += [n for n in walk(method.node) if isinstance(n, cst.Assign)]
    found = set()
    for node in nodes:
        target = dotted(node.targets[0].target) if len(node.targets) == 1 else None
        value = dotted(node.value)
        if target and value and index.qualify(value).rsplit(".", 1)[-1] in known.CLIP_GRAD:
            if target.startswith("self.") or "." not in target:
                found.add(target)
    return frozenset(found)


def _not_narrowed(flat: Flat, node: cst.CSTNode, name: str) -> bool:
    """Is `node` in the `else` of a test that `name` is a module (`if isinstance(obj, nn.Module): ... else:`)?"""
    child, parent = node, flat.parent.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.If) and parent.orelse is child:
            test = parent.test
            if isinstance(test, cst.Call) and call_name(test) == "isinstance" and test.args:
                if dotted(test.args[0].value) == name:
                    return True
        child, parent = parent, flat.parent.get(id(parent))
    return False


@memoised
def module_properties(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """Properties of the class annotated to return a module (`@property def policy(self) -> Policy:`), however
    the body (or a subclass's override) finds it -> the classes the annotation names."""
    found = {}
    for method in cls.all_methods():
        node = method.node if "@property" in method.text and "->" in method.text else None
        if node is not None and node.returns is not None and (classes := annotated_module(index, node.returns.annotation)):
            found[method.name] = classes
    return found


def _returning_properties(cls: ClassInfo) -> list[tuple[str, cst.BaseExpression]]:
    """(name, returned expression) of the class's properties whose body is one `return` statement."""
    found = []
    for method in cls.all_methods():
        if "@property" not in method.text:
            continue
        node = method.node
        body = node.body.body if node is not None and isinstance(node.body, cst.IndentedBlock) else ()
        if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
            stmt = body[0].body[0]
            if isinstance(stmt, cst.Return) and stmt.value is not None:
                found.append((method.name, stmt.value))
    return found


# A `return` of something `self` holds (`return self.netG`, `return getattr(self.net, "module", self.net)`).
_RETURNS_OWN = re.compile(r"\breturn\b[^\n]*\bself\.")


def _getter_methods(cls: ClassInfo) -> list[tuple[str, list[cst.BaseExpression]]]:
    """(name, every value it returns) of the class's methods taking only `self` that are no properties and return a
    value on every `return` (`def getOriginalG(self): if isinstance(self.netG, DataParallel): return
    self.netG.module; return self.netG`)."""
    found = []
    for method in cls.all_methods():
        if not _RETURNS_OWN.search(method.text) or "@property" in method.text or method.name.startswith("__"):
            continue  # (read by text first: a getter hands back what `self` holds)
        node = method.node
        if node is None:
            continue
        params = node.params
        if len(params.params) != 1 or params.posonly_params or params.kwonly_params \
                or isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
            continue
        values = [r.value for r in walk_own(node.body) if isinstance(r, cst.Return)]
        if values and all(v is not None for v in values):
            found.append((method.name, values))
    return found


def _items_of(iterable: cst.BaseExpression, containers: set[str]) -> bool:
    """Does a loop take the items of a container of modules (`self.nets`, `.values()`, `.items()`)?"""
    return dotted(mapping_walked(same_items(iterable))) in containers


def _names_a_member(text: str) -> bool:
    """Text pre-filter of `_named_member`: `getattr(self, "net" + name)` with a prefix named as modules are."""
    return "getattr(" in text and any(known.module_like_name(m.group(1)) for m in _NAMED_MEMBER.finditer(text))


_NAMED_MEMBER = re.compile(r"getattr\(\s*self\s*,\s*f?[\"'](\w+)")


def _named_member(call: cst.Call) -> bool:
    """`getattr(self, "net" + name)`, `getattr(self, f"net{name}")`: an attribute of `self` looked up by a name that
    starts as modules are named (the networks of a pix2pix-style model, `netG`, `netD`, kept under `model_names`)."""
    if call_name(call) != "getattr" or len(call.args) != 2 or dotted(call.args[0].value) != "self":
        return False
    key = call.args[1].value
    if isinstance(key, cst.FormattedString) and key.parts and isinstance(key.parts[0], cst.FormattedStringText):
        return known.module_like_name(key.parts[0].value)
    if not (isinstance(key, cst.BinaryOperation) and isinstance(key.operator, cst.Add)
            and isinstance(key.left, cst.SimpleString)):
        return False  # (a whole name, `getattr(self, "netG")`, is that attribute: read as such elsewhere)
    prefix = key.left.evaluated_value
    return isinstance(prefix, str) and known.module_like_name(prefix)


def _child_of(name: str | None, held: set[str]) -> str | None:
    """`pl_module.model` when `pl_module` holds a module: whose `.parameters()` are taken, so a submodule of it."""
    if name is None:
        return None
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:end]) in held:
            return name if not any(config_like(p) for p in parts[end:]) else None
    return None


def _parameter_list_of(value: cst.BaseExpression, holds) -> str | None:
    """The held module whose parameters `value` lists: `list(m.parameters())`, `[p for p in m.parameters()]`."""
    if isinstance(value, cst.Call) and call_name(value) in ("list", "tuple") and len(value.args) == 1:
        value = value.args[0].value
    elif isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Name) and value.for_in.inner_for_in is None:
        if dotted(value.for_in.target) != value.elt.value:
            return None
        value = value.for_in.iter
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "parameters":
        return holds(value)
    return None


# Module methods that read or load the whole state: under ZeRO-3 the tensors are empty placeholders.
_STATE_METHODS = known.STATE_CALLS


def _state_part(expr: cst.BaseExpression) -> bool:
    """Is `expr` a part of a model reached by attributes alone (`model.module.encoder`), none of them a setting or a
    part keeping a state of its own (`model.optimizer`, `agent.lr_scheduler`), whose state a call saves or loads?"""
    path = access_path(expr)
    if path is None or not path.parts or "[]" in path.parts or path.root == "self":
        return False
    return not any(config_like(part) or known.OWN_STATE_PART.search(part.lower()) for part in path.parts)


def _passes_on(index: ModelIndex, flat: Flat, value: cst.BaseExpression, holds) -> bool:
    """Does `value` evaluate to a held module: the module itself, its wrapper's `.module`, or what an unreadable
    function returns when given it (`accelerator.unwrap_model(model)`, `getattr(model, "module", model)`)?"""
    if holds(value) is not None:
        return True
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MOVES:
        # `TemporalAgent(agent).to(device)`: what the call made, moved (a held module moved, `G_AB.cuda()`, is one
        # `holds` answers for itself)
        return isinstance(value.func.value, cst.Call) and _passes_on(index, flat, value.func.value, holds)
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
        return False
    if holds(value.args[0].value) is not None and (call_name(value) or "")[:1].isupper() \
            and classify(index, value, resolve=True)[0] == Kind.MODULE:
        return True  # `TemporalAgent(agent)`: a module of the program built around the held one, its child
    if (call_name(value) or "").rsplit(".", 1)[-1] == "getattr":
        return len(value.args) == 3 and holds(value.args[2].value) is not None
    return returns_argument(index, flat, value) and holds(value.args[0].value) is not None


def _averager_arguments(index: ModelIndex, func: cst.FunctionDef) -> set[str]:
    """Parameters annotated with a library's weight-averaging class (`ema: Optional[ExponentialMovingAverage]`):
    handed to a function that also holds the built model, they average that model's parameters."""
    found = set()
    for param in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
        if param.annotation is None:
            continue
        text = code_of(param.annotation.annotation, limit=200)
        for name in re.findall(r"[A-Za-z_][\w.]*", text):
            if averager(index, index.qualify(name)):
                found.add(param.name.value)
    return found


def _rebuilt(index: ModelIndex, value: cst.BaseExpression) -> bool:
    """`model = Unet(**model)` (when a config was given instead of a model): the name holds a module built here,
    which `zero.Init` partitions when its constructor returns, so it is a built model either way; so is one built
    from a class held in a variable (`algorithm = algorithm_class(shape, hparams)`)."""
    return isinstance(value, cst.Call) and (
        classify(index, value)[0] in (Kind.MODULE, Kind.CONTAINER) or built_from_class_value(value))


def _engine_method(index: ModelIndex, name: str, clips: frozenset[str]) -> bool:
    """`self.accelerator.clip_grad_norm_(...)`, `engine.clip_grad_norm_(...)`: a method of an object (the training
    engine or wrapper), which hands clipping to the engine that owns the gradients; not a function of a module
    (`torch.nn.utils.clip_grad_norm_`, `utils.clip_grad_norm_` imported) nor a name bound to torch's
    (`self.clip_func`)."""
    owner = name.rsplit(".", 1)[0] if "." in name else ""
    if not owner or name in clips or owner.rsplit(".", 1)[-1] in known.WRAPPER_NAMES:
        return bool(owner) and name not in clips
    head = owner.partition(".")[0]
    return index.qualify(owner) == owner and head not in index.imports and head != "torch"


def outside_functions(index: ModelIndex):
    """Module-level functions, then the methods of each class that is not a module, or is a module that trains
    another (`trainer_module`), with that class; a module class's class and static methods, which no built module
    runs on itself, are read as functions (`@classmethod def load_best_weights(cls, model, path)`)."""
    for span in index.skeleton.functions.values():
        yield span, None
    yield from ((span, None) for span in returned_closures(index))
    for cls in index.classes.values():
        if not cls.is_module or trainer_module(index, cls):
            for span in cls.span.methods.values():
                yield span, cls
        else:
            for span in cls.span.methods.values():
                if _CLASS_LEVEL.match(index.skeleton.text(span.start, span.start)):
                    yield span, None


@memoised
def returned_closures(index: ModelIndex) -> list[FunctionSpan]:
    """The functions a module-level factory defines in its body and returns (score_sde's `optimization_manager`
    returning `optimize_fn`, `get_step_fn` returning `step_fn`): run later as functions of their own, handed the
    model or its parameters by whoever holds them."""
    found: list[FunctionSpan] = []
    for span in index.skeleton.functions.values():
        text = index.skeleton.text(span.start, span.end)
        if not _NESTED_DEF.search(text) or "return" not in text:
            continue
        try:
            tree = ast.parse(textwrap.dedent(text))
        except SyntaxError:
            continue
        outer = tree.body[0] if tree.body else None
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        returned = {n.value.id for n in ast.walk(outer) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
        for inner in outer.body:
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and inner.name in returned:
                first = inner.decorator_list[0].lineno if inner.decorator_list else inner.lineno
                last = span.start + (inner.end_lineno or first) - 1
                found.append(FunctionSpan(inner.name, span.start + first - 1, last, span.indent + inner.col_offset))
    return found


# A `def` indented inside another function's body.
_NESTED_DEF = re.compile(r"\n[ \t]+(?:async[ \t]+)?def[ \t]")
# The first line of a class or static method: its decorator.
_CLASS_LEVEL = re.compile(r"[ \t]*@(?:classmethod|staticmethod)\b")


def _owns_storage(cls: ClassInfo) -> bool:
    """Is `cls` a parameter or tensor subclass, or an optimizer (by its bases' names)?"""
    return any(_OWNS_STORAGE.search(base) for base in cls.span.bases)


def _handed_name(index: ModelIndex, span: FunctionSpan, cls: ClassInfo | None) -> bool:
    """Could a training loop hand this function a built model (judged from its name and its class)?"""
    if cls is not None and _owns_storage(cls):
        return False  # a parameter or tensor subclass, an optimizer: handed the storage itself by design
    module = cls is not None and cls.is_module
    if span.name == "__init__" or entry_name(span.name, module=module):
        return True
    # Outside the model classes an initialiser or a loader by name (`init_head(model)`, `reset(self)` of an
    # agent, `load_foundations(model, src)`) is handed the model it writes built: nothing builds it there. Not a
    # hook, nor a callback handed on (an `apply` visit) or run by a module of the file on itself: judged at those.
    return not module and _REINIT_NAME.search(span.name) is not None and not (
        _callback(index, span.name) or cls is None and _called_by_modules(index, span.name)
    )


@memoised
def _param_path_trigger(index: ModelIndex) -> re.Pattern[str]:
    """Text without which a function reaches no parameter by its attribute path (`model.fc.weight`)."""
    names = sorted(index.param_names | index.related_param_names)
    return re.compile(r"\w\.(?:" + "|".join(map(re.escape, names)) + r")\b")


def holders(index: ModelIndex, scope: ScriptScope, cls: ClassInfo | None, handed: bool, walks: bool) -> Holders:
    """The names holding a built module, or its parameters, in the function of `scope`."""
    node = scope.node
    found = Holders()
    if not isinstance(node, cst.FunctionDef):
        return found
    if handed:
        found.models, found.iterables = _seeds(index, node)
        found.models |= other_objects_models(index, node)  # `runner.model`, `isinstance(obj, nn.Module)`
        if cls is None:  # `inference(args, dlrm, ...)` after `dlrm = DLRM_Net(...)`: however the parameter is named
            found.models |= _handed_by_callers(index).get(node.name.value, frozenset()) - found.iterables
        if cls is not None:
            found.models |= {f"self.{h}" for h in held_attributes(index, cls)} | held_paths(index, cls)
            found.models |= held_fields(index, cls)
            found.models |= container_elements(node)
    if walks:
        found.walked = _walked(index, scope, node)
    return found


@memoised
def _handed_by_callers(index: ModelIndex) -> dict[str, frozenset[str]]:
    """Parameters of the file's functions that a caller in the file hands a model it built itself (`dlrm =
    DLRM_Net(...)` ... `inference(args, dlrm, test_ld)`), or one the module-level code built: a function handed a
    built model holds it whatever its parameter is called (`def inference(args, dlrm, ...)`, `def train(G, D)`)."""
    functions = index.skeleton.functions
    if not functions:
        return {}
    called = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(functions))) + r")\(")
    scopes = [
        function_scope(index, span) for span in functions.values()
        if called.search(index.skeleton.text(span.start, span.end))
    ]
    if called.search(script_text(index)):
        scopes.append(module_code_scope(index, True))
    found: dict[str, set[str]] = {}
    for scope in scopes:
        if scope is None or not isinstance(scope.node, cst.FunctionDef):
            continue
        built = set(scope.built_models)
        if scope.node.name.value != "__main__":
            built |= set(global_models(index)) - bound_here(scope.node, scope.flat)
        if not built:
            continue
        for call, _ctx in scope.flat.nodes:
            if type(call) is not cst.Call or type(call.func) is not cst.Name or call.func.value not in functions:
                continue
            callee = index.function_info(call.func.value)
            if callee is None or not isinstance(callee.node, cst.FunctionDef) or callee.node is scope.node:
                continue
            for position, arg in enumerate(call.args):
                if not arg.star and type(arg.value) is cst.Name and arg.value.value in built:
                    param = parameter_for(callee.node, call, position)
                    if param is not None:
                        found.setdefault(call.func.value, set()).add(param)
    return {name: frozenset(params) for name, params in found.items()}


def _seeds(index: ModelIndex, node: cst.FunctionDef) -> tuple[set[str], set[str]]:
    """Arguments holding a built model (`holds.module_arguments`), and arguments that are parameter iterables."""
    models = set(module_arguments(index, node))
    iterables: set[str] = set()
    for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
        name = param.name.value
        note = cst.Module([]).code_for_node(param.annotation.annotation) if param.annotation is not None else ""
        if note in index.classes and not index.classes[note].is_module:
            # `state: CheckpointState` whose class declares `model: torch.nn.Module`: `state.model` holds one
            models |= {f"{name}.{f}" for f in _module_fields(index, note)}
        if "Parameter" in note or (not note and (
                _PARAMS_NAME.match(name) or _CLIPPED_NAME.match(name) and _SYNC_NAME.match(node.name.value))):
            iterables.add(name)
            models.discard(name)
    return models, iterables


@memoised
def _module_fields(index: ModelIndex, class_name: str) -> frozenset[str]:
    """Fields a plain class of the file declares with a module type (`model: torch.nn.Module` in a dataclass)."""
    cls = index.classes.get(class_name)
    return _class_module_fields(index, cls, 0) if cls is not None else frozenset()


def _class_module_fields(index: ModelIndex, cls: ClassInfo, depth: int) -> frozenset[str]:
    """A plain class's module fields, with those its bases declare, in this file or another
    (`class SACModules(DDPGBaseModules)` inherits `q_funcs: nn.ModuleList`)."""
    found = {name for name, note in _class_annotations(index, cls) if _names_module(index, note)}
    if depth < 4:
        for base in cls.local_bases:
            found |= _class_module_fields(index, base, depth + 1)
        for other, base in cls.external_bases:
            if not base.is_module:
                found |= _class_module_fields(other, base, depth + 1)
    return frozenset(found)


def _class_annotations(index: ModelIndex, cls: ClassInfo) -> list[tuple[str, str]]:
    """(name, annotation text) of the annotated names a class's own body declares (`q_funcs: nn.ModuleList`)."""
    lines = index.skeleton.text(cls.span.start, cls.span.end).splitlines()
    head = next((i for i, line in enumerate(lines) if line.lstrip().startswith("class ")), len(lines))
    body = [line for line in lines[head + 1 :] if line.strip()]  # after any decorators and the `class` line
    depth = len(body[0]) - len(body[0].lstrip()) if body else 0
    found = []
    for line in body:
        match = _FIELD.match(line)
        if match is not None and len(line) - len(line.lstrip()) == depth:
            found.append((match.group(1), match.group(2)))  # only the class's own statements, not methods' locals
    return found


def _names_module(index: ModelIndex, note: str) -> bool:
    """Does an annotation name a module class, of this file or imported?"""
    for name in re.findall(r"[A-Za-z_][\w.]*", note):
        local = index.classes.get(name)
        if local.is_module if local is not None else index.is_module_base(index.qualify(name)):
            return True
    return False


@memoised
def held_parameter_lists(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """`self.X` holding a list of a model's parameters: an argument of `__init__` that is a parameter iterable
    (annotated with `Parameter`, `params: Sequence[nn.Parameter]`, or named `parameters`: what an optimizer wrapper
    was built with); and, in a plain class, a list any method collects from optimizer groups (`parameters.extend(
    group["params"])`) or of the parameters or named pairs of models it holds (`[(n, p) for n, p in
    self.enc.named_parameters()] + [...]`)."""
    found = set()
    held = held_attributes(index, cls) if not cls.is_module else {}
    for method in cls.all_methods() if not cls.is_module else ():
        # `self.model_parameters = [(n, p) for n, p in self.enc.named_parameters()] + [...]` of models it holds, or
        # of a model the method is handed (`for n, p in model.named_parameters(): self.to_optim.append((n, p))`)
        node = method.node if method.owner is cls and "parameters()" in method.text else None
        given = frozenset(module_arguments(index, node)) if node is not None else frozenset()
        if not (held or given):
            continue
        for stmt in walk(node.body) if node is not None else ():
            if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and _walks_of_held(stmt.value, held, given):
                path = access_path(stmt.targets[0].target)
                if path is not None and path.root == "self" and len(path.parts) == 1:
                    found.add(f"self.{path.parts[0]}")
            elif isinstance(stmt, cst.For) and _parameters_walked(stmt.iter, held, given):
                found |= _appended_on_self(stmt)
    for method in cls.all_methods():
        # `self.parameters = parameters` after `parameters.extend(group["params"])` for the groups of the trainer's
        # optimizers (a gradient-clipping callback setting up): the model's parameters, clipped in another method
        node = method.node if method.owner is cls and "param_groups" in method.text else None
        if node is None:
            continue
        grouped = {name for name, source in _group_parameter_locals(node)[0].items() if source}
        for stmt in walk(node.body):
            if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, cst.Name):
                path = access_path(stmt.targets[0].target)
                if stmt.value.value in grouped and path is not None and path.root == "self" and len(path.parts) == 1:
                    found.add(f"self.{path.parts[0]}")
    init = cls.method("__init__")
    named = init is not None and ("Parameter" in init.text or "parameters" in init.text)
    node = init.node if named else None  # type: ignore[union-attr]
    if node is None:
        return frozenset(found)
    _models, iterables = _seeds(index, node)
    for stmt in walk(node.body):
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            value = same_items(stmt.value)  # `self._params = list(params)`
            path = access_path(stmt.targets[0].target)
            if isinstance(value, cst.Name) and value.value in iterables and path is not None and path.root == "self":
                if len(path.parts) == 1:
                    found.add(f"self.{path.parts[0]}")
    return frozenset(found)


def _appended_on_self(loop: cst.For) -> set[str]:
    """`self.X` for each `self.X.append(...)` in the body of `loop` handed its loop variable (`self.to_optim.append((n,
    p))` in `for n, p in model.named_parameters():`): a list of what the loop walks."""
    names = {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
    found = set()
    for call in walk(loop.body):
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append" \
                and call.args and any(isinstance(n, cst.Name) and n.value in names for n in walk(call.args[0].value)):
            path = access_path(call.func.value)
            if path is not None and path.root == "self" and len(path.parts) == 1:
                found.add(f"self.{path.parts[0]}")
    return found


def _walks_of_held(value: cst.BaseExpression, held, given: frozenset[str] = frozenset()) -> bool:
    """Is `value` a list of the parameters (or named pairs) of models `self` holds: `list(self.enc.parameters())`,
    `[(n, p) for n, p in self.enc.named_parameters()]`, or several joined with `+`; or of a model argument among
    `given` (`[p for p in model.parameters() if p.requires_grad]`)?"""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _walks_of_held(value.left, held, given) and _walks_of_held(value.right, held, given)
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and value.for_in.inner_for_in is None:
        return _parameters_walked(value.for_in.iter, held, given)
    if isinstance(value, cst.Call) and call_name(value) in ("list", "tuple") and len(value.args) == 1:
        return _parameters_walked(value.args[0].value, held, given)
    return False


def _parameters_walked(iterable: cst.BaseExpression, held, given: frozenset[str]) -> bool:
    """Is `iterable` a walk of the parameters (or named pairs) of a model `self` holds (`self.enc.parameters()`) or
    of a model argument among `given` (`model.named_parameters()`)?"""
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)):
        return False
    path = access_path(iterable.func.value)
    return iterable.func.attr.value in ("parameters", "named_parameters") and path is not None and (
        path.root == "self" and len(path.parts) == 1 and path.parts[0] in held
        or path.root in given and not path.parts
    )


@memoised
def _declared_attributes(index: ModelIndex, cls: ClassInfo) -> dict[str, str]:
    """Attributes `self.X` of a class -> the annotation text that declares them: the class's own annotation
    (`_modules: DDPGModules`) or that of the `__init__` argument stored there (`self._modules = modules`)."""
    declared = dict(_class_annotations(index, cls))
    init = cls.method("__init__")
    node = init.node if init is not None and "self." in init.text else None
    if node is not None:
        notes = {
            p.name.value: code_of(p.annotation.annotation, limit=200)
            for p in (*node.params.params, *node.params.kwonly_params) if p.annotation is not None
        }
        for stmt in walk(node.body):
            if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, cst.Name):
                path = access_path(stmt.targets[0].target)
                if path is not None and path.root == "self" and len(path.parts) == 1 and stmt.value.value in notes:
                    declared.setdefault(path.parts[0], notes[stmt.value.value])
    return declared


@memoised
def held_containers(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """`self.X` declared as a container of modules (`_modules: dict[str, Union[nn.Module, Optimizer]]`,
    `nets: list[Policy]`), or a plain object's attribute its constructor fills with modules it builds: its items and
    values are held modules."""
    found = set()
    for attr, note in _declared_attributes(index, cls).items():
        if _CONTAINER_NOTE.match(note.strip().strip("\"'")) and _names_module(index, note):
            found.add(f"self.{attr}")
    if not cls.is_module:  # `self.nets = [Policy(d) for _ in range(n)]`, built in `__init__` (or a base's, any file)
        for attr, member in facts_of(cls).members.items():
            if member.kind == Kind.CONTAINER and any(has_params(index, c) for c in member.classes):
                found.add(f"self.{attr}")
        # `@property def models(self) -> Mapping[str, torch.nn.Module]`: what it hands out holds models too
        found.update(f"self.{name}" for name, (_c, several) in annotated_properties(index, cls).items() if several)
        found.update(f"self.{name}" for name in registered_models(index, cls))  # `self._models[name] = model`
        found.update(f"self.{name}" for name in keyed_model_dicts(index, cls))  # `self.models["enc"] = Enc(18)`
    return frozenset(found)


_CONTAINER_NOTE = re.compile(
    r"(?:typing\.)?(?:dict|Dict|Mapping|MutableMapping|list|List|Sequence|Iterable|tuple|Tuple|OrderedDict)\["
)


@memoised
def held_fields(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """`self.X.f` for an attribute `self.X` a class (not a module) declares with the type of a plain class that
    declares `f` as a module (`_modules: DDPGModules`, a dataclass with `q_funcs: nn.ModuleList`), or builds as a
    plain object whose constructor builds `f` as one (`self.policy = Policy(d)` setting `self.critic =
    Critic(d)`): a holder that keeps its models in a container object."""
    declared = _declared_attributes(index, cls)
    found = set()
    for attr, note in declared.items():
        name = note.strip().strip("\"'")
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            continue
        holder = index.classes.get(name)
        where = index
        if holder is None:
            external = index.external(index.qualify(name))
            where, holder = external if external is not None else (index, None)
        if holder is not None and not holder.is_module:
            found |= {f"self.{attr}.{f}" for f in _class_module_fields(where, holder, 0)}
    for attr in facts_of(cls).members:  # `self.policy = Policy(d)`, whose constructor builds `self.q = Critic(d)`
        for holder in attribute_instances(index, cls, attr):
            found |= {f"self.{attr}.{f}" for f in _built_models(holder)}
    return frozenset(found)


def _built_models(cls: ClassInfo) -> frozenset[str]:
    """The attributes a plain class's constructor sets to a module, or a container of modules, that owns
    parameters (`self.q = Critic(d)`, `self.qs = [Critic(d) for _ in range(n)]`)."""
    return frozenset(
        name for name, member in facts_of(cls).members.items()
        if member.kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(cls.index, c) for c in member.classes)
    )


_FIELD = re.compile(r"^\s+(\w+)\s*:\s*([^=#]+?)\s*(?:=.*)?$")


def _walked(index: ModelIndex, scope: ScriptScope, node: cst.FunctionDef) -> dict[str, tuple[int, bool]]:
    """Names that hold a built module -> (flat position from which they do, passed in?).

    A function passed around as a value (`model.apply(init_fn)`, `named_apply(partial(_init, ...), self)`)
    is a callback: what it is given depends on the walk that calls it, judged at that call instead.
    Modules a function builds are partitioned when it runs during construction (a module's `__init__` in this
    file calls it: `self.model = parse_model(cfg)`), and a model it builds and then walks itself (`net =
    MLPnet(d)` ... `for m in net.modules():`, `_built_then_walked`) from its construction on: built under
    `zero.Init`, which the function does not set up.
    """
    held: dict[str, tuple[int, bool]] = {}
    if _callback(index, node.name.value):
        # (what it is given is its caller's; a model it builds itself is its own, whoever calls it: `main_worker`
        # handed to `mp.spawn`)
        return dict(_built_then_walked(index, scope, node))
    params = node.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}
    for inner, _ctx in scope.flat.nodes:
        if type(inner) is cst.Call and isinstance(inner.func, cst.Attribute):
            path = access_path(inner.func.value)  # `model.modules()`, or a child's: `actor.mu.modules()`
            walks = inner.func.attr.value in _PARAM_WALKS | _MODULE_WALKS
            if path is not None and "[]" not in path.parts and path.root in names and walks:
                if path.root not in scope.wrapped:  # a script that wraps it later built it plain
                    held.setdefault(path.root, (-1, True))
    # a method of a class that builds models (not a module itself): what it returns is the model being built
    factory = _returned_local(node) if scope.owner is not None else None
    for name, at in _built_then_walked(index, scope, node).items():
        held.setdefault(name, at)  # `net = MLPnet(d)` ... `for m in net.modules():`
    if factory is None and not _construction_helper(index, node.name.value):
        if not layer_factory(index, node.name.value):
            return held
        factory = _returned_local(node)  # a layer factory another file's model calls: the layer it returns
        if factory is None:
            return held
    chosen = _chosen_classes(scope.flat)
    for inner, _ctx in scope.flat.nodes:
        if type(inner) is cst.Assign and len(inner.targets) == 1 and isinstance(inner.targets[0].target, cst.Name):
            name = inner.targets[0].target.value
            if name in held or name in scope.wrapped or factory is not None and name != factory:
                continue  # a factory: only the module it returns is the model someone builds under zero.Init
            kind, classes = _classify_chosen(index, inner.value, chosen, resolve=factory is not None)
            owns = any(has_params(index, c) is not False for c in classes or ("",))
            if kind in (Kind.MODULE, Kind.CONTAINER) and owns or kind is Kind.UNKNOWN and name == factory and (
                _returns_a_module(index, node)
            ):
                # (`actor_critic = policy.from_config(cfg)` of a class a registry handed back, in a method
                # annotated `-> NetPolicy`: the model it builds, though no file tells which class)
                held[name] = (scope.flat.position[id(inner)], False)
        elif type(inner) is cst.Call and (name := _appended_to(inner)) is not None and name not in held:
            # `layers.append(nn.Linear(d, d))`: the list holds a module built here from that call on
            if name in scope.wrapped or factory is not None and name != factory:
                continue
            kind, classes = classify(index, inner.args[0].value, resolve=factory is not None)
            if kind is Kind.MODULE and any(has_params(index, c) is not False for c in classes or ("",)):
                held[name] = (scope.flat.position[id(inner)], False)
    return held


def _built_then_walked(index: ModelIndex, scope: ScriptScope, node: cst.FunctionDef) -> dict[str, tuple[int, bool]]:
    """Locals a function binds to a model it constructs (`net = MLPnet(**params)`, `holds.constructed_models`) and
    then walks (`for m in net.modules():`), from their construction on: under `deepspeed.zero.Init` each was
    partitioned when its constructor returned. (Not one a script wraps itself later: it built that one plain.)"""
    walked = {
        root.value for inner, _ctx in scope.flat.nodes if type(inner) is cst.Call
        and isinstance(inner.func, cst.Attribute) and inner.func.attr.value in _PARAM_WALKS | _MODULE_WALKS
        and isinstance(root := inner.func.value, cst.Name)
    }
    # `model.fc.weight.data.normal_(0, 0.01)`, `student.fc.weight.shape[1]`: a weight of the model reached by its path
    walked |= {
        path.root for inner, _ctx in scope.flat.nodes if type(inner) is cst.Attribute and inner.attr.value in (
            "data", "shape") and (path := access_path(inner.value)) is not None and path.parts
        and path.parts[-1] in ("weight", "bias")
    }
    # `trunc_normal_(model.head.weight, std=2e-5)`: a weight of a model (not of a torch layer the function builds for
    # itself, `lin = nn.Linear(d, d)`, a helper of its own) handed to a call by its path
    handed = {
        path.root for inner, _ctx in scope.flat.nodes if type(inner) is cst.Attribute
        and inner.attr.value in ("weight", "bias") and isinstance(scope.flat.parent.get(id(inner)), cst.Arg)
        and (path := access_path(inner)) is not None and len(path.parts) > 1
    }
    # `model.tok_embeddings.weight = nn.Parameter(sd["tok_embeddings.weight"])`: a weight of the model replaced
    handed |= {
        path.root for inner, _ctx in scope.flat.nodes if type(inner) is cst.Assign and len(inner.targets) == 1
        and type(target := inner.targets[0].target) is cst.Attribute and target.attr.value in ("weight", "bias")
        and type(inner.value) is cst.Call and (call_name(inner.value) or "").rsplit(".", 1)[-1] == "Parameter"
        and (path := access_path(target)) is not None and len(path.parts) > 1
    }
    found = _built_lists_walked(index, scope)  # `C = [nn.Conv2d(s, t, 1), nn.BatchNorm2d(t)]` ... `for m in C:`
    if not walked and not handed:
        return found
    return found | {
        name: (scope.flat.position[id(call)], False)
        for name, call in constructed_models(index, node, scope.owner).items()
        if (name in walked or name in handed and not known.is_torch_module_class(index.qualified_call(call) or ""))
        and name not in scope.wrapped and id(call) in scope.flat.position
    }


def _built_lists_walked(index: ModelIndex, scope: ScriptScope) -> dict[str, tuple[int, bool]]:
    """Locals a function binds to a list (or tuple) of modules it constructs in place and then walks item by item
    (`C = [nn.Conv2d(s, t, 1), nn.BatchNorm2d(t)]` ... `for m in C: m.weight.data.normal_(0, s)`), from that binding
    on: each item was partitioned when its constructor returned."""
    flat = scope.flat
    iterated = {n.iter.value for n, _ctx in flat.nodes if type(n) is cst.For and type(n.iter) is cst.Name}
    found: dict[str, tuple[int, bool]] = {}
    for n, _ctx in flat.nodes if iterated else ():
        if type(n) is not cst.Assign or len(n.targets) != 1 or type(n.targets[0].target) is not cst.Name \
                or n.targets[0].target.value not in iterated or type(n.value) not in (cst.List, cst.Tuple):
            continue
        built = [classify(index, e.value) for e in n.value.elements if type(e.value) is cst.Call]
        if any(kind is Kind.MODULE and any(has_params(index, c) is not False for c in classes) for kind, classes in built):
            found.setdefault(n.targets[0].target.value, (flat.position[id(n)], False))
    return found


def _appended_to(call: cst.Call) -> str | None:
    """`layers` of `layers.append(<one value>)`, else None."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "append" and isinstance(func.value, cst.Name):
        return func.value.value if len(call.args) == 1 and call.args[0].keyword is None else None
    return None


def _returns_a_module(index: ModelIndex, node: cst.FunctionDef) -> bool:
    """Does the function's return annotation name a module class (`def _create_policy(self) -> NetPolicy`)?"""
    return node.returns is not None and bool(annotated_module(index, node.returns.annotation))


# `.weight.data`, `.bias.shape`, `init(m.weight, ...)`: a parameter reached by its path (`_built_then_walked`'s gate).
_PATH_VALUE = re.compile(r"\.(?:weight|bias)(?:\.(?:data|shape)\b|\s*[,)])")
# `actor = Actor(...)` ... `return actor`: a function that builds a module and returns it.
_FACTORY = re.compile(r"^[ \t]+return[ \t]+([a-z_]\w*)[ \t]*$", re.MULTILINE)


def _factory_text(text: str) -> bool:
    """Text pre-filter of `_returned_local`: a local bound to a class construction (`Actor(d)`, or an alternative
    constructor, `Policy.from_config(cfg)`, `policy.from_config(cfg)`) and returned."""
    return any(
        re.search(
            r"^[ \t]+" + name + r"[ \t]*(?::[^=\n]*)?=[ \t]*\[?[ \t]*(?:(?:[\w.]+\.)?[A-Z]\w*|[\w.]+\._?from_\w+)\("
            + r"|^[ \t]+" + name + r"\.append\((?:[\w.]+\.)?[A-Z]\w*\(",  # (`layers = [nn.Linear(`, `layers.append(`)
            text, re.MULTILINE,
        )
        for name in set(_FACTORY.findall(text))
    )


def _returned_local(node: cst.FunctionDef) -> str | None:
    """The local a factory method returns (`return actor`), when every `return` of it returns that one name.

    A method of a factory object (`ActorFactory.create_module`) that builds a module and hands it to its caller
    is part of building the model: run under `zero.Init`, the module is partitioned as soon as its constructor
    returns, before the factory goes on. (A free function that builds a module is judged where a module's
    `__init__` calls it, `_construction_helper`, unless it is a factory of a torch layer, `built.layer_factory`.)"""
    returned = {
        stmt.value.value if isinstance(stmt.value, cst.Name) else None
        for stmt in walk(node.body) if isinstance(stmt, cst.Return)
    }
    return next(iter(returned)) if len(returned) == 1 else None


def _param_name(index: ModelIndex, name: str) -> bool:
    """A name the file, torch or the package's own files register as a parameter (`weight`, `sigma_param`)."""
    return name in index.param_names or name in index.related_param_names


def _callback(index: ModelIndex, name: str) -> bool:
    """Is the function `name` referenced as a value somewhere in its file (not only called or defined)? Also where
    its docstring or a comment shows it handed on (`model.apply(init_weights)`), but not a mere mention there
    (`This is same as legacy_export, but ...`)."""
    source = index.source
    for match in re.finditer(re.escape(name) + r"\b(?!\s*\()", source):  # led by the literal: fast
        before = source[max(0, match.start() - 4) : match.start()]
        if not (before[-1:].isalnum() or before[-1:] in "._`") and before != "def ":  # (`name` in a docstring)
            tree = index.skeleton.tree
            if tree is None:
                return True  # (no tree to tell a use from a mention: a callback, as any mention once was)
            line = source.count("\n", 0, match.start()) + 1
            statements = _statements_at(tree, line)
            if _used_in_code(source, match.start(), match.end(), line, statements):
                return True
            handed_on = before[-1:] == "=" or before[-1:] == "(" and (before[-2:-1].isalnum() or before[-2:-1] == "_")
            if handed_on and _mentioned_only(source, match.start(), line, statements):
                return True  # (a mention showing it handed on, `model.apply(init_weights)` in a docstring)
    return False


def _mentioned_only(source: str, at: int, line: int, statements: list[ast.AST]) -> bool:
    """Is the position `at` of the source (on `line`, inside `statements`) in a comment or a docstring (a mention,
    not code): a `#` before it on its line, or a line of a string standing alone as a statement?"""
    line_start = source.rfind("\n", 0, at) + 1
    if "#" in source[line_start:at]:
        return True
    return any(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        and node.lineno <= line <= (node.end_lineno or node.lineno) for node in statements)


def _statements_at(tree: ast.Module, line: int) -> list[ast.AST]:
    """The statements whose lines hold `line`, outermost first."""
    found: list[ast.AST] = []
    body: list[ast.AST] = list(tree.body)
    while body:
        around = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)  # type: ignore
        if around is None:
            break
        found.append(around)
        body = [s for field in ("body", "orelse", "finalbody", "handlers")
                for s in getattr(around, field, ()) if isinstance(s, ast.stmt | ast.excepthandler)]
    return found


def _used_in_code(source: str, start: int, end: int, line: int, statements: list[ast.AST]) -> bool:
    """Is the name at `start`..`end` of the source (on `line`, inside `statements`, outermost first) used by code (a
    name, an attribute, or a string naming it, `getattr(self, "init_fn")`), not merely mentioned in a docstring, a
    comment or other text? Only the innermost statement around its line is walked."""
    line_start = source.rfind("\n", 0, start) + 1
    col = len(source[line_start:start].encode())  # (`ast` counts columns in UTF-8 bytes)
    col_end = col + len(source[start:end].encode())
    name = source[start:end]
    if not statements:
        return False
    for node in ast.walk(statements[-1]):  # (the innermost statement holding the line)
        kind = type(node)
        if kind is ast.Name and node.lineno == line and node.col_offset == col:  # type: ignore[attr-defined]
            return True
        if kind is ast.Attribute and node.end_lineno == line and node.end_col_offset == col_end:  # type: ignore
            return True
        if kind is ast.Constant and node.value == name and node.lineno == line:  # type: ignore[attr-defined]
            return True
    return False


def _called_by_modules(index: ModelIndex, name: str) -> bool:
    """Does a method of a module class of this file call the function `name` (`eager_attention_forward(self, ...)`
    from a forward, `caffe2_msra_fill(layer)` from an `__init__`)?"""
    call = re.compile(word_first(name, r"[\w.]") + r"\s*\(")
    return any(call.search(index.skeleton.text(cls.span.start, cls.span.end)) for cls in index.module_classes())


def _construction_helper(index: ModelIndex, name: str) -> bool:
    """Does the `__init__` of a module class of this file (or a helper it calls) call the function `name`?"""
    call = re.compile(word_first(name, r"[\w.]") + r"\s*\(")
    return any(call.search(method.text) for cls in index.module_classes() for method in cls.init_methods)


def _handed_uses(
    index: ModelIndex, scope: ScriptScope, models: set[str], iterables: set[str], paths: bool,
    constructing: bool = False,
) -> list[ParamAccess]:
    """Uses of a handed model's parameters: through parameter iterables, and `X.apply(fn)` writing them (not while
    a module is `constructing`: its `__init__` runs under `zero.Init`, whose `apply` gathers each module)."""
    func, flat = scope.node, scope.flat
    aliases: dict[str, str] = {}  # loop variable -> the parameters it walks
    maps: dict[str, str] = {}  # `params = dict(model.named_parameters())` -> the parameters it maps names to
    listed: dict[str, str] = {}  # `params = list(model.parameters())` -> the parameters it lists
    built_here = _built_locals(index, flat)
    narrowed = frozenset(n for n in other_objects_models(index, func) if "." not in n)  # `isinstance(obj, nn.Module)`

    def holds_model(expr: cst.BaseExpression) -> bool:
        """A model handed in or held; or anything else whose parameters the code walks (`pair.target`), unless
        this function built it (a plain module)."""
        name = dotted(expr)
        return name is not None and (name in models or name.partition(".")[0] not in built_here)

    def source_of(expr: cst.BaseExpression) -> str | None:
        """What `expr` iterates, when it yields the handed model's parameters."""
        expr = same_items(expr)
        if isinstance(expr, cst.Name) and expr.value in iterables:
            return expr.value
        if type(expr) is cst.Attribute and (kept := dotted(expr)) in iterables:
            return kept  # `self.to_optim`: a list of the parameters kept on `self`
        if isinstance(expr, cst.IfExp):  # `chain(m.parameters(), m.buffers()) if both else m.parameters()`
            return source_of(expr.body) or source_of(expr.orelse)
        if isinstance(expr, cst.Call) and (call_name(expr) or "").rsplit(".", 1)[-1] == "chain":
            return next((s for a in expr.args if a.keyword is None and (s := source_of(a.value))), None)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            mapping = expr.func.value  # `params.items()`, `params.values()` of a name -> parameter mapping
            if expr.func.attr.value in ("items", "values") and isinstance(mapping, cst.Name) and mapping.value in maps:
                return maps[mapping.value]
            if expr.func.attr.value in ("items", "values") and (state := state_of(mapping)) is not None:
                return state  # `model.state_dict().items()`
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in ("parameters", "named_parameters") and holds_model(expr.func.value):
                # (a module's own, `recurse=False`, only of an item of a walk: an `apply` function's are gathered)
                if not own_only(expr) or dotted(expr.func.value) in walked:
                    return cst.Module([]).code_for_node(expr)
        return None

    # `for module, ema_module in zip(model.modules(), ...)`: each item a module of the handed model
    walked: set[str] = set()
    pairs: set[str] = set()  # loop names bound to whole (name, parameter) pairs: `pair[0]` is the name
    states: set[str] = set()  # sources that are a held model's state dict: its tensors are the parameters' views

    def state_of(expr: cst.BaseExpression) -> str | None:
        """`model.state_dict()` of a held model (written in place, its tensors write the parameters)."""
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            if expr.func.attr.value == "state_dict" and dotted(expr.func.value) in models:
                states.add(code := cst.Module([]).code_for_node(expr))
                return code
        return None

    def access(node: cst.CSTNode, ctx, use: str, op: str, source: str, via: Via) -> ParamAccess:
        where = func.name.value  # type: ignore[union-attr]
        return ParamAccess(node, ctx, use, op, via, owner=source, scope=Scope.HANDED, where=where, snippet=scope.snippet)

    found = []
    for node, ctx in flat.nodes:
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                for bound in bound_names(target.target):
                    aliases.pop(bound, None)  # `p = output_dir / name`: no longer a parameter
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                name = node.targets[0].target.value
                maps.pop(name, None)
                if source_of(node.value) is not None or _selects(node.value, source_of):
                    iterables.add(name)  # `parameters = list(parameters)`, `[p for p in ps if p.requires_grad]`
                    listed[name] = source_of(node.value) or name
                elif (mapped := _mapped(node.value, source_of)) is not None:
                    maps[name] = mapped  # `averaged = dict(ema_model.named_parameters())`
                elif (state := state_of(node.value)) is not None:
                    maps[name] = state  # `target_dict = target.state_dict()`
            continue
        if kind is cst.For or kind is cst.CompFor:
            for target, items in loop_items(node.target, node.iter):
                if isinstance(target, cst.Name) and isinstance(items, cst.Call) and isinstance(
                        items.func, cst.Attribute) and items.func.attr.value in _MODULE_WALKS and holds_model(
                        items.func.value) and dotted(items.func.value) != "self":
                    walked.add(target.value)
                if isinstance(target, cst.Name):  # `for param in net.named_parameters()`: (name, parameter) pairs
                    named = isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and \
                        items.func.attr.value == "named_parameters"
                    (pairs.add if named else pairs.discard)(target.value)
            _bind_loop(node.target, node.iter, source_of, aliases)
            if paths:
                _bind_submodules(node.target, node.iter, models, aliases, narrowed)
            continue
        if kind is cst.Call and not ctx.guarded and isinstance(node.func, cst.Attribute):
            if node.func.attr.value == "apply" and dotted(node.func.value) in models and node.args and not constructing:
                fn = writes_module_params(index, flat, node.args[0].value)
                if fn:
                    found.append(access(node, ctx, WRITE, "", dotted(node.func.value) or "", Via(Reach.APPLY, fn)))
            continue
        if kind is cst.Attribute and paths and not ctx.guarded:
            held_by = _held_prefix(node, models) if _param_name(index, node.attr.value) else None
            if held_by is not None:  # `model.fc.weight`, `self.model.fc.weight`: a parameter reached by its path
                use, op = usage(index, flat, node)
                if use == READ and not computed_with(index, flat, flat.parent.get(id(node)), op):
                    continue
                if use in (READ, SIZE, WRITE, INIT):
                    found.append(access(node, ctx, use, op, held_by, Via(Reach.PATH)))
            continue
        if kind is cst.Name and node.value in iterables and not ctx.guarded and (bulk := bulk_written(index, flat, node)):
            # `torch._foreach_mul_(ema_params, m)`: every parameter of the list written in place
            found.append(access(node, ctx, WRITE, f" (the target of `{bulk}()`)", listed.get(node.value, node.value),
                                Via(Reach.PARAMETERS)))
            continue
        if kind is cst.Subscript and not ctx.guarded and isinstance(node.value, cst.Name) and node.value.value in maps:
            source = maps[node.value.value]  # `averaged[name]`: one parameter of the mapping
        elif kind is not cst.Name or node.value not in aliases or ctx.guarded:
            continue
        else:
            source = aliases[node.value]
        parent = flat.parent.get(id(node))
        if node.value in pairs and isinstance(parent, cst.Subscript) and parent.value is node:
            position = _constant_index(parent)
            if position == 0:
                continue  # `param[0]`: the parameter's name
            if position == 1:  # `param[1]`: the parameter itself
                node, parent = parent, flat.parent.get(id(parent))
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
            continue
        if isinstance(parent, (cst.Tuple, cst.Param, cst.AssignTarget)):
            continue
        use, op = usage(index, flat, node)
        if use == READ:
            use, op = written_in_bulk(index, flat, node, op)
        if op.startswith(".grad") and isinstance(parent, cst.Attribute) and parent.attr.value == "grad":
            read = gradient_read(index, flat, parent) if source not in states else None
            if read is not None:  # `p.grad.cpu().numpy()` logged: ZeRO-3 left `p.grad` None (its values are shards)
                found.append(access(node, ctx, READ, read, source, Via(Reach.PARAMETERS)))
            continue
        if op.startswith(".grad") or use == CHECK:
            continue  # setting or clipping gradients is ZG107's concern; `is None` and isinstance only look at the object
        if use == READ and not computed_with(index, flat, parent, op):
            continue  # bound, collected or handed on (`groups.append(p)`), not computed with
        if source in states and use not in (WRITE, INIT):
            continue  # reading a state dict is ZG108's, at the `state_dict()` call
        if use in (READ, SIZE, WRITE, INIT):
            found.append(access(node, ctx, use, op, source, Via(Reach.PARAMETERS)))
    return found


def _constant_index(subscript: cst.Subscript) -> int | None:
    """`pair[1]`: the integer a subscript takes, if it is one constant."""
    if len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index):
        value = subscript.slice[0].slice.value
        if isinstance(value, cst.Integer):
            return int(value.value)
    return None


_SUBMODULE_WALKS = frozenset({"items", "values", "modules", "children", "named_modules", "named_children"})


def _bind_submodules(
    target, iterable, models: set[str], aliases: dict[str, str], narrowed: frozenset[str] = frozenset()
) -> None:
    """`for name, head in model.heads.items()`, `for layer in self.model.layers`, `for m in model.modules()`:
    the loop variable is a submodule of a held model (its parameters reached by path are the model's). A name the
    function tests to be a module (`narrowed`: `for k, obj in objs.items(): if isinstance(obj, nn.Module)`) stays
    one whatever the loop walks."""
    for part, items in loop_items(target, iterable):
        if not isinstance(part, cst.Name) or part.value in aliases or part.value in narrowed:
            continue
        models.discard(part.value)
        if isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and not items.args:
            if items.func.attr.value not in _SUBMODULE_WALKS:
                continue
            items = items.func.value
        name = dotted(items)
        if name is not None and (name in models or _held_prefix_of(name, models)):
            models.add(part.value)


def _through_settings(name: str, models: set[str]) -> bool:
    """Does the dotted `name` reach below its held prefix through a setting (`model.cfg.model`, `agent.args.net`),
    or end in a size or count the model keeps (`net.input_dim`, `net.num_layers`)?"""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in models:
            return any(config_like(p) for p in parts[cut:]) or _SIZE_NAME.search(parts[-1]) is not None
    return False


_SIZE_NAME = re.compile(r"(?:^|_)(?:dim|dims|size|sizes|len|length|count|idx|index)$|^n_|^num_")


def _held_prefix_of(name: str, models: set[str]) -> bool:
    """Is a proper prefix of the dotted `name` a held model?"""
    while "." in name:
        name = name.rsplit(".", 1)[0]
        if name in models:
            return True
    return False


def _held_prefix(node: cst.Attribute, models: set[str]) -> str | None:
    """The held model a parameter's attribute path starts from (`model` of `model.fc.weight`, `self.model` of
    `self.model.blocks[0].weight`), when one does."""
    path = access_path(node.value)
    if path is None:
        return None
    prefix = path.root
    for part in (None, *path.parts):
        if part == "[]":
            return None
        if part is not None:
            prefix = f"{prefix}.{part}"
        if prefix in models:
            return prefix
    return None


def _mapped(value: cst.BaseExpression, source_of) -> str | None:
    """`dict(model.named_parameters())`: a mapping from names to the parameters `source_of` recognises."""
    if isinstance(value, cst.Call) and call_name(value) == "dict" and len(value.args) == 1 and not value.args[0].keyword:
        return source_of(value.args[0].value)
    return None


def _built_locals(index: ModelIndex, flat: Flat) -> set[str]:
    """Names a function assigns a module construction (`probe = nn.Linear(4, 4)`): plain modules it built. Not the
    models a factory function hands back (`agent, player = build_agent(cfg)`: built there, `provenance.factory_made`)."""
    found = set()
    chosen = _chosen_classes(flat)
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and isinstance(node.value, cst.Call):
            if len(node.targets) == 1 and factory_made(index, flat, node.value, node.targets[0].target) is not None:
                continue
            if len(node.targets) == 1 and wraps_itself(node.value, node.targets[0].target):
                continue  # `model = nn.DataParallel(model)`: a wrapper around the model the name held
            if _classify_chosen(index, node.value, chosen)[0] in (Kind.MODULE, Kind.CONTAINER):
                for target in node.targets:
                    found.update(bound_names(target.target))
    return found


def _chosen_classes(flat: Flat) -> dict[str, list[cst.BaseExpression]]:
    """Locals a function binds, once, to a choice of classes by name (`linear_cls = TransposedLinear if transposed
    else nn.Linear`): the names it may hold. Calling the local builds one of them."""
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            leaves = choice_leaves(node.value) if isinstance(node.value, cst.IfExp) else []
            if name in bound or not leaves or not all(isinstance(v, (cst.Name, cst.Attribute)) for v in leaves):
                bound[name] = []  # bound twice, or to anything else: no choice we can name
            else:
                bound[name] = leaves
    return {name: leaves for name, leaves in bound.items() if leaves}


def _classify_chosen(
    index: ModelIndex, value: cst.BaseExpression, chosen: dict[str, list[cst.BaseExpression]], resolve: bool = True
) -> tuple[Kind, tuple[str, ...]]:
    """`classify`, where a call of a local bound to a choice of classes (`_chosen_classes`) builds what calling
    any of them would: the first module (or list of them) among the options, else what the call itself is."""
    func = value.func if isinstance(value, cst.Call) else None
    for option in chosen.get(func.value, ()) if isinstance(func, cst.Name) else ():
        kind, classes = classify(index, value.with_changes(func=option), resolve=resolve)
        if kind in (Kind.MODULE, Kind.CONTAINER):
            return kind, classes
    return classify(index, value, resolve=resolve)


def _selects(value: cst.BaseExpression, source_of) -> bool:
    """`[p for p in parameters if ...]`: a list of the parameters themselves."""
    if not isinstance(value, cst.ListComp) or not isinstance(value.elt, cst.Name):
        return False
    comp = value.for_in
    return comp.inner_for_in is None and any(
        isinstance(part, cst.Name) and part.value == value.elt.value and source_of(items) is not None
        for part, items in loop_items(comp.target, comp.iter)
    )


def _bind_loop(target, iterable, source_of, aliases: dict[str, str]) -> None:
    """`for p in parameters`, `for n, p in model.named_parameters()`, `for s, p in zip(shadow, parameters)`."""
    for bound in bound_names(target):
        aliases.pop(bound, None)  # the name now walks something else
    for part, items in loop_items(target, iterable):
        source = source_of(items)
        if source is not None and isinstance(part, cst.Name):
            aliases[part.value] = source


def _walked_uses(index: ModelIndex, scope: ScriptScope, held: dict[str, tuple[int, bool]]) -> list[ParamAccess]:
    """Uses of a built module's parameters: through its parameter and module walks, and attribute paths."""
    flat = scope.flat
    params: dict[str, str] = {}  # for p in model.parameters(): p -> model
    modules: dict[str, str] = {}  # for m in model.modules(): m -> model

    def holder(name: str, at: cst.CSTNode) -> str | None:
        start = held.get(name)
        if start is not None and flat.position.get(id(at), -1) > start[0]:
            return name
        return modules.get(name)

    def access(node: cst.CSTNode, ctx, owner: str, via: Via) -> ParamAccess:
        use, op = usage(index, flat, node)
        where = scope.node.name.value  # type: ignore[union-attr]
        return ParamAccess(node, ctx, use, op, via, owner=owner, scope=Scope.BUILT, where=where, snippet=scope.snippet,
                           given=held[owner][1])

    # `model._modules[name] = Linear(...)`: a module the function puts in place itself, after construction.
    replaced: dict[str, int] = {}  # target -> the last position it is assigned at
    for n, _ in flat.nodes:
        if type(n) is cst.Assign:
            for t in n.targets:
                if type(t.target) is not cst.Name:  # (a local bound again, `out = LinearF16(d)` in another branch,
                    replaced[code_of(t.target, limit=1000)] = flat.position[id(n)]  # is no part put in place)
    # `def init_weights_vit(model)` run only as `init_weights_vit(self)` by constructors: `model.pos_embedding` is the
    # constructing module's own parameter, whole until its constructor returns (its children's are not)
    first = positional_parameters(scope.node)[:1] if isinstance(scope.node, cst.FunctionDef) else []
    own = first[0] if first and _only_given_self_by_constructors(index, scope.node.name.value) else None
    found = []
    for node, ctx in flat.nodes:
        kind = type(node)
        if ctx.guarded:
            continue
        if kind is cst.For or kind is cst.CompFor:
            for target, it in loop_items(node.target, node.iter):
                if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and isinstance(target, cst.Name):
                    path = access_path(it.func.value)
                    owner = holder(path.root, node) if path is not None and "[]" not in path.parts else None
                    if owner is not None and it.func.attr.value in _PARAM_WALKS:
                        params[target.value] = owner
                    elif owner is not None and it.func.attr.value in _MODULE_WALKS:
                        modules[target.value] = owner
                elif type(it) is cst.Name and isinstance(target, cst.Name) and (owner := holder(it.value, node)):
                    modules[target.value] = owner  # `for m in C:` of a list of modules built above
            continue
        if kind is cst.Name and node.value in params:
            if not isinstance(flat.parent.get(id(node)), (cst.For, cst.CompFor, cst.Tuple)):
                found.append(access(node, ctx, params[node.value], Via(Reach.PARAMETERS)))
        elif kind is cst.Attribute and isinstance(node.value, (cst.Name, cst.Attribute, cst.Subscript)):
            path = access_path(node)  # (`layers[-1].weight`: of an item of a list of modules built here)
            if path is None or not path.parts:
                continue
            owner = holder(path.root, node)
            if owner is None or not _param_name(index, node.attr.value) or path.root == own and len(path.parts) == 1:
                continue
            # not a module put in place after the holder was built (the holder's own binding is no replacement)
            if replaced.get(code_of(node.value, limit=1000), -1) <= held.get(owner, (-1,))[0]:
                found.append(access(node, ctx, owner, Via(Reach.PATH)))
    return found


@memoised
def _only_given_self_by_constructors(index: ModelIndex, name: str) -> bool:
    """Is the function `name` of this file called, and only as `name(self, ...)` in the constructors of its classes?"""
    calls = len(re.findall(r"(?<![\w.])" + re.escape(name) + r"\(", index.source)) - 1  # (less its `def`)
    by_constructors = sum(
        len(re.findall(r"(?<![\w.])" + re.escape(name) + r"\(\s*self\b", method.text))
        for cls in index.classes.values() for method in cls.init_methods if method.owner is cls
    )
    return calls > 0 and calls == by_constructors
