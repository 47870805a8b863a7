"""A static parameter count from literal shapes: `model_shape(path, source)`.

Evaluates, without importing anything, the constructor of the file's root
module class on the default config: config classes' defaults and
properties, `nn.Linear`/`nn.Embedding`/`nn.Conv*`/norm layers,
`nn.Parameter(torch.ones(d))`, `nn.ModuleList(Block(c) for _ in range(n))`,
in-file module classes, `if config.tie_word_embeddings:` branches and weight
tying (a tied parameter is counted once). Anything it cannot evaluate
exactly (an unknown call, a data-dependent size) makes the answer None:
a wrong count is worse than none.

This reads the file with Python's `ast`: it only evaluates literals, and
needs no positions.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from zgen.launch import CONFIG_FIELDS, ModelShape

from ..program import known
from ..program.index import ModelIndex
from ..program.skeleton import SourceError, build_skeleton

__all__ = ["model_shape"]

_MAX_STEPS = 200_000  # evaluation budget: a huge or recursive model gives up instead of hanging


class _Unknown(Exception):
    """Raised when a value cannot be determined statically."""


@dataclass(eq=False)
class _Param:
    numel: int


@dataclass(eq=False)
class _Tensor:
    numel: int


@dataclass(eq=False)
class _Obj:
    """An instance built by the evaluator: a module (with parameters and children) or a config."""

    cls: str
    attrs: dict[str, object] = field(default_factory=dict)
    is_module: bool = True
    elements: list[object] = field(default_factory=list)  # ModuleList / Sequential items


_LINEAR_ARGS = ("in_features", "out_features", "bias")
_HIDDEN, _LAYERS, _HEADS = CONFIG_FIELDS["hidden"], CONFIG_FIELDS["layers"], CONFIG_FIELDS["heads"]
_KV_HEADS, _FFN, _VOCAB = CONFIG_FIELDS["kv_heads"], CONFIG_FIELDS["ffn"], CONFIG_FIELDS["vocab"]


def _defaults_only(init: ast.FunctionDef | None) -> bool:
    """Whether `__init__` can be called with no arguments (every parameter after `self` has a default)."""
    if init is None:
        return False
    a = init.args
    required = len(a.posonlyargs) + len(a.args) - 1 - len(a.defaults)
    return required <= 0 and all(d is not None for d in a.kw_defaults)


def model_shape(path: str, source: str) -> ModelShape | None:
    """Parameter count and dimensions of the largest module class in `source`, or None if unsure."""
    skeleton = build_skeleton(source)
    if isinstance(skeleton, SourceError):
        return None
    index = ModelIndex(path, source, skeleton)
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    module_names = {c.name for c in index.module_classes()} & classes.keys()
    if not module_names:
        return None
    evaluator = _Evaluator(classes, module_names, index)
    best: tuple[int, _Obj, ast.ClassDef, _Obj | None] | None = None
    for name in _roots(classes, module_names):
        try:
            config = evaluator.default_config(classes[name])
            evaluator.steps = 0
            if config is not None:
                obj = evaluator.instantiate(name, [config], {})
            elif _defaults_only(evaluator._find_init(classes[name])):
                obj = evaluator.instantiate(name, [], {})  # `Net()`: the sizes are the literals it is written with
            else:
                continue  # without the file's own config the sizes would be guesses
            count = _count(obj)
        except (_Unknown, RecursionError, ZeroDivisionError, TypeError, ValueError, OverflowError, KeyError):
            continue  # not statically evaluable: no answer rather than a wrong one
        if count and (best is None or count > best[0]):
            best = (count, obj, classes[name], config)
    if best is None:
        return None
    count, obj, node, config = best
    layers, per_layer = _largest_list(obj)
    dims = {}
    if isinstance(config, _Obj):
        for key, names in (
            ("hidden", _HIDDEN),
            ("heads", _HEADS),
            ("kv_heads", _KV_HEADS),
            ("ffn", _FFN),
            ("vocab", _VOCAB),
        ):
            dims[key] = next((v for n in names if isinstance(v := config.attrs.get(n), int) and v > 0), None)
        if dims["kv_heads"] is None:
            dims["kv_heads"] = dims["heads"]
        layers = next((v for n in _LAYERS if isinstance(v := config.attrs.get(n), int)), layers)
    where = f"{path}:{node.lineno}"
    if isinstance(config, _Obj):
        where += f" ({config.cls} defaults)"
    return ModelShape(
        params=count,
        layers=layers or None,
        largest_layer_params=per_layer or None,
        source=where,
        **dims,
    )


def _roots(classes: dict[str, ast.ClassDef], modules: set[str]) -> list[str]:
    """Module classes no other module class of the file constructs: candidates for the whole model."""
    used: set[str] = set()
    for name in modules:
        for node in ast.walk(classes[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id != name:
                used.add(node.func.id)
    roots = [n for n in modules if n not in used and n in classes]
    return roots or [n for n in modules if n in classes]


def _params(obj: object, seen: dict[int, _Param]) -> None:
    if isinstance(obj, _Param):
        seen[id(obj)] = obj
    elif isinstance(obj, _Obj) and obj.is_module:
        for value in list(obj.attrs.values()) + obj.elements:
            _params(value, seen)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _params(item, seen)
    elif isinstance(obj, dict):
        for item in obj.values():
            _params(item, seen)


def _count(obj: object) -> int:
    seen: dict[int, _Param] = {}
    _params(obj, seen)
    return sum(p.numel for p in seen.values())


def _largest_list(obj: _Obj) -> tuple[int, int]:
    """(length, params of one element) of the largest list of modules in the model."""
    best = (0, 0)
    stack: list[object] = [obj]
    while stack:
        current = stack.pop()
        if not isinstance(current, _Obj) or not current.is_module:
            continue
        if current.elements and all(isinstance(e, _Obj) for e in current.elements):
            total = _count(current)
            if total > best[0] * best[1]:
                best = (len(current.elements), _count(current.elements[0]))
        stack.extend(v for v in current.attrs.values() if isinstance(v, _Obj))
        stack.extend(current.elements)
    return best


class _Evaluator:
    """Executes `__init__` bodies over a tiny value domain: ints, floats, tensors, parameters, modules."""

    def __init__(self, classes: dict[str, ast.ClassDef], modules: set[str], index: ModelIndex) -> None:
        self.classes = classes
        self.modules = modules
        self.index = index
        self.steps = 0

    # --- configs -------------------------------------------------------------

    def default_config(self, cls: ast.ClassDef) -> _Obj | None:
        """The default config the root class takes as its first argument (by annotation, else the only one)."""
        init = _method(cls, "__init__")
        if init is None or len(init.args.args) < 2:
            return None
        annotation = init.args.args[1].annotation
        name = _annotation_name(annotation)
        if name not in self.classes:
            configs = [n for n in self.classes if n not in self.modules and _looks_like_config(self.classes[n])]
            if len(configs) != 1:
                return None
            name = configs[0]
        return self.instantiate(name, [], {})

    # --- instances -----------------------------------------------------------

    def instantiate(self, name: str, args: list, kwargs: dict) -> _Obj:
        cls = self.classes[name]
        obj = _Obj(name, is_module=name in self.modules)
        for base in cls.bases:  # in-file bases first, like super().__init__ would
            base_name = _annotation_name(base)
            if base_name in self.classes and base_name != name:
                for key, value in self._class_defaults(self.classes[base_name], obj).items():
                    obj.attrs.setdefault(key, value)
        obj.attrs.update(self._class_defaults(cls, obj))
        init = self._find_init(cls)
        if init is not None:
            self._call_function(init, obj, args, kwargs)
        elif obj.is_module:
            raise _Unknown(f"{name} has no __init__ here")
        return obj

    def _find_init(self, cls: ast.ClassDef) -> ast.FunctionDef | None:
        init = _method(cls, "__init__")
        if init is not None:
            return init
        for base in cls.bases:
            name = _annotation_name(base)
            if name in self.classes and name != cls.name:
                return self._find_init(self.classes[name])
        return None

    def _class_defaults(self, cls: ast.ClassDef, obj: _Obj) -> dict[str, object]:
        out: dict[str, object] = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                try:
                    out[stmt.target.id] = self.eval(stmt.value, {})
                except _Unknown:
                    continue
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                try:
                    out[stmt.targets[0].id] = self.eval(stmt.value, {})
                except _Unknown:
                    continue
            elif isinstance(stmt, ast.FunctionDef) and any(
                _annotation_name(d) == "property" for d in stmt.decorator_list
            ):
                out[stmt.name] = _Property(stmt)
        return out

    def _call_function(self, func: ast.FunctionDef, obj: _Obj, args: list, kwargs: dict) -> object:
        env: dict[str, object] = {"self": obj}
        params = func.args.args[1:]
        defaults = func.args.defaults
        first_default = len(params) - len(defaults)
        for i, param in enumerate(params):
            if i < len(args):
                env[param.arg] = args[i]
            elif param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            elif i >= first_default:
                env[param.arg] = self.eval(defaults[i - first_default], env)
            else:
                raise _Unknown(f"missing argument {param.arg}")
        for param, default in zip(func.args.kwonlyargs, func.args.kw_defaults):
            if param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            elif default is not None:
                env[param.arg] = self.eval(default, env)
        if func.args.kwarg is not None:
            env[func.args.kwarg.arg] = {k: v for k, v in kwargs.items() if k not in env}
        try:
            self.run(func.body, env)
        except _Return as ret:
            return ret.value
        return None

    # --- statements ----------------------------------------------------------

    def run(self, body: list[ast.stmt], env: dict) -> None:
        for stmt in body:
            self.steps += 1
            if self.steps > _MAX_STEPS:
                raise _Unknown("evaluation budget exhausted")
            self.statement(stmt, env)

    def statement(self, stmt: ast.stmt, env: dict) -> None:
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, env)
            for target in stmt.targets:
                self.assign(target, value, env)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, env), env)
        elif isinstance(stmt, ast.AugAssign):
            current = self.eval(stmt.target, env)
            self.assign(stmt.target, _binop(stmt.op, current, self.eval(stmt.value, env)), env)
        elif isinstance(stmt, ast.If):
            self.run(stmt.body if self.truth(stmt.test, env) else stmt.orelse, env)
        elif isinstance(stmt, ast.For):
            for item in self.iterate(self.eval(stmt.iter, env)):
                self.assign(stmt.target, item, env)
                self.run(stmt.body, env)
        elif isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return  # docstring
            self.eval(stmt.value, env)
        elif isinstance(stmt, ast.Return):
            raise _Return(self.eval(stmt.value, env) if stmt.value is not None else None)
        elif isinstance(stmt, (ast.Pass, ast.Assert, ast.Import, ast.ImportFrom)):
            return
        elif isinstance(stmt, ast.Raise):
            raise _Unknown("raises")
        else:
            raise _Unknown(type(stmt).__name__)

    def assign(self, target: ast.expr, value: object, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Attribute):
            owner = self.eval(target.value, env)
            if not isinstance(owner, _Obj):
                raise _Unknown("attribute of a non-object")
            owner.attrs[target.attr] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(self.iterate(value))
            if len(items) != len(target.elts):
                raise _Unknown("unpacking")
            for t, v in zip(target.elts, items):
                self.assign(t, v, env)
        else:
            raise _Unknown("assignment target")

    def truth(self, test: ast.expr, env: dict) -> bool:
        value = self.eval(test, env)
        if isinstance(value, (_Obj, _Param, _Tensor)):
            return True
        return bool(value)

    def iterate(self, value: object):
        if isinstance(value, (list, tuple, range)):
            return list(value)
        if isinstance(value, dict):
            return list(value)
        raise _Unknown("not iterable")

    # --- expressions ---------------------------------------------------------

    def eval(self, node: ast.expr, env: dict) -> object:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Unknown("evaluation budget exhausted")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            builtin = {"None": None, "True": True, "False": False}
            if node.id in builtin:
                return builtin[node.id]
            raise _Unknown(f"name {node.id}")
        if isinstance(node, ast.Attribute):
            owner = self.eval(node.value, env)
            if isinstance(owner, _Obj):
                if node.attr not in owner.attrs:
                    raise _Unknown(f"attribute {node.attr}")
                value = owner.attrs[node.attr]
                if isinstance(value, _Property):
                    return self._call_function(value.func, owner, [], {})
                return value
            raise _Unknown("attribute")
        if isinstance(node, ast.BinOp):
            return _binop(node.op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand, env)
            if isinstance(node.op, ast.USub):
                return -operand  # type: ignore[operator]
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(node.op, ast.UAdd):
                return operand
            raise _Unknown("unary")
        if isinstance(node, ast.BoolOp):
            values = [self.eval(v, env) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return _compare(node.ops[0], self.eval(node.left, env), self.eval(node.comparators[0], env))
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(node.test, env) else node.orelse, env)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.eval(e, env) for e in node.elts]
        if isinstance(node, ast.Dict):
            return {self.eval(k, env): self.eval(v, env) for k, v in zip(node.keys, node.values) if k is not None}
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.comprehension(node, env)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.JoinedStr):
            return "<str>"
        raise _Unknown(type(node).__name__)

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp, env: dict) -> list:
        if len(node.generators) != 1 or node.generators[0].ifs:
            raise _Unknown("comprehension")
        gen = node.generators[0]
        out = []
        for item in self.iterate(self.eval(gen.iter, env)):
            inner = dict(env)
            self.assign(gen.target, item, inner)
            out.append(self.eval(node.elt, inner))
        return out

    def subscript(self, node: ast.Subscript, env: dict) -> object:
        base = node.value
        if isinstance(base, ast.Name) and base.id in known.ACTIVATION_FACTORIES:
            return _Obj("activation")
        value = self.eval(base, env)
        key = self.eval(node.slice, env)
        try:
            return value[key]  # type: ignore[index]
        except (TypeError, KeyError, IndexError) as exc:
            raise _Unknown("subscript") from exc

    def call(self, node: ast.Call, env: dict) -> object:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            if isinstance(func.value.func, ast.Name) and func.value.func.id == "super" and func.attr == "__init__":
                return None  # bases' defaults were applied when the instance was created
        args: list = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                args.extend(self.iterate(self.eval(arg.value, env)))
            else:
                args.append(self.eval(arg, env))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                extra = self.eval(kw.value, env)
                if not isinstance(extra, dict):
                    raise _Unknown("**kwargs")
                kwargs.update(extra)
            else:
                kwargs[kw.arg] = self.eval(kw.value, env)
        if isinstance(func, ast.Attribute):
            owner_node = func.value
            if (
                isinstance(owner_node, ast.Name)
                and owner_node.id == "self"
                and func.attr
                in {
                    "register_buffer",
                    "post_init",
                    "apply",
                    "init_weights",
                    "_init_weights",
                    "tie_weights",
                }
            ):
                return None  # buffers are not parameters; initialisation does not change counts
            if func.attr in {"append", "extend"} and isinstance(owner_node, (ast.Name, ast.Attribute)):
                target = self.eval(owner_node, env)
                container = target.elements if isinstance(target, _Obj) else target
                if not isinstance(container, list):
                    raise _Unknown("append")
                container.append(args[0]) if func.attr == "append" else container.extend(self.iterate(args[0]))
                return None
            if func.attr == "register_parameter" and len(args) == 2:
                owner = self.eval(owner_node, env)
                if isinstance(owner, _Obj):
                    owner.attrs[str(args[0])] = args[1]
                    return None
            if func.attr == "add_module" and len(args) == 2:
                owner = self.eval(owner_node, env)
                if isinstance(owner, _Obj):
                    owner.attrs[str(args[0])] = args[1]
                    return None
        name = _dotted(func)
        if name is None:
            raise _Unknown("call")
        if name in self.classes:
            if name in self.modules or _looks_like_config(self.classes[name]):
                return self.instantiate(name, args, kwargs)
            raise _Unknown(f"class {name}")
        if isinstance(func, ast.Name) and name in env and isinstance(env[name], _Property):
            raise _Unknown("call of a property")
        return _builtin(self.index.qualify(name), args, kwargs)


class _Return(Exception):
    def __init__(self, value: object) -> None:
        self.value = value


@dataclass(frozen=True)
class _Property:
    func: ast.FunctionDef


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _annotation_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split("|")[0].strip()
    if isinstance(node, ast.BinOp):  # Config | None
        return _annotation_name(node.left)
    if isinstance(node, ast.Call):
        return _annotation_name(node.func)
    name = _dotted(node) if node is not None else None
    return name.rsplit(".", 1)[-1] if name else None


def _looks_like_config(cls: ast.ClassDef) -> bool:
    decorated = any(_annotation_name(d) == "dataclass" for d in cls.decorator_list)
    return decorated or cls.name.endswith("Config")


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _binop(op: ast.operator, a: object, b: object) -> object:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        if isinstance(op, ast.Add) and isinstance(a, (list, str)) and type(a) is type(b):
            return a + b  # type: ignore[operator]
        if isinstance(op, ast.Mult) and isinstance(a, list) and isinstance(b, int):
            return a * b
        raise _Unknown("arithmetic on non-numbers")
    ops = {
        ast.Add: lambda: a + b,
        ast.Sub: lambda: a - b,
        ast.Mult: lambda: a * b,
        ast.Div: lambda: a / b,
        ast.FloorDiv: lambda: a // b,
        ast.Mod: lambda: a % b,
        ast.Pow: lambda: a**b,
    }
    fn = ops.get(type(op))
    if fn is None:
        raise _Unknown("operator")
    return fn()


def _compare(op: ast.cmpop, a: object, b: object) -> bool:
    table = {
        ast.Eq: lambda: a == b,
        ast.NotEq: lambda: a != b,
        ast.Is: lambda: a is b,
        ast.IsNot: lambda: a is not b,
        ast.Lt: lambda: a < b,  # type: ignore[operator]
        ast.LtE: lambda: a <= b,  # type: ignore[operator]
        ast.Gt: lambda: a > b,  # type: ignore[operator]
        ast.GtE: lambda: a >= b,  # type: ignore[operator]
        ast.In: lambda: a in b,  # type: ignore[operator]
        ast.NotIn: lambda: a not in b,  # type: ignore[operator]
    }
    fn = table.get(type(op))
    if fn is None:
        raise _Unknown("comparison")
    return fn()


def _numel(shape: list) -> int:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = list(shape[0])
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _Unknown("shape")
    return math.prod(shape)


def _arg(args: list, kwargs: dict, i: int, name: str, default: object = _Unknown) -> object:
    if i < len(args):
        return args[i]
    if name in kwargs:
        return kwargs[name]
    if default is _Unknown:
        raise _Unknown(f"argument {name}")
    return default


def _module(cls: str, **params: int) -> _Obj:
    return _Obj(cls, {name: _Param(n) for name, n in params.items() if n})


def _builtin(name: str, args: list, kwargs: dict) -> object:
    """Calls of torch, torch.nn and Python builtins that matter for sizes."""
    last = name.rsplit(".", 1)[-1]
    python = {"int": int, "float": float, "min": min, "max": max, "abs": abs, "round": round, "len": len}
    if name in python:
        return python[name](*args)
    if name == "range":
        return range(*args)
    if name == "getattr" and len(args) >= 2 and isinstance(args[0], _Obj):
        return args[0].attrs.get(args[1], args[2] if len(args) > 2 else None)
    if name == "math.prod":
        return math.prod(args[0])
    if name in {"torch.ones", "torch.zeros", "torch.empty", "torch.randn", "torch.rand", "torch.full"}:
        shape = args[:1] if name == "torch.full" else args
        return _Tensor(_numel(list(shape)))
    if name == "torch.tensor":
        value = args[0] if args else None
        return _Tensor(len(value) if isinstance(value, list) else 1)
    if last == "Parameter":
        tensor = _arg(args, kwargs, 0, "data")
        if not isinstance(tensor, _Tensor):
            raise _Unknown("parameter of an unknown tensor")
        return _Param(tensor.numel)
    if not (name.startswith("torch.nn.") or last in known.TORCH_PARAMS):
        if last in known.PARAMLESS or last in known.ACTIVATION_FACTORIES:
            return _Obj(last)
        raise _Unknown(f"call {name}")
    if last in known.PARAMLESS:
        return _Obj(last)
    if last in {"ModuleList", "Sequential"}:
        items = list(args[0]) if last == "ModuleList" and args else list(args)
        if len(items) == 1 and isinstance(items[0], list):
            items = items[0]
        return _Obj(last, elements=items)
    if last == "ModuleDict":
        return _Obj(last, attrs=dict(args[0]) if args else {})
    if last in {"Linear", "Conv1D"}:
        n_in, n_out = _arg(args, kwargs, 0, "in_features"), _arg(args, kwargs, 1, "out_features")
        if last == "Conv1D":
            n_out, n_in = n_in, n_out  # transformers' Conv1D(nf, nx): weight (nx, nf)
        bias = _arg(args, kwargs, 2, "bias", True)
        return _module(last, weight=_numel([n_in, n_out]), bias=n_out if bias else 0)
    if last == "Embedding":
        return _module(
            last, weight=_numel([_arg(args, kwargs, 0, "num_embeddings"), _arg(args, kwargs, 1, "embedding_dim")])
        )
    if last in {"LayerNorm", "RMSNorm"}:
        shape = _arg(args, kwargs, 0, "normalized_shape")
        size = _numel(list(shape) if isinstance(shape, list) else [shape])
        affine = _arg([], kwargs, 9, "elementwise_affine", True)
        bias = last == "LayerNorm" and _arg([], kwargs, 9, "bias", True)
        return _module(last, weight=size if affine else 0, bias=size if affine and bias else 0)
    if last.startswith(("Conv1d", "Conv2d", "Conv3d")):
        dims = int(last[4])
        c_in, c_out = _arg(args, kwargs, 0, "in_channels"), _arg(args, kwargs, 1, "out_channels")
        kernel = _arg(args, kwargs, 2, "kernel_size")
        kernel = list(kernel) if isinstance(kernel, list) else [kernel] * dims
        groups = kwargs.get("groups", args[6] if len(args) > 6 else 1)
        bias = kwargs.get("bias", args[7] if len(args) > 7 else True)
        return _module(last, weight=_numel([c_out, c_in // groups, *kernel]), bias=c_out if bias else 0)
    raise _Unknown(f"torch.nn.{last}")
