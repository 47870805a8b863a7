"""Calls in `__init__` applied to modules that are already built (hence partitioned under zero.Init).

Shared by ZG104 and ZG105.
"""

from __future__ import annotations

import re

from ..program import known
from ..program.holds import module_arguments, module_like_name
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import Kind, class_named, classify, facts_of, has_params, torch_base
from ..program.tree import access_path, call_name, cst, dotted, parameter_for, walk
from .choices import options
from .effects import module_arg_effects, resolve_function
from .flow import Flat, flat_of


def built_module(
    index: ModelIndex,
    cls: ClassInfo,
    method: MethodInfo,
    flat: Flat,
    expr: cst.BaseExpression,
    rank: int,
    at: cst.CSTNode,
    passed_in: bool = False,
) -> bool:
    """True if `expr`, used at node `at` of an `__init__`-reachable method, is a module built before `at`.

    That is: a call constructing a module with parameters (`nn.Conv1d(...)`),
    a submodule member assigned earlier (`self.conv`, `self.layers[0]`), or a
    local assigned from such a construction earlier in the method.
    """
    if isinstance(expr, cst.Call) and index.qualify(call_name(expr) or "") in known.MODULE_GROUPINGS:
        # `nn.Sequential(self.backbone, self.neck)`: a container of modules built before it holds them
        parts = [a.value for a in expr.args if not a.star]
        return any(built_module(index, cls, method, flat, part, rank, at, passed_in) for part in parts)
    if isinstance(expr, cst.Call):
        kind, classes = classify(index, expr)
        return kind == Kind.MODULE and any(has_params(index, ref) for ref in classes)
    path = access_path(expr)
    if path is None:
        return False
    position = method.order.get(id(at), 0)
    if path.root == "self" and path.parts:
        member = facts_of(cls).members.get(path.parts[0])
        if member is not None and member.kind == Kind.UNKNOWN and module_like_name(path.parts[0]):
            return member.order < (rank, position)  # `self.backbone = MODELS.build(cfg)`: a module no file tells
        if member is None or member.kind not in (Kind.MODULE, Kind.CONTAINER):
            return False
        if not any(has_params(index, ref) is not False for ref in member.classes):
            return False
        return member.order < (rank, position)
    if path.parts:
        return False
    if passed_in and _module_argument(index, method, path.root):
        return True
    for node, _ctx in flat.nodes:  # `conv = nn.Conv1d(...)` earlier in the method
        if type(node) is cst.Assign and method.order.get(id(node), 0) < position:
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == path.root:
                    kind, classes = classify(index, node.value)
                    if kind == Kind.MODULE and isinstance(node.value, cst.Call):
                        return any(has_params(index, ref) for ref in classes)
    return False


def _module_argument(index: ModelIndex, method: MethodInfo, name: str) -> bool:
    """Is `name` an argument of `method` that holds a module the caller built (`holds.module_arguments`), and
    not a layer class it calls (`layer_cls(d)`)? Such a module was partitioned under zero.Init before this
    method ran."""
    node = method.node
    if node is None or name not in module_arguments(index, node):
        return False
    return not any(  # `layer_cls(d)`: a factory
        isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == name for call in walk(node)
    )


def calls_on_built_modules(index: ModelIndex, trigger, names: frozenset[str], effect: str | None = None):
    """(method, call, module argument, through a helper?) for unguarded calls in `__init__` and its
    helpers whose function's last name is in `names` and whose first argument is a module built before
    the call (or passed in, so built by the caller).

    With `effect` (`REPARAMETRIZES`, `DEEPCOPIES`), also calls of a function of this or another
    file whose summary says it does that to a built module it is given
    (`apply_parametrization_norm(nn.Conv1d(...), norm)`, `_get_clones(layer, n)`).
    """
    helpers = _helper_call(index) if effect is not None else None
    factories = [  # (only those calling one of `names` themselves: the factory list is parsed only then)
        (None, index.function_info(name)) for name, span in index.skeleton.functions.items()
        if trigger.search(index.skeleton.text(span.start, span.end)) and layer_factory(index, name)
    ]
    for cls, method in (*index.methods("init"), *factories):
        direct = bool(trigger.search(method.text))
        if not direct and (helpers is None or not _calls_effect_helper(index, helpers, method.text, trigger.literals)):
            continue
        flat = flat_of(method)
        if flat is None:
            continue
        rank = next((i for i, m in enumerate(cls.init_methods) if m is method), 0) if cls is not None else 0
        for node, ctx in flat.nodes:
            if type(node) is not cst.Call or ctx.guarded or not node.args:
                continue
            name = index.qualified_call(node) or ""
            if direct and any(n.rsplit(".", 1)[-1] in names for n in (name, *_aliased(index, method, flat, node))):
                # (a layer factory's argument is the caller's: only what it builds itself counts there)
                if built_module(index, cls, method, flat, node.args[0].value, rank, node, passed_in=cls is not None):
                    yield method, node, node.args[0].value, False
                continue
            if effect is None:
                continue
            arg = _handed_built(index, cls, method, flat, node, rank, effect)
            if arg is not None:
                yield method, node, arg.value, True


def _aliased(index: ModelIndex, method: MethodInfo, flat: Flat, call: cst.Call) -> tuple[str, ...]:
    """The functions a local called by `call` was bound to before it (`norm = spectral_norm`, `norm = spectral_norm if
    sn else weight_norm`): calling the local calls one of them."""
    func = call.func
    if not isinstance(func, cst.Name):
        return ()
    position = method.order.get(id(call), 0)
    found: list[str] = []
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign or method.order.get(id(node), 0) >= position or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if isinstance(target, cst.Name) and target.value == func.value:
            for value in options(index, node.value) or (node.value,):
                written = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
                if written is not None:
                    found.append(index.qualify(written))
    return tuple(found)


def _handed_built(index, cls, method, flat, call: cst.Call, rank: int, effect: str) -> cst.Arg | None:
    """The argument of `call` that is a built module the called helper does `effect` to, if any."""
    name = call_name(call)
    if not name or name.startswith(".") or name.partition(".")[0] in ("self", "super"):
        return None
    target = resolve_function(index, flat, name)
    if target is None:
        return None
    effects = module_arg_effects(*target)
    if not any(effect in done for done in effects.values()):
        return None
    # `MovingAvg.__init__(self, self.network)`: a constructor called by its class, `self` handed first as its own
    unbound = name.endswith(".__init__") and bool(call.args) and dotted(call.args[0].value) == "self"
    bound_call = call.with_changes(args=call.args[1:]) if unbound else call
    for position, arg in enumerate(call.args):
        if unbound and position == 0:
            continue
        parameter = parameter_for(target[1], bound_call, position - 1 if unbound else position)
        if arg.star or effect not in effects.get(parameter or "", ()):
            continue
        if built_module(index, cls, method, flat, arg.value, rank, call, passed_in=cls is not None):
            return arg
    return None


@memoised
def layer_factory(index: ModelIndex, name: str) -> bool:
    """Is the module-level function `name` of the file a layer factory: does it build a torch layer and hand it back?
    A `return` returns a layer constructed there, a local bound to one, or what a call makes of one (`out =
    nn.Linear(i, o); ...; return out`, `return nn.utils.spectral_norm(nn.Conv2d(*args))`), and every other `return` a
    module too (`return SNConv2d(*args)`).

    A layer factory runs inside the constructor of some model, of this file or another (`self.fc =
    normed_linear(d, d)`): under `zero.Init` the layer is partitioned as soon as its own constructor returns, before
    the factory writes, initialises or re-parametrises it. (Containers, `nn.Sequential(...)`, are not layers: a
    function handing one back may assemble a whole model, loaded outside `zero.Init`.)"""
    span = index.skeleton.functions.get(name)
    if span is None:
        return False
    text = index.skeleton.text(span.start, span.end)
    if "return" not in text or not _LAYER_CALL.search(text):
        return False
    function = index.function_info(name)
    node = function.node if function is not None else None
    return isinstance(node, cst.FunctionDef) and _returns_built_layer(index, node)


# A construction of a capitalised class (`nn.Linear(`, `Conv2d(`): the text a layer factory cannot lack.
_LAYER_CALL = re.compile(r"(?<![\w.])(?:\w+\.)*[A-Z]\w*\(")


def _returns_built_layer(index: ModelIndex, node: cst.FunctionDef) -> bool:
    """Does every `return` of `node` hand back a torch layer the function constructs (see `layer_factory`)?"""
    layers: set[str] = set()  # locals bound to a layer construction
    returns: list[cst.BaseExpression | None] = []
    for stmt in walk(node.body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and stmt is not node:
            return False  # (a nested scope: its returns are not the factory's)
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
            if _torch_layer(index, stmt.value):
                layers.add(stmt.targets[0].target.value)
        elif isinstance(stmt, cst.Return):
            returns.append(stmt.value)

    def layer(value: cst.BaseExpression | None) -> bool:
        if value is None:
            return False
        if isinstance(value, cst.Name):
            return value.value in layers
        if _torch_layer(index, value):
            return True
        # `spectral_norm(nn.Conv2d(...))`, `weight_norm(lin)`: a wrapper of the layer hands it back
        return isinstance(value, cst.Call) and bool(value.args) and not value.args[0].star and layer(value.args[0].value)

    def module(value: cst.BaseExpression | None) -> bool:  # `return SNConv2d(*args)` on another branch
        return layer(value) or isinstance(value, cst.Call) and classify(index, value)[0] == Kind.MODULE

    return any(layer(value) for value in returns) and all(module(value) for value in returns)


def _torch_layer(index: ModelIndex, value: cst.BaseExpression) -> bool:
    """Is `value` a construction of a torch layer owning parameters (`nn.Linear(i, o)`; not a container), or of a
    class of the program deriving from one (`conv.Conv1d(c, c, k)` for `class Conv1d(nn.Conv1d)`)?"""
    if not isinstance(value, cst.Call):
        return False
    name = index.qualified_call(value) or ""
    if known.is_torch_module_class(name):
        return bool(has_params(index, name))
    found = class_named(index, name) if name[:1].isalpha() else None
    return found is not None and torch_base(found) is not None


def _calls_effect_helper(index: ModelIndex, helpers: re.Pattern[str], text: str, tokens: tuple[str, ...]) -> bool:
    """Text test before parsing: does `text` call a helper whose text (or a helper it calls) has `tokens`?"""
    return any(_helper_has(index, m.group(1), tokens, 2) for m in helpers.finditer(text))


@memoised(cycle=False)
def _helper_has(index: ModelIndex, name: str, tokens: tuple[str, ...], depth: int) -> bool:
    found = None
    if "." not in name and name in index.skeleton.functions:
        found = (index, index.function_info(name))
    elif name.endswith(".__init__") and (base := class_named(index, name[: -len(".__init__")])) is not None:
        found = (base.index, base.inherited_method("__init__"))  # `MovingAvg.__init__(self, self.network)`
    elif name.partition(".")[0] in index.imports:
        found = index.external_function(index.qualify(name))
    answer = False
    if found is not None and found[1] is not None:
        owner, function = found
        text = function.text
        answer = any(t in text for t in tokens) or depth > 0 and any(
            _helper_has(owner, called, tokens, depth - 1)
            for called in set(_CALLED.findall(text))
            if called in owner.skeleton.functions or called.partition(".")[0] in owner.imports
        )
    return answer


_CALLED = re.compile(r"(?<![\w.])([a-z_]\w*(?:\.\w+)*)\s*\(")


@memoised
def _helper_call(index: ModelIndex) -> re.Pattern[str] | None:
    """A pattern for a call of a function of this file or an imported name (lowercase: not a class), or of a base's
    constructor on `self` by its class (`MovingAvg.__init__(self, self.network)`)."""
    names = {n for n in (*index.skeleton.functions, *index.imports) if n[:1].islower() or n[:1] == "_"}
    functions = "|".join(sorted(map(re.escape, names)))
    callee = (rf"(?:{functions})(?:\.\w+)*|" if functions else "") + r"[A-Z]\w*\.__init__"
    # the first argument may be a module: `self.conv`, a construction `nn.Conv1d(...)`, or a bare name (`self`)
    return re.compile(r"(?<![\w.])(" + callee + r")\s*\(\s*(?:self\.\w+|[\w.]*[A-Z]\w*\(|\w+\s*[,)])")
