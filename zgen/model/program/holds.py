"""What holds a module: the arguments of a function and the attributes of any class that hold one.

A trainer, an RL agent, an optimizer wrapper or a sampler is usually not an
`nn.Module`, yet it holds one: handed in (`def __init__(self, policy:
nn.Module)`), built (`self.model = Unet(...)`) or copied from one
(`self.target = deepcopy(policy)`). Code outside the model's own forward
that uses such a module sees it as ZeRO-3 left it: partitioned.

* `module_arguments(index, function)`: the arguments of a function that hold
  a module, because their annotation names a module class (`nn.Module`, a
  module class of this or another file, inside `Optional[...]` or `X | None`),
  because they are named the way modules are (`model`, `policy`, `backbone`),
  or because the function uses them as only a module is used
  (`x.parameters()`, `x.eval()`, `x.state_dict()` with `x.train()`).
* `held_attributes(index, cls)`: the attributes `self.X` of a class (module
  or not) that hold a module: assigned in `__init__` (and what it calls) from
  a module argument, a module construction or a copy of either, or used as a
  module in any method. `model_containers(index, cls)`: the attributes built
  there as containers of models (a `ModuleList`, a dict, a plain list or
  tuple of them), whose items are the models (`self.critics[i]`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from . import known
from .known import MODULE_WORDS, module_like_name
from .class_values import attribute_values, class_lookup, package_subclasses
from .index import ClassInfo, MethodInfo, ModelIndex, memoised, module_mixin
from .members import (
    CONTAINER_ANNOTATIONS, UNKNOWN_CLASS, Kind, class_named, classify, classify_unpacked, facts_of, has_params, member_of,
)
from .skeleton import FunctionSpan
from .skeleton import dotted as skeleton_dotted
from .tree import access_path, call_name, code_of, cst, dotted, parameter_names, walk

__all__ = [
    "module_arguments", "may_have_module_arguments", "held_attributes", "model_containers", "held_paths", "container_elements", "averaged_attributes", "averaged_copies", "trainer_module", "module_like_name", "MODULE_WORDS", "config_like", "annotated_module", "MODULE_ONLY_METHODS",
    "RETURNS_MODULE", "held_path_classes", "constructed_models", "module_container_arguments", "may_have_module_containers",
    "value_holds", "averager", "looked_up_models", "argument_held_models", "unwraps_itself", "rebinds_itself", "MOVES",
    "wraps_itself", "wraps_a_model", "built_from_class_value", "unmoved",
    "binding_text", "patched_forward",
]

# Methods only an `nn.Module` has: calling one on a name says it holds a module.
# (Not `eval`/`train`/`state_dict`: schedule-free optimizers have the first two, every optimizer the last.)
MODULE_ONLY_METHODS = frozenset(
    {"parameters", "named_parameters", "modules", "named_modules", "children", "named_children"}
)  # fmt: skip
# Annotations that name a class, a factory or a container rather than one module instance.
_NOT_AN_INSTANCE = re.compile(
    r"\b(?:type|Type|Callable|Iterable|Iterator|Sequence|list|List|tuple|Tuple|dict|Dict|Mapping|set|Set)\s*\["
    r"|Config\b|Factory\b"
)
_ANNOTATION_NAME = re.compile(r"[A-Za-z_][\w.]*")
_TYPING_WORDS = frozenset({"Optional", "Union", "None", "typing", "Any", "Annotated", "Literal", "Final"})


def config_like(name: str) -> bool:
    """Is a name that of a config, a tensor, state or data rather than a module (`cfg`, `x`, `weight`, `batch`)?"""
    return bool(known.NOT_A_MODULE.search(name))


def patched_forward(func: cst.FunctionDef) -> bool:
    """Is the module-level `func` written to be installed as some module's forward (`def lce_forward(self,
    input_ids, labels=None)`): its first argument named `self`, its name saying forward? Then `self` is a module
    of a class the file does not show, whose hooks gather only its own parameters when it runs."""
    params = (*func.params.posonly_params, *func.params.params)
    return bool(params) and params[0].name.value == "self" and "forward" in func.name.value


# Text of a module-named attribute of another object handed to a call (`helper(runner.model)`,
# `sync(self.trainer.network, x)`): the pre-filter of `other_objects_models`.
HANDED_PATH_TEXT = r"[(,]\s*(?:\w+\.)+\w*" + known.MODULE_WORD.pattern.rstrip("$") + r"(?:\.module)?\s*[,)]"
# Text of a name or path named as a module (`model`, `self.ema_net`, `runner.model.module`) ending an argument.
MODULE_NAMED_TEXT = r"(?:\w+\.)*\w*" + known.MODULE_WORD.pattern.rstrip("$") + r"(?:\.module)?\s*[,)]"


def annotated_module(index: ModelIndex, annotation: cst.BaseExpression) -> tuple[str, ...]:
    """The module classes an annotation names as the type of one instance (`nn.Module`, `Optional[Unet]`)."""
    return _annotation_classes(index, code_of(annotation, limit=400))


def _annotation_classes(index: ModelIndex, code: str) -> tuple[str, ...]:
    """`annotated_module` of an annotation's source text (on one line, as `code_of` gives it)."""
    text = code.replace('"', " ").replace("'", " ")
    alternatives = _union_alternatives(text)
    if len(alternatives) > 1:  # `Union[nn.Module, Dict[str, nn.Module]]`: one module, or a container of them
        if any(_FACTORY_ANNOTATION.match(alternative) for alternative in alternatives):
            return ()  # `Module | Callable[[], Module] | None`: maybe a builder the code calls itself
        return tuple(dict.fromkeys(c for alternative in alternatives for c in _annotation_classes(index, alternative)))
    if _NOT_AN_INSTANCE.search(text):
        return ()
    found = []
    bounds = type_var_bounds(index)
    for name in _ANNOTATION_NAME.findall(text):
        if name in _TYPING_WORDS or name.startswith("typing."):
            continue
        name = bounds.get(name, name)  # `algorithm: TAlgorithm`, `TAlgorithm = TypeVar(..., bound=Algorithm)`
        local = index.classes.get(name)
        if local is not None:
            if local.is_module:
                found.append(name)
                # a base class names any subclass of it (`model: PreTrainedModel` given the `...ForSpeech` one)
                found.extend(sub.name for sub in index.classes.values() if sub is not local and local in sub.mro)
            continue
        qualified = index.qualify(name)
        if qualified[:1].isupper() or "." in qualified:
            if index.is_module_base(qualified):
                found.append(qualified)
    return tuple(found)


# An annotation of something that builds an instance, not of one (`Callable[[], Module]`, `type[Module]`)
_FACTORY_ANNOTATION = re.compile(r"(?:typing\.)?(?:Callable|type|Type)\s*\[")


def _union_alternatives(text: str) -> list[str]:
    """The alternatives of a union's text (`Union[A, Dict[str, A]]`, `A | None`), each on its own; else `[text]`."""
    text = text.strip()
    inner = text[len("Union["):-1] if text.startswith("Union[") and text.endswith("]") else text
    parts, depth, start = [], 0, 0
    for at, char in enumerate(inner):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0 and (char == "|" or char == "," and inner is not text):
            parts.append(inner[start:at])
            start = at + 1
    parts.append(inner[start:])
    return [part.strip() for part in parts if part.strip()]


# Generic containers an annotation may wrap modules in: those whose items (`list[Net]`, `Iterable[...]`, a tuple
# `tuple[Net, ...]` of any length) and those whose values (`dict[str, Net]`) are the modules.
_ITEM_CONTAINERS = frozenset({
    "list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection", "set", "Set", "frozenset",
    "FrozenSet", "Generator",
})
_VALUE_CONTAINERS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "DefaultDict", "defaultdict"})
# The shape of a container argument's modules: `("model", classes)`, `("items", shape)`, `("mapping", shape)` or
# `("tuple", (shape or None, ...))`.
Shape = tuple


@memoised
def module_container_arguments(index: ModelIndex, function: cst.FunctionDef) -> dict[str, Shape]:
    """Arguments of `function` annotated as containers holding modules, and where the modules sit in them:
    `models: list[nn.Module]` (its items), `nets: dict[str, Critic]` (its values), `objectives: Iterable[tuple[
    DataLoader, nn.Module]]` (the second part of each item). A container is handed built modules as a module
    argument is (`module_arguments`, which leaves containers out: a list is no module)."""
    found: dict[str, Shape] = {}
    for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
        if param.annotation is None or param.name.value in ("self", "cls"):
            continue
        shape = _container_shape(index, param.annotation.annotation, 0)
        if shape is not None and shape[0] != "model":
            found[param.name.value] = shape
    return found


def _container_shape(index: ModelIndex, note: cst.BaseExpression, depth: int) -> Shape | None:
    """Where modules sit in a value of annotation `note` (a `Shape`), or None where it holds none."""
    if isinstance(note, cst.SimpleString):  # a quoted annotation: what it names
        try:
            note = cst.parse_expression(note.evaluated_value)
        except (cst.ParserSyntaxError, TypeError):
            return None
    if isinstance(note, cst.BinaryOperation) and isinstance(note.operator, cst.BitOr):  # `list[Net] | None`
        return _container_shape(index, note.left, depth) or _container_shape(index, note.right, depth)
    if not isinstance(note, cst.Subscript):
        classes = annotated_module(index, note)
        if classes and not all(known.torch_has_params(ref) is False for ref in classes):
            return ("model", classes)
        return None
    if depth > 3:
        return None
    head = (dotted(note.value) or "").rsplit(".", 1)[-1]
    parts = [e.slice.value for e in note.slice if isinstance(e.slice, cst.Index)]
    if head in ("Optional", "Union"):
        return next((s for s in (_container_shape(index, p, depth) for p in parts) if s is not None), None)
    if head in _ITEM_CONTAINERS and parts:
        inner = _container_shape(index, parts[0], depth + 1)
        return ("items", inner) if inner is not None else None
    if head in _VALUE_CONTAINERS and len(parts) == 2:
        inner = _container_shape(index, parts[1], depth + 1)
        return ("mapping", inner) if inner is not None else None
    if head in ("tuple", "Tuple") and parts:
        if len(parts) == 2 and isinstance(parts[1], cst.Ellipsis):
            inner = _container_shape(index, parts[0], depth + 1)
            return ("items", inner) if inner is not None else None
        shapes = tuple(_container_shape(index, p, depth + 1) for p in parts)
        return ("tuple", shapes) if any(s is not None for s in shapes) else None
    return None


@memoised
def type_var_bounds(index: ModelIndex) -> dict[str, str]:
    """Module-level type variables of the file and the class each is bound to (`T = TypeVar("T", bound=Policy)`)."""
    tree = index.skeleton.tree
    if tree is None or "TypeVar" not in index.source:
        return {}
    found = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            if isinstance(value, ast.Call) and skeleton_dotted(value.func) in ("TypeVar", "typing.TypeVar"):
                bound = next((k.value for k in value.keywords if k.arg == "bound"), None)
                if isinstance(bound, ast.Constant) and isinstance(bound.value, str):
                    found[stmt.targets[0].id] = bound.value.strip()
                elif bound is not None and skeleton_dotted(bound):
                    found[stmt.targets[0].id] = skeleton_dotted(bound)
    return found


@memoised
def module_arguments(index: ModelIndex, function: cst.FunctionDef) -> dict[str, tuple[str, ...]]:
    """Arguments of `function` that hold a module -> the classes it may have (`("<unknown>",)` when not known).

    An argument annotated with a module class holds one of those classes; an
    unannotated one named as modules are (`model`, `ema_model`, `critic`) or
    used as only a module is (`x.parameters()`, `x.eval()`) holds a module of
    a class we cannot tell; so does a local unpacked from an argument and named so (`model, loss = modules`).
    `self` and `cls` never count, nor does an argument annotated only with torch classes
    owning no parameter (`loss_fn: nn.modules.loss._Loss`, torch's losses: nothing of it is partitioned or gathered).
    """
    params = function.params
    found: dict[str, tuple[str, ...]] = {}
    unannotated = []
    used_only: list[str] = []
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        name = param.name.value
        if name in ("self", "cls"):
            continue
        if param.annotation is not None and not _types_nothing(code_of(param.annotation.annotation, limit=200)):
            classes = annotated_module(index, param.annotation.annotation) or _locally_imported_module(
                index, function, param.annotation.annotation)
            if classes and all(known.torch_has_params(ref) is False for ref in classes):
                continue  # `loss_fn: nn.modules.loss._Loss`: a torch module owning no parameter, nothing to partition
            if classes:
                found[name] = classes
            elif _names_a_class(param.annotation.annotation) and module_like_name(name) \
                    and _library_model_class(index, param.annotation.annotation):
                found[name] = ("<unknown>",)  # `model: UNet2DModel` of a library the program cannot read
            elif _names_a_class(param.annotation.annotation):
                used_only.append(name)  # a class not known to be a module (its bases unreadable): judged by use
            continue
        # (unannotated, or annotated with a package that types nothing, `actor: torch.nn`: judged by name and use)
        if isinstance(param.default, (cst.Integer, cst.Float, cst.SimpleString, cst.List, cst.Dict, cst.Tuple)):
            continue  # `layers=2`, `head="linear"`: a setting
        if module_like_name(name) and name not in _used_as_tensor(index, function):
            found[name] = ("<unknown>",)
        else:
            unannotated.append(name)
    if unannotated or used_only:
        used = _used_as_module(function)
        for name in (*unannotated, *used_only):
            if name in used:
                found[name] = ("<unknown>",)
    for name in _unpacked_models(function, {p.name.value for p in (*params.posonly_params, *params.params,
                                                                     *params.kwonly_params)}):
        found.setdefault(name, ("<unknown>",))  # `model, loss, evaluator = training_modules`: read as an argument
    return found


# `pos_embed.shape`, `pos_embed.reshape(...)`: what only a tensor has (a module has no shape, view or size).
_TENSOR_USE = re.compile(
    r"(?<![\w.])(\w+)\.(?:shape\b|ndim\b|(?:reshape|view|permute|transpose|flatten|unsqueeze|squeeze|size|contiguous"
    r"|expand|numel)\()"
)


def _used_as_tensor(index: ModelIndex, function: cst.FunctionDef) -> frozenset[str]:
    """Names the function uses as only a tensor is used (`def interpolate(n, pos_embed): N = pos_embed.shape[1]`):
    named like a module (`embed`), a tensor all the same."""
    return frozenset(_TENSOR_USE.findall(index.body_text(function, 100_000)))


def argument_held_models(function: cst.FunctionDef, modules: dict[str, tuple[str, ...]]) -> list[str]:
    """Module-named attributes of an argument that is no module itself (`runner.model` of a hook's `runner`,
    `trainer.policy`) that the function uses as a module: calls it or its `forward`, puts it into eval or train mode,
    lists its parameters or state, directly or through a local bound to it once (`module = runner.model` ...
    `module.eval()`; `module = module.module` unwraps it). What the argument holds is the caller's model.
    Not an argument named as a setting (`args.model`, `cfg.model`: a name or a config) nor one of `modules`."""
    params = function.params
    given = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    given = {name for name in given if name not in ("self", "cls") and name not in modules and not config_like(name)}
    if not given:
        return []
    paths: dict[str, str] = {}  # a local bound to `arg.attr` (or the path itself) -> the path
    for node in walk(function.body):
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            path = _argument_path(node.value, given)
            if path is not None:
                paths[node.targets[0].target.value] = path
    once = _assigned_once(function) if paths else frozenset()
    paths = {name: path for name, path in paths.items() if name in once}
    used: list[str] = []
    for call in walk(function.body):
        if type(call) is not cst.Call:
            continue
        func = call.func  # `runner.model(x)`, `module.eval()` for `module = runner.model`
        on = func.value if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_USES else func
        path = _argument_path(on, given) or (paths.get(on.value) if isinstance(on, cst.Name) else None)
        if path is not None and path not in used:
            used.append(path)
    return used


# Calls that use what they are made on as a module: a mode switch, its parameters or state, its forward. (Any other
# method says less: `engine.policy.monitor_vars()` of an RL policy object, no module.)
_MODULE_USES = MODULE_ONLY_METHODS | {"eval", "train", "forward", "state_dict", "load_state_dict", "zero_grad",
                                      "requires_grad_"}


def _argument_path(expr: cst.BaseExpression, given: set[str]) -> str | None:
    """`runner.model` (or `runner.model.module`, the model a wrapper wraps) for an argument `runner` of `given`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "module":
        expr = expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in given \
            and module_like_name(expr.attr.value) and not _VERB.match(expr.attr.value):
        return f"{expr.value.value}.{expr.attr.value}"
    return None


# A method named for what it does to a model (`accelerator.unwrap_model(m)`, `trainer.get_model()`), not a model.
_VERB = re.compile(r"(?:get|build|make|create|load|save|unwrap|wrap|prepare|init|set|update|copy|clone|export|"
                   r"compile|register|to|from|sync|push|pull|reset|freeze|unfreeze|merge|fuse)_")


def unwraps_itself(value: cst.BaseExpression | None, name: str) -> bool:
    """`module = module.module`: a local bound again to the model its data-parallel wrapper wraps (the same model);
    `G_AB = G_AB.cuda()`, `model = model.to(device)`: the same model, moved."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MOVES:
        value = value.func.value
        return isinstance(value, cst.Name) and value.value == name
    return isinstance(value, cst.Attribute) and value.attr.value == "module" and isinstance(value.value, cst.Name) \
        and value.value.value == name


def wraps_itself(value: cst.Call, target: cst.BaseExpression) -> bool:
    """`model = nn.DataParallel(model, device_ids)`: a name bound to a construction around what it held."""
    return isinstance(target, cst.Name) and bool(value.args) and value.args[0].keyword is None \
        and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == target.value


def binding_text(value: cst.BaseExpression | None) -> str:
    """The text of a name or attribute a local is bound to (`self.model`), else empty (what `rebinds_itself`
    compares)."""
    return code_of(value, limit=200) if isinstance(value, (cst.Name, cst.Attribute)) else ""


def rebinds_itself(value: cst.BaseExpression | None, name: str, first: str | None) -> bool:
    """Is binding `name` to `value` no new binding: the model its wrapper wraps (`module = module.module`), or what it
    was first bound to (`first`, its `binding_text`) or what that wraps (`model = self.model` ... `model =
    self.model.module`)?"""
    return unwraps_itself(value, name) or bool(first) and binding_text(value) in (first, f"{first}.module")


def _unpacked_models(function: cst.FunctionDef, given: set[str]) -> list[str]:
    """Locals the function unpacks from one of its arguments (`model, loss, evaluator = training_modules`) and binds
    nowhere else, named as modules are: what the caller handed in, as an argument of that name is."""
    unpacked: list[str] = []
    for node in walk(function.body):
        if type(node) is cst.Assign and len(node.targets) == 1 \
                and isinstance(node.targets[0].target, (cst.Tuple, cst.List)) \
                and isinstance(node.value, cst.Name) and node.value.value in given:
            unpacked += [n for n in _target_names(node.targets[0].target) if module_like_name(n)]
    once = _assigned_once(function) if unpacked else frozenset()
    return [name for name in unpacked if name in once]


def _assigned_once(function: cst.FunctionDef) -> frozenset[str]:
    """Names the function's assignments bind exactly once (`module = module.module`, the same model unwrapped, is no
    new binding: `rebinds_itself`)."""
    bound: dict[str, int] = {}
    first: dict[str, str] = {}
    for node in walk(function.body):
        if type(node) is cst.Assign:
            for target in node.targets:
                for name in _target_names(target.target):
                    if not rebinds_itself(node.value, name, first.get(name)):
                        bound[name] = bound.get(name, 0) + 1
                        first.setdefault(name, binding_text(node.value))
    return frozenset(name for name, count in bound.items() if count == 1)


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)


def may_have_module_containers(index: ModelIndex, span: FunctionSpan) -> bool:
    """False only when `module_container_arguments` of the `def` at `span` is surely empty, read from the `ast`
    tree (an annotation of a container that names no module class the lookup knows, or none)."""
    node = _function_defs(index).get((span.start, span.end, span.indent), False)
    if node is None or node is False:
        return True
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        code = _segment(index, arg.annotation) if arg.annotation is not None else None
        if code is not None and _NOT_AN_INSTANCE.search(code) and any(
                _annotation_classes(index, word) for word in _ANNOTATION_NAME.findall(code)):
            return True  # `models: list[Net]`
    return False


def may_have_module_arguments(index: ModelIndex, span: FunctionSpan) -> bool:
    """False only when `module_arguments` of the `def` at `span` is surely empty, read from the file's `ast` tree
    without a libcst parse (the trigger before the parse); True when it may not be, or the tree cannot tell.

    Each test is `module_arguments`'s own, or looser: an annotation's text asked of the same lookup, a default
    counted as a setting only when libcst's would be (an `int`, a `float`, a list, a dict, a tuple; a string may
    be an implicit concatenation, so it is not), any name a module-only method or `load_state_dict` is called
    on taken as used as a module (an annotation naming no class the lookup knows is judged by that use too, unless
    it names a class as models are named for an argument named as modules are), and
    a function with an `import` of its own always parsed.
    """
    node = _function_defs(index).get((span.start, span.end, span.indent), False)
    if node is None or node is False:
        return True  # not this file's `def`, two on one span, or no tree (a summary): parse and ask
    if "import " in index.skeleton.text(span.start, span.end):
        return True  # a class imported inside the function is resolved there: parse and ask
    args = node.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    for stmt in node.body:  # `model, loss = modules`: an unpacked argument (`_unpacked_models`)
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in names and any(
                isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and module_like_name(e.id) for e in t.elts)
                for t in stmt.targets):
            return True
    unannotated = []
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        name = arg.arg
        if name in ("self", "cls"):
            continue
        code = _segment(index, arg.annotation) if arg.annotation is not None else None
        if arg.annotation is not None and not (code is not None and _types_nothing(code)):
            if code is None or len(code) > 400 or _annotation_classes(index, code):
                return True
            if module_like_name(name) and known.MODULE_WORD.search(code.rsplit(".", 1)[-1].strip("\"' ").lower()):
                return True  # `model: UNet2DModel` of a library the program cannot read (`_library_model_class`)
            unannotated.append(name)  # a class the lookup cannot tell: `module_arguments` judges it by use
            continue
        default = _default_of(args, arg)
        if isinstance(default, (ast.List, ast.Dict, ast.Tuple)) or (
            isinstance(default, ast.Constant) and type(default.value) in (int, float)
        ):
            continue
        if module_like_name(name):
            return True
        unannotated.append(name)
    if not unannotated:
        return False
    text = index.skeleton.text(span.start, span.end)
    if not any(word in text for word in _USED_AS_MODULE_WORDS):
        return False  # no call a use as a module needs: nothing to walk
    used = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            if isinstance(call.func.value, ast.Name):
                if call.func.attr in MODULE_ONLY_METHODS or call.func.attr == "load_state_dict":
                    used.add(call.func.value.id)
            if call.func.attr == "state_dict" and isinstance(call.func.value, ast.Name):
                used.add(call.func.value.id)
    return any(name in used for name in unannotated)


# Every name `_used_as_module` looks for holds one of these: text without them has no such use (a test keeps
# `MODULE_ONLY_METHODS` covered).
_USED_AS_MODULE_WORDS = ("parameters", "modules", "children", "state_dict")


def _default_of(args: ast.arguments, arg: ast.arg) -> ast.expr | None:
    if arg in args.kwonlyargs:
        return args.kw_defaults[args.kwonlyargs.index(arg)]
    positional = [*args.posonlyargs, *args.args]
    at = positional.index(arg) - (len(positional) - len(args.defaults))
    return args.defaults[at] if at >= 0 else None


def _segment(index: ModelIndex, node: ast.expr) -> str | None:
    """The source text of an `ast` node on one line (whitespace runs as one space), or None when unsure."""
    end_line, end_col = node.end_lineno, node.end_col_offset
    if end_line is None or end_col is None:
        return None
    lines = index.skeleton.lines[node.lineno - 1 : end_line]
    if not lines:
        return None
    data = [line.encode("utf-8") for line in lines]  # `ast` columns are UTF-8 byte offsets
    data[-1] = data[-1][:end_col]
    data[0] = data[0][node.col_offset :]
    return " ".join(b"".join(data).decode("utf-8", "replace").split())


@memoised
def _function_defs(index: ModelIndex) -> dict[tuple[int, int, int], ast.FunctionDef | ast.AsyncFunctionDef | None]:
    """The file's functions and methods (`def`s in class bodies and the blocks of module-level statements, not
    inside functions) by (first line with decorators, last line, indent), from its `ast` tree; None for a span
    two share."""
    tree = index.skeleton.tree
    found: dict[tuple[int, int, int], ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
    stack: list[ast.stmt] = list(tree.body) if tree is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            key = (first, node.end_lineno or node.lineno, node.col_offset)
            found[key] = None if key in found else node
        elif isinstance(node, ast.ClassDef):
            stack.extend(node.body)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in (node.body, getattr(node, "orelse", ()), getattr(node, "finalbody", ())):
                stack.extend(block)
            for handler in getattr(node, "handlers", ()):
                stack.extend(handler.body)
    return found


def constructed_models(index: ModelIndex, function: cst.FunctionDef, owner: ClassInfo | None) -> dict[str, cst.Call]:
    """Locals `function` binds to a model it constructs -> the construction: a module class of this file, torch
    or another file (`model = Net(**args)`), a factory function of this file or another returning one,
    `cls(...)` in a classmethod of a module class (`from_pretrained`), or a class held in a variable
    (`model = model_class(**conf)`, `encoder = EncoderClass(**params)`) bound to a local named as modules are.
    Under `deepspeed.zero.Init` each is partitioned once its constructor returns."""
    classmethod_of_module = owner is not None and owner.is_module and any(
        dotted(d.decorator) == "classmethod" for d in function.decorators
    )
    found: dict[str, cst.Call] = {}
    builders: dict[str, tuple[ModelIndex, ClassInfo]] = {}  # `asm = Assembler(d)`: locals bound to plain objects
    class_defaults = _class_defaults(function)
    imported_by_name: set[str] = set()  # `model = importlib.import_module(args.model)`
    made_by: dict[str, cst.Call] = {}  # those locals -> the construction
    for node in walk(function.body):
        if type(node) is cst.Assign and isinstance(node.value, cst.Call) \
                and isinstance(node.targets[0].target, cst.Name) \
                and (call_name(node.value) or "").rsplit(".", 1)[-1] == "import_module":
            imported_by_name.add(node.targets[0].target.value)
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and isinstance(node.value, cst.Attribute) and isinstance(node.value.value, cst.Name) \
                and (holder := node.value.value.value) in builders \
                and node.value.attr.value in held_attributes(*builders[holder]):
            # `policy = agent.policy` of `agent = MineRLAgent(env)`, whose constructor built the model it holds
            found.setdefault(node.targets[0].target.value, made_by[holder])
            continue
        if isinstance(node, cst.AnnAssign) and isinstance(node.value, cst.Call):
            target = node.target  # `model: nn.Module = GPT(vocab_size=v).cuda()`
            named = class_named(index, dotted(node.annotation.annotation) or "")
            if named is not None and not named.is_module:
                continue  # `aggregator: MetricAggregator = instantiate(cfg)`: a plain object the annotation names
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call):
            target = node.targets[0].target
        else:
            continue
        if isinstance(target, cst.Name) and (made := _made_by_builder(index, node.value, builders)):
            if made is True:
                found.setdefault(target.value, node.value)  # `model = tp.cast(ANI, asm.assemble(8))`
                continue
            builders[target.value] = made  # type: ignore[assignment]
            made_by[target.value] = node.value
        if isinstance(target, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in target.elements):
            # `net, opt = make_pair(cfg)`: what the function returns, position by position
            made = classify_unpacked(index, node.value, len(target.elements), owner)
            # (`gpt, epoch = utils.load_model(path)`: a builder's element named as models are is one, however built)
            builder = isinstance(node.value, cst.Call) and (
                (call_name(node.value) or "").rsplit(".", 1)[-1] in known.MODEL_BUILDERS
                or index.qualified_call(node.value) in known.MODEL_BUILDERS_QUALIFIED
            )
            for element, (kind, classes) in zip(target.elements, made or [(Kind.VALUE, ())] * len(target.elements)):
                if isinstance(element.value, cst.Name) and (kind in (Kind.MODULE, Kind.CONTAINER) and any(
                    has_params(index, c) is not False for c in classes
                ) or builder and module_like_name(element.value.value)):
                    found.setdefault(element.value.value, node.value)
            continue
        if not isinstance(target, cst.Name):
            continue
        made = node.value
        while isinstance(made.func, cst.Attribute) and made.func.attr.value in MOVES and \
                isinstance(made.func.value, cst.Call):
            made = made.func.value  # `QNetwork(env).to(device)`: the module built, moved
        wrapped = _data_parallel_around(index, made)
        if wrapped is not None:
            made = wrapped  # `model = nn.DataParallel(RAFT(args))`: the model built, wrapped as it was
        if isinstance(made.func, cst.Name) and (default := class_defaults.get(made.func.value)) is not None:
            made = made.with_changes(func=default)  # `ac = actor_critic(o, a)` for `actor_critic=core.MLPActorCritic`
        callee = dotted(made.func)
        if callee is None and isinstance(made.func, cst.Attribute) and module_like_name(target.value) and (
                made.func.attr.value in known.MODEL_BUILDERS or made.func.attr.value == "get_model" and made.args):
            # `model = DitModelFactory(path=p).get_model(rank=0).train()`: a builder asked on an object made on the spot
            found.setdefault(target.value, node.value)
            continue
        if callee is None and not isinstance(made.func, (cst.Subscript, cst.Call)):
            continue
        last = callee.rsplit(".", 1)[-1] if callee is not None else ""
        if callee is None:  # `model = DiT_models[args.model](input_size=n)`: a class or factory of a registry
            # (or of a module of the program, looked up by name: `getattr(base_model, "build_%s" % name)(d)`)
            kind, classes = classify(index, made, resolve=True, cls=owner)
            built = kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in classes)
            # (`student = torchvision_models.__dict__[args.arch]()`: a zoo's model, of no class we read)
            built = built or kind == Kind.UNKNOWN and module_like_name(target.value)
        elif callee == "cls":
            built = classmethod_of_module
        elif _CLASS_VARIABLE.search(last) or "." not in callee and _FACTORY_VARIABLE.search(last):
            # (`algorithm = algorithm_class(shape, hparams)` used as a module: `algorithm.load_state_dict(d)`,
            # `algorithm.to(device)`; `model = model_func(**kwargs)` of a builder a decorator was handed)
            name = target.value
            built = module_like_name(name) or name in _used_as_module(function.body) or _moved_with_state(function, name)
        else:
            # (a factory of another file too: `build_net()`, and a builder method of the class, `self.build(cfg)`)
            kind, classes = classify(index, made, resolve=True, cls=owner)
            built = kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in classes)
            # (`diffusion = GaussianDiffusion(denoise_fn=model)`: a module of no parameters of its own, holding the
            # model built above as its child)
            built = built or kind == Kind.MODULE and any(
                type(a.value) is cst.Name and a.value.value in found for a in made.args if not a.star)
            # (`lm = AutoModel.from_pretrained(path)`, `model = timm.create_model(name)`: a library's model of a
            # class no file tells, built under `zero.Init` where the library sets it up)
            zoo = known.model_zoo_function(index.qualify(callee))  # `torchvision.models.resnet50()`
            # (`classifier = model.get_model(num_class)` of a module `importlib` imported by name: a builder's
            # name, handed what to build; not `trainer.get_model()`, which hands back the model it holds)
            library = last in known.MODEL_BUILDERS or last == "from_pretrained" or zoo or last == "get_model" \
                and bool(made.args) or index.qualify(callee) in known.MODEL_BUILDERS_QUALIFIED
            if kind == Kind.VALUE and library and callee.count(".") == 1 and \
                    callee.split(".", 1)[0] in imported_by_name:
                kind = Kind.UNKNOWN  # a function of a module imported by name: of a class no file tells
            built = built or kind == Kind.UNKNOWN and library and not _NOT_A_MODEL_LOCAL.search(target.value)
            # (not `optimizer = construct_class_by_name(...)`)
            # (`model = get_llm(name)` of `def get_llm(n): return AutoModelForCausalLM.from_pretrained(n)`: a factory of
            # the program handing back a library's model, named as models are)
            built = built or kind == Kind.UNKNOWN and module_like_name(target.value) and "." not in callee \
                and callee in index.skeleton.functions
        built = built or wrapped is not None  # (a data-parallel wrapper holds a model, whatever its class)
        if built:
            # the first construction (a later branch may build again)
            found.setdefault(target.value, made if wrapped is not None else node.value)
    return found


def _data_parallel_around(index: ModelIndex, value: cst.Call) -> cst.Call | None:
    """The construction a data-parallel wrapper is built around (`nn.DataParallel(RAFT(args), device_ids=ids)`, `DDP(
    Net().cuda())`), the moves after it skipped, else None: the wrapper holds that model, partitioned when built."""
    name = index.qualified_call(value) or ""
    if name.rsplit(".", 1)[-1] not in known.DATA_PARALLEL or not value.args or value.args[0].keyword is not None:
        return None
    inner = value.args[0].value
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value in MOVES \
            and isinstance(inner.func.value, cst.Call):
        inner = inner.func.value
    return inner if isinstance(inner, cst.Call) else None



def wraps_a_model(qualified: str) -> bool:
    """Is `qualified` a data-parallel wrapper's class (`torch.nn.DataParallel`), which holds the model it wraps?"""
    return qualified.rsplit(".", 1)[-1] in known.DATA_PARALLEL


def _moved_with_state(function: cst.FunctionDef, name: str) -> bool:
    """Does `function` move its local `name` to a device and give or ask it its state (`algorithm.load_state_dict(d)`
    ... `algorithm.to(device)`)? A module is; an optimizer has a state but no device, a tensor no state."""
    methods = {
        node.func.attr.value for node in walk(function.body)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name) and node.func.value.value == name
    }
    return bool(methods & {"to", "cuda"}) and bool(methods & {"state_dict", "load_state_dict"})


def _class_defaults(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """Parameters whose default names a class (`actor_critic=core.MLPActorCritic`, `net_cls=Net`), by a capitalised
    last name: the class a call of the parameter builds unless the caller hands another."""
    params = function.params
    found = {}
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        default = param.default
        written = dotted(default) if default is not None else None
        if written and written.rsplit(".", 1)[-1][:1].isupper():
            found[param.name.value] = default
    return found


# Locals a generic builder (`construct_class_by_name(**kwargs)`, `instantiate(cfg)`) fills with what is no model.
_NOT_A_MODEL_LOCAL = re.compile(
    r"optim|sched|loss|criterion|dataset|loader|sampler|metric|aggregat|tokeni[sz]er|logger|writer"
)
# Methods of a module that hand the module itself back (`model = Net().to(device)`).
MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval", "requires_grad_"})


def _made_by_builder(
    index: ModelIndex, value: cst.Call, builders: dict[str, tuple[ModelIndex, ClassInfo]]
) -> tuple[ModelIndex, ClassInfo] | bool:
    """A construction of a plain class (no module) of this file or another, `Assembler(d)`: (its file's index, the
    class); True for a call of a method of such a local that builds a module with parameters and returns it
    (`asm.assemble(8)`, also inside `typing.cast(ANI, ...)`, which hands its value back): the factory object's
    product; else False."""
    if len(value.args) == 2 and index.qualify(call_name(value) or "") == "typing.cast":
        inner = value.args[1].value
        return isinstance(inner, cst.Call) and _made_by_builder(index, inner, builders) is True
    func = value.func
    made = None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
        # `DitModelFactory(model_path=p).get_model(...)`: the factory object built and asked on the spot
        made = _made_by_builder(index, func.value, builders)
        if made is True and func.attr.value in MOVES:
            return True  # (`factory.get_model(...).train()`: the product, moved or put in a mode)
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in builders:
        made = builders[func.value.value]
    if isinstance(made, tuple):
        owner_index, owner = made
        if owner.inherited_method(func.attr.value) is None:
            return False
        own = value.with_changes(func=func.with_changes(value=cst.Name("self")))  # what `self.assemble(8)` makes
        kind, classes = classify(owner_index, own, resolve=True, cls=owner)
        return kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(owner_index, c) is not False for c in classes)
    name = dotted(func)
    found = class_named(index, name) if name is not None else None
    return (found.index, found) if found is not None and not found.is_module else False


# A variable holding a class, called to build an instance (`model_class`, `EncoderClass`, `net_cls`, `klass`).
_CLASS_VARIABLE = re.compile(r"^(?:[A-Z]\w*Class|\w+_(?:class|cls)|klass)$")
# A builder held in a variable (`model_func`, `net_fn`, `model_factory`), called by its bare name.
_FACTORY_VARIABLE = re.compile(r"^\w+_(?:func|fn|factory|builder|constructor)$")
# Text of an attribute set to an instance of a class held in a variable (`self.policy = self.policy_class(`).
_CLASS_VALUE_BUILT = re.compile(r"\bself\.\w+\s*=\s*(?:self\.)?\w*(?:Class|_class|_cls|klass)\s*\(")


def _loaded_by_own_method(cls: ClassInfo, value: cst.BaseExpression) -> bool:
    """Is `value` a call of a method of the class (or a base) that builds or loads a model by its name
    (`self.load_model(...)`, `self.build_network(cfg)`), returning what it made?"""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name) and value.func.value.value == "self"):
        return False
    name = value.func.attr.value
    if _MODEL_BUILDER.match(name) is None:
        return False
    method = cls.method(name) or cls.inherited_method(name)
    return method is not None and "return" in method.text


# The last name of a function or method that builds or loads a model and hands it back (`load_model`,
# `build_network`, `get_architecture`).
_MODEL_BUILDER = re.compile(
    r"_?(?:load|build|make|create|get|init|instantiate)_?(?:\w+_)?(?:model|net|network|policy|module|architecture|arch)s?$"
)


def _registry_build(value: cst.BaseExpression) -> bool:
    """Is `value` a build by a registry named in capitals (`MODELS.build(cfg)`, `registry.MODELS.build(cfg)`)?"""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "build"):
        return False
    owner = value.func.value
    name = owner.attr.value if isinstance(owner, cst.Attribute) else owner.value if isinstance(owner, cst.Name) else ""
    return len(name) > 1 and name.isupper()


def _library_model_built(index: ModelIndex, value: cst.BaseExpression) -> bool:
    """Is `value` a call of a model factory of a library the program cannot read (`build_model(cfg)`,
    `timm.create_model(name)`, `known.MODEL_BUILDERS`, `AutoModel.from_pretrained(path)`): a model of a class no file
    tells?"""
    last = (call_name(value) or "").rsplit(".", 1)[-1] if isinstance(value, cst.Call) else ""
    if last not in known.MODEL_BUILDERS and last != "from_pretrained":
        return False
    return classify(index, value) == (Kind.UNKNOWN, (UNKNOWN_CLASS,))


def built_from_class_value(value: cst.BaseExpression) -> bool:
    """Is `value` a call of a class held in a variable or an attribute (`policy_class(d)`, `self.net_cls(**kw)`)?"""
    if not isinstance(value, cst.Call):
        return False
    callee = dotted(value.func)
    return callee is not None and callee.count(".") <= 1 and (callee.count(".") == 0 or callee.startswith("self.")) and (
        _CLASS_VARIABLE.search(callee.rsplit(".", 1)[-1]) is not None
    )


def _types_nothing(text: str) -> bool:
    """Does an annotation's text type nothing: a package, not a type (`torch.nn`, `torch.optim`: a dotted path of
    lowercase names that ends in no class), or a type every value has (`Any`, `object`: `_module: Any`)? The
    argument is then judged as an unannotated one, by its name and its use. So is one annotated `None` (`base_model:
    None`), which no argument worth passing satisfies: a placeholder, not a type."""
    text = text.strip().strip("\"'")
    if text in _ANY_TYPE:
        return True
    parts = text.split(".")
    return len(parts) > 1 and all(p.isidentifier() and p.islower() for p in parts) and parts[-1] in _PACKAGE_ENDS


# Annotations every value satisfies, and `None` written as a placeholder for one.
_ANY_TYPE = frozenset({"Any", "typing.Any", "t.Any", "object", "None"})


# Last names of packages written as annotations in place of a class (`actor: torch.nn`, `opt: torch.optim`).
_PACKAGE_ENDS = frozenset({"nn", "optim", "modules", "models"})


def _names_a_class(annotation: cst.BaseExpression) -> bool:
    """Does an annotation name one class (`LossModule`, `"pkg.Loss"`), not a builtin or a typing form?"""
    text = code_of(annotation, limit=200).strip("\"' ")
    return all(part.isidentifier() for part in text.split(".")) and text.rsplit(".", 1)[-1][:1].isupper() \
        and text not in _TYPING_WORDS


# Libraries whose classes named like models are no torch modules (`model: BaseModel` of pydantic, an sklearn model).
_NOT_TORCH_LIBRARIES = frozenset({"pydantic", "sklearn", "lightgbm", "xgboost", "catboost", "gensim", "statsmodels"})


def _library_model_class(index: ModelIndex, annotation: cst.BaseExpression) -> bool:
    """Does an annotation name a class imported from a library the program cannot read, named as models are
    (`UNet2DModel` of diffusers, `CLIPTextTransformer`), not a config, an output or a tokenizer? Handed to an
    argument named as modules are, it is a built model as much as an unannotated `model` is."""
    text = code_of(annotation, limit=200).strip("\"' ")
    qualified = index.qualify(text)
    root = qualified.partition(".")[0]
    if text in index.classes or "." not in qualified or root in _NOT_TORCH_LIBRARIES or root == index.module.partition(".")[0]:
        return False
    if qualified.startswith(".") or root not in index.import_roots or index.external(qualified) is not None:
        return False  # this package's own class (read, and no module), or a name imported from nowhere
    last = qualified.rsplit(".", 1)[-1].lower()
    return known.MODULE_WORD.search(last) is not None and not known.NOT_A_MODULE.search(last)


def _locally_imported_module(index: ModelIndex, function: cst.FunctionDef, annotation: cst.BaseExpression) -> tuple[str, ...]:
    """A module class an annotation names through an import inside the function (`loss_module: LossModule` with
    `from pkg.common import LossModule` in the body, an import kept local to break a cycle)."""
    if not _imports_inside(index, function):
        return ()
    text = code_of(annotation, limit=200).strip("\"' ")
    if not text.isidentifier():
        return ()
    for node in walk(function.body):
        if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar) and node.module is not None \
                and not node.relative:
            for alias in node.names:
                bound = alias.asname.name.value if alias.asname is not None else alias.name.value  # type: ignore[union-attr]
                if bound == text and isinstance(alias.name, cst.Name):
                    qualified = f"{code_of(node.module)}.{alias.name.value}"
                    return (qualified,) if index.is_module_base(qualified) else ()
    return ()


@memoised
def _imports_inside(index: ModelIndex, function: cst.FunctionDef) -> bool:
    """Does `function`'s body hold a `from ... import` and the word `import` in its first 2,000 characters? (Asked
    once per function, not per annotated argument; the walk first: most bodies import nothing, and their code
    generation cost more than the rest of `module_arguments`.)"""
    if not any(type(node) is cst.ImportFrom for node in walk(function.body)):
        return False
    return "import" in code_of(function.body, limit=2000)


@memoised
def looked_up_models(index: ModelIndex, function: cst.FunctionDef) -> frozenset[str]:
    """Locals `function` binds, once, to what it looks up (`model = models["text"]["model"]`, a registry's entry)
    or gets from a call of no class we can tell, named as modules are and used as only a module is
    (`next(model.parameters())`) or called on values (`action, samples = policy(conditions)` for `policy =
    policy_config()`): a model of a class we cannot tell, as an argument so named and used is."""
    used = _used_as_module(function.body) | _loaded_into(function.body) | _called_names(function.body)
    bound: dict[str, int] = {}
    found = set()
    assigns = [
        node for node in walk(function.body)
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
    ]
    local = {node.targets[0].target.value for node in assigns}  # type: ignore[union-attr]
    for node in assigns:
        name = node.targets[0].target.value  # type: ignore[union-attr]
        if bound.get(name) and _rewraps(node.value, name):
            continue  # `model = DistributedDataParallel(model)`, `model = model.to(device)`: the same model again
        bound[name] = bound.get(name, 0) + 1
        if module_like_name(name) and _unwrapped_model(node.value):
            found.add(name)  # `model = engine["model"].module.cpu()`: the model a data-parallel engine wraps
        elif name in used and module_like_name(name) and (
            isinstance(node.value, cst.Subscript)
            or isinstance(node.value, cst.Call) and _of_unknown_class(index, node.value)
            # `policy = policy_config()`: what an object of this code makes when called (a config, a factory)
            or isinstance(node.value, cst.Call) and isinstance(node.value.func, cst.Name)
            and node.value.func.value in local
        ):
            found.add(name)
    return frozenset(n for n in found if bound[n] == 1)


def _rewraps(value: cst.BaseExpression, name: str) -> bool:
    """Is `value` the model `name` holds, moved or wrapped (`DistributedDataParallel(model)`, `model.to(device)`)?"""
    moved = unmoved(value)
    if isinstance(moved, cst.Name):
        return moved.value == name
    return isinstance(value, cst.Call) and wraps_itself(value, cst.Name(name))


def unmoved(value: cst.BaseExpression, moves: frozenset[str] = MOVES) -> cst.BaseExpression:
    """The module a chain of moves hands back (`self.netG` of `self.netG.cpu()`, `net` of `net.to(device).eval()`)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in moves:
        value = value.func.value
    return value


def _unwrapped_model(value: cst.BaseExpression) -> bool:
    """Is `value` the `.module` of an engine or wrapper (`engine.module`, `engines["model"].module.cpu()`), moved or
    not?"""
    value = unmoved(value)
    return isinstance(value, cst.Attribute) and value.attr.value == "module" and isinstance(
        value.value, (cst.Name, cst.Subscript)
    )  # (not `dep.target.module`, a graph node's)


def _called_names(node: cst.CSTNode) -> set[str]:
    """Names the code calls on values (`policy(conditions, batch_size=n)`), not with nothing (`make()`)."""
    return {
        call.func.value for call in walk(node)
        if type(call) is cst.Call and isinstance(call.func, cst.Name) and call.args and not call.args[0].star
    }


def _loaded_into(node: cst.CSTNode) -> set[str]:
    """Names a state dict is loaded into (`model.load_state_dict(state)`): a module, or an optimizer, which
    `module_like_name` tells apart."""
    return {
        call.func.value.value for call in walk(node)
        if type(call) is cst.Call and isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict"
        and isinstance(call.func.value, cst.Name)
    }


def _of_unknown_class(index: ModelIndex, value: cst.Call) -> bool:
    """Does `value` make something of a class zgen cannot tell: a call it cannot follow, or a model builder of an
    object or module it cannot read (`architecture.get_architecture(config)` of a registry's entry, `zoo.build_model(
    name)`)?"""
    if isinstance(value.func, cst.Name) and value.func.value == "eval" and index.qualify("eval") == "eval":
        return True  # `model = eval(args.model)`: what a setting's text builds
    kind, classes = classify(index, value, resolve=True)
    if kind == Kind.UNKNOWN:
        return True
    callee = dotted(value.func)
    if kind != Kind.VALUE or classes or callee is None or "." not in callee:
        return False
    if callee.partition(".")[0] in ("self", "cls", "super"):
        return False  # (a method of the class: `classify` reads it with the class)
    return _MODEL_BUILDER.match(callee.rsplit(".", 1)[-1]) is not None \
        and index.external_function(index.qualify(callee)) is None


def _used_as_module(node: cst.CSTNode) -> set[str]:
    """Names on which the code calls a method only a module has (`x.parameters()`, `x.modules()`), the two sides of
    a state copy between two names (`target.load_state_dict(source.state_dict())`: a target network), names both
    called or moved to a device and asked for their state (`dlrm(x)` ... `dlrm.state_dict()`), and names kept on
    `self` and walked there as only a module is (`self.qf = qf.to(device)` ... `self.qf.parameters()`)."""
    found = set()
    states = False
    called: set[str] = set()  # names called (`dlrm(x)`) or moved to a device (`model.to(device)`) ...
    stated: set[str] = set()  # ... and names whose state is taken or loaded: both, a module (no optimizer is called)
    kept: dict[str, str] = {}  # `self.qf = qf.to(device)`: self.qf -> qf
    walked: set[str] = set()  # `self.qf.parameters()`: self.qf
    for call in walk(node):
        if type(call) is cst.Assign and len(call.targets) == 1 and type(call.targets[0].target) is cst.Attribute:
            value, path = unmoved(call.value), dotted(call.targets[0].target) or ""
            if type(value) is cst.Name and path.count(".") == 1 and path.startswith("self."):
                kept[path] = value.value
        if type(call) is cst.Call and isinstance(call.func, cst.Attribute) and \
                call.func.attr.value in MODULE_ONLY_METHODS and type(call.func.value) is cst.Attribute:
            walked.add(dotted(call.func.value) or "")
        if type(call) is cst.Call and isinstance(call.func, cst.Name):
            called.add(call.func.value)
        if type(call) is cst.Call and isinstance(call.func, cst.Attribute):
            states = states or call.func.attr.value == "state_dict"
            if call.func.attr.value in ("state_dict", "load_state_dict") and isinstance(call.func.value, cst.Name):
                stated.add(call.func.value.value)
            if call.func.attr.value in ("to", "cuda") and isinstance(call.func.value, cst.Name):
                called.add(call.func.value.value)  # (moved to a device: a tensor has no state, an optimizer no device)
            if call.func.attr.value in MODULE_ONLY_METHODS and isinstance(call.func.value, cst.Name):
                found.add(call.func.value.value)
            elif call.func.attr.value == "load_state_dict" and isinstance(call.func.value, cst.Name) and call.args:
                source = call.args[0].value
                if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and not source.args:
                    if source.func.attr.value == "state_dict" and isinstance(source.func.value, cst.Name):
                        if not config_like(call.func.value.value) and not config_like(source.func.value.value):
                            found.update((call.func.value.value, source.func.value.value))
    if states:
        found |= _state_written_in_place(node)
    found |= {name for path, name in kept.items() if path in walked}  # kept, then walked as a module
    return found | {name for name in called & stated if not config_like(name)}


def _state_written_in_place(node: cst.CSTNode) -> set[str]:
    """Names whose state dict's values the code writes with a tensor's in-place method (`sd = net.state_dict()`,
    then `for k, v in sd.items(): v.mul_(1 - tau)` or `sd[k].copy_(x)`): a module's state dict, whose values are
    its tensors (an optimizer's holds dicts and lists)."""
    dicts: dict[str, str] = {}  # `sd = net.state_dict()`: sd -> net
    for assign in walk(node):
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            owner = _state_dict_of(assign.value)
            if owner is not None:
                dicts[assign.targets[0].target.value] = owner
    values: dict[str, str] = {}  # `for k, v in sd.items()`: v -> net
    for loop in walk(node) if dicts else ():
        if isinstance(loop, (cst.For, cst.CompFor)):
            iterable = loop.iter
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args \
                    and iterable.func.attr.value in ("items", "values"):
                mapping = iterable.func.value
                owner = dicts.get(mapping.value) if isinstance(mapping, cst.Name) else _state_dict_of(mapping)
                target = loop.target
                if iterable.func.attr.value == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    target = target.elements[1].value
                if owner is not None and isinstance(target, cst.Name):
                    values[target.value] = owner
    found = set()
    for call in walk(node) if dicts else ():
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            continue
        method, tensor = call.func.attr.value, call.func.value
        if not method.endswith("_") or method.startswith("_") or method == "requires_grad_":
            continue
        if isinstance(tensor, cst.Name) and tensor.value in values:
            found.add(values[tensor.value])
        elif isinstance(tensor, cst.Subscript) and isinstance(tensor.value, cst.Name) and tensor.value.value in dicts:
            found.add(dicts[tensor.value.value])
    return {name for name in found if not config_like(name)}


def _state_dict_of(value: cst.BaseExpression) -> str | None:
    """`net` of `net.state_dict()` (a bare name)."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args \
            and value.func.attr.value == "state_dict" and isinstance(value.func.value, cst.Name):
        return value.func.value.value
    return None


@memoised
def wrapped_attributes(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Held attributes (`held_attributes`) that a method other than the constructor sets only from a call handed an
    attribute already holding a model (`self._learn_model = model_wrap(self._model, ...)`): a wrapper object around
    it, whose state is the model's, but whose own `forward` may be the wrapper's (it runs the model's hooks)."""
    return _held_and_wrapped(index, cls)[1]


def held_attributes(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """Attributes `self.X` of `cls` that hold a module -> the classes it may have.

    Assigned in `__init__` (or a helper it calls) from a module argument, a
    construction of a module class with parameters, or a copy of either
    (`deepcopy(policy)`, `critic2 or deepcopy(critic)`); by a plain object (a
    trainer), also a construction in any other method (`self.GAN = GAN(d)` in
    `init_GAN`); or used in any method as only a module is used
    (`self.target.parameters()`).
    """
    return _held_and_wrapped(index, cls)[0]


def _keyword_model(func: cst.FunctionDef, value: cst.BaseExpression) -> bool:
    """`kwargs["model"]`, `kwargs.get("model")`, `kwargs.pop("model").to(device)`: the entry, named as modules are, of
    the keyword arguments `func` collects (`def __init__(self, *args, **kwargs)`)."""
    star = func.params.star_kwarg
    if star is None:
        return False
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MOVES:
        value = value.func.value  # `.to(device)`, `.cuda()`: the module itself
    key = None
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index):
        held, key = value.value, value.slice[0].slice.value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
            "get", "pop") and value.args:
        held, key = value.func.value, value.args[0].value
    else:
        return False
    if not (isinstance(held, cst.Name) and held.value == star.name.value and isinstance(key, cst.SimpleString)):
        return False
    name = key.evaluated_value
    return isinstance(name, str) and module_like_name(name)


def model_containers(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """Attributes built in `__init__` as a container of models -> the models' classes: a `ModuleList`, a
    `ModuleDict` or a dict of them (also `held_attributes`), a plain list or tuple of them (`[Critic(d) for _ in
    range(n)]`, `[deepcopy(self.critics[i]) for i in range(n)]`; not held whole: what a list is handed is its
    items'). An item taken out (`self.critics[i]`) is one of the models: what runs a model in script code
    (`analysis/script.py`). `handed.held_containers` is the narrower set whose items the ZG1 whole-use finder takes
    (declared containers and `Kind.CONTAINER` members); widening it to these doubled provenance's own findings on
    lists that hold the model."""
    return _held_and_wrapped(index, cls)[2]


def keyed_model_dicts(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes of a plain class its constructor (or a setup method) fills key by key with models it builds
    (`self.models["encoder"] = networks.ResnetEncoder(18)`): each value is one of the trained models, as a
    `ModuleDict`'s would be (`for name, model in self.models.items(): model.state_dict()`)."""
    return _held_and_wrapped(index, cls)[3]


@memoised
def _held_and_wrapped(
    index: ModelIndex, cls: ClassInfo
) -> tuple[dict[str, tuple[str, ...]], frozenset[str], dict[str, tuple[str, ...]], frozenset[str]]:
    """`held_attributes`, `wrapped_attributes`, `model_containers` and `keyed_model_dicts`, found together."""
    found: dict[str, tuple[str, ...]] = {}
    wrapped: set[str] = set()
    containers: dict[str, tuple[str, ...]] = {}
    keyed: set[str] = set()
    built = facts_of(cls)
    for name in built.class_built:  # `self.act = self.act_class(d)`, typed by the family (`members._retype`)
        member = built.members.get(name)
        if member is not None and member.kind == Kind.MODULE and any(has_params(index, c) is not False for c in member.classes):
            found[name] = member.classes
    # used as only a module is (`self._model.parameters()`): a model, whatever set it (a base of another file)
    by_use = {path.parts[0]: ("<unknown>",) for path in _module_only_paths(cls) if len(path.parts) == 1}
    by_use.update((name, ("<unknown>",)) for name in _called_and_switched(cls) if name not in by_use)
    if not cls.is_module:
        by_use.update((name, ("<unknown>",)) for name in _unset_models(cls) if name not in by_use)
    init_methods = [*cls.init_methods, *_run_by_base_constructor(cls)]
    init_ids = {id(m) for m in init_methods}
    for method in (*init_methods, *(m for m in _every_method(cls) if id(m) not in init_ids)):
        built_here = id(method) in init_ids
        at = method.index  # (a base's method of another file reads its names there)
        # a plain object (a trainer) building its model in a setup method (`self.GAN = GAN(d)` in `init_GAN`): the
        # model it trains, partitioned by the engine like one built in `__init__` (a module building a child
        # after its own `__init__` makes a new, unpartitioned one: `params`)
        lazily = not cls.is_module and (
            _BUILT_SET.search(method.text) or _LOCAL_MODEL_BUILT.search(method.text)
        ) is not None
        if not built_here and not (_SELF_SET.search(method.text) and (
            may_have_module_arguments(method.index, method.span) or _mentions_held(method.text, {**by_use, **found})
            or _CLASS_VALUE_BUILT.search(method.text) or lazily
        )):
            continue  # another method keeps only what it is handed (`def init(self, model): self._model = model`)
        node = method.node if "self." in method.text else None
        if node is None:
            continue
        arguments = module_arguments(at, node)
        for stmt in walk(node.body):
            if isinstance(stmt, cst.Assign):
                targets, value = [t.target for t in stmt.targets], stmt.value
            elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
                declared = access_path(stmt.target)
                if not cls.is_module and declared is not None and declared.root == "self" and len(declared.parts) == 1 \
                        and (classes := annotated_module(at, stmt.annotation.annotation)):
                    # `self.policy: Optional[Module] = None` in a plain object: declared to hold a model, which a
                    # subclass or a builder sets later (a module's own annotated attribute is its child's business)
                    found.setdefault(declared.parts[0], classes)
                    continue
            else:
                continue
            if built_here and isinstance(value, cst.Call) and (call_name(value) or "").rsplit(".", 1)[-1] in \
                    known.MODEL_BUILDERS:
                # `self.model, self.tokenizer = load_model(path)`: the builder's element named as modules are
                for target in targets:
                    for element in target.elements if isinstance(target, (cst.Tuple, cst.List)) else ():
                        path = access_path(element.value)
                        if path is not None and path.root == "self" and len(path.parts) == 1 and module_like_name(
                                path.parts[0]):
                            found.setdefault(path.parts[0], ("<unknown>",))
            for target, part in _pairs(targets, value):
                path = access_path(target)
                if path is not None and path.root == "self" and path.parts[1:] == ("[]",) and not cls.is_module \
                        and (built_here or lazily) and path.parts[0] not in found:
                    # `self.models["encoder"] = networks.ResnetEncoder(18)`: a plain dict of models, filled by key
                    classes = value_holds(at, part, arguments, found) or _constructed(at, part, cls)
                    if classes:
                        containers[path.parts[0]] = tuple(dict.fromkeys(containers.get(path.parts[0], ()) + classes))
                        keyed.add(path.parts[0])
                    continue
                if path is None or path.root != "self" or len(path.parts) != 1:
                    continue
                if config_like(path.parts[0]) and _wrapper_call(at, part):
                    continue  # `self.optimizer = build_optimizer(model)`: given the model, not holding it
                if built_here:
                    classes = value_holds(at, part, arguments, found)
                    if classes and path.parts[0] not in found and _container_value(at, part):
                        containers.setdefault(path.parts[0], classes)
                    elif not classes and type(part).__name__ in _LISTS and (
                        items := _listed(at, part, arguments, {**containers, **found}, cls)
                    ):
                        containers.setdefault(path.parts[0], items)  # (a plain list: its items, not it, run)
                        continue
                else:
                    classes = _handed(at, part, arguments)
                    if not classes and (classes := _handed(at, part, arguments, {**by_use, **found})):
                        if _wrapper_call(at, part):
                            wrapped.add(path.parts[0])  # `self._learn_model = model_wrap(self._model, ...)`
                    if not classes and lazily:
                        classes = _constructed(at, part, cls)  # `def init_GAN(self): self.GAN = GAN(d)`, `make_gan(d)`
                    if not classes and lazily and isinstance(part, cst.Name) and module_like_name(path.parts[0]) \
                            and _bound_to_model_getter(node, part.value):
                        classes = ("<unknown>",)  # `model = self.exp.get_model()` ... `self.model = model`
                if not classes and built_from_class_value(part) and module_like_name(path.parts[0]):
                    classes = ("<unknown>",)  # `self.policy = self.policy_class(obs_space, lr)`: a model, class unread
                if not classes and _registry_build(part) and module_like_name(path.parts[0]):
                    classes = ("<unknown>",)  # `self.generator = MODELS.build(generator)`: a registry's model
                if not classes and not cls.is_module and _library_model_built(at, part) \
                        and module_like_name(path.parts[0]):
                    classes = ("<unknown>",)  # `self.network = build_model(cfg)` of a library: the model it trains
                if not classes and not cls.is_module and _loaded_by_own_method(cls, part) \
                        and module_like_name(path.parts[0]):
                    classes = ("<unknown>",)  # `self.model = self.load_model(name, params)` of a plain wrapper
                if not classes and built_here and not cls.is_module and module_like_name(path.parts[0]) \
                        and _keyword_model(node, part):
                    classes = ("<unknown>",)  # `self.model = kwargs["model"].to(device)`: a model handed by keyword
                if classes:
                    found.setdefault(path.parts[0], classes)
    for name, classes in by_use.items():
        found.setdefault(name, classes)
    if not cls.is_module:
        for name, (classes, several) in annotated_properties(index, cls).items():
            (containers if several else found).setdefault(name, classes)
    for sub in _file_subclasses(index, cls):  # `self.policy` a subclass of this file builds, used by a base method
        for name, classes in _held_and_wrapped(sub.index, sub)[0].items():
            # (or fetched by name, `getattr(self, "model")`, `name = "model" if c else "encoder"`)
            if name not in found and (f"self.{name}" in cls.text or f"'{name}'" in cls.text
                                      or f'"{name}"' in cls.text):
                found[name] = classes if sub.index is index else tuple(_qualified(sub.index, c) for c in classes)
    if not cls.is_module:  # `self.model` a base of another file builds (`SimpleTrainer.build_model`), kept here too
        for info in cls.mro:
            for _at, base in info.external_bases:
                for name, classes in _held_and_wrapped(base.index, base)[0].items():
                    found.setdefault(name, tuple(_qualified(base.index, c) for c in classes))
    return found, frozenset(wrapped), containers, frozenset(keyed)


@memoised
def registered_models(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes of a plain class that a method fills, key by key, with the models it is handed (`def
    register_model(self, name, model): self._models[name] = model`): a registry of what a trainer trains, each item
    one of the built models (`self._models[name].state_dict()`)."""
    if cls.is_module:
        return frozenset()
    found = set()
    for method in cls.all_methods():
        if _REGISTERS.search(method.text) is None or not may_have_module_arguments(method.index, method.span):
            continue
        node = method.node
        arguments = module_arguments(method.index, node) if node is not None else {}
        # (keyed by what the caller names it, `self._models[name]`, not a slot of a state, `self.state[MODEL]`; an
        # argument declared as anything, `module: Any`, is a component of any kind)
        params = {p.name.value: p for p in node.params.params} if node is not None else {}
        for stmt in walk(node.body) if arguments else ():
            if not isinstance(stmt, cst.Assign) or not isinstance(stmt.value, cst.Name):
                continue
            given = params.get(stmt.value.value)
            if stmt.value.value not in arguments or given is None or given.annotation is not None and not \
                    annotated_module(method.index, given.annotation.annotation):
                continue
            for target in (t.target for t in stmt.targets):
                base = access_path(target.value) if isinstance(target, cst.Subscript) else None
                key = target.slice[0].slice if isinstance(target, cst.Subscript) and len(target.slice) == 1 else None
                if base is not None and base.root == "self" and len(base.parts) == 1 and isinstance(key, cst.Index) \
                        and isinstance(key.value, cst.Name) and key.value.value in params:
                    found.add(base.parts[0])
    return frozenset(found)


# `self._models[name] = model`: an item of an attribute set to a name (the text trigger of `registered_models`)
_REGISTERS = re.compile(r"self(?<!\wself)\.\w+\[[^\]\n]+\]\s*=\s*\w+\s*$", re.M)


@memoised
def annotated_properties(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[tuple[str, ...], bool]]:
    """Properties of a plain class whose return annotation names a model (`-> nn.Module`) or a container of models
    (`-> Mapping[str, torch.nn.Module]`, `-> list[Policy]`): name -> (the models' classes, several). What a trainer
    hands out so is what it trains, its items too (`self.models[name].state_dict()`)."""
    found: dict[str, tuple[tuple[str, ...], bool]] = {}
    for method in cls.all_methods():
        if "@property" not in method.text or "->" not in method.text[: method.text.find(":\n") + 1 or None]:
            continue
        node = method.node
        returns = node.returns.annotation if node is not None and node.returns is not None else None
        if returns is None:
            continue
        several = isinstance(returns, cst.Subscript) and (
            (dotted(returns.value) or "").rsplit(".", 1)[-1] in CONTAINER_ANNOTATIONS)
        if several:
            element = returns.slice[-1].slice
            returns = element.value if isinstance(element, cst.Index) else None
        classes = annotated_module(index, returns) if returns is not None else ()
        if classes:
            found[method.name] = (classes, several)
    return found



def _constructed(index: ModelIndex, value: cst.BaseExpression, cls: ClassInfo) -> tuple[str, ...]:
    """The module classes with parameters a construction or factory call builds (`GAN(d)`, `make_gan(d)`): kept on a
    plain object by a method of its own (`init_GAN()`), the model is built, and partitioned, before any other method
    of the object runs on it."""
    if not isinstance(value, cst.Call):
        return ()
    kind, classes = classify(index, value, resolve=True, cls=cls)
    if kind == Kind.MODULE and any(has_params(index, c) is not False for c in classes or ("",)):
        return classes or ("<unknown>",)
    return ()


def set_up_containers(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
    """Attributes such a method binds to a plain list of models it builds (`self.cri_list = [self.ClassCri(d) for _
    in range(n)]` in an agent's `init`) -> the models' classes, as `model_containers` for the constructor's."""
    return _set_up(index, cls)[1]


@memoised
def _set_up(index: ModelIndex, cls: ClassInfo) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Models a plain class's method other than its constructor builds and keeps (`self.GAN = GAN(d)`), and plain
    lists of models it builds there, each by attribute -> classes (`held_attributes` holds the first too; the
    second need them to tell what a list holds)."""
    if cls.is_module:
        return {}, {}
    found: dict[str, tuple[str, ...]] = {}
    containers: dict[str, tuple[str, ...]] = {}
    init_ids = {id(m) for m in (*cls.init_methods, *_run_by_base_constructor(cls))}
    for method in cls.all_methods():
        if id(method) in init_ids or not _SELF_SET.search(method.text) or "(" not in method.text:
            continue
        node = method.node
        for stmt in walk(node.body) if node is not None else ():
            if not isinstance(stmt, cst.Assign):
                continue
            value = stmt.value
            classes: tuple[str, ...] = ()
            listed: tuple[str, ...] = ()
            if isinstance(value, cst.Call):
                kind, built = classify(index, value)
                if kind == Kind.MODULE and built and any(has_params(index, c) for c in built):
                    classes = built  # (a construction of a module class we read owning parameters)
            elif type(value).__name__ in _LISTS:
                listed = _listed(index, value, {}, {**containers, **found}, cls)
            for target in stmt.targets:
                path = access_path(target.target)
                if path is None or path.root != "self" or len(path.parts) != 1:
                    continue
                if classes:
                    found.setdefault(path.parts[0], classes)
                elif listed:
                    containers.setdefault(path.parts[0], listed)
    return found, containers


def _file_subclasses(index: ModelIndex, cls: ClassInfo) -> list[ClassInfo]:
    """Classes of the file that derive from `cls` (not `cls` itself): the objects its methods run on. A mixin of
    modules (`class CodecMixin:` calling `self.modules()`, `index.module_mixin`) is mixed into module classes of the
    package's other files (`class DAC(BaseModel, CodecMixin)` beside it): its methods run on those, and use the
    children they build (`self.quantizer.from_codes(c)` in the mixin's `decompress`)."""
    found = [other for other in index.classes.values() if other is not cls and cls in other.mro]
    if module_mixin(cls):
        found += [other for other in package_subclasses(index, cls) if other.is_module]
    return found


def _qualified(other: ModelIndex, ref: str) -> str:
    """A class `other` names (`Quant`, of its own, or imported), as any file names it: by its module."""
    if ref in other.classes and other.module:
        return f"{other.module}.{ref}"
    return other.qualify(ref) if ref[:1] != "<" else ref


def _mentions_held(text: str, held: dict[str, tuple[str, ...]]) -> bool:
    """Does a method's text use an attribute already found to hold a model (`wrap(self._model)`)?"""
    return any(f"self.{name}" in text for name in held)


def _every_method(cls: ClassInfo) -> list[MethodInfo]:
    """The methods of `cls` (`all_methods`) and the bases' methods they run through `super()` (`super().init_nets()`
    of an agent whose base builds `self.net` there), of this file or another; not a constructor's."""
    found = cls.all_methods()
    seen = {id(m) for m in found}
    for method in list(found):
        if method.name == "__init__" or not any(through_super for _, through_super in method.self_calls):
            continue  # (a constructor's bases: `init_methods`, `_run_by_base_constructor`)
        for reached in cls.reachable(method.name, inherited=True):
            if id(reached) not in seen:
                seen.add(id(reached))
                found.append(reached)
    return found


def _run_by_base_constructor(cls: ClassInfo) -> list[MethodInfo]:
    """Methods of `cls` a base class's constructor runs on it: `Base.__init__(self, ...)` (or `super().__init__()`)
    calls `self._create_networks()`, which dispatches to this class's override (and what that reaches)."""
    names: set[str] = set()
    for info in cls.mro[1:]:
        for method in info.reachable("__init__"):
            names.update(name for name, _ in method.self_calls)
    for info in cls.mro:
        for _index, base in info.external_bases:
            for method in base.reachable("__init__", inherited=True):
                names.update(name for name, _ in method.self_calls)
    own = {id(m) for m in cls.init_methods}
    found: list[MethodInfo] = []
    for name in sorted(names):
        if name != "__init__" and cls.method(name) is not None:
            found += [m for m in cls.reachable(name) if id(m) not in own and m not in found]
    return found


# An attribute of `self` set to what a call makes (`self.GAN = GAN(d)`, `self.net = make_net(d)`): the text gate of a
# plain object's method that may build the model it keeps.
_BUILT_SET = re.compile(r"\bself\.\w+\s*=\s*[A-Za-z_][\w.]*\(")
# A model getter's or builder's name (`get_model`, `build_text_model`), and a local bound to what one hands back
# (`model = self.exp.get_model()`).
_MODEL_GETTER = re.compile(r"(?:get|create|build|make|load)_(?:\w+_)?model")
_LOCAL_MODEL_BUILT = re.compile(r"\b\w+\s*=\s*(?:[\w.]+\.)?" + _MODEL_GETTER.pattern + r"\s*\(")
# An assignment to an attribute of `self` (the text gate of a method other than `__init__` in `held_attributes`).
_SELF_SET = re.compile(r"\bself\.\w+\s*(?::[^=\n]*)?=[^=]")


def _module_only_paths(cls: ClassInfo):
    """The paths rooted at `self` on which a method of `cls` calls a method only a module has."""
    for method in cls.all_methods():
        if not any(f".{m}(" in method.text for m in MODULE_ONLY_METHODS):
            continue
        node = method.node
        for call in walk(node) if node is not None else ():
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
                if call.func.attr.value not in MODULE_ONLY_METHODS:
                    continue
                path = access_path(call.func.value)
                if path is not None and path.root == "self":
                    yield path


# `self.model.eval()`, `self.model.train()`, `.train(False)`, `.train(mode=training)`: a mode switch (no batch handed).
_SWITCHED = re.compile(r"\bself\.(\w+)\.(?:eval\(\)|train\((?:True|False|mode\s*=\s*\w+)?\))")


def _unset_models(cls: ClassInfo) -> list[str]:
    """Attributes `self.X` of a plain class (a model wrapper's base, a mixin) that it never sets itself, named as
    modules are (`self.module`, `self.model`), on which a method runs a module's own method (`self.module.forward(
    x)`, `self.module.state_dict()`, `self.model.eval()`): the model a subclass of another file builds there."""
    return [
        name for name in dict.fromkeys(_MODULE_METHOD_ON_SELF.findall(cls.text))
        if module_like_name(name) and not re.search(rf"self\.{re.escape(name)}\s*(?::[^=\n]*)?=[^=]", cls.text)
    ]


# `self.<name>.forward(` / `.state_dict(` / `.load_state_dict(` / `.eval(` / `.train(`: a module's own methods.
_MODULE_METHOD_ON_SELF = re.compile(r"self(?<!\wself)\.(\w+)\.(?:forward|state_dict|load_state_dict|eval|train)\(")


def _bound_to_model_getter(func: cst.FunctionDef, name: str) -> bool:
    """Is the local `name` of `func` first bound to what a model getter or builder hands back (`model =
    self.exp.get_model()`, `net = build_model(cfg)`): the model a plain object then keeps?"""
    for stmt in walk(func.body):
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name) \
                and stmt.targets[0].target.value == name:
            value = stmt.value
            getter = (call_name(value) or "").rsplit(".", 1)[-1] if isinstance(value, cst.Call) else ""
            return _MODEL_GETTER.fullmatch(getter) is not None
    return False


def _called_and_switched(cls: ClassInfo) -> list[str]:
    """Attributes `self.X` that a method of `cls` switches between training and evaluation (`self.model.eval()`)
    and that are named as modules are (`self.decoder = trainer.decoder`), or that a method calls (`self.q(obs)`): a
    module, whatever built it (`self.model = self.network.build(cfg)`). An optimizer with modes (schedule-free) is
    never called and loads no state beside a switch; a callable of settings has no modes."""
    methods = cls.all_methods()
    switched = {name for m in methods for name in _SWITCHED.findall(m.text) if not config_like(name)}
    # (named as modules are, `self.decoder.eval()`: a schedule-free optimizer switches modes and loads states too)
    called: list[str] = [name for name in sorted(switched) if module_like_name(name)]
    for method in methods:
        if not any(f"self.{name}(" in method.text for name in switched) or method.node is None:
            continue
        for call in walk(method.node):
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
                path = access_path(call.func)
                if path is not None and path.root == "self" and len(path.parts) == 1 and path.parts[0] in switched:
                    if path.parts[0] not in called:
                        called.append(path.parts[0])
    return called


@memoised
def held_paths(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Dotted paths `self.a.b` (two attributes or more) on which a method of `cls` calls a method only a module has
    (`self.model.nets.critic.parameters()`): a submodule reached through what the object holds, whatever builds
    `self.a` (`self.model = network.build(cfg)`, which we cannot read). Paths through settings do not count."""
    found = set()
    for path in _module_only_paths(cls):
        if len(path.parts) >= 2 and "[]" not in path.parts and not any(config_like(p) for p in path.parts):
            found.add("self." + ".".join(path.parts))
    return frozenset(found)


def container_elements(function: cst.FunctionDef) -> set[str]:
    """Locals bound to an element of an attribute of `self` (`policy = self.policies[uid]`, `self.nets.get(k)`) on
    which the function calls a method only a module has (`policy.parameters()`): a module the object holds in a
    container, built elsewhere; or one named as a module is (`module = self.checkpoint_modules.get(name)`, then
    `module.load_state_dict(data)`)."""
    used = _used_as_module(function)
    found = set()
    for stmt in walk(function.body):
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0].target
        if not isinstance(target, cst.Name) or not (target.value in used or module_like_name(target.value)):
            continue
        if _element_of_self(stmt.value):
            found.add(target.value)
    return found


def _element_of_self(value: cst.BaseExpression) -> bool:
    """`self.a[k]` or `self.a.get(k)`: an element of a container held on `self`."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get":
        value = value.func.value
    elif isinstance(value, cst.Subscript):
        value = value.value
    else:
        return False
    path = access_path(value)
    return path is not None and path.root == "self" and bool(path.parts) and not config_like(path.parts[-1])


def averaged_attributes(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Attributes `self.X` of `cls` set to a library's weight-averaging helper built over a module it holds or is
    given, or over that module's parameters (`self.ema = EMA(self.model)` in `__init__`, `self.ema =
    ExponentialMovingAverage(pl_module.model.parameters())` in a hook the training loop calls): updating it reads
    every parameter of that module."""
    return frozenset(_averagers(index, cls))


def averaged_copies(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """The paths, below `self`, of the copies of a model such helpers keep (`ema.ema_model` for `self.ema =
    EMA(self.model)`, `known.AVERAGER_COPIES`): modules run like the model they average (`self.ema.ema_model.sample(n)`)."""
    return frozenset(
        f"{name}.{known.AVERAGER_COPIES[made]}" for name, made in _averagers(index, cls).items()
        if made in known.AVERAGER_COPIES
    )


@memoised
def _averagers(index: ModelIndex, cls: ClassInfo) -> dict[str, str]:
    """`averaged_attributes`, each with the helper's qualified name."""
    if not any(name + "(" in cls.text for name in known.AVERAGER_NAMES):
        return {}
    held = held_attributes(index, cls)
    found: dict[str, str] = {}
    for method in cls.all_methods():
        node = method.node if any(n + "(" in method.text for n in known.AVERAGER_NAMES) else None
        arguments = module_arguments(index, node) if node is not None else {}
        for stmt in walk(node.body) if node is not None else ():
            if not isinstance(stmt, cst.Assign):
                continue
            made = _averager_made(index, stmt.value)
            if made is None:
                continue
            averaged = _property_returned(cls, made.args[0].value)  # `EMA(self.unwrapped_G)`: what it returns
            if not _averages_held(index, averaged if averaged is not None else made.args[0].value, arguments, held):
                continue
            for target in stmt.targets:
                path = access_path(target.target)
                if path is not None and path.root == "self" and len(path.parts) == 1:
                    found.setdefault(path.parts[0], index.qualify(call_name(made) or ""))
    return found


def _property_returned(cls: ClassInfo, value: cst.BaseExpression) -> cst.BaseExpression | None:
    """For `self.<name>` naming a `@property` of `cls` whose body is one `return`, the expression it returns
    (`return self.accelerator.unwrap_model(self.G)`)."""
    path = access_path(value)
    if path is None or path.root != "self" or len(path.parts) != 1 or path.parts[0] not in cls.property_names:
        return None
    method = cls.method(path.parts[0])
    node = method.node if method is not None else None
    body = node.body.body if node is not None and isinstance(node.body, cst.IndentedBlock) else ()
    if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
        stmt = body[0].body[0]
        if isinstance(stmt, cst.Return) and stmt.value is not None:
            return stmt.value
    return None


def _averages_held(
    index: ModelIndex, value: cst.BaseExpression, arguments: dict[str, tuple[str, ...]], held: dict[str, tuple[str, ...]]
) -> bool:
    """Is an averager's first argument a held or given module, or its parameters (`model.parameters()`), or
    those of a submodule of one (`pl_module.model.parameters()`: only a module has `.parameters()`)?"""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args:
        if value.func.attr.value == "parameters":
            path = access_path(value.func.value)
            if path is not None and "[]" not in path.parts and not any(config_like(p) for p in path.parts):
                if path.root in arguments or path.root == "self" and path.parts and path.parts[0] in held:
                    return True
            value = value.func.value
    return bool(value_holds(index, value, arguments, held))


_AVERAGE_NAME = re.compile(r"ema|averag|swa|polyak|moving", re.I)


def averager(index: ModelIndex, qualified: str, depth: int = 3) -> bool:
    """Is the class `qualified` names a library's weight average (`known.AVERAGERS`, or a class of such a name
    from a library the program cannot read, `known.AVERAGER_NAMES`), or a class of the program deriving from one
    (`class AveragedModel(torch.optim.swa_utils.AveragedModel)`), `depth` bases deep?"""
    if qualified in known.AVERAGERS:
        return True
    last = qualified.rsplit(".", 1)[-1]
    if depth == 0 or not qualified or not _AVERAGE_NAME.search(last):
        return False  # (the cheap trigger: a class named as an average, before any other file is read)
    found = index.located(qualified)
    if found is None:  # (imported from a library the program does not hold)
        return "." in qualified and last in known.AVERAGER_NAMES and index.external_function(qualified) is None
    home, cls = found
    return any(averager(home, base, depth - 1) for base in cls.qualified_bases)


def _averager_made(index: ModelIndex, value: cst.BaseExpression) -> cst.Call | None:
    """The weight-averaging helper's construction `value` may evaluate to: the value itself (`EMA(self.model)`),
    or one alternative of it, where a given averager is used if passed (`teacher or EMA(model)`, `EMA(model) if
    teacher is None else teacher`, `default(teacher, EMA(model))` through a helper of the file)."""
    if isinstance(value, cst.Call):
        if value.args and averager(index, index.qualify(call_name(value) or "")):
            return value
        if isinstance(value.func, cst.Name) and value.func.value in index.skeleton.functions:
            options = [a.value for a in value.args if a.keyword is None and not a.star]
        else:
            return None
    elif isinstance(value, cst.BooleanOperation):
        options = [value.left, value.right]
    elif isinstance(value, cst.IfExp):
        options = [value.body, value.orelse]
    else:
        return None
    for option in options:
        if isinstance(option, cst.Call) and option.args and averager(index, index.qualify(call_name(option) or "")):
            return option
    return None


# Text of a constructor that readies a model for training: an optimizer, a training wrapper, a weight average.
_TRAINS_TEXT = re.compile(r"optim(?<!\woptim)\.|Optimizer\b|optimizer\s*=|\.prepare\(|deepspeed\.initialize\(|EMA\(")


@memoised
def trainer_module(index: ModelIndex, cls: ClassInfo) -> bool:
    """Is the module class `cls` a trainer: a module whose constructor readies a module it holds for training,
    handing it to a training wrapper (`accelerator.prepare(model)`), a weight average (`EMA(model)`), or building
    an optimizer over its parameters (`torch.optim.Adam(self.model.parameters())`)? Such a class (dalle2-style
    trainers subclass `nn.Module` only for buffers and `.to()`) runs its methods on the built model from a
    training loop, outside that model's forward: what they do to it is judged as in a trainer that is no module."""
    if not cls.is_module:
        return False
    if _averages_a_held_model(index, cls):
        return True
    if not any(_TRAINS_TEXT.search(m.text) for m in cls.init_methods):
        return False
    held = held_attributes(index, cls)
    if not held:
        return False
    if averaged_attributes(index, cls):
        return True
    for method in cls.init_methods:
        node = method.node
        if node is None:
            continue
        arguments = module_arguments(index, node)
        for call in walk(node.body):
            if not isinstance(call, cst.Call):
                continue
            name = index.qualify(call_name(call) or "")
            last = name.rsplit(".", 1)[-1]
            optimizer = name.startswith("torch.optim.") or "optim" in last.lower()
            wrapper = last in ("prepare", "prepare_model", "initialize", "setup", "setup_module")
            if not optimizer and not wrapper:
                continue
            for arg in call.args:
                value = arg.value
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                    if value.func.attr.value in ("parameters", "named_parameters"):
                        value = value.func.value  # `Adam(self.model.parameters())`
                if value_holds(index, value, arguments, held):
                    return True
    return False


def _averages_a_held_model(index: ModelIndex, cls: ClassInfo) -> bool:
    """Is the module class `cls` a weight average of the model it is handed (vissl's and timm's `ModelEmaV2(model)`,
    named as the averagers of libraries are, `known.AVERAGER_NAMES`, with an update method, `update(model)`)? The
    training loop runs that update on the trained model after each step, outside any forward."""
    if cls.name not in known.AVERAGER_NAMES or not any(cls.method(m) for m in known.AVERAGER_BLENDS):
        return False
    return bool(held_attributes(index, cls))


def _pairs(targets: list[cst.BaseExpression], value: cst.BaseExpression):
    """(target, value) pairs of an assignment, element by element for `self.a, self.b = a, b`."""
    for target in targets:
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
            if len(target.elements) == len(value.elements):
                yield from ((t.value, v.value) for t, v in zip(target.elements, value.elements))
        else:
            yield target, value


def value_holds(
    index: ModelIndex, value: cst.BaseExpression, arguments: dict[str, tuple[str, ...]], held: dict[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """The module classes `value` holds: a module argument, an attribute holding one, a construction, a copy."""
    if isinstance(value, cst.Name):
        return arguments.get(value.value, ())
    if isinstance(value, cst.BooleanOperation):  # `critic2 or deepcopy(critic)`
        return value_holds(index, value.left, arguments, held) + value_holds(index, value.right, arguments, held)
    if isinstance(value, cst.IfExp):
        return value_holds(index, value.body, arguments, held) + value_holds(index, value.orelse, arguments, held)
    path = access_path(value)
    if path is not None and path.root == "self" and len(path.parts) == 1:
        return held.get(path.parts[0], ())
    if isinstance(value, cst.Dict):  # `{"actor": Actor(d), "critic": critic}`: a mapping of modules
        found = [value_holds(index, e.value, arguments, held) for e in value.elements if isinstance(e, cst.DictElement)]
        return tuple(dict.fromkeys(c for classes in found for c in classes)) if found and all(found) else ()
    if isinstance(value, cst.DictComp):  # `{k: Net(d) for k in names}`
        return value_holds(index, value.value, arguments, held)
    if isinstance(value, cst.Subscript):  # `models["policy"]`: an entry of a mapping of models
        return value_holds(index, value.value, arguments, held)
    if not isinstance(value, cst.Call):
        return ()
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "get" and value.args:
        return value_holds(index, value.func.value, arguments, held)  # `self.models.get("policy", None)`
    name = call_name(value) or ""
    if index.qualify(name) in known.DEEP_COPY and value.args:
        return value_holds(index, value.args[0].value, arguments, held)
    if isinstance(value.func, cst.Attribute) and value.func.attr.value in RETURNS_MODULE:
        inner = value_holds(index, value.func.value, arguments, held)  # `policy.to(device)`
        if inner:
            return inner
    if _wrapper_call(index, value):
        inner = value_holds(index, value.args[0].value, arguments, held)  # `accelerator.prepare(model)`, `unwrap(model)`
        if inner:
            return inner
    kind, classes = classify(index, value)
    if kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in classes or ("",)):
        return classes or ("<unknown>",)
    if kind == Kind.MODULE and any(value_holds(index, a.value, arguments, held) for a in value.args if not a.star):
        return classes  # `Reflow(model)`: a wrapper built around a module it is given holds that module
    return ()


def _container_value(index: ModelIndex, value: cst.BaseExpression) -> bool:
    """Is `value`, which holds modules (`value_holds`), a container of them rather than one module?"""
    if isinstance(value, (cst.Dict, cst.DictComp)):
        return True
    return isinstance(value, cst.Call) and classify(index, value)[0] == Kind.CONTAINER


# A plain list or tuple written out, or a list comprehension (by node type name: libcst is loaded on first use).
_LISTS = frozenset({"List", "Tuple", "ListComp"})


def _listed(
    index: ModelIndex, value: cst.BaseExpression, arguments: dict[str, tuple[str, ...]], held: dict[str, tuple[str, ...]],
    cls: ClassInfo | None = None,
) -> tuple[str, ...]:
    """The module classes of a plain list or tuple of modules (`[Critic(d) for _ in range(n)]`, `[deepcopy(c) for c
    in self.critics]`, `[actor, critic]`, `[self.ClassCri(d).to(dev) for _ in range(n)]` with the class a value of
    the family of `cls`): every element holds one (`value_holds`, `_class_value_built`)."""
    if isinstance(value, cst.ListComp):
        return value_holds(index, value.elt, arguments, held) or _class_value_built(index, cls, value.elt)
    if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
        return ()
    found = [
        value_holds(index, e.value, arguments, held) or _class_value_built(index, cls, e.value)
        if isinstance(e, cst.Element) else () for e in value.elements
    ]
    return tuple(dict.fromkeys(c for classes in found for c in classes)) if all(found) else ()


def _class_value_built(index: ModelIndex, cls: ClassInfo | None, value: cst.BaseExpression) -> tuple[str, ...]:
    """The module classes (owning parameters) a call of a class the family of `cls` holds as a value builds
    (`self.ClassCri(d)`, also through `.to(device)`), by the classes every assignment of that attribute names
    (`class_values.attribute_values`)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in RETURNS_MODULE:
        value = value.func.value
    if cls is None or not isinstance(value, cst.Call):
        return ()
    lookup = class_lookup(value.func)
    if lookup is None or (not isinstance(value.func, cst.Call) and cls.inherited_method(lookup) is not None):
        return ()  # (`self.make_critic(d)`: a method, not a class held as a value)
    classes: list[str] = []
    for owner, expr in attribute_values(index, cls, lookup):
        kind, found = classify(owner, cst.Call(func=expr))
        if kind == Kind.MODULE:
            classes += [c if owner is index else owner.global_name(c) for c in found if has_params(owner, c)]
    return tuple(dict.fromkeys(classes))


def _handed(
    index: ModelIndex, value: cst.BaseExpression, arguments: dict[str, tuple[str, ...]],
    held: dict[str, tuple[str, ...]] | None = None,
) -> tuple[str, ...]:
    """The module classes `value` holds of a module argument or an attribute already holding one (`model`,
    `deepcopy(model)`, `model.to(d)`, `prepare(model)`, `model_wrap(self._model, ...)`): what a method other than
    `__init__` keeps of a built model (`def init(self, model): self._model = model`; `self._learn_model =
    wrap(self._model)` in a mode's setup); a module it constructs there is new, except on a plain object
    (`_held_and_wrapped`: a trainer's setup builds the model it trains)."""
    if isinstance(value, cst.Name):
        return arguments.get(value.value, ())
    path = access_path(value) if held else None
    if path is not None and path.root == "self" and len(path.parts) == 1:
        return held.get(path.parts[0], ())  # type: ignore[union-attr]
    if isinstance(value, (cst.BooleanOperation, cst.IfExp)):
        sides = (value.left, value.right) if isinstance(value, cst.BooleanOperation) else (value.body, value.orelse)
        return tuple(c for side in sides for c in _handed(index, side, arguments, held))
    if not isinstance(value, cst.Call) or not value.args or value.args[0].star:
        return ()
    name = call_name(value) or ""
    if index.qualify(name) in known.DEEP_COPY or _wrapper_call(index, value):
        return _handed(index, value.args[0].value, arguments, held)
    if isinstance(value.func, cst.Attribute) and value.func.attr.value in RETURNS_MODULE:
        return _handed(index, value.func.value, arguments, held)
    return ()


def _wrapper_call(index: ModelIndex, value: cst.BaseExpression) -> bool:
    """A call of a function or method of another object, by a lower-case name, that is not a builtin, a copy or a
    function of this file, given an argument first: given a module, it is taken to return the module or a wrapper
    of it (`accelerator.prepare(model)`, `unwrap(model)`)."""
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None or value.args[0].star:
        return False
    name = call_name(value) or ""
    last = name.rsplit(".", 1)[-1]
    if not last[:1].islower() or last in _NOT_WRAPPERS or index.function_info(name) is not None:
        return False
    return index.qualify(name) not in known.DEEP_COPY


# Calls given a module that return something else: builtins and containers.
_NOT_WRAPPERS = frozenset(
    {"len", "list", "tuple", "print", "str", "repr", "isinstance", "id", "type", "sum", "hasattr", "getattr",
     "sorted", "dict", "set", "iter", "next", "vars", "callable", "zip", "enumerate", "map", "filter", "super"}
)  # fmt: skip

# Module methods that return the module itself.
RETURNS_MODULE = frozenset({"to", "cuda", "cpu", "half", "float", "bfloat16", "train", "eval", "requires_grad_"})


def held_path_classes(
    index: ModelIndex, target: str, arguments: dict[str, tuple[str, ...]], held: dict[str, tuple[str, ...]]
) -> tuple[str, ...] | None:
    """The classes `target` may have: a module argument or held attribute (`unet`, `self.unet`), or a submodule
    reached from one by attribute (`model.fc`, `self.model.blocks`), or an item of a container of one written
    `<path>.[]` (`for blk in model.blocks`), through each class's members (a class we cannot read has children we
    cannot tell: `<unknown>`)."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        classes = arguments.get(head) or (held.get(head[5:]) if head.startswith("self.") else None)
        if classes and parts[cut:cut + 1] != ["[]"]:  # (an item: typed by the container's owner)
            break
    else:
        return None
    rest = parts[cut:]
    for at, name in enumerate(rest):
        if name == "[]" and at:
            continue  # taken with the container before it
        if not name.isidentifier() or config_like(name):
            return None
        items = rest[at + 1:at + 2] == ["[]"]  # `model.layers.[]`: an item of the container (a loop's variable)
        found: list[str] = []
        for ref in classes:
            member = member_of(index, ref, name) if ref != UNKNOWN_CLASS else None
            if member is not None and member.kind == (Kind.CONTAINER if items else Kind.MODULE):
                found += member.classes
            elif member is None and (ref == UNKNOWN_CLASS or index.class_of(ref) is None):
                found.append(UNKNOWN_CLASS)
        if not found:
            return None
        classes = tuple(found)
    return classes


@memoised
def other_objects_models(index: ModelIndex, function: cst.FunctionDef) -> frozenset[str]:
    """Models this function reaches through another object, which it did not build: built (and partitioned) by
    whoever built that object.

    * an attribute named as a module of an argument or of an object `self` holds (`runner.model`,
      `strategy.model.module`, `self.trainer.network`, `state.policy`): the model a framework object, hook or
      callback is handed with, whatever the object's class;
    * a name the function tests to be a module of any kind (`isinstance(obj, nn.Module)`, a data-parallel
      wrapper): an item of a collection of things to save or load, a value of unknown type.

    Paths through settings (`cfg.model`), names the function binds to a module it builds, and `self.X` alone
    (`held_attributes` judges those) do not count.
    """
    arguments = parameter_names(function) - {"self", "cls"}
    built: set[str] = set()
    for stmt in walk(function.body):
        if isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Call):
            if classify(index, stmt.value)[0] in (Kind.MODULE, Kind.CONTAINER):
                built.update(dotted(t.target) or "" for t in stmt.targets)
    found: set[str] = set()
    for node in walk(function.body):
        if isinstance(node, cst.Attribute):
            path = access_path(node)
            if path is None or not path.parts or "[]" in path.parts:
                continue
            parts = list(path.parts)
            if parts[-1] == "module" and len(parts) > 1:
                parts.pop()  # a wrapper's `.module`: the model it wraps
            if path.root == "self" and len(parts) < 2 or path.root != "self" and path.root not in arguments:
                continue
            if not module_like_name(parts[-1]) or config_like(path.root) or any(config_like(p) for p in parts):
                continue
            name = ".".join([path.root, *parts])
            if name not in built:
                found.add(name)
        elif isinstance(node, cst.Call) and call_name(node) == "isinstance" and len(node.args) == 2:
            subject = node.args[0].value
            if isinstance(subject, cst.Name) and subject.value not in built and _module_classes(index, node.args[1].value):
                found.add(subject.value)
    return frozenset(found)


def reached_models(index: ModelIndex, function: cst.FunctionDef) -> dict[str, tuple[str, ...]]:
    """The module arguments of `function` (`module_arguments`) and the models it reaches through another object
    (`other_objects_models`, of a class we cannot tell), by the name or path that holds each."""
    found = dict(module_arguments(index, function))
    for name in other_objects_models(index, function):
        found.setdefault(name, (UNKNOWN_CLASS,))
    return found


def _module_classes(index: ModelIndex, classes: cst.BaseExpression) -> bool:
    """Does an `isinstance` class argument name any module (`nn.Module`, `(nn.DataParallel, DDP)`)? A layer class
    (`nn.Linear`) does not: that is an initialiser's test of each module a walk visits."""
    items = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    for item in items:
        name = dotted(item)
        if name is not None and index.qualify(name).rsplit(".", 1)[-1] in _ANY_MODULE:
            return True
    return False


_ANY_MODULE = frozenset({"Module", "DataParallel", "DistributedDataParallel"})
