"""Which calls in a module's methods run submodules, directly or through helper methods.

A rank-divergence rule needs to know whether skipping a call skips an
all-gather. A direct call of a child (`self.decoder(x)`) is answered by
`flow.ModuleCalls`; this module answers the indirect ones, read with
Python's `ast` (cheap) and only when a rule asks:

* `self.search(...)`: a helper method that (through the helpers it calls)
  runs a submodule. A step method a subclass in the same file overrides
  (`forward_step`, abstract in the base) counts when any override runs one.
* `self.model.decode(...)`: a method other than `forward` of a child that
  gathers parameters; it runs the child's own submodules.
* `for name, scorer in self.scorers.items(): scorer.score(...)`: a call on
  the items of a collection the module holds, when the module owns
  submodules (the collection usually holds the same modules).
"""

from __future__ import annotations

import ast
import re

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised, module_mixin
from ..program import known
from ..program.known import NOT_RUNS
from ..program.members import UNKNOWN_CLASS as UNKNOWN, Kind, facts_of
from ..program.tree import call_name, cst, parameter_for
from .calls import HeldCalls, ModuleCalls
from .flow import SAME_ITEMS, Flat, flat_of
from .instances import abstract_module_method
from .own import mixin_heirs
from .persistence import gathers
from .reach import method_targets

__all__ = ["HelperRuns", "INFERENCE_METHODS", "inference_method", "ast_function", "ast_nodes", "self_path", "records",
           "runs_argument", "runs_unread", "class_method_runs", "evaluates", "evaluator_method", "EVALUATOR"]


def ast_function(method: MethodInfo) -> ast.FunctionDef | None:
    """The method as Python's `ast` read it (the skeleton's tree, else parsed again), file line numbers kept."""
    index = method.index
    tree = index.skeleton.tree
    if tree is not None:
        found = _functions_by_line(index).get(method.span.start)
        if found is not None:
            return found
    text = method.text
    try:
        tree = ast.parse("if 1:\n" + text if method.span.indent else text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    ast.increment_lineno(tree, method.span.start - 1 - (1 if method.span.indent else 0))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node  # type: ignore[return-value]
    return None


@memoised
def ast_nodes(index: ModelIndex, func: ast.FunctionDef) -> tuple[ast.AST, ...]:
    """Every node of `func` (an `ast_function` of `index`'s file) in `ast.walk`'s order, walked once: the rules and
    analyses that read a method with `ast` each pass over all of its nodes, several passes a method."""
    return tuple(ast.walk(func))


@memoised
def _functions_by_line(index: ModelIndex) -> dict[int, ast.FunctionDef]:
    """Functions and methods by first line (of their first decorator), not descending into function bodies."""
    found: dict[int, ast.FunctionDef] = {}
    stack = list(getattr(index.skeleton.tree, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.decorator_list[0].lineno if node.decorator_list else node.lineno] = node  # type: ignore[assignment]
        elif isinstance(node, ast.ClassDef):
            stack.extend(node.body)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):  # `if TYPE_CHECKING:` / `try: ... except ImportError:`
            stack.extend(node.body)
            stack.extend(getattr(node, "orelse", ()))
            for handler in getattr(node, "handlers", ()):
                stack.extend(handler.body)
    return found


# Attributes of a model that hold its settings, state or helpers, not submodules (`self.model.config.get(k)`).
_NOT_SUBMODULES = frozenset({
    "config", "cfg", "args", "hparams", "opt", "options", "device", "dtype", "tokenizer", "processor", "state",
    "stats", "meta", "generation_config", "data", "grad", "weight", "bias", "shape",
})


def self_path(node: ast.expr, root: tuple[str, ...] = ("self",)) -> tuple[str, ...] | None:
    """`self.a[0].b` as ("a", "[]", "b"); None when not rooted at `self`. With `root` names, a path rooted at one
    of them, that name first (`vt.conv1` as ("vt", "conv1"))."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            parts.append("[]")
            node = node.value
        else:
            break
    if not (isinstance(node, ast.Name) and node.id in root) or not parts:
        return None
    return tuple(reversed(parts)) if root == ("self",) else (node.id, *reversed(parts))


def _memberless_base(method: MethodInfo | None) -> bool:
    """Is `method` defined by a class (a base, a mixin) that keeps no member of its own?"""
    owner = getattr(method, "owner", None)
    return isinstance(owner, ClassInfo) and not facts_of(owner).members


class HelperRuns:
    """Answers "does this call run a submodule with parameters?" for calls that are not a child's forward."""

    def __init__(self, index: ModelIndex, cls: ClassInfo, resolver: ModuleCalls | None = None) -> None:
        self.index = index
        self.cls = cls
        self.resolver = resolver or ModuleCalls(index, cls, Flat(), "forward")
        self._helpers: dict[str, bool] = {}

    def gathers_at(self, parts: tuple[str, ...]) -> bool:
        """Does `self.<parts>` hold a submodule (or container of them) whose call gathers parameters?"""
        resolved = self.resolver.resolve(parts)
        if resolved is None or resolved[0] not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
            return False
        return any(gathers(self.index, c) for c in resolved[1])

    def owns_modules(self) -> bool:
        """Does the class hold a child that gathers parameters (so its collections likely hold modules)?"""
        for member in facts_of(self.cls).members.values():
            if member.kind == Kind.CONTAINER and not member.classes:
                return True  # a ModuleList/ModuleDict filled from arguments at run time
            if member.kind in (Kind.MODULE, Kind.CONTAINER) and any(gathers(self.index, c) for c in member.classes):
                return True
        return False

    def helper_runs_modules(self, name: str) -> bool:
        """Does `self.<name>()` (or what it calls on `self`, or an override in this file) run a submodule?"""
        if name in ("forward", "__call__"):
            return False
        if name not in self._helpers:
            self._helpers[name] = False  # a helper that calls itself: no answer from the cycle
            methods = list(self.cls.reachable(name))
            for sub in self._subclasses():
                override = sub.span.methods.get(name)
                if override is not None:
                    methods.extend(sub.reachable(name))
            if not methods and not self.cls.inherited_method(name):
                # `self.synthesise(x)` in a base class that only its subclasses of the package's other files define
                methods = list(method_targets(self.index, self.cls, name))
            elif not methods and _memberless_base(self.cls.inherited_method(name)):
                # a method of a mixin of another file that keeps no member of its own (`self.classification_loss(t)`
                # whose `self.classify` runs `self.z_encoder`): read on this class, whose members its `self` has,
                # when its text names one of them (not a library's mixin of utilities, `get_extended_attention_mask`)
                reached = self.cls.reachable(name, inherited=True)
                members = [
                    m for m, member in facts_of(self.cls).members.items() if member.kind in (Kind.MODULE, Kind.CONTAINER)
                ]
                if any(f"self.{m}" in method.text for method in reached for m in members):
                    methods = list(reached)
            self._helpers[name] = any(self._body_runs_modules(m) for m in methods)
        return self._helpers[name]

    def _subclasses(self) -> list[ClassInfo]:
        """The classes of the file deriving from this one; of a mixin of modules, also those of the package's other
        files (`own.mixin_heirs`: `self.encode(x)` in `CodecMixin.compress` runs `DAC.encode`)."""
        if module_mixin(self.cls):
            return [heir for _, heir in mixin_heirs(self.index, self.cls)]
        return [c for c in self.index.classes.values() if c is not self.cls and self.cls in c.mro]

    def _body_runs_modules(self, method: MethodInfo) -> bool:
        func = ast_function(method)
        if func is None:
            return False
        owner = method.owner if isinstance(getattr(method, "owner", None), ClassInfo) else self.cls
        # (a base that keeps no member of its own, a mixin, reads this class's: its `self` is one of them)
        runs = self if owner is self.cls or _memberless_base(method) else HelperRuns(method.index, owner)
        collections: set[str] = set()  # loop variables over a collection the module holds
        items: dict[str, tuple[str, ...]] = {}  # ... of them, those over one container child: its path
        aliases: dict[str, list[tuple[str, ...]]] = {}  # `model = self.agent_model` (in either branch): a child
        nodes = ast_nodes(method.index, func)
        for node in nodes:
            if isinstance(node, (ast.For, ast.comprehension)) and _over_self_collection(node.iter):
                collections.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
                items.update(_item_paths(node.target, node.iter))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                # (a choice of either: `fn = self.ddpm_sample if not self.use_ddim else self.ddim_sample`)
                values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
                for value in values:
                    bound = self_path(value)
                    if bound:
                        aliases.setdefault(node.targets[0].id, []).append(bound)
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            if node.args and _calls_first_argument(method.index, node):
                # `checkpoint(layer.step, t, h)`: the function it is given, run with the rest
                node = ast.Call(func=node.args[0], args=node.args[1:], keywords=[])
            parts = self_path(node.func)
            if parts is None and aliases:  # `model(graph)` for `model = self.model`: the child it names
                callee = node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "forward", "__call__") else node.func
                if isinstance(callee, ast.Name) and callee.id in aliases:
                    members = facts_of(runs.cls).members
                    if any(bound[0] in members and runs.gathers_at(bound) for bound in aliases[callee.id]):
                        return True
                    if any(  # `sample_fn(shape)` for `sample_fn = self.ddpm_sample`: that method runs
                        len(bound) == 1 and bound[0] not in members and runs.helper_runs_modules(bound[0])
                        for bound in aliases[callee.id]
                    ):
                        return True
                reached = self_path(node.func, root=tuple(aliases))
                if reached is not None and any(  # `vt.conv1(x)` for `vt = self.clip_model.visual`
                    bound[0] in facts_of(runs.cls).members and runs.member_call_runs(bound + reached[1:])
                    for bound in aliases[reached[0]]
                ):
                    return True
            if parts:
                if parts[0] in facts_of(runs.cls).members and runs.member_call_runs(parts):
                    return True
                continue
            root = node.func
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in collections and runs.owns_modules():
                func = node.func
                if isinstance(func, ast.Attribute) and func.value is root and root.id in items and (
                    runs._item_method_runs_nothing(items[root.id], func.attr)
                ):
                    continue  # `for norm in self.norms: norm.set_embedding(e)`: a setter of the items' class
                return True
        return False

    def member_call_runs(self, parts: tuple[str, ...]) -> bool:
        """Does `self.<parts>(...)`, rooted at a member, run a submodule with parameters?"""
        called = parts[:-1] if parts[-1] in ("forward", "__call__") else parts
        if self.gathers_at(called):  # self.child(...)
            return True
        if len(parts) > 1 and parts[-1] not in NOT_RUNS and self.gathers_at(parts[:-1]) and (
            not self._unread_record(parts)
        ):
            return True  # self.child.decode(...); not `self.child.parameters()`, which runs nothing
        return self.runs_deep_in_unread(parts)

    def runs_deep_in_unread(self, parts: tuple[str, ...]) -> bool:
        """Is `self.<parts>(...)` a call two or more attributes into a member of a class we cannot read, one that
        gathers (`self.clip_model.visual.conv1(x)` of a model a loader built)? What it reaches is a submodule or
        a method of one, unless a name on the way says it is the model's settings or state."""
        if len(parts) < 3 or parts[-1] in NOT_RUNS or records(parts[-1]):
            return False
        if any(p == "[]" or p.startswith("_") or p.lower() in _NOT_SUBMODULES for p in parts[1:]):
            return False
        resolved = self.resolver.resolve(parts[:1])
        return resolved is not None and resolved[0] == Kind.UNKNOWN and self.gathers_at(parts[:1])

    def _unread_record(self, parts: tuple[str, ...]) -> bool:
        """Is `self.<parts>(...)` a method of a member of no class we read (one the constructor was handed: a
        config, a tracker, a model) whose name says it keeps or reports its object (`records`:
        `self.model_config.save_json(path)`, `self.tracker.log_summary()`)? Nothing tells what the member is;
        the call's name tells what the call does, as for a model of unknown class (`runs_unread`)."""
        resolved = self.resolver.resolve(parts[:-1])
        return resolved is not None and resolved[0] == Kind.UNKNOWN and all(c == UNKNOWN for c in resolved[1]) and (
            records(parts[-1])
        )

    def _item_method_runs_nothing(self, path: tuple[str, ...], name: str) -> bool:
        """Is `self.<path>` a container of modules of classes built by name (the items are of those classes exactly),
        where the classes defining the method `name` are read and none of them runs its own module or submodules in
        it (`set_embedding` storing a tensor)? A class lacking the method cannot answer the call (`GroupNorm` beside
        `AdaIN` in one list chosen by a setting); when none defines it, a subclass's method may run anything."""
        if name in ("forward", "__call__"):
            return False
        resolved = self.resolver.resolve(path)
        if resolved is None or resolved[0] != Kind.CONTAINER or not resolved[1]:
            return False
        answering = 0
        for ref in resolved[1]:
            if ref == UNKNOWN:
                return False
            if ref.startswith("torch."):
                continue  # a torch layer: no method of the project's, its own run no submodule of ours
            local = self.index.classes.get(ref)
            found = (self.index, local) if local is not None else self.index.external(ref)
            if found is None:
                return False
            method = found[1].inherited_method(name)
            if method is None:
                continue
            answering += 1
            if class_method_runs(found[0], found[1], name):
                return False
        return answering > 0


def _calls_first_argument(index: ModelIndex, call: ast.Call) -> bool:
    """`checkpoint(fn, *args)`, `torch.func.vmap(fn)`: a torch function that calls the function it is given first
    (`known.CALLS_FIRST_ARGUMENT`)."""
    func = call.func
    last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return last in _FIRST_ARGUMENT_CALLERS and index.qualify(ast.unparse(func)) in known.CALLS_FIRST_ARGUMENT


_FIRST_ARGUMENT_CALLERS = frozenset(name.rsplit(".", 1)[-1] for name in known.CALLS_FIRST_ARGUMENT)


def ast_loop_items(target: ast.expr, iterable: ast.expr) -> list[tuple[str, ast.expr]]:
    """Each loop variable with the iterable whose items it takes (`ast`'s counterpart of `flow.loop_items`):
    `for x in xs`: (x, xs); `for i, x in enumerate(xs)`: (x, xs); `for a, b in zip(xs, ys)`: (a, xs) and (b, ys),
    nested ones in turn. A target of another shape binds no item."""
    if isinstance(target, ast.Name):
        return [(target.id, iterable)]
    if not (isinstance(target, ast.Tuple) and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)):
        return []
    if iterable.func.id == "zip":
        pairs = zip(target.elts, iterable.args)
    elif iterable.func.id == "enumerate" and len(target.elts) == 2 and iterable.args:
        pairs = zip(target.elts[1:], iterable.args[:1])
    else:
        return []
    return [item for element, source in pairs for item in ast_loop_items(element, source)]


def _item_paths(target: ast.expr, iterable: ast.expr) -> dict[str, tuple[str, ...]]:
    """Loop variables bound to the items of one child of `self` (`for n in self.norms`, `self.norms.values()`,
    `for n, e in zip(self.norms, embs)`, `for i, n in enumerate(self.norms)`) and the child's path."""
    found: dict[str, tuple[str, ...]] = {}
    for name, items in ast_loop_items(target, _values_of(iterable)):
        path = self_path(_values_of(items))
        if path is not None and len(path) == 1:
            found[name] = path
    return found


def _values_of(iterable: ast.expr) -> ast.expr:
    """`d` for `d.values()`: a mapping's values are its items."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr == "values":
        return iterable.func.value
    return iterable


# `self(...)`, `self.forward(...)`, `self.__call__(...)`: a method that runs its own module's forward.
_RUNS_SELF = re.compile(r"self(?<!\wself)(?:\.forward|\.__call__)?\s*\(")


def class_method_runs(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does `<module of cls>.<name>(...)`, a method the class defines, run its module's forward or submodules?"""
    return HelperRuns(index, cls).helper_runs_modules(name) or any(
        _RUNS_SELF.search(m.text) for m in cls.reachable(name)
    ) or _leaves_to_subclass(index, cls, name)



def _leaves_to_subclass(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does `<module of cls>.<name>(...)` call, on `self`, a method the class leaves abstract for a subclass (`predict`
    calling `self.score_t(batch)`, an `@abstractmethod` of a `Model(nn.Module, ABC)`,
    `instances.abstract_module_method`), not one whose name says it keeps, reports or sets the model (`runs_unread`:
    `save_pretrained(path)`)? The subclass that fills it in computes there with its own layers."""
    return any(
        runs_unread(m.span.name) and abstract_module_method(m.index, m.owner.name, m.span.name)
        for m in cls.reachable(name) if "abstractmethod" in m.text
    )


def _over_self_collection(iterable: ast.expr) -> bool:
    """`self.scorers`, `self.scorers.items()` / `.values()`, `chain(self.a.items(), ...)`."""
    if isinstance(iterable, ast.Call):
        func = iterable.func
        if isinstance(func, ast.Attribute) and func.attr in ("items", "values") and not iterable.args:
            return self_path(func.value) is not None
        if isinstance(func, ast.Name) and (func.id in SAME_ITEMS or func.id in ("chain", "zip", "enumerate")):
            return any(_over_self_collection(a) for a in iterable.args)
        if isinstance(func, ast.Attribute) and func.attr == "chain":
            return any(_over_self_collection(a) for a in iterable.args)
        return False
    parts = self_path(iterable)
    return parts is not None and len(parts) == 1


# Methods of an object that runs a model it holds to answer (an algorithm, an agent, a policy, a sampler, a pipeline):
# a prediction, a generation, an action chosen from an observation.
INFERENCE_METHODS = frozenset(
    {"predict", "generate", "sample_action", "predict_value", "act", "select_action", "get_action", "get_actions",
     "select_actions", "sample_actions", "compute_action", "compute_actions", "choose_action", "predict_action",
     "evaluate_actions"}
)
# ... and a variant of one named for the action it picks (`act_e_greedy`, `get_greedy_action`, `select_actions_batch`).
_INFERENCE_NAME = re.compile(
    r"act_\w+|(?:get|select|sample|choose|pick|compute|predict|take)_(?:\w+_)?actions?(?:_\w+)?"
)


def inference_method(name: str) -> bool:
    """Does a method's name say it runs its object's model to answer (`predict`, `act`, `act_e_greedy`)?"""
    return name in INFERENCE_METHODS or _INFERENCE_NAME.fullmatch(name) is not None
# An accessor by its name (`get_base_model`, `is_quantized`, `has_adapter`, `set_epoch`): what a helper's summary
# reads of a model whose class lacks it (a subclass's or a wrapper's) hands back a part or a fact of the model, or
# stores a value on it; it runs none.
ACCESSOR = re.compile(r"(?:get|is|has|set)_\w+")
# A method named as a part or a variant of a module's forward (`forward_head`, `forward_features`, `encoder_forward`).
_FORWARD_PART = re.compile(r"forward_\w+|\w+_forward")


# Words of a method's name that say it keeps, reports or describes its model (`save_checkpoint`, `push_to_hub`,
# `create_or_update_model_card`, `log_metrics`, `print_summary`, `num_tokens`): such a method runs none of its layers.
_RECORDS = frozenset(
    {"save", "load", "push", "upload", "export", "write", "dump", "card", "log", "print", "report", "summary",
     "summaries", "summarize", "describe", "repr", "config", "info", "num", "count"}
)
# ... unless a word says the call computes a quantity of the model's output (`log_prob(x)`, `log_likelihood`):
# `log` there is the logarithm.
_COMPUTED = frozenset({"prob", "probs", "likelihood", "density", "softmax", "det", "abs", "jacobian", "partition"})
# ... nor when a word says it exports the model by tracing it, which runs its forward (`export_onnx(path, batch)`).
_TRACED = frozenset({"onnx", "torchscript", "jit"})


def runs_unread(name: str) -> bool:
    """Does `<model>.<name>(...)` run a model when no class we read defines `name` (the model's class is unknown or
    too large, or the method is a subclass's)? An inference method or a part of a forward does (`generate`,
    `predict`, `forward_head`), and so does any other method (`sample(4)`, `update(batch)`), unless its name says it
    keeps, reports or describes the model (`create_or_update_model_card()`, `save_checkpoint(p)`), hands back a
    part or a fact of it (`get_base_model()`, `is_quantized()`) or sets a value on it (`set_epoch(e)`)."""
    if inference_method(name) or _FORWARD_PART.fullmatch(name):
        return True
    return not (ACCESSOR.fullmatch(name) or records(name))


def records(name: str) -> bool:
    """Does a method's name say it keeps, reports or describes its object (`save_json`, `log_metrics`,
    `print_summary`), not an inference method or a part of a forward (`generate`, `forward_head`)?"""
    if inference_method(name) or _FORWARD_PART.fullmatch(name):
        return False
    words = name.lower().split("_")
    return bool(_RECORDS.intersection(words)) and not _COMPUTED.intersection(words) and not _TRACED.intersection(words)


# The words of a function's name saying it runs the model it is handed: an evaluation, an inference, a rollout
# (`evaluate(model, loader)`, `run_validation(model)`, `generate_samples(model, n)`; not `log_model(model)`).
_EVALUATION_WORDS = re.compile(
    r"(?:eval|evaluate|evaluation|validate|validation|valid|val|test|infer|inference|predict|prediction|generate"
    r"|sample|samples|sampling|rollout|rollouts|visualize|visualise|reconstruct)"
)
# An object named for running models it is handed (`evaluator.run(model)`, `val_sampler.sample(model, n)`).
EVALUATOR = re.compile(r"(?:\w+_)?(?:evaluator|validator|tester|inferencer|sampler|predictor)s?")


def evaluator_method(owner: str, method: str) -> bool:
    """Does `<owner>.<method>(model)`, on an object of no class we read, run the model it is handed: the method named
    as an evaluation (`trainer.test`), or any method of an object named as an evaluator (`evaluator.run`) but one
    that records (`evaluator.save_results`)?"""
    return evaluates(method) or bool(EVALUATOR.fullmatch(owner)) and not records(method)


def evaluates(name: str) -> bool:
    """Does a function's or a method's name say it runs the model it is handed (`_EVALUATION_WORDS`), and no word of
    it that it keeps or reports it (`save_eval_model`, `log_validation_model`)?"""
    words = name.lower().strip("_").split("_")
    return any(_EVALUATION_WORDS.fullmatch(w) for w in words) and not records(name)


@memoised(cycle=False)
def runs_argument(index: ModelIndex, function: str, param: str, classes: tuple[str, ...]) -> bool:
    """Does the module-level function `function` of this file run the module its parameter `param` is handed,
    a module of `classes` (`def aux_loss(model, h): return model.head(h).mean()`)?

    It does when it calls the module, its `forward`, a child of it
    (`calls.HeldCalls`), or a method of it: one that runs submodules when
    the class can be read, one `runs_unread` answers for by its name when
    it cannot.
    """
    info = index.function_info(function)
    if info is None or (param not in info.text and "**" not in info.text):
        return False  # (a keyword `param` may come in whole through `**kwargs` and be handed on so)
    flat = flat_of(info)
    if flat is None:
        return False
    held = HeldCalls(index, {param: classes}, flat)
    wrapped = {param}  # and what wraps it: `task = TestingTask(model, names)`, a module built around the model
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and _wraps(node.value, wrapped):
            wrapped.add(node.targets[0].target.value)
        if type(node) is not cst.Call:
            continue
        if held.callee(node) is not None:
            return True
        if _evaluation_handed(index, node, wrapped):
            return True  # `trainer.test(task, loaders)`, `evaluate(model, data)` of a library we do not read
        func = node.func
        if isinstance(func, cst.Name) and _hands_on(index, node, param, classes, info.node):
            return True  # `return torch_separate(model, wav)`: another function of the file runs it
        if (bound := _partial_of_function(node)) is not None and _hands_on(index, bound, param, classes, info.node):
            return True  # `runner = partial(run_one, policy=policy)`: built to be called, it runs `run_one`
        if not (isinstance(func, cst.Attribute) and isinstance(wrapped_by := _unwrapped(func.value), cst.Name)
                and wrapped_by.value == param):
            continue  # (`generator.module.infer(x)`: a method of the model a data-parallel wrapper wraps)
        name = func.attr.value
        if name in NOT_RUNS:
            continue
        readable = [found for ref in classes if ref != UNKNOWN and (found := index.located(ref)) is not None]
        if not readable and all(ref == UNKNOWN for ref in classes):
            if runs_unread(name):
                return True
            continue  # `model.summary(print_fn=f)`, `model.set_epoch(e)`: its name keeps, describes or sets
        if any(
            cls.method(name) is not None and (
                HelperRuns(where, cls).helper_runs_modules(name) or _leaves_to_subclass(where, cls, name))
            or cls.method(name) is None and bound_in_class(cls, name)  # `decode = decode_function`: run on the model
            for where, cls in readable
        ):
            return True
    return False


def bound_in_class(cls: ClassInfo, name: str) -> bool:
    """Does the body of `cls` (or an in-file base's) bind `name` to a function by name (Whisper's `decode =
    decode_function`, a function of another file), making it a method whose body is read elsewhere?"""
    for info in cls.mro:
        text = info.text
        first = _FIRST_DEF.search(text)
        if first is None:
            continue
        bound = rf"^{re.escape(first.group(1))}{re.escape(name)}[ \t]*=[ \t]*[A-Za-z_][\w.]*[ \t]*(?:#[^\n]*)?$"
        if re.search(bound, text, re.M):
            return True
    return False


# The indentation of a class's first method: its body's.
_FIRST_DEF = re.compile(r"^([ \t]+)(?:async[ \t]+)?def[ \t]", re.M)


def _wraps(value: cst.BaseExpression, names: set[str]) -> bool:
    """Is `value` a construction of a class (by its capitalised name) handed one of `names` (`TestingTask(model,
    names)`, `Wrapper(module=model)`): an object built around the model, which runs it?"""
    if not isinstance(value, cst.Call):
        return False
    callee = call_name(value)
    return bool(callee) and callee.rsplit(".", 1)[-1][:1].isupper() and any(
        isinstance(held := _unwrapped(a.value), cst.Name) and held.value in names for a in value.args
    )


def _unwrapped(value: cst.BaseExpression) -> cst.BaseExpression:
    """The model a wrapper's `.module` chain holds (`model` of `model.module.module`)."""
    while type(value) is cst.Attribute and value.attr.value == "module":
        value = value.value
    return value


def _evaluation_handed(index: ModelIndex, call: cst.Call, names: set[str]) -> bool:
    """Is `call` an evaluation we cannot read (`EVALUATOR`, `evaluates`) handed one of `names`: a function of no file
    the program reads (`evaluate(model, loader)`), or a method of an object of no class we read (`trainer.test(task,
    loaders)`, `evaluator.run(model)`)? It runs the model it is handed, as its name says."""
    if not any(not a.star and isinstance(a.value, cst.Name) and a.value.value in names for a in call.args):
        return False
    func = call.func
    if isinstance(func, cst.Name):
        return evaluates(func.value) and index.function_info(func.value) is None and index.external(
            index.qualify(func.value)) is None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value not in names:
        owner = func.value.value
        if owner in index.imports or owner in index.classes or index.function_info(owner) is not None:
            return False  # `np.test(...)`, a module's function: not an object handed the model
        return evaluator_method(owner, func.attr.value)
    return False


def _hands_on(
    index: ModelIndex, call: cst.Call, param: str, classes: tuple[str, ...], caller: cst.FunctionDef | None
) -> bool:
    """Does `call`, of a function of this file, hand it `param` (as itself, or inside the `**kwargs` of `caller` it
    was handed in) for a parameter that it runs?"""
    name = call.func.value  # type: ignore[attr-defined]
    info = index.function_info(name)
    if info is None or info.node is None:
        return False
    for position, arg in enumerate(call.args):
        if arg.star == "**" and isinstance(arg.value, cst.Name) and caller is not None \
                and _forwards(caller, param, arg.value.value):
            if runs_argument(index, name, param, classes):
                return True  # `_evaluate_batch(batch, **kwargs)` for `kwargs` holding `model=model`
            continue
        if arg.star or not (isinstance(arg.value, cst.Name) and arg.value.value == param):
            continue
        target = arg.keyword.value if arg.keyword is not None else parameter_for(info.node, call, position)
        if target and runs_argument(index, name, target, classes):
            return True
    return False


def _partial_of_function(call: cst.Call) -> cst.Call | None:
    """`functools.partial(fn, *args, **kwargs)` of a function named `fn`, as the call `fn(*args, **kwargs)` whose
    arguments it binds now (a function builds a partial to call it, or to hand it to what calls it: an executor's
    `submit`, a `map`); None for any other call."""
    name = call_name(call)
    if name is None or name.rsplit(".", 1)[-1] != "partial" or not call.args:
        return None
    first = call.args[0]
    if first.star or first.keyword is not None or not isinstance(first.value, cst.Name):
        return None
    return cst.Call(func=first.value, args=call.args[1:])


def _forwards(function: cst.FunctionDef, name: str, kwargs: str) -> bool:
    """Does a keyword argument `name` handed to `function` land in its `**kwargs` parameter called `kwargs`, which
    the function hands on whole (`def evaluate(*, batch_size, **kwargs)` ... `_evaluate_batch(**kwargs)`)?"""
    params = function.params
    star = params.star_kwarg
    return star is not None and star.name.value == kwargs and all(
        p.name.value != name for p in (*params.posonly_params, *params.params, *params.kwonly_params))
