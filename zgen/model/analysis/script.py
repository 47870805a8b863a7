"""Training-script code: functions and module-level statements outside model classes.

Script rules look for what happens to a model after ZeRO-3 has partitioned
it: after `deepspeed.initialize(model=...)` (both the engine and the model
passed in now hold partitioned parameters) or for a model built inside
`with deepspeed.zero.Init():`. A `ScriptScope` is one top-level function, one
method of a non-module class, or the module-level statements of the file,
parsed only if its text mentions what a rule needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from ..program import known
from ..program.holds import (
    annotated_module, argument_held_models, constructed_models, held_attributes, looked_up_models, model_containers,
    module_arguments, module_like_name, other_objects_models, averaged_copies, set_up_containers, rebinds_itself,
    binding_text,
)
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised, super_method
from ..program.members import UNKNOWN_CLASS as UNKNOWN, Kind, class_named, classify, facts_of
from ..program.skeleton import FunctionSpan
from ..program.tree import (
    Snippet, call_name, code_of, const_str, cst, dotted, parameter_for, parse_snippet, unwrapped_argument, walk,
)
from .access import COPY, INIT, SIZE, STATE, WRITE, ParamAccess, Reach, Scope, Via
from .callables import called_parameters, wrapped_callee
from .choices import options
from .instances import abstract_module_method
from .calls import HeldCalls
from .divergence import (
    GATE, NOT_RUNS, Divergence, derived_names, find_divergences, helper_reaches, own_value_raise_text,
    module_divergences, tensor_backward,
)
from .counts import local_bindings
from .effects import DEEPCOPIES, STATES, argument_effects, returns_argument, usage
from .flow import Ctx, Flat, bound_names, flat_of, flatten, loop_items, targets_of
from .plain import inherited_member
from .reach import all_bases, duck_instances, function_target, is_abstract, method_targets, plain_instances
from .own import answering_classes, mixin_heirs
from .runs import (
    ACCESSOR, HelperRuns, inference_method, bound_in_class, class_method_runs, evaluates, evaluator_method,
    runs_argument, runs_unread,
)
from .state import holder_key
from .taint import DATA, RANK, Taint

__all__ = [
    "ScriptScope", "script_scopes", "function_scope", "script_divergences", "script_accesses", "scope_reach",
    "divergences", "module_helper_reaches",
    "WRAP_TRIGGER", "partitions_here", "module_code_partitions", "class_partitions", "global_models", "bound_here",
]

# Text without which no model in a scope can be partitioned.
WRAP_TRIGGER = re.compile(
    r"initialize\s*\(|Init(?<!\wInit)\s*\(|(?:accelerator|fabric)\.(?:prepare|prepare_model|setup|setup_module|init_module)\s*\("
)


@dataclass(eq=False)
class ScriptScope:
    """One parsed piece of script code and what it partitions."""

    index: ModelIndex
    snippet: Snippet
    node: cst.CSTNode
    owner: ClassInfo | None = None  # the class (not a module) whose method this is

    @cached_property
    def flat(self) -> Flat:
        return flatten(self.node)

    @cached_property
    def held(self) -> dict[str, tuple[str, ...]]:
        """Dotted names holding a model here -> its classes: module arguments, and the attributes of the class that
        hold one."""
        node = self.node
        found = dict(module_arguments(self.index, node)) if isinstance(node, cst.FunctionDef) else {}
        if isinstance(node, cst.FunctionDef):
            for name, holder in _annotated_holders(self.index, node, found):
                for attr, classes in class_held(holder.index, holder).items():
                    # `def train(model: Forecast)` ... `model.model(x)`: a plain class of the program holding one
                    found.setdefault(f"{name}.{attr}", tuple(holder.index.global_name(c) for c in classes))
        for name, classes in self.built_models.items():  # `q_network = QNetwork(env)` in a training script
            found.setdefault(name, classes)
        if isinstance(node, cst.FunctionDef) and self.owner is None and node.name.value != "__main__":
            # `policy = Policy()` at the top of a script, run by its functions (`probs = policy(state)`)
            bound = None
            for name, classes in global_models(self.index).items():
                if bound is None:
                    bound = bound_here(node, self.flat)
                if name not in bound:
                    found.setdefault(name, classes)
        for path, classes in _plain_holders(self.index, self.flat, self.owner).items():
            found.setdefault(path, classes)  # `ema = ModelEMA(model)` ... `ema.ema`: the model the object keeps
        for name in self.looked_up:
            found.setdefault(name, (UNKNOWN,))
        if isinstance(node, cst.FunctionDef):
            for path in argument_held_models(node, found):  # `runner.model.eval()` in a hook handed the runner
                found.setdefault(path, (UNKNOWN,))
        if self.owner is not None:
            found |= {f"self.{name}": classes for name, classes in class_held(self.index, self.owner).items()}
            found |= {f"self.{name}": classes for name, classes in held_properties(self.index, self.owner).items()}
            for path in averaged_copies(self.index, self.owner):
                found.setdefault(f"self.{path}", (UNKNOWN,))  # `self.ema.ema_model` of `self.ema = EMA(self.model)`
            for name, classes in handed_models(self.index, self).items():
                found.setdefault(name, classes)  # `def generate_(self, G, z)` called `self.generate_(self.GAN.G, z)`
        return found

    @cached_property
    def looked_up(self) -> frozenset[str]:
        """Locals bound to a model no construction names: `model = models["text"]["model"]`, used as a module;
        `policy = policy_config()`, run on values (`holds.looked_up_models`)."""
        node = self.node
        if not isinstance(node, (cst.FunctionDef, cst.Module)):
            return frozenset()
        body = node if isinstance(node, cst.FunctionDef) else _as_function(node.body, "__main__")
        return looked_up_models(self.index, body)

    @cached_property
    def built_models(self) -> dict[str, tuple[str, ...]]:
        """Locals this code binds to a model it constructs and keeps, not a factory's result it hands back: under
        `deepspeed.zero.Init` each is partitioned once its constructor returns -> its classes. Module-level code
        is read as a function's body."""
        node = self.node
        if isinstance(node, cst.Module):
            node = _as_function(node.body, "__main__")
        if not isinstance(node, cst.FunctionDef) or self.owner is not None and (
            node.name.value == "__init__"
            or node.returns is not None and annotated_module(self.index, node.returns.annotation)
        ):
            # (a plain class's constructor builds its parts, a method annotated to return a module builds that: what
            # its other methods build, they train)
            return {}
        returned = {
            n.value.value for n, _ctx in self.flat.nodes if type(n) is cst.Return and isinstance(n.value, cst.Name)
        }
        found = {}
        for name, call in constructed_models(self.index, node, None).items():
            made = self.index.qualify(call_name(call) or "")
            if name in returned or made.startswith("torch.") and not known.is_torch_module_class(made):
                continue  # (a factory's result it hands back; `torch.stack([ens(x) for ens in ensembles])`)
            found[name] = classify(self.index, call, resolve=True)[1] or (UNKNOWN,)
        return found

    @cached_property
    def program_models(self) -> dict[str, tuple[str, ...]]:
        """`built_models` less the torch layers and containers the code makes for itself (`lin = nn.Linear(d, d)`):
        the models of the program it built, which a ZeRO-3 run builds under `zero.Init`."""
        return {
            name: classes for name, classes in self.built_models.items()
            if not all(c.startswith("torch.") for c in classes)
        }

    @cached_property
    def held_items(self) -> dict[str, tuple[str, ...]]:
        """Items of the containers of models the class holds (`holds.model_containers`), as `self.critics.[]` (the
        access path of `self.critics[i]`) -> the models' classes."""
        if self.owner is None:
            return {}
        found = {f"self.{name}.[]": classes for name, classes in model_containers(self.index, self.owner).items()}
        for name, classes in set_up_containers(self.index, self.owner).items():
            found.setdefault(f"self.{name}.[]", classes)  # `self.cri_list = [Critic(d) for _ in ...]` in `init`
        return found

    @cached_property
    def wrapped(self) -> dict[str, int]:
        """Dotted names holding a partitioned model -> flat position from which they do."""
        found: dict[str, int] = {}
        for node, _ctx in self.flat.nodes:
            if isinstance(node, cst.With) and any(_is_zero_init(self.index, i.item) for i in node.items) \
                    and not any(_on_meta(i.item) for i in node.items):
                for inner in _assigned_in(node.body):
                    for target in inner.targets:
                        name = dotted(target.target)
                        if name:
                            found.setdefault(name, self.flat.position[id(inner)])
            if not isinstance(node, cst.Assign):
                continue
            init = _initialize_call(self.index, node.value)
            if init is None:
                continue
            position = self.flat.position[id(node)]
            at = _wrapper_model_position(init)
            if at is None:
                continue  # `loader = accelerator.prepare(loader)`: no model handed over
            for target in node.targets:
                engine = target.target
                if isinstance(engine, (cst.Tuple, cst.List)) and engine.elements:
                    engine = engine.elements[min(at, len(engine.elements) - 1)].value
                name = dotted(engine)
                if name:
                    found.setdefault(name, position)
            model = _model_arg(init, self.index) if at == 0 or not _is_wrapper_call(init) else init.args[at].value
            name = dotted(model) if model is not None else None
            if name:
                found.setdefault(name, position)
        return found

    @cached_property
    def partitioned_models(self) -> dict[str, tuple[str, ...]]:
        """Locals this code binds to a model it builds and then partitions (`model = Net()` handed to
        `deepspeed.initialize`, or built under `zero.Init`) -> its classes; the engine wrapping one, as
        `<engine>.module`, the same. What each holds from the position `wrapped` gives on."""
        node = self.node
        if not self.wrapped or not isinstance(node, cst.FunctionDef):
            return {}
        found: dict[str, tuple[str, ...]] = {}
        for name, call in constructed_models(self.index, node, self.owner).items():
            if name in self.wrapped:
                found[name] = classify(self.index, call, resolve=True, cls=self.owner)[1] or (UNKNOWN,)
        for name, at in self.wrapped.items():  # the engine the same `initialize` handed back wraps that model
            models = [found[m] for m, start in self.wrapped.items() if m in found and start == at and m != name]
            if name not in found and len(models) == 1:
                found[f"{name}.module"] = models[0]
        return found

    @cached_property
    def bound_once(self) -> frozenset[str]:
        """Names this code binds exactly once (a local bound again may hold anything: `p = model` ... `p =
        getattr(p, name)`; the same model again, `module = module.module` or `model = self.model.module` after `model =
        self.model`, is no new binding: `holds.rebinds_itself`)."""
        bound: dict[str, int] = {}
        first: dict[str, str] = {}
        for node, _ctx in self.flat.nodes:
            value = node.value if type(node) is cst.Assign else None
            for target in targets_of(node)[0]:
                for name in bound_names(target):
                    if not rebinds_itself(value, name, first.get(name)):
                        bound[name] = bound.get(name, 0) + 1
                        first.setdefault(name, binding_text(value))
        return frozenset(name for name, count in bound.items() if count == 1)

    @cached_property
    def aliases(self) -> dict[str, tuple[str, ...]]:
        """Locals bound once to a model this code holds itself, not to a part of one (`model = self.unwrapped()`,
        `model = accelerator.unwrap_model(self.model)`, `module = runner.model`) -> its classes."""
        found: dict[str, tuple[str, ...]] = {}
        for node, _ctx in self.flat.nodes:
            if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                value = node.value
                # (`module = runner.model`; `decoder = self.decoder.module if multi_gpu else self.decoder`, either
                # way the same model)
                options = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
                held = {self.held.get(_holder_text(v) or "") if isinstance(v, (cst.Call, cst.Attribute)) else None
                        for v in options}
                if len(held) == 1 and (classes := held.pop()) is not None:
                    found.setdefault(node.targets[0].target.value, classes)
                elif (classes := self._held_by_name(value)) is not None:
                    found.setdefault(node.targets[0].target.value, classes)
        return {name: classes for name, classes in found.items() if name in self.bound_once}

    def _held_by_name(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """The classes of the held models `getattr(self, name)` may fetch, where `name` is a literal or a local bound
        once to a choice of literals (`name = 'model' if params.encoder_only else 'encoder'`), each naming a held
        model; else None."""
        if not (type(value) is cst.Call and dotted(value.func) == "getattr" and len(value.args) == 2
                and dotted(value.args[0].value) == "self"):
            return None
        key = value.args[1].value
        if type(key) is cst.Name:
            bindings = local_bindings(self.flat).get(key.value, [])
            if len(bindings) != 1:
                return None
            key = bindings[0]
        options = [key.body, key.orelse] if isinstance(key, cst.IfExp) else [key]
        names = [const_str(o) for o in options]
        if not all(names):
            return None
        classes = [self.held.get(f"self.{n}") for n in names]
        if any(c is None for c in classes):
            return None
        return tuple(dict.fromkeys(c for group in classes for c in group))  # type: ignore[union-attr]

    @cached_property
    def bound_methods(self) -> dict[str, cst.Attribute]:
        """Locals bound once to a method of a model this code holds (`forward_func = module.val_step`) -> that method:
        calling the local runs it."""
        found: dict[str, cst.Attribute] = {}
        for node, _ctx in self.flat.nodes:
            if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                    and isinstance(node.value, cst.Attribute) and node.value.attr.value not in NOT_RUNS:
                holder = _holder_text(node.value.value) or ""
                if holder in self.held or holder in self.aliases:
                    found.setdefault(node.targets[0].target.value, node.value)
        return {name: method for name, method in found.items() if name in self.bound_once}

    @cached_property
    def parameters(self) -> frozenset[str]:
        """The parameter names of this function (empty for module-level code)."""
        node = self.node
        if not isinstance(node, cst.FunctionDef):
            return frozenset()
        params = node.params
        return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))

    @cached_property
    def model_args(self) -> frozenset[str]:
        """Parameters of this function used as a model (`model.eval()`, `model.parameters()`).

        A function handed a model (an `evaluate(model, data, args)`) cannot
        tell whether it was partitioned; under ZeRO-3 it was, so a call of it
        is an all-gather every rank must join.
        """
        names = self.parameters - {"self"}
        found = set()
        for inner, _ctx in self.flat.nodes:
            if type(inner) is not cst.Call:
                continue
            func = inner.func
            if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_ONLY_METHODS:
                if isinstance(func.value, cst.Name) and func.value.value in names:
                    found.add(func.value.value)
            elif isinstance(func, cst.Name) and func.value in names and _MODEL_NAME.fullmatch(func.value):
                found.add(func.value)  # `model(x)` on a parameter called `model`
            for arg in inner.args:  # `step(model, x)`: handed on to what runs it
                value = arg.value
                if isinstance(value, cst.Name) and value.value in names and _MODEL_NAME.fullmatch(value.value):
                    found.add(value.value)
        return frozenset(found)

    @cached_property
    def runner_args(self) -> frozenset[str]:
        """Parameters of this function on which it calls an inference method (`algo.predict(obs)`,
        `agent.sample_action(s)`, `sampler.generate(x)`): an object that runs a model it holds, whose calls every
        rank must make alike. Not a name bound anywhere else in the function (`env.action_space.sample()`)."""
        names = self.parameters - {"self", "cls"}
        found = set()
        for inner, _ctx in self.flat.nodes:
            if type(inner) is cst.Call and isinstance(inner.func, cst.Attribute):
                owner = inner.func.value
                if inference_method(inner.func.attr.value) and isinstance(owner, cst.Name) and owner.value in names:
                    found.add(owner.value)
        return frozenset(found)

    @cached_property
    def callable_args(self) -> frozenset[str]:
        """Parameters of this function called as functions on its values (`step(last, state)`, `policy(td)`): a
        model or a step of one handed in (`callables.called_parameters`)."""
        node = self.node
        return called_parameters(node) - self.model_args if isinstance(node, cst.FunctionDef) else frozenset()

    @cached_property
    def model_runners(self) -> frozenset[str]:
        """Functions defined in this scope whose body calls a model argument (`def step(x): return model(x)`)."""
        found = set()
        for inner, _ctx in self.flat.nodes:
            if isinstance(inner, cst.FunctionDef) and inner is not self.node:
                for call in walk(inner.body):
                    if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
                        if call.func.value in self.model_args:
                            found.add(inner.name.value)
                            break
        return frozenset(found)

    def wrapped_name(self, expr: cst.CSTNode, at: cst.CSTNode) -> str | None:
        """The wrapped model `expr` names (`engine`, `engine.module`) at node `at`, else None."""
        name = dotted(expr)
        if name is None:
            return None
        if name.endswith(".module"):
            name = name[: -len(".module")]
        start = self.wrapped.get(name)
        if start is None or self.flat.position.get(id(at), -1) <= start:
            return None
        return name


@memoised
def class_held(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """The attributes of a class that hold a model (`held_attributes`), with those a base class of another file's
    `__init__` keeps (`super().__init__(model)` in a trainer built on a base trainer), and, of a mixin, those its
    heirs keep (`own.mixin_heirs`: `self.model` read by `CachedLossMixin`, set by the losses deriving from it)."""
    found = dict(held_attributes(index, cls))
    for base in all_bases(cls):
        if base.index is not index:
            for name, classes in held_attributes(base.index, base).items():
                found.setdefault(name, tuple(base.index.global_name(c) for c in classes))
    for heir_index, heir in mixin_heirs(index, cls):
        for name, classes in held_attributes(heir_index, heir).items():
            found.setdefault(name, tuple(heir_index.global_name(c) for c in classes))
    return found


def _annotated_holders(
    index: ModelIndex, function: cst.FunctionDef, modules: dict[str, tuple[str, ...]]
) -> Iterator[tuple[str, ClassInfo]]:
    """Parameters annotated with a plain class (not a module) of this file or one it imports -> that class."""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.annotation is None or param.name.value in modules or param.name.value in ("self", "cls"):
            continue
        written = dotted(param.annotation.annotation)
        if not written:
            continue
        cls = index.local_class(written)
        owner = index
        if cls is None:
            found = index.external(index.qualify(written))
            if found is None:
                continue
            owner, cls = found
        if cls is not None and not cls.is_module:
            yield param.name.value, cls


@memoised
def held_properties(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """Properties of a class (not a module) that hand back a model it holds: `return self.model`, `return
    self.accelerator.unwrap_model(self.model)` (an unwrapping call given the model hands back the model it wraps),
    `return default(self.ema_model, self.model)` (`choices.options`) -> the model's classes; and methods of `self`
    alone that do, as `name()` (`def unwrapped(self): return self.accelerator.unwrap_model(self.model)`, called
    `self.unwrapped().sample(n)`)."""
    if "return self." not in cls.text and "(self.model" not in cls.text and "@property" not in cls.text:
        return {}
    held = class_held(index, cls)
    if not held:
        return {}
    found: dict[str, tuple[str, ...]] = {}
    for method in cls.all_methods():
        if method.name in held or "return" not in method.text or method.name.startswith("__"):
            continue
        prop = "@property" in method.text
        if not prop and not _SELF_ONLY.match(method.text[method.text.find("def "):]):
            continue  # (a method given arguments may hand back what they choose)
        node = method.node
        returns = [n.value for n in walk(node.body) if isinstance(n, cst.Return)] if node is not None else []
        if not returns or any(value is None for value in returns):
            continue
        # (each `return` a held model: `if self.wrapped_model is None: return self.model`, `return self.wrapped_model`)
        classes: tuple[str, ...] | None = ()
        for value in returns:
            if (wrapped := unwrapped_argument(value)) is not None:
                value = wrapped
            found_here: tuple[str, ...] = ()
            for option in options(index, value) or (value,):
                name = dotted(option) or ""
                if name.startswith("self.") and name[5:] in held:
                    found_here += tuple(c for c in held[name[5:]] if c not in found_here)
            if not found_here:
                classes = None
                break
            classes += tuple(c for c in found_here if c not in classes)  # type: ignore[operator]
        if classes:
            found[method.name if prop else f"{method.name}()"] = classes
    return found


# `def unwrapped(self) -> nn.Module:`: a method given nothing but `self`.
_SELF_ONLY = re.compile(r"def\s+\w+\s*\(\s*self\s*\)")


# What a function calls the model it is handed (`model`, `net`, `engine`, `draft_model`).
_MODEL_NAME = re.compile(r"(?:\w+_)?(?:model|module|net|engine)(?:_[A-Za-z]|_?\d)?")  # (`model_T`, `net_g`)
# Methods only an `nn.Module` has (not `train`/`state_dict`: trainers and optimizers have those too).
_MODULE_ONLY_METHODS = frozenset(
    {"eval", "parameters", "named_parameters", "modules", "named_modules", "requires_grad_"}
)


def _assigned_in(body: cst.CSTNode) -> Iterator[cst.Assign]:
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign):
            yield node
        elif isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            stack.extend(node.body)
        elif isinstance(node, cst.SimpleStatementLine):
            stack.extend(node.body)


def _on_meta(item: cst.CSTNode) -> bool:
    """`torch.device("meta")` beside it: the model is built without storage, not partitioned."""
    return isinstance(item, cst.Call) and call_name(item) in ("torch.device", "device") and any(
        isinstance(a.value, cst.SimpleString) and "meta" in a.value.value for a in item.args
    )


def _is_zero_init(index: ModelIndex, item: cst.CSTNode) -> bool:
    name = call_name(item) if isinstance(item, cst.Call) else None
    if not name:
        return False
    if index.qualify(name).endswith("zero.Init"):
        return True
    # `with fabric.init_module():` builds the model under zero.Init when the strategy is DeepSpeed stage 3
    owner, _, method = name.rpartition(".")
    return method == "init_module" and owner.rsplit(".", 1)[-1] in known.WRAPPER_NAMES


def _initialize_call(index: ModelIndex, value: cst.CSTNode) -> cst.Call | None:
    if isinstance(value, cst.Subscript):  # deepspeed.initialize(...)[0]
        value = value.value
    if not isinstance(value, cst.Call):
        return None
    name = call_name(value)
    if name is None:
        return None
    qualified = index.qualify(name)
    if qualified in _WRAP_CALLS:
        return value
    # `model, opt = accelerator.prepare(model, opt)`, `model = fabric.setup(model)`: under a DeepSpeed
    # ZeRO-3 plugin or strategy these hand the model to `deepspeed.initialize`
    owner, _, method = name.rpartition(".")
    if method in _WRAPPER_PREPARE and owner.rsplit(".", 1)[-1] in known.WRAPPER_NAMES:
        return value
    return None


_WRAPPER_PREPARE = frozenset({"prepare", "prepare_model", "setup", "setup_module"})


@memoised
def partitions_here(index: ModelIndex, span: FunctionSpan) -> bool:
    """Does the function partition a model itself: hand one to a call that partitions it (`deepspeed.initialize(
    model=m)`, `accelerator.prepare(model, opt)`), build one under `zero.Init`, or set up training with a wrapper it
    builds (`accelerator = Accelerator()` ... `accelerator.prepare(optimizer)`: a model it does not hand over stays
    whole)? Its code before that runs on the unpartitioned model, and the script rules judge what follows. Text that
    only looks like it does not (`self._initialize(cfg)`, `def initialize(self, x)`, a weight initialiser
    `initialize(self, init_cfg)`), nor data handed alone to a wrapper the object holds or the function is handed
    (`self.accelerator.prepare(loader, scheduler)`: the model was partitioned where the wrapper was set up)."""
    if not WRAP_TRIGGER.search(index.skeleton.text(span.start, span.end)):
        return False
    scope = function_scope(index, span)
    return scope is None or _scope_partitions(index, scope)


@memoised
def module_code_partitions(index: ModelIndex) -> bool:
    """`partitions_here` for the module-level code of a script (`amp.initialize(model, optimizer)` of apex does
    not)."""
    if not WRAP_TRIGGER.search(script_text(index)):
        return False
    scope = module_code_scope(index, True)
    return scope is not None and _scope_partitions(index, scope)


def _scope_partitions(index: ModelIndex, scope: ScriptScope) -> bool:
    for node in walk(scope.node):
        if isinstance(node, cst.With) and any(_is_zero_init(index, i.item) for i in node.items):
            return True
        call = _initialize_call(index, node) if isinstance(node, cst.Call) else None
        if call is None:
            continue
        if not _is_wrapper_call(call) or not all(_not_model(a.value) for a in call.args):
            return True
        owner = (call_name(call) or "").partition(".")[0]
        if owner != "self" and owner not in scope.parameters:
            return True  # a wrapper of its own, handed no model
    return False


def class_partitions(index: ModelIndex, cls: ClassInfo) -> bool:
    """Does a method of the class partition a model itself (`partitions_here`): a trainer wrapping what it holds?"""
    return WRAP_TRIGGER.search(cls.text) is not None and any(partitions_here(index, span) for span in cls.span.methods.values())


# What a training wrapper is handed besides models: data, optimizers, schedules (`accelerator.prepare(loader, sched)`).
_NOT_MODEL_NAME = re.compile(r"(?i)(?:\w*_)?(?:(?:data)?loaders?|dataset|dl|optim\w*|opt|(?:lr_)?sched\w*)")


def _not_model(value: cst.BaseExpression) -> bool:
    """Is an argument handed to a training wrapper named as data, an optimizer or a schedule, not as a model?"""
    name = dotted(value)
    return bool(name) and _NOT_MODEL_NAME.fullmatch(name.rsplit(".", 1)[-1]) is not None


def _is_wrapper_call(call: cst.Call) -> bool:
    name = call_name(call) or ""
    owner, _, method = name.rpartition(".")
    return method in _WRAPPER_PREPARE and owner.rsplit(".", 1)[-1] in known.WRAPPER_NAMES


def _wrapper_model_position(call: cst.Call) -> int | None:
    """Which argument of `accelerator.prepare(loader, model, opt)` is the model: by name; 0 for initialize."""
    if not _is_wrapper_call(call):
        return 0
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for i, arg in enumerate(positional):
        name = (dotted(arg.value) or "").rsplit(".", 1)[-1]
        if _MODEL_NAME.fullmatch(name) or module_like_name(name):  # (`model`, `policy`, `unet`)
            return i
    return None


# Calls that partition a model, and the position of their positional `model` argument:
# `deepspeed.initialize(args, model, ...)` and `zgen.runtime.initialize(model, config, ...)`.
_WRAP_CALLS = {
    "deepspeed.initialize": 1,
    "deepspeed.initialize.initialize": 1,
    "zgen.runtime.initialize": 0,
    "zgen.runtime.engine.initialize": 0,
}


def _model_arg(call: cst.Call, index: ModelIndex) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "model":
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    at = _WRAP_CALLS.get(index.qualify(call_name(call) or ""), 0)
    return positional[at].value if len(positional) > at else None


def _parse_script(index: ModelIndex) -> Snippet | None:
    """The module-level code, parsed with every class and function replaced by `pass` (lines kept)."""
    skel = index.skeleton
    lines = list(skel.lines)
    spans = [(c.start, c.end, c.indent) for c in skel.classes.values()]
    spans += [(f.start, f.end, f.indent) for f in skel.functions.values()]
    for start, end, indent in spans:
        lines[start - 1] = " " * indent + "pass\n"
        for i in range(start, end):
            lines[i] = "\n"
    return parse_snippet("".join(lines), 1, 0)


class _Search(Protocol):
    """A text pre-filter: a compiled pattern or a rule's `Trigger`."""

    def search(self, text: str) -> object: ...


def script_scopes(index: ModelIndex, trigger: _Search) -> Iterator[ScriptScope]:
    """Script scopes whose text matches `trigger`, parsed on first use and cached."""
    if index.other_framework:
        return
    spans, in_script = _script_hits(index, trigger)
    for span in spans:
        scope = function_scope(index, span)
        if scope is not None:
            yield scope
    if in_script:
        scope = _module_scope(index)
        if scope is not None:
            yield scope


@memoised
def _script_hits(index: ModelIndex, trigger: _Search) -> tuple[list[FunctionSpan], bool]:
    """The script functions whose text matches `trigger`, and whether the module-level code does (several
    rules ask with the same trigger; each text is searched once per file)."""
    spans: list[FunctionSpan] = list(index.skeleton.functions.values())
    whole: set[int] = set()  # methods of classes whose `__init__` matches: `self.rank = dist.get_rank()` taints them
    for cls in index.classes.values():
        if not cls.is_module:
            spans.extend(cls.span.methods.values())
            init = cls.span.methods.get("__init__")
            if init is not None and trigger.search(index.skeleton.text(init.start, init.end)):
                whole.update(id(span) for span in cls.span.methods.values())
    hits = [span for span in spans if id(span) in whole or trigger.search(index.skeleton.text(span.start, span.end))]
    text = script_text(index)
    return hits, bool(text and trigger.search(text))


@memoised
def script_text(index: ModelIndex) -> str:
    """The file's module-level code, as text (classes and functions left out)."""
    return "".join(index.skeleton.text(a, b) for a, b in index.skeleton.script)


@memoised
def function_scope(index: ModelIndex, span: FunctionSpan) -> ScriptScope | None:
    snippet = index.parse(span)
    if snippet is None:
        return None
    owner = next((c for c in index.classes.values() if span in c.span.methods.values()), None)
    return ScriptScope(index, snippet, snippet.node, owner if owner is not None and not owner.is_module else None)


@memoised
def _module_scope(index: ModelIndex) -> ScriptScope | None:
    snippet = _parse_script(index)
    return None if snippet is None else ScriptScope(index, snippet, snippet.module)


@memoised
def module_code_scope(index: ModelIndex, single_lines: bool = False) -> ScriptScope | None:
    """The module-level code read as the body of a function named `__main__` (what runs when the file is a script:
    `q_network = QNetwork(env)` ... `target_network.load_state_dict(q_network.state_dict())`), for the analyses that
    read functions; None when the file has no module-level code beyond definitions and imports (nor, unless
    `single_lines`, any statement spanning lines: a module of constants, `logger = get_logger(__name__)`)."""
    if not single_lines and not any(b > a for a, b in index.skeleton.script):
        return None
    module = _module_scope(index)  # (parsed once, for the script rules too)
    if module is None:
        return None
    body = [stmt for stmt in module.snippet.module.body if not _definition_or_import(stmt)]
    return ScriptScope(index, module.snippet, _as_function(body, "__main__")) if body else None


@memoised
def global_models(index: ModelIndex) -> dict[str, tuple[str, ...]]:
    """Names the module-level code binds to a model it constructs and keeps (`policy = Policy()` in a script) -> its
    classes: globals its functions run."""
    if not _BUILD_AT_TOP.search(script_text(index)):
        return {}
    scope = module_code_scope(index, True)  # (`policy = Policy()` may be its only line of code: `single_lines`)
    return dict(scope.built_models) if scope is not None else {}


# A module-level construction (`policy = Policy()`, `model = Net().to(device)`), indented under a test or not.
_BUILD_AT_TOP = re.compile(r"(?m)^[ \t]*\w+[ \t]*=[ \t]*(?:[\w.]+\.)?[A-Z]\w*\(")


@memoised
def _runs_a_global_model(index: ModelIndex, name: str) -> bool:
    """Does the file's function `name` run a model the module-level code built (`probs = policy(state)`,
    `policy.act(obs)`), a global it does not bind itself?"""
    models = global_models(index)
    span = index.skeleton.functions.get(name) if models else None
    scope = function_scope(index, span) if span is not None else None
    if scope is None or not isinstance(scope.node, cst.FunctionDef):
        return False
    bound = bound_here(scope.node, scope.flat)
    for node, _ctx in scope.flat.nodes:
        if type(node) is not cst.Call:
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in NOT_RUNS:
            continue
        root = func.value if isinstance(func, cst.Attribute) else func
        if isinstance(root, cst.Name) and root.value in models and root.value not in bound:
            return True
    return False


def bound_here(node: cst.FunctionDef, flat: Flat) -> set[str]:
    """The names a function binds itself (its parameters, assignments, loop targets), which hide globals of the same
    name, less those it declares `global`."""
    params = node.params
    bound = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for extra in (params.star_arg, params.star_kwarg):
        if isinstance(extra, cst.Param):
            bound.add(extra.name.value)
    declared: set[str] = set()
    for inner, _ctx in flat.nodes:
        if type(inner) is cst.Global:
            declared.update(n.name.value for n in inner.names)
            continue
        targets, _value = targets_of(inner)
        for target in targets:
            bound.update(bound_names(target))
    return bound - declared


def _as_function(body, name: str) -> cst.FunctionDef:
    """Statements of module-level code wrapped as the body of a function `name` (the same nodes: positions hold)."""
    return cst.FunctionDef(name=cst.Name(name), params=cst.Parameters(), body=cst.IndentedBlock(body=body))


def _definition_or_import(stmt: cst.CSTNode) -> bool:
    """A statement that only defines or imports (`pass` left of a class or function, `import torch`, a docstring)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    return all(isinstance(small, (cst.Pass, cst.Import, cst.ImportFrom)) or (
        isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
    ) for small in stmt.body)


class _ScriptCalls:
    """Collectives and calls of a partitioned model in script code."""

    def __init__(self, index: ModelIndex, scope: ScriptScope, summary: bool = False) -> None:
        self.index = index
        self.scope = scope
        self.summary = summary  # a helper's summary (models reached through the objects it is handed)
        self._held: HeldCalls | None = None

    @property
    def held(self) -> HeldCalls:
        """Calls of a held model's children and of locals bound to them (`model.layers[i](x)`, `fn(x)`)."""
        if self._held is None:
            scope = self.scope
            roots = {name: (UNKNOWN,) for name in scope.model_args} | scope.held | scope.held_items
            if self.summary and isinstance(scope.node, cst.FunctionDef):
                # a helper's model reached through an object it is handed (`strategy.model(x)`, `runner.model`); not
                # through an object `self` holds, whose own methods the summary reads (`self.writer.save_model(p)`
                # is a method of the writer)
                roots |= {
                    name: (UNKNOWN,) for name in other_objects_models(self.index, scope.node)
                    if name not in roots and (
                        name.partition(".")[0] in scope.parameters - {"self"} or name.rpartition(".")[0] in scope.held)
                }  # (or a child, named as a module, of a model `self` holds: `self.model.decoder(x)`)
            self._held = HeldCalls(self.index, roots, scope.flat)
        return self._held

    def is_module_sequence(self, expr: cst.BaseExpression) -> bool:
        return False

    def classes_of(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """Classes of the held or given model (or a child of one) `expr` is, or None."""
        if not (self.scope.held or self.scope.model_args or self.scope.held_items):
            return None
        return self.held.module_of(expr, loose=True)

    def callee(self, call: cst.Call) -> str | None:
        index, scope = self.index, self.scope
        if isinstance(call.func, cst.Name) and (method := scope.bound_methods.get(call.func.value)) is not None:
            return self.callee(call.with_changes(func=method))  # `forward_func(inputs)` for `= module.val_step`
        name = call_name(call)
        if name is None:  # `model.layers[i](x)`, `getattr(model, name)(x)`
            if (scope.held or scope.model_args or scope.held_items or self.summary) and self.held.callee(call):
                return code_of(call.func)
            func = call.func
            if not (isinstance(func, cst.Attribute) and (holder := _holder_text(func.value)) in scope.held):
                return None
            name = f"{holder}.{func.attr.value}"  # `self.unwrapped().sample(n)`: a method of a model handed back
        qualified = name if name.startswith(".") else index.qualify(name)
        last = qualified.rsplit(".", 1)[-1]
        if last in known.COLLECTIVES and qualified.startswith(("torch.distributed.", "deepspeed.comm.")):
            return code_of(call.func)
        if known.is_gather_context(qualified):
            return code_of(call.func)
        if call.args and qualified in known.CALLS_FIRST_ARGUMENT and isinstance(
                given := call.args[0].value, (cst.Name, cst.Attribute)):
            # `torch.onnx.export(model, x, path)`, `checkpoint(model.block, x)`: the module handed first is run
            return code_of(call.func) if self.callee(cst.Call(func=given)) is not None else None
        func = call.func
        if isinstance(func, cst.Attribute):
            if known.wrapper_collective((dotted(func.value) or "").rsplit(".", 1)[-1], func.attr.value):
                return code_of(func)  # `self.accelerator.get_state_dict(model)`, `fabric.save(path, state)`
        if scope.wrapped_name(func, call) or (isinstance(func, cst.Name) and func.value in scope.model_args):
            return code_of(func)
        if dotted(func) in scope.held or isinstance(func, cst.Name) and func.value in scope.aliases:
            return code_of(func)  # `self.model(x)`, `policy(obs)`: a model this code is handed or holds
        accessor = self.summary and isinstance(func, cst.Attribute) and ACCESSOR.fullmatch(func.attr.value)
        if (scope.held or scope.model_args or scope.held_items or self.summary) and not accessor and (
            self.held.callee(call) is not None
        ):
            return code_of(func)  # `self.model.layers[i](x)`, `fn = model.unet.forward` ... `fn(x)`
        holder = _holder_text(func.value) if isinstance(func, cst.Attribute) else None
        held = scope.held.get(holder) if holder is not None else None  # type: ignore[arg-type]
        if held is None and holder is not None and holder.startswith("self.") and scope.held:
            held = self.held.roots.get(holder)  # `self.x` bound here to a held model or a copy of one
        if held is None and holder is not None and scope.held:
            held = scope.aliases.get(holder)  # `model = self.unwrapped()` ... `model.sample(n)`
        if held is not None and func.attr.value not in NOT_RUNS:  # type: ignore[union-attr]
            name = func.attr.value  # type: ignore[union-attr]
            # a model of no class we can tell: the module classes of the file or its package defining the method
            # answer (`model.extract_embedding()` hands back a layer in every class that has it), unless the method
            # leaves a step to a subclass (skrl's `act` calling `self.compute`, which the user's model defines)
            # (each class's own file: `method_runs` does not read a method a subclass inherits from another file)
            answering = answering_classes(index, held, name, "", True, False)
            if answering != held and _complete(index, answering, name):
                held = answering
            by_name = runs_unread(name)  # a method no class we read defines: by its name
            if method_runs(index, held, name, by_name, by_name):
                return code_of(func)  # `self.model.forward(x)`, `model.predict(obs)`, `unet.sample(...)`
        elif held is None and isinstance(func, cst.Attribute) and func.attr.value not in NOT_RUNS and (
            scope.held or scope.model_args
        ):
            child = self.held.module_of(func.value, loose=True)  # `model.decoder_postnet.postnet(s)`: a child's method
            if child and method_runs(index, child, func.attr.value, False):
                return code_of(func)  # (only a class we read answers: its method runs its own layers)
        if isinstance(func, cst.Attribute) and inference_method(func.attr.value):
            if isinstance(func.value, cst.Name) and func.value.value in scope.runner_args:
                return code_of(func)  # `algo.predict(obs)`: an algorithm object given to an evaluation loop
            if scope.owner is not None and _handed_attribute(scope.owner, func.value) \
                    and not plain_instances(index, scope.owner, scope.flat, func.value):
                return code_of(func)  # `self._approximator.predict(s)`: an object the class was handed to answer with
        if isinstance(func, cst.Attribute) and func.attr.value == "forward" and _on_self_attribute(func.value):
            return code_of(func)  # `self._policy.forward(obs)`: what an object of the trainer's runs as a forward
        if isinstance(func, cst.Attribute) and func.attr.value in known.ENGINE_COLLECTIVES | {"generate", "forward"}:
            target = func.value
            if scope.wrapped_name(target, call) or (isinstance(target, cst.Name) and target.value in scope.model_args):
                return code_of(func)
        return None


def _complete(index: ModelIndex, classes: tuple[str, ...], name: str) -> bool:
    """Does each class's method `name`, and what it reaches on `self`, call only methods the class has (its own,
    its bases', a module's API), none a subclass must add, and is none of them abstract (`raise
    NotImplementedError`, `@abstractmethod`: a subclass or a mixin placed before the class answers)?"""
    for ref in classes:
        local = index.classes.get(ref)
        found = (index, local) if local is not None else index.external(ref)
        if found is None:
            return False
        cls = found[1]
        for method in cls.reachable(name, inherited=True):
            if is_abstract(method):
                return False  # an abstract method: a subclass or a mixin before the class answers (skrl's `Model.act`)
            if any(
                called not in NOT_RUNS and called not in ("forward", "__call__") and cls.inherited_method(called) is None
                for called, _super in method.self_calls
            ):
                return False
    return True


def _handed_attribute(owner: ClassInfo, expr: cst.BaseExpression) -> bool:
    """`self.x` that the class's `__init__` does not build by a constructor call (`self.kmeans = KMeans(8)` holds an
    object of its own class; `self.approximator = approximator` or `None` holds what it is handed), or builds by a
    factory function whose product no file tells (`self.agent = hydra.utils.instantiate(cfg.agent)`, `make_agent(
    spec, cfg)`)."""
    name = dotted(expr) or ""
    if not name.startswith("self.") or name.count(".") != 1:
        return False
    member = inherited_member(owner, name[5:])
    if member is None or not isinstance(member.call, cst.Call):
        return True
    return member.kind == Kind.UNKNOWN and (call_name(member.call) or "").rsplit(".", 1)[-1][:1].islower()


def _on_self_attribute(expr: cst.BaseExpression) -> bool:
    """`self.policy`, `self.learner.model`: an attribute path of `self`."""
    name = dotted(expr) or ""
    return name.startswith("self.") and name.count(".") <= 2


def _holder_text(expr: cst.BaseExpression) -> str | None:
    """`self.model` as its dotted text, a call `self.unwrapped()` given nothing as `self.unwrapped()` (the key of a
    method handing back a held model in `ScriptScope.held`), an unwrapping call as what it is given."""
    if isinstance(expr, cst.Call) and not expr.args:
        name = dotted(expr.func)
        return f"{name}()" if name else None
    if (wrapped := unwrapped_argument(expr)) is not None:
        return _holder_text(wrapped)  # `accelerator.unwrap_model(self.model)` hands back the model it wraps
    if isinstance(expr, cst.Attribute) and expr.attr.value == "module":
        return _holder_text(expr.value)  # `self.model.module`: the model a data-parallel wrapper wraps
    return dotted(expr)


@memoised
def divergences(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[Divergence]:
    """The divergent decisions in one method of a module class (once per class and method), a plain object the
    module holds counting as a runner where its method reaches a model (`self.agent(state)` for `self.agent =
    ValueAgent(self.net)`: `reach.plain_instances`, `method_reach`)."""
    flat = flat_of(method)

    def plain_runs(receiver: cst.BaseExpression, name: str) -> bool:
        return flat is not None and any(
            method_reach(index, target) is not None
            for plain in plain_instances(index, cls, flat, receiver)
            for target in method_targets(index, plain, name)
        )

    return module_divergences(index, cls, method, plain_runs)


def module_helper_reaches(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does `self.<name>()` in a module class reach a submodule other than through a child's call (a plain object
    it holds running one, a helper of another file handed one, a helper handed a child: `divergence.helper_reaches`)?"""

    def plain_runs(receiver: cst.BaseExpression, method: str) -> bool:
        return any(
            method_reach(index, target) is not None
            for plain in plain_instances(index, cls, Flat(), receiver)
            for target in method_targets(index, plain, method)
        )

    return helper_reaches(index, cls, name, plain_runs)


def script_divergences(
    index: ModelIndex, trigger: _Search, kind: str = RANK
) -> Iterator[tuple[Snippet, Divergence]]:
    """Divergent collectives and model calls of one kind in script code (rank: ZG201; data: ZG204).

    For data, a loop that calls the model through a helper (`step(model, x)`,
    a local closure around `model(...)`) and stops on what it returned is a
    data-dependent exit too.
    """
    for scope in script_scopes(index, trigger):
        if kind != RANK and not (
            scope.held or scope.model_args or scope.wrapped or scope.runner_args or scope.callable_args
            or scope.held_items  # (an item of a container of models it holds: `self.critics[i](s)`)
            or scope_reach(index, scope)  # (a model reached through a plain object or helpers: `self.agent.act(s)`)
            or (kind == DATA and _runs_backward(scope))  # (`loss.backward()` of a loss a trainer handed in computed)
            or (kind == DATA and _event_hook(scope))  # (a callback's check of the step's loss: `after_batch`)
            or (kind == DATA and _checked_in_a_pass(index, scope))  # (`check_loss(loss)` after the backward)
        ):
            continue  # runs no model (only a rank test can also gate a collective)
        for d in _scope_divergences(index, scope, True):
            if d.kind == kind:
                yield scope.snippet, d


def _runs_backward(scope: ScriptScope) -> bool:
    """Does the scope call `.backward()` on a value (`loss.backward()`): the backward pass of a model, a collective
    of every parameter under ZeRO-3, whoever computed the loss? (Its nodes, already flattened by `scope_reach`: no
    text of the scope is generated for it.)"""
    return any(tensor_backward(node) for node, _ctx in scope.flat.nodes)


@memoised
def _scope_divergences(index: ModelIndex, scope: ScriptScope, helpers: bool) -> list[Divergence]:
    """The divergent decisions of one script scope, once for every rule (`helpers`: model calls through helpers)."""
    indirect = (lambda _calls: _script_indirect(scope)) if helpers else None
    # the owner (a trainer, an agent) may keep the rank on itself (`self.rank = dist.get_rank()`)
    owner = scope.owner
    taint = Taint(
        index, owner, scope.flat, filled=(lambda: filled_state(index, owner)) if owner is not None else None,
        fills=lambda call: filled_arguments(index, scope, call),
    )
    # (a function's text: what a call that reaches a model returned, read as a value, `if batch_sim < 0:`)
    text = scope.snippet.code if helpers and isinstance(scope.node, cst.FunctionDef) else None
    found = find_divergences(
        scope.flat, lambda: _ScriptCalls(index, scope), taint, indirect, model_code=False, text=text,
        run_around=(lambda name: _called_in_a_pass(index, owner, name)) if owner is not None else (
            lambda name: _function_in_a_pass(index, scope, name)
        ),
    )
    return found + _noop_replacements(scope, taint) if helpers else found


# A callback's event method (`after_batch`, `on_train_batch_end`, `before_step`): a training loop calls it in the
# middle of the pass, between one step's model calls and the next.
_EVENT = re.compile(r"(?:on|after|before)_[a-z]\w*")


def _event_hook(scope: ScriptScope) -> bool:
    """Is the scope an event method of a plain class (a callback, a hook) that checks a value (the text trigger of
    a raise on this rank's own values)?"""
    node = scope.node
    return (
        scope.owner is not None and isinstance(node, cst.FunctionDef) and _EVENT.fullmatch(node.name.value) is not None
        and own_value_raise_text(scope.snippet.code)
    )


@memoised
def _called_in_a_pass(index: ModelIndex, owner: ClassInfo, name: str) -> bool:
    """Does another method of `owner` call `self.<name>(...)` and reach a model, or run a backward pass (`fit_batch`
    running the model, then `self.check_loss_isfinite(loss)` and `loss.backward()`)? An event method of a callback
    (`after_batch`) is called by the training loop in the pass."""
    if _EVENT.fullmatch(name):
        return True
    return _caller_in_a_pass(index, owner.span.methods, name, f"self.{name}(")


def _caller_in_a_pass(index: ModelIndex, spans: dict[str, FunctionSpan], name: str, call: str) -> bool:
    """Does one of `spans` other than `name` itself make `call` (`self.check(`, `check(`) and reach a model, or run a
    backward pass (of a loss a method the user overrides computed)?"""
    for other, span in spans.items():
        if other == name or call not in index.skeleton.text(span.start, span.end):
            continue
        scope = function_scope(index, span)
        if scope is not None and (scope_reach(index, scope) is not None or _runs_backward(scope)):
            return True
    return False


def _checked_in_a_pass(index: ModelIndex, scope: ScriptScope) -> bool:
    """Is the scope a function of the file that stops on its own non-finite values (`def check_loss(loss): if not
    torch.isfinite(loss): raise ...`) and runs in the middle of a training pass (`_function_in_a_pass`)?"""
    node = scope.node
    if scope.owner is not None or not isinstance(node, cst.FunctionDef):
        return False
    return own_value_raise_text(scope.snippet.code) and _function_in_a_pass(
        index, scope, node.name.value
    )


def _function_in_a_pass(index: ModelIndex, scope: ScriptScope, name: str) -> bool:
    """Does a function run in the middle of a training pass: handed a model whose gradients it reads
    (`after_backward_checks(model)`: `torch.isnan(p.grad).any()` over `model.named_parameters()`; ZeRO-3 leaves each
    rank its own shard of them), or called by a function of this file that reaches a model or runs a backward?"""
    node = scope.node
    if isinstance(node, cst.FunctionDef) and ".grad" in scope.snippet.code and module_arguments(index, node):
        return True
    return _caller_in_a_pass(index, index.skeleton.functions, name, f"{name}(")


# Arguments that hand a helper the run's settings, not data (`self.args`, `cfg`).
_SETTINGS = re.compile(r"(?:self\.)?(?:args|config|cfg|conf|hparams|hps|opts?|settings|params)")


# What an object does with a loss or an optimizer it is handed: it drives the step, it keeps no record.
_DRIVES = frozenset({
    "backward", "step", "zero_grad", "scale", "unscale_", "clip_grad_norm_", "clip_grad_value_", "clip_gradients",
    "prepare", "prepare_model_update", "wait_optimizer_synced",
})


@memoised
def _kept_records(index: ModelIndex, scope: ScriptScope) -> tuple[dict[str, str], dict[str, str]]:
    """What a function (or a method) keeps of what the model returned, directly or through a helper that runs it:
    attributes of `self` (`self.history.update_metric("eval_loss", total)` for `total += loss_fn(self.model(x),
    y).item()`, `self.metrics["val"] = acc`, `self.best = score`) and objects it was handed (`metric.update(
    self.model(x).argmax(-1), y)`), each -> the call whose output it keeps. Attributes and arguments that hold the
    model itself are not records of it, nor is a value a collective made every rank's first."""
    if not isinstance(scope.node, cst.FunctionDef):
        return {}, {}
    calls, indirect = _ScriptCalls(index, scope), _script_indirect(scope)
    taint = Taint(index, scope.owner, scope.flat, own_state=False)
    models = {*scope.held, *scope.model_args}

    def handed_inputs(call: cst.Call) -> bool:  # (something besides models and settings: data to run on)
        return any(
            code_of(arg.value) not in models and not _SETTINGS.fullmatch(code_of(arg.value))
            and calls.classes_of(arg.value) is None for arg in call.args
        )

    outputs = {  # (not what a method hands back once a collective made it every rank's, a gathered score, nor a
        # query given only models and settings, `self.model.is_rnn()`, `self.optimizer_kwargs(self.args, model)`)
        id(call): callee for call, _ctx in scope.flat.nodes
        if type(call) is cst.Call and handed_inputs(call)
        and (callee := calls.callee(call) or indirect(call)) is not None and not taint.agreed_output(call)
    }
    if not outputs:
        return {}, {}
    # `self.optim.backward(loss)`, `self.strategy.step(opt)`: objects that drive the step on an output keep nothing
    drivers = {
        key for call, _ctx in scope.flat.nodes
        if type(call) is cst.Call and isinstance(call.func, cst.Attribute) and call.func.attr.value in _DRIVES
        and (key := holder_key(call.func.value, scope.parameters)) is not None
    }
    parameters = scope.parameters - {"self", "cls"}
    # (an argument the function binds again, `batch_size = self.search(...)`, is its own local from there on: the
    # caller's object is not filled)
    rebound = {name for n, _ctx in scope.flat.nodes for target in targets_of(n)[0] for name in bound_names(target)}
    attributes: dict[str, str] = {}
    handed: dict[str, str] = {}
    derived = derived_names(scope.flat, outputs, taint.agreed_value)
    for call, _ctx in scope.flat.nodes:
        # `self.update_metrics(batch, out, metric)`: a statement handing an argument object beside an output to a
        # helper that fills that object (calls its methods, writes its items or fields: `metric[task].update(...)`)
        if type(call) is not cst.Call or type(scope.flat.parent.get(id(call))) is not cst.Expr:
            continue
        names = [arg.value.value for arg in call.args if isinstance(arg.value, cst.Name)]
        source = next((derived[name] for name in names if derived.get(name)), None)
        if source is None:
            continue
        callee = _callee_scope(index, scope, call)
        if callee is None:
            continue
        for position, arg in enumerate(call.args):
            name = arg.value.value if isinstance(arg.value, cst.Name) else None
            if name is None or name not in parameters or name in derived or name in rebound or arg.star:
                continue
            param = parameter_for(callee.node, call, position)  # type: ignore[arg-type]
            if param and _fills(param, callee.snippet.code):
                handed.setdefault(name, source)
    for kept, source in derived.items():
        if not source or kept in scope.held or kept in scope.model_args or kept in drivers:
            continue
        if kept.startswith("self.") and scope.owner is not None:
            parts = kept.split(".")
            if f"self.{parts[1]}" in scope.held or len(parts) > 3:
                continue
            if len(parts) == 2 and any(other.startswith(f"{kept}.") for other in derived):
                continue  # (`self.state.diverged = ...`: the fields written are the records, not the whole state)
            attributes.setdefault(".".join(parts[1:]), source)
        elif kept in parameters and kept not in rebound:
            handed.setdefault(kept, source)
    return attributes, handed


def _fills(param: str, code: str) -> bool:
    """Does `code` call a method of `param`, or write one of its fields or items (`metric[task].update(...)`,
    `stats.total += n`, `record["loss"] = v`)?"""
    return re.search(
        rf"\b{param}(?:\[[^\]\n]*\])*\.\w+\s*(?:\(|[+\-*/]?=[^=])|\b{param}\[[^\]\n]*\]\s*=[^=]", code
    ) is not None


@memoised
def filled_state(index: ModelIndex, owner: ClassInfo) -> dict[str, dict[str, str]]:
    """Attributes of a plain object holding a model (a trainer, a learner) that one of its methods fills from what
    the model returned (`_kept_records`). What another method reads of them (`self.history.get_latest_metric(
    "eval_loss")`) is this rank's own value (DATA): a loop that stops on it stops on one rank alone."""
    found: dict[str, dict[str, str]] = {}
    for name, span in owner.span.methods.items():
        if name == "__init__":
            continue
        scope = function_scope(index, span)
        if scope is None:
            continue
        for attr, source in _kept_records(index, scope)[0].items():
            found.setdefault(attr, {DATA: f"{owner.name}.{name}(): self.{attr} kept from {source}"})
    return found


def _callee_scope(index: ModelIndex, scope: ScriptScope, call: cst.Call) -> ScriptScope | None:
    """The scope of a function of this file (`f(...)`), or of a method of the scope's own class (`self.m(...)`), that
    `call` calls; None for anything else."""
    func = call.func
    span = None
    if isinstance(func, cst.Name):
        span = index.skeleton.functions.get(func.value)
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        if scope.owner is not None:
            span = scope.owner.span.methods.get(func.attr.value)
    callee = function_scope(index, span) if span is not None else None
    return callee if callee is not None and isinstance(callee.node, cst.FunctionDef) else None


def filled_arguments(index: ModelIndex, scope: ScriptScope, call: cst.Call) -> list[tuple[str, str]]:
    """The locals (and arguments) of `scope` that `call` hands a function of this file, or a method of the scope's
    own class, which keeps in them what the model returned (`self.evaluate(dev, metric)` for `def evaluate(self,
    loader, metric): ... metric.update(self.model(x), y)`): after the call they hold this rank's own values. Each ->
    why."""
    if not any(isinstance(arg.value, cst.Name) for arg in call.args):
        return []
    callee = _callee_scope(index, scope, call)
    if callee is None:
        return []
    handed = _kept_records(index, callee)[1]
    found = []
    for position, arg in enumerate(call.args):
        if arg.star or not isinstance(arg.value, cst.Name):
            continue
        param = parameter_for(callee.node, call, position)
        if param in handed:
            found.append((arg.value.value, f"{code_of(call.func)}(): {param} kept from {handed[param]}"))
    return found


def _noop_replacements(scope: ScriptScope, taint: Taint) -> list[Divergence]:
    """`if rank != 0: self.ema.update = lambda *a, **k: None`: a method that reaches a model replaced by a no-op
    on some ranks only. Every later call of it runs the model on the other ranks alone."""
    found: list[Divergence] = []
    for node, ctx in scope.flat.nodes:
        if type(node) is not cst.Assign or not ctx.conds or not _no_op(scope.index, node.value):
            continue
        tests = [(test, sources) for test in ctx.conds if (sources := taint.of(test)) and RANK in sources]
        if not tests:
            continue
        for target in node.targets:
            replaced = target.target
            if isinstance(replaced, cst.Attribute) and _reaches_method(scope, replaced):
                test, sources = tests[-1]
                found.append(Divergence(RANK, GATE, test, sources[RANK], f"{code_of(replaced)}()"))
                break
    return found


def _no_op(index: ModelIndex, value: cst.BaseExpression) -> bool:
    """`lambda *args, **kwargs: None`, `lambda x: x`, or a function of the file written so (`def _disable_update(*_,
    **__): return None, None`): a function that calls nothing."""
    if isinstance(value, cst.Name) and value.value in index.skeleton.functions:
        info = index.function_info(value.value)
        node = info.node if info is not None else None
        return isinstance(node, cst.FunctionDef) and not any(isinstance(n, cst.Call) for n in walk(node.body))
    return isinstance(value, cst.Lambda) and not any(isinstance(n, cst.Call) for n in walk(value.body))


def _reaches_method(scope: ScriptScope, attribute: cst.Attribute) -> bool:
    """Does calling the method `attribute` names (`self.update`, `self.ema.update`) reach a model or a collective?"""
    name, owner = attribute.attr.value, attribute.value
    if isinstance(owner, cst.Name) and owner.value == "self" and scope.owner is not None:
        return _method_reaches(scope, scope.owner, name)
    held = scope.held.get(dotted(owner) or "")
    if held is not None:
        return name not in NOT_RUNS and method_runs(scope.index, held, name, False)
    return any(_method_reaches(scope, cls, name) for cls in plain_instances(scope.index, scope.owner, scope.flat, owner))


def _script_indirect(scope: ScriptScope, summary: bool = False):
    """Calls that run a model argument through a helper: `generate_next_token(model, x)`, a local closure.

    A function of this file handed the model counts when its body calls the
    parameter that receives it; a constructor or `hasattr(model, ...)` does not.
    """

    def indirect(call: cst.Call) -> str | None:
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted(func.value.func) == "super" \
                and scope.owner is not None:
            base = super_method(scope.owner, func.attr.value)  # `super().update(...)`: the base's method runs
            return f"super().{func.attr.value}()" if base is not None and method_reach(scope.index, base) else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            name = func.attr.value
            if _runs_held(scope, name) or (scope.owner is not None and _method_reaches(scope, scope.owner, name)):
                return f"self.{name}()"
            if scope.owner is not None and scope.owner.inherited_method(name) is None and any(
                _method_reaches(scope, cls, "__call__")
                for cls in plain_instances(scope.index, scope.owner, scope.flat, func)
                or duck_instances(scope.owner, func)
            ):
                return f"self.{name}()"  # `self.q(s)`: a plain object the class holds, whose `__call__` runs a model
            return None
        if isinstance(func, cst.Attribute) and func.attr.value not in NOT_RUNS:
            # `self.evaluator.run(x)`, `ev.run(x)`: a method of a plain object of the project that reaches a model,
            # or a model it keeps (`self.evaluator.model(x)`)
            function = scope.node if isinstance(scope.node, cst.FunctionDef) else None
            classes = plain_instances(scope.index, scope.owner, scope.flat, func.value) or duck_instances(
                scope.owner, func.value, function, scope.index
            )
            for cls in classes:
                if _method_reaches(scope, cls, func.attr.value) or (
                    cls.inherited_method(func.attr.value) is None and func.attr.value in class_held(cls.index, cls)
                ) or _runs_handed(scope, cls, func.attr.value, call, summary):
                    return f"{code_of(func)}()"
            if not classes and isinstance(func.value, cst.Name) and func.value.value not in scope.held and (
                evaluator_method(func.value.value, func.attr.value)
            ) and _models_handed(scope, call):
                return f"{code_of(func)}()"  # `evaluator.run(model)` ... of an object of no class we read
            if classes or not _module_function(scope.index, func):
                return None
            return _runs_a_handed_model(scope, call, dotted(func) or "")  # `validate.run(data, model)`
        if not isinstance(func, cst.Name):
            return None
        if func.value in scope.model_runners or (func.value in scope.callable_args and not summary):
            # (`step(last, state)`: a model, or a step of one, handed in as a function; in a helper's summary only
            # what its callers hand it says so, `handed_runners`: `_save_func(ckpt, path, torch.save)` runs none)
            return f"{func.value}()"
        if func.value in scope.parameters and func.value in handed_runners(scope.index, scope):
            return f"{func.value}()"  # `fn()` where this file's callers hand `partial(self.evaluate, x)`
        handed = [  # a model this function is given, or one it partitioned (`generate_samples(engine.module, 4)`,
            # `policy=accelerator.unwrap_model(policy)`)
            i for i, a in enumerate(call.args) if not a.star and (
                (held := _holder_text(a.value)) in scope.model_args
                or (scope.wrapped and held and scope.wrapped_name(cst.parse_expression(held), call))
                or (held != dotted(a.value) and held in scope.held))
        ]
        if handed and func.value in scope.parameters:
            return f"{func.value}()"  # a step function the caller passed in (`custom_next_token(model, x)`)
        found = _runs_a_handed_model(scope, call, func.value, handed)
        if found is not None:
            return found
        if (handed or any(not a.star and dotted(a.value) in scope.held for a in call.args)) and (
                (info := function_target(scope.index, func.value)) is not None and info.node is not None):
            return None  # (a function of the program handed a model that runs none of them)
        # A function defined in this one, handed a model the class holds (`kl(self.old_policy, self.policy, s)`) or
        # one the function around the call is given (`fvp(policy, s, p)` in `def cg(policy: Model, ...)`), runs it
        # when its body calls the parameter or a method of it that is not bookkeeping (`policy_1.act(s)`), or hands
        # it to another such function (`kl_divergence(policy, policy, states)`).
        if func.value not in scope.parameters and _runs_a_global_model(scope.index, func.value):
            return f"{func.value}()"  # `select_action(state)` running `policy`, a model the script built at its top
        local = _local_defs(scope).get(func.value)
        if local is None:
            return None
        for position in _models_handed(scope, call):
            param = parameter_for(local, call, position)
            if param and _local_runs(scope, local, param, frozenset()):
                return f"{func.value}()"
        return None

    return indirect


def _plain_holders(index: ModelIndex, flat: Flat, owner: ClassInfo | None) -> dict[str, tuple[str, ...]]:
    """`<local>.<attr>` -> the model's classes, for each local bound once to a plain object of the program that keeps
    a model in `attr` (`ema = ModelEMA(model) if is_main else None` with `self.ema = deepcopy(model)` in the class):
    a model of this code, reached through the object."""
    if owner is not None:
        return {}
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    bound.setdefault(target.target.value, []).append(node.value)
    found: dict[str, tuple[str, ...]] = {}
    for name, values in bound.items():
        if len(values) != 1:
            continue
        value = values[0]
        if isinstance(value, cst.IfExp):  # (`... if main else None`: kept on some ranks)
            value = value.body if dotted(value.orelse) == "None" else value.orelse if dotted(value.body) == "None" else value
        if not isinstance(value, cst.Call) or not value.args or (written := dotted(value.func)) is None:
            continue
        cls = class_named(index, written)
        if cls is None or cls.is_module:
            continue
        for attr, classes in class_held(cls.index, cls).items():
            found[f"{name}.{attr}"] = tuple(cls.index.global_name(c) for c in classes)
    return found


def _module_function(index: ModelIndex, func: cst.Attribute) -> bool:
    """Is `func` a function of a module of the program this file imports (`validate.run` of `from . import val as
    validate`), not a method of an object?"""
    owner = func.value
    return isinstance(owner, cst.Name) and owner.value in index.imports and index.local_class(owner.value) is None \
        and index.external(index.qualify(owner.value)) is None


def _runs_a_handed_model(scope: ScriptScope, call: cst.Call, name: str, handed: list[int] | None = None) -> str | None:
    """A function of this file or of an imported one, handed a model this code is given or holds (`aux_loss(
    self.model, h)`, `validate.run(data, model=ema.ema)`), runs it when its body calls it, its forward, a child of
    it or one of its methods that runs submodules; as the callee's text for messages."""
    handed = handed or []
    models = {
        i: (UNKNOWN,) if i in handed else scope.held[held]
        for i, a in enumerate(call.args)
        if not a.star and (i in handed or (held := dotted(a.value)) in scope.held)
    }
    info = function_target(scope.index, name) if models else None
    if models and info is None and evaluates(name.rsplit(".", 1)[-1]) and _models_handed(scope, call):
        return f"{name}()"  # `evaluate(model, loader)` of a library we do not read
    if info is None or info.node is None:
        return None
    for position, classes in models.items():
        arg = call.args[position]
        param = arg.keyword.value if arg.keyword is not None else parameter_for(info.node, call, position)
        # (a function of another file reads the model's classes as unknown there)
        known_classes = classes if info.index is scope.index else (UNKNOWN,)
        if param and runs_argument(info.index, info.name, param, known_classes):
            return f"{name}()"
    return None


def _runs_handed(scope: ScriptScope, cls: ClassInfo, name: str, call: cst.Call, summary: bool) -> bool:
    """`self.looper.loop(self.model.forward, x)`: a method of a plain object that calls a parameter (`fn(x)`,
    `callables.called_parameters`) this call hands a model this code holds, a method of one that runs it, or a
    `partial` or lambda of either."""
    calls: _ScriptCalls | None = None
    for target in method_targets(scope.index, cls, name):
        node = target.node
        called = called_parameters(node) if node is not None else frozenset()
        for position, arg in enumerate(call.args if called else ()):
            if arg.star or parameter_for(node, call, position) not in called:  # type: ignore[arg-type]
                continue
            ran = wrapped_callee(arg.value) or arg.value
            if isinstance(ran, (cst.Name, cst.Attribute)):
                calls = calls or _ScriptCalls(scope.index, scope, summary)
                if calls.callee(cst.Call(func=ran)) is not None:
                    return True
    return False


def _method_reaches(scope: ScriptScope, cls: ClassInfo, name: str) -> bool:
    """Does `<instance of cls>.name(...)` reach a model or a collective, in any method it may dispatch to?"""
    return dispatched_reach(scope.index, cls, name)


@memoised(cycle=False)
def dispatched_reach(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does `<instance of cls>.name(...)` reach a model or a collective? A method `cls` inherits from a base (of
    another file) answers for itself (`method_reach`), and through the methods of `self` it calls as `cls`
    dispatches them: a template method of a base trainer (`def validate(self): return self.validation_step()`,
    abstract there) runs the subclass's override (`validation_step` calling `evaluate(self.model, ...)`). A plain
    mixin's `self` is an instance of the module class deriving from it: a method of that class its call dispatches to
    (`self.encode(x)` in `CodecMixin.compress`, defined by `DAC(nn.Module, CodecMixin)`) runs the module's own
    submodules when it calls them (`runs.class_method_runs`)."""
    for method in method_targets(index, cls, name):
        if method_reach(index, method) is not None:
            return True
        owner = method.owner if isinstance(getattr(method, "owner", None), ClassInfo) else None
        if owner is not None and owner.is_module and not cls.is_module:
            if class_method_runs(method.index, owner, method.span.name):
                return True
            continue
        if method.owner is cls or cls.index is method.index and method.owner in cls.mro:
            continue  # (the class's own methods and its file's bases are summarised as this class's calls dispatch)
        for called, through_super in method.self_calls:
            if not through_super and called != name and dispatched_reach(index, cls, called):
                return True
    return False


@memoised(cycle=None)
def method_reach(index: ModelIndex, method: MethodInfo) -> str | None:
    """What the method (of a plain class, or a function) reaches first: a model or a collective, through any number
    of calls (`scope_reach` of its own file's scope); None when it reaches none. The class of a module runs its
    own submodules: not asked here (`runs.HelperRuns`)."""
    owner = method.owner if isinstance(getattr(method, "owner", None), ClassInfo) else None
    if owner is not None and owner.is_module:
        return None
    scope = function_scope(method.index, method.span)
    return scope_reach(method.index, scope) if scope is not None else None


@memoised(cycle=None)
def scope_reach(index: ModelIndex, scope: ScriptScope) -> str | None:
    """The first call of a scope that runs a model or a collective, directly (`_ScriptCalls`) or through the
    project's functions and methods (`_script_indirect`, which asks this of each callee once: a summary per
    function over the call graph, a cycle answering None while it is computed)."""
    calls = _ScriptCalls(index, scope, summary=True)
    indirect = _script_indirect(scope, summary=True)
    for node, _ctx in scope.flat.nodes:
        if type(node) is cst.Call and (found := calls.callee(node) or indirect(node)) is not None:
            return found
    return None


@memoised(cycle=frozenset())
def handed_runners(index: ModelIndex, scope: ScriptScope) -> frozenset[str]:
    """Parameters of the function of `scope` that the file's own calls of it hand something reaching a model: a
    bound method that reaches one (`self.evaluate`), a `functools.partial` or a lambda around such a call, a held
    model (`run_on_main(partial(self.evaluate, step))` for `def run_on_main(fn): if rank == 0: fn()`)."""
    node = scope.node
    if not isinstance(node, cst.FunctionDef) or not scope.parameters - {"self", "cls"}:
        return frozenset()
    name = node.name.value
    method = scope.owner is not None
    spans = list(index.skeleton.functions.values()) + [
        span for cls in index.classes.values() if not cls.is_module for span in cls.span.methods.values()]
    found: set[str] = set()
    for span in spans:
        if f"{name}(" not in index.skeleton.text(span.start, span.end):
            continue
        caller = function_scope(index, span)
        if caller is None or (method and caller.owner is not scope.owner):
            continue
        calls, indirect = _ScriptCalls(index, caller), _script_indirect(caller)
        for call, _ctx in caller.flat.nodes:
            if type(call) is not cst.Call or not _calls_by_name(call.func, name, method):
                continue
            for position, arg in enumerate(call.args):
                param = arg.keyword.value if arg.keyword is not None else parameter_for(node, call, position)
                if arg.star or not param or param in found:
                    continue
                ran = wrapped_callee(arg.value) or arg.value
                probe = cst.Call(func=ran) if isinstance(ran, (cst.Name, cst.Attribute)) else ran
                if isinstance(probe, cst.Call) and (calls.callee(probe) or indirect(probe)):
                    found.add(param)
    return frozenset(found)


@memoised(cycle={})
def handed_models(index: ModelIndex, scope: ScriptScope) -> dict[str, tuple[str, ...]]:
    """Parameters of a plain class's method that the class's own calls of it (`self.generate_(self.GAN.G, z)`) hand a
    model the calling method holds, or a child of one -> its classes (a child's: unknown). A method run on a model
    it is handed runs that model on every call, however its parameter is named (`def generate_(self, G, z)`)."""
    node, owner = scope.node, scope.owner
    if owner is None or not isinstance(node, cst.FunctionDef) or not scope.parameters - {"self", "cls"}:
        return {}
    name = node.name.value
    found: dict[str, tuple[str, ...]] = {}
    for span in owner.span.methods.values():
        if f"self.{name}(" not in index.skeleton.text(span.start, span.end):
            continue
        caller = function_scope(index, span)
        if caller is None or caller is scope:
            continue
        for call, _ctx in caller.flat.nodes:
            if type(call) is not cst.Call or not _calls_by_name(call.func, name, True):
                continue
            for position, arg in enumerate(call.args):
                param = None if arg.star else parameter_for(node, call, position)
                if param not in scope.parameters - {"self", "cls"} or param in found:
                    continue  # (nor a `*args` that collects it)
                held = _holder_text(arg.value)
                if held in caller.held:
                    found[param] = caller.held[held]
                elif held and held.rpartition(".")[0] in caller.held:
                    found[param] = (UNKNOWN,)  # `self.GAN.G`: a child of a held model
    return found


def _calls_by_name(func: cst.BaseExpression, name: str, method: bool) -> bool:
    """`name(...)` (a function), or `self.name(...)` (a method of the same object)."""
    if method:
        return isinstance(func, cst.Attribute) and func.attr.value == name and dotted(func.value) == "self"
    return isinstance(func, cst.Name) and func.value == name


# Module methods that do not run its forward: listing, moving, switching modes, state.
_BOOKKEEPING = frozenset(
    {"parameters", "named_parameters", "modules", "named_modules", "children", "named_children", "state_dict",
     "load_state_dict", "train", "eval", "to", "cuda", "cpu", "half", "float", "bfloat16", "requires_grad_",
     "zero_grad", "apply", "register_buffer", "register_forward_hook", "register_forward_pre_hook"}
)  # fmt: skip


def _local_defs(scope: ScriptScope) -> dict[str, cst.FunctionDef]:
    """Functions defined inside the function of `scope`, by name."""
    return {node.name.value: node for node, _ctx in scope.flat.nodes if type(node) is cst.FunctionDef}




def _models_handed(scope: ScriptScope, call: cst.Call) -> list[int]:
    """Positions of the arguments of `call` that are a model here: one the class holds, one the scope is given, or
    a module argument of the function defined in the scope that makes the call."""
    around: cst.CSTNode | None = scope.flat.parent.get(id(call))
    while around is not None and not isinstance(around, cst.FunctionDef):
        around = scope.flat.parent.get(id(around))
    given = module_arguments(scope.index, around) if around is not None and around is not scope.node else {}
    found = []
    for position, arg in enumerate(call.args):
        if arg.star or arg.keyword is not None:
            continue
        name = dotted(arg.value)
        if name in scope.held or name in scope.model_args or name in given:
            found.append(position)
    return found


def _local_runs(scope: ScriptScope, local: cst.FunctionDef, param: str, seen: frozenset[int]) -> bool:
    """Does the function `local`, defined in the scope, run its parameter `param` (calls it, or a method of it that
    is not bookkeeping, or hands it on to another function defined there that does)?"""
    text = code_of(local.body, limit=4000)
    for match in re.finditer(rf"\b{re.escape(param)}\b(?:\.(\w+))?\s*\(", text):
        if match.group(1) not in _BOOKKEEPING:
            return True
    seen = seen | {id(local)}
    defs = _local_defs(scope)
    for call in walk(local.body):
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)) or call.func.value not in defs:
            continue
        inner = defs[call.func.value]
        if id(inner) in seen:
            continue
        for position, arg in enumerate(call.args):
            if not arg.star and isinstance(arg.value, cst.Name) and arg.value.value == param:
                target = arg.keyword.value if arg.keyword is not None else parameter_for(inner, call, position)
                if target and _local_runs(scope, inner, target, seen):
                    return True
    return False


def _runs_held(scope: ScriptScope, name: str) -> bool:
    """Does `self.<name>()`, a method of the (non-module) class of `scope`, call a model the class holds?"""
    owner = scope.owner
    held = held_attributes(scope.index, owner) if owner is not None else {}
    if not held:
        return False
    calls = re.compile(r"self(?<!\wself)\.(" + "|".join(map(re.escape, held)) + r")\b(?:\.(\w+))?\s*\(")
    # the class's own method and what it calls, and the overrides of subclasses of the file (an abstract step)
    classes = [owner, *(c for c in scope.index.classes.values() if c is not owner and owner in c.mro)]
    alias = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*self\.(" + "|".join(map(re.escape, held)) + r")[ \t]*(?:#[^\n]*)?$", re.M)
    for method in (m for cls in classes for m in cls.reachable(name)):
        for local, _attr in alias.findall(method.text):  # `valid_model = self.model` ... `valid_model(src, tgt)`
            if re.search(rf"(?<![\w.]){re.escape(local)}\s*\(", method.text):
                return True
        for match in calls.finditer(method.text):
            called, classes = match.group(2), held[match.group(1)]
            if called is None:
                return True
            if called in NOT_RUNS and not (called in known.CONTAINER_METHODS and _plain_module(scope.index, classes)):
                continue  # `self.model.train()`; but `self.algorithm.update(batch)` is a method of a plain module
            by_name = runs_unread(called)  # `self.actor_critic.forward_head(obs)` on a model built elsewhere
            if method_runs(scope.index, classes, called, by_name, by_name):
                return True  # through a helper: a class we read answers, a method no class we read defines by name
    return False


@memoised
def method_runs(
    index: ModelIndex, classes: tuple[str, ...], name: str, unreadable: bool = True, lacking: bool = True
) -> bool:
    """Does `<module of one of classes>.<name>(...)` run it (its forward, or submodules)? A method we can read
    answers for itself (`get_base_model()` runs nothing; `generate()` calls `self(...)`); one a class we read
    does not define, or declares an `@abstractmethod` of an interface (`score_hrt(self, batch)` of a
    `Model(nn.Module, ABC)`: `instances.abstract_module_method`), is a subclass's own
    (`algorithm.update(batch)`) and may (`lacking` answers for it); `unreadable`
    answers for classes we cannot read (unknown, or too large)."""
    if name in ("forward", "__call__"):
        return True
    readable = False
    for ref in classes:
        local = index.classes.get(ref)
        found = (index, local) if local is not None else index.external(ref)
        if found is None:
            continue
        if found[1].method(name) is None and bound_in_class(found[1], name):
            return True  # `decode = decode_function` in the class body: a function of another file run on the model
        if found[1].method(name) is None or abstract_module_method(index, ref, name):
            if not lacking:
                continue
            return True  # not nn.Module's API (NOT_RUNS names that), nor this class's, or left abstract: a subclass's
        readable = True
        if class_method_runs(*found, name):
            return True
    return not readable and unreadable


def _plain_module(index: ModelIndex, classes: tuple[str, ...]) -> bool:
    """Is one of the classes a module class that is no container (`ModuleDict.update` is not a method of its own)?"""
    for ref in classes:
        local = index.classes.get(ref)
        found = (index, local) if local is not None else index.external(ref)
        if found is not None and found[1].is_module and not found[1].container_kind:
            return True
    return False


@memoised
def script_accesses(index: ModelIndex) -> list[ParamAccess]:
    """Parameter accesses of a partitioned model in script code (`Scope.SCRIPT`), guarded or not.

    `model.lm_head.weight.data.copy_(...)` after `deepspeed.initialize(model=model)`, `p.numel()`
    for `p` in `engine.parameters()`, or the model handed to a function that writes or sizes its
    parameters (`init_weights(model)`).
    """
    return [access for scope in script_scopes(index, WRAP_TRIGGER) for access in _scope_accesses(index, scope)]


def _scope_accesses(index: ModelIndex, scope: ScriptScope) -> list[ParamAccess]:
    flat = scope.flat

    def access(node: cst.CSTNode, use: str, op: str, via: Via) -> ParamAccess:
        position = flat.position.get(id(node))
        ctx = flat.nodes[position][1] if position is not None else Ctx()
        return ParamAccess(node, ctx, use, op, via, scope=Scope.SCRIPT, snippet=scope.snippet)

    aliases: dict[str, str] = {}
    found = []
    for node, _ctx in flat.nodes:
        kind = type(node)
        if kind in (cst.For, cst.CompFor):
            for target, iterable in loop_items(node.target, node.iter):
                if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)):
                    continue
                walks_parameters = iterable.func.attr.value in {"parameters", "named_parameters"}
                if walks_parameters and isinstance(target, cst.Name) and scope.wrapped_name(iterable.func.value, node):
                    aliases[target.value] = code_of(iterable)
            continue
        if kind is cst.Name and node.value in aliases:
            parent = flat.parent.get(id(node))
            if not isinstance(parent, (cst.For, cst.CompFor, cst.Tuple)):
                found.append(access(node, *usage(index, flat, node), Via(Reach.PARAMETERS)))
        elif kind is cst.Attribute and node.attr.value in index.param_names:
            root = node.value
            while isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value
            if node.value is root:  # `model.weight`: too little to tell a parameter
                continue
            if isinstance(root, cst.Name) and scope.wrapped_name(root, node):
                found.append(access(node, *usage(index, flat, node), Via(Reach.PATH)))
        elif kind is cst.Call:
            for arg, use, name in _handed_model(index, scope, node):
                found.append(access(arg, use, "", Via(Reach.PASSED, name)))
    return found


def _handed_model(index: ModelIndex, scope: ScriptScope, call: cst.Call):
    """The partitioned model handed to a function (of this file or imported) that writes or sizes its parameters:
    (the argument, WRITE or SIZE, the function's name).

    `print(count_parameters(model))`, `init_weights(model)` after `deepspeed.initialize` or under
    `zero.Init`: the function's summary (what it does to each module argument) says what happens.
    """
    if _initialize_call(index, call) is not None:
        return  # the call that partitions the model reads it as ZeRO-3 means it to (its body sizes every parameter)
    handed = [i for i, a in enumerate(call.args) if not a.star and _wrapped_argument(index, scope, a.value, call)]
    if not handed:
        return
    for position, done in argument_effects(index, scope.flat, call):
        if position in handed and done & {WRITE, INIT}:
            yield call.args[position].value, WRITE, call_name(call)
        elif position in handed and SIZE in done:
            yield call.args[position].value, SIZE, call_name(call)
        elif position in handed and DEEPCOPIES in done:
            yield call.args[position].value, COPY, call_name(call)  # `make_ema(model)`: the helper deep-copies it
        elif position in handed and STATES in done:
            # `save_checkpoint(dir, policy=unwrap(policy))`: the helper saves (`save_pretrained`, `torch.save`) it
            yield call.args[position].value, STATE, call_name(call)


def _wrapped_argument(index: ModelIndex, scope: ScriptScope, value: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """Is `value` the wrapped model, or what a function given it first hands back (`accelerator.unwrap_model(m)`)?"""
    while isinstance(value, cst.Call) and returns_argument(index, scope.flat, value):
        value = value.args[0].value
    return scope.wrapped_name(value, at) is not None
