"""Callables a function is handed and runs on this call's data: a model, or a step of one, passed in as a function.

A beam search is given `step(last_predictions, state)`, a rollout `policy(tensordict)`: the caller hands in the
model (or a bound method, a `functools.partial`, a lambda around it) and the function calls it on the values it
works on. Such a call runs the model's forward, so the loops and branches around it decide how often every rank
all-gathers its parameters, as they would around `self.model(x)`.

A parameter counts when the function calls it by name with some value of its own (a parameter or a local, not
only constants, arithmetic or attributes of `self`), not only as a test's verdict (`if cond(key):`, a predicate),
with no default but None (`save_function=torch.save`), never tested for presence (`if callback is not None:`, an
optional hook), and nothing says it is a value of another kind: an
annotation naming a scalar, a string, a collection or a tensor, or a use as a container or number (`fn[0]`,
`fn + 1`, `len(fn)`).

A parameter called with no arguments counts too when its result is read as a tensor (`loss_fn().item()`, or
`loss = closure()` then `loss.backward()`): a loss closure, which evaluates the model on the caller's batch each
time (a line search, an optimiser's closure). A zero-argument call whose result is not read so (a progress
callback, an environment factory) stays a hook.
"""

from __future__ import annotations

from ..program.tree import call_name, code_of, cst, walk

__all__ = ["called_parameters", "wrapped_callee"]

# Annotations of values that are not callables (the outermost name of the annotation).
_NOT_CALLABLE = frozenset(
    {
        "int", "float", "bool", "str", "bytes", "list", "List", "dict", "Dict", "tuple", "Tuple", "set", "Set",
        "Tensor", "torch.Tensor", "Sequence", "Mapping", "Iterable", "Iterator", "Module", "nn.Module",
    }
)

# Methods read from a tensor's value: a call of a parameter whose result they read returned a tensor, a loss or an
# output (`loss_func().item()`, `closure().backward()`), so the callable handed in evaluates a model.
_TENSOR_READS = frozenset({"item", "backward", "detach", "mean", "sum", "tolist"})


def called_parameters(func: cst.FunctionDef) -> frozenset[str]:
    """Parameters of `func` it calls as functions on values of its own (`step(last, state)`), by name (a walk of
    the body: callers ask once per function)."""
    params = {}
    for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
        params[p.name.value] = p
    params.pop("self", None)
    params.pop("cls", None)
    if not params:
        return frozenset()
    called: set[str] = set()
    other_use: set[str] = set()
    tests = _tests(func)  # `if cond(key):`: a predicate's verdict, not a model's output
    read: set[str] = set()  # names whose tensor value is read (`loss.item()`)
    results: dict[str, set[str]] = {}  # names bound to a call of a parameter with no arguments (`loss = closure()`)
    for node in walk(func.body):
        kind = type(node)
        if kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value in params:
            name = node.func.value
            if id(node) not in tests and any(_own_value(arg.value, name) for arg in node.args if not arg.star):
                called.add(name)
        elif kind is cst.Attribute and node.attr.value in _TENSOR_READS:
            if _thunk(node.value, params):
                called.add(node.value.func.value)  # `loss_func().item()`: a loss closure, evaluated for its tensor
            elif isinstance(node.value, cst.Name):
                read.add(node.value.value)  # `loss.backward()`, where `loss = closure()`
        elif kind is cst.Call and _number(node):
            value = node.args[0].value
            if _thunk(value, params):
                called.add(value.func.value)  # `float(closure())`: the loss the closure evaluated, as a number
            elif isinstance(value, cst.Name):
                read.add(value.value)  # `float(orig_loss)`, where `orig_loss = closure()`
        elif kind is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if _thunk(node.value, params):
                results.setdefault(node.targets[0].target.value, set()).add(node.value.func.value)
        elif kind is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value in params:
            other_use.add(node.value.value)  # `fn[0]`: a container
        elif kind is cst.BinaryOperation:
            for side in (node.left, node.right):
                if isinstance(side, cst.Name) and side.value in params:
                    other_use.add(side.value)  # `n + 1`: a number
        elif kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value in ("len", "iter", "range"):
            for arg in node.args:
                if isinstance(arg.value, cst.Name) and arg.value.value in params:
                    other_use.add(arg.value.value)
    for name in read & results.keys():
        called |= results[name]
    found = set()
    for name in called - other_use - _optional(func, params):
        if params[name].default is not None and code_of(params[name].default) != "None":
            continue  # `save_function=torch.save`: a library function by default, not a model handed in
        annotation = params[name].annotation
        if annotation is not None and _outer_name(annotation.annotation) in _NOT_CALLABLE:
            continue
        found.add(name)
    return frozenset(found)


def _thunk(expr: cst.BaseExpression, params: dict) -> bool:
    """Is `expr` a call of a parameter with no arguments (`loss_func()`, `closure()`)?"""
    return (
        isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Name) and expr.func.value in params
    )


def _number(call: cst.Call) -> bool:
    """`float(x)`: a value read as a number (a loss, a metric), as `.item()` reads it."""
    return (
        isinstance(call.func, cst.Name) and call.func.value == "float" and len(call.args) == 1
        and not call.args[0].star and call.args[0].keyword is None
    )


def _optional(func: cst.FunctionDef, params: dict) -> set[str]:
    """Parameters the function tests for presence (`if callback is not None:`, `if hook:`): an optional hook, where
    a model handed in is never optional."""
    found: set[str] = set()
    for node in walk(func.body):
        if type(node) in (cst.If, cst.IfExp, cst.While):
            for part in walk(node.test):
                if type(part) is cst.Name and part.value in params:
                    found.add(part.value)
    return found


def _tests(func: cst.FunctionDef) -> set[int]:
    """Calls that are a decision's test themselves (`if cond(k):`, `while not done(x):`, `a if f(x) else b`, a
    comprehension's `if`)."""
    found: set[int] = set()
    for node in walk(func.body):
        if type(node) in (cst.If, cst.While, cst.IfExp, cst.CompIf):
            stack = [node.test]
            while stack:
                part = stack.pop()
                if isinstance(part, cst.UnaryOperation):
                    stack.append(part.expression)
                elif isinstance(part, cst.BooleanOperation):
                    stack += [part.left, part.right]
                elif isinstance(part, cst.Call):
                    found.add(id(part))
    return found


def _own_value(expr: cst.BaseExpression, callee: str) -> bool:
    """Does `expr` pass on a value of the function (a name, an attribute or an item of one; not `self`, not the
    callee itself, not a constant, not arithmetic: `callback(i + 1, n)` reports progress)?"""
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return False
    for node in walk(expr):
        if type(node) is cst.Name and node.value not in ("self", "cls", "None", "True", "False", callee):
            return True
    return False


def _outer_name(annotation: cst.BaseExpression) -> str:
    """`Optional[int]` -> `int`, `torch.Tensor` -> `torch.Tensor`, `int | None` -> `int`."""
    if isinstance(annotation, cst.Subscript):
        outer = code_of(annotation.value)
        if outer in ("Optional", "typing.Optional") and annotation.slice:
            inner = annotation.slice[0].slice
            return _outer_name(inner.value) if isinstance(inner, cst.Index) else outer
        return outer
    if isinstance(annotation, cst.BinaryOperation):
        return _outer_name(annotation.left)
    if isinstance(annotation, cst.SimpleString):
        return annotation.value.strip("\"'")
    return code_of(annotation)


def wrapped_callee(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What calling `expr` calls, when `expr` wraps another callable: `functools.partial(self.alt, ...)` and
    `lambda a: self.alt(a)` call `self.alt`; `self.alt.forward` and `self.alt.__call__` call `self.alt`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("forward", "__call__"):
        return expr.value
    if isinstance(expr, cst.Call) and expr.args and not expr.args[0].star and expr.args[0].keyword is None:
        name = call_name(expr)
        if name is not None and name.rsplit(".", 1)[-1] == "partial":
            return expr.args[0].value
        return None
    if isinstance(expr, cst.Lambda) and isinstance(expr.body, cst.Call):
        func = expr.body.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
            func = func.value
        return func
    return None
