"""What code does with a parameter or a module it is given.

`usage` reads how one expression naming a parameter is used (read, sized,
written, initialised, only its metadata read, checked, guarded), following
the functions it is handed to when their bodies can be read.
`module_arg_effects` summarises, once per function, what the function does
to each module argument (writes or initialises its parameters, reads their
sizes, re-parametrises or deep-copies it), transitively and across files;
`resolve_function` finds the function a call names.
"""

from __future__ import annotations

import re

from ..program import known
from ..program.holds import MODULE_ONLY_METHODS, module_arguments
from ..program.index import ClassInfo, ModelIndex, memoised
from ..program.members import Kind, classify, facts_of
from ..program.tree import (
    access_path, call_name, code_of, const_str, cst, dotted, parameter_for, positional_parameters, unwrapped_argument,
    walk, walk_own,
)
from .access import ASSIGN, CHECK, COPY, GRAD, GUARD, INIT, META, READ, SIZE, STATE, WRITE
from .callables import wrapped_callee
from .choices import returned_parameters
from .flow import Ctx, Flat, bound_names, flatten, loop_items, mapping_walked, same_items, targets_of
from .grads import gradient_cancelled, gradient_read, gradient_write
from .plain import local_imports, named_instances, plain_class

__all__ = [
    "usage", "module_arg_effects", "argument_effects", "resolve_function", "CALLS", "COMPUTES", "APPLIES",
    "writes_module_params", "REPARAMETRIZES", "own_helper_effects",
    "returns_argument", "DEEPCOPIES", "STATES", "CLIPS", "GRADS", "GRAD_WRITES", "READS", "RUNS", "computed_with", "bulk_written", "WHOLE_ORDER", "WHOLE_USE",
    "written_in_bulk", "clipped", "state_keys_only", "REPLACED", "nested_defs",
]

# The operation of `<module>.weight = nn.Parameter(t)`: the parameter replaced by a new full one.
REPLACED = " = nn.Parameter(...)"
# Methods whose result shares the tensor's storage (called without arguments): an in-place op on it writes the tensor.
_VIEWS = frozenset({"detach", "t", "squeeze", "unsqueeze"})
# Views given a shape, sharing the parameter's storage: a write into one is a write into the parameter.
_SHAPED_VIEWS = frozenset({"view", "view_as", "reshape", "flatten", "unflatten", "transpose", "permute"})
_GUARD_CALLS = {"register_external_parameter", "GatheredParameters", "unregister_external_parameter"}
_CHECK_CALLS = {"isinstance", "hasattr", "getattr", "id", "type", "callable", "setattr", "delattr"}


def usage(index: ModelIndex, flat: Flat, node: cst.CSTNode) -> tuple[str, str]:
    """How the parameter expression `node` is used, and the operation as text."""
    parent = flat.parent.get(id(node))
    if isinstance(parent, cst.Arg) and (call := flat.parent.get(id(parent))) is not None and unwrapped_argument(
        call
    ) is node:
        return usage(index, flat, call)  # `cast(Tensor, m.weight).dtype`: the parameter itself, as the cast is used
    data = ""
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "data":
        node, parent, data = parent, flat.parent.get(id(parent)), ".data"
    if isinstance(parent, cst.Attribute) and parent.value is node:
        attr = parent.attr.value
        grand = flat.parent.get(id(parent))
        called = isinstance(grand, cst.Call) and grand.func is parent
        if attr in known.METADATA_ATTRS or attr in _DS_ATTRS:
            return META, f".{attr}"  # ZeRO-3's own attributes describe the full parameter
        if not called and attr.startswith("_") and not attr.startswith("__"):
            return META, f".{attr}"  # `p._forward_counter -= 1`: a library's bookkeeping kept on the parameter object
        if not called and attr.startswith(("is_", "has_")):
            return META, f".{attr}"  # `param.is_tied`, `p.is_leaf`: a flag on the parameter object, not its values
        if not data and isinstance(grand, cst.AssignTarget) and grand.target is parent:
            return META, f".{attr} = ..."  # `p.shared = True`: a Python attribute on the parameter object
        if called and (attr.startswith("new_") or attr in ("new", "get_device") or (attr == "type" and not grand.args)):
            # p.new_zeros(n), the legacy p.new(n): a fresh tensor of p's dtype and device; p.type(): a name
            return META, f".{attr}()"
        if attr in known.SIZE_ATTRS:
            return (CHECK, f".{attr}") if _zero3_probe(flat, parent) else (SIZE, f".{attr}")
        if attr in known.SIZE_METHODS and called:
            return (CHECK, f".{attr}()") if _zero3_probe(flat, grand) else (SIZE, f".{attr}()")
        if called and (known.INPLACE_METHOD.match(attr) or attr == "materialize"):
            # (`materialize(shape)` gives a lazy layer's `UninitializedParameter` its storage: a write)
            return WRITE, f"{data}.{attr}()"
        if called and (attr in _VIEWS and not grand.args or attr in _SHAPED_VIEWS):
            # `p.detach().zero_()`, `trunc_normal_(w.view([w.shape[0], -1]))`: written through the view
            view_use, view_detail = usage(index, flat, grand)
            if view_use in (WRITE, INIT):
                return view_use, f"{data}.{attr}(){view_detail}"
        return READ, f"{data}.{attr}"
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        if data:
            return WRITE, f"{data} = ..."
        if _of_a_module(node) and _new_parameter(index, flat.parent.get(id(parent))):
            return WRITE, REPLACED  # a fresh tensor in its place: the values written are unpartitioned
        return ASSIGN, " = ..."
    if isinstance(parent, cst.AugAssign) and parent.target is node:
        return WRITE, f"{data} {code_of(parent.operator).strip()} ..."  # `w.data += ...`
    if isinstance(parent, cst.Subscript) and parent.value is node:
        holder = flat.parent.get(id(parent))
        if isinstance(holder, (cst.AssignTarget, cst.AugAssign)) and holder.target is parent:
            if type(node) is cst.Name and _keyed_by_name(parent):
                # `group["lr"] = lr` of a local: an entry of a mapping, no tensor is indexed so (not
                # `self.params_dict["bin_centers"] = c`, a ParameterDict's entry set)
                return META, '["..."] = ...'
            return WRITE, f"{data}[...] = ..."
        view_use, view_detail = usage(index, flat, parent)  # `p[a:b].data.zero_()` writes through a view
        if view_use in (WRITE, INIT):
            return view_use, f"{data}[...]{view_detail}"
        return READ, f"{data}[...]"
    if isinstance(parent, cst.Arg):
        call = flat.parent.get(id(parent))
        name = call_name(call) if isinstance(call, cst.Call) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.args:
            if call.func.attr.value in _DTYPE_DEVICE_OF_ARG and call.args[0] is parent:
                return META, f" as `.{call.func.attr.value}()` argument"  # x.to(p): p's dtype and device only
        if name:
            qualified = name if name.startswith(".") else index.qualify(name)
            last = qualified.rsplit(".", 1)[-1]
            if last in _GUARD_CALLS:
                return GUARD, f"{last}()"
            if last in _CHECK_CALLS:
                return CHECK, f"{last}()"
            if last == "len" or last.endswith("_like") and qualified.startswith("torch.") and call.args[0] is parent:
                return SIZE, f"{last}()"  # (`torch.randn_like(p)`: a tensor of p's shape, dtype and device)
            if qualified.startswith(known.INIT_PREFIXES) or (name.startswith("init.") and last.endswith("_")):
                return INIT, f"{qualified}()"
            if "." not in name and (name in nested_defs(index, flat) or name in index.skeleton.functions):
                # A function we can read: its body decides, not its name.
                if _callee_writes(index, flat, call, parent, name):
                    return WRITE, f"{data} passed to `{name}()`, which writes it in place"
                return READ, data
            if not name.startswith(".") and _callee_writes(index, flat, call, parent, name):
                return WRITE, f"{data} passed to `{name}()`, which writes it in place"  # imported, read from its file
            if _inplace_initialiser(index, call, parent, name, last) or _init_callable(call, parent, last):
                return INIT, f"{qualified}()"
            if _produced_callable(index, flat, call, parent, name):
                return INIT, f" passed to `{name}()`, a callable a factory made, called for its effect"
        elif isinstance(call, cst.Call) and isinstance(call.func, cst.Call) and _sole_effect(flat, call, parent):
            made = call_name(call.func)
            return INIT, f" passed to the callable `{made}()` returns, called for its effect"
        return READ, data
    if isinstance(parent, cst.Element):  # GatheredParameters([p, q]): each element is gathered
        holder = flat.parent.get(id(flat.parent.get(id(parent))))
        call = flat.parent.get(id(holder)) if isinstance(holder, cst.Arg) else None
        name = call_name(call) if isinstance(call, cst.Call) else None
        if name and name.rsplit(".", 1)[-1] in _GUARD_CALLS:
            return GUARD, f"{name.rsplit('.', 1)[-1]}()"
        if _grouped_for_flags(index, flat, parent):
            return META, " grouped for its `requires_grad` flag"
    if isinstance(parent, cst.ComparisonTarget):
        if isinstance(parent.operator, (cst.Is, cst.IsNot)):
            return CHECK, " is None"
    if isinstance(parent, cst.Comparison) and parent.comparisons:
        if isinstance(parent.comparisons[0].operator, (cst.Is, cst.IsNot)):
            return CHECK, " is None"
    return READ, data


def _keyed_by_name(subscript: cst.Subscript) -> bool:
    """Is the subscript a string key (`group["lr"]`, `d[f"{k}_w"]`): a mapping's entry, never a tensor's items?"""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return False
    return isinstance(subscript.slice[0].slice.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _grouped_for_flags(index: ModelIndex, flat: Flat, element: cst.Element) -> bool:
    """Is the parameter an element of a container literal (nested lists too) bound to a local that is only handed,
    whole or sliced, to functions of the method or the file that use what they are given for flags alone
    (`groups = [[self.conv1, self.pos], ...]`; `_unlock(groups[-n:])` setting `requires_grad`)? Grouping a
    parameter object to set its flags reads no value of it."""
    node: cst.CSTNode = element
    while isinstance(node, cst.Element) or isinstance(node, (cst.List, cst.Tuple)):
        node = flat.parent.get(id(node))  # type: ignore[assignment]
        if node is None:
            return False
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)):
        return False
    local = node.targets[0].target.value
    uses = [n for n, _ in flat.nodes if type(n) is cst.Name and n.value == local and n is not node.targets[0].target]
    if not uses:
        return False
    for use in uses:
        expr: cst.CSTNode = use
        holder = flat.parent.get(id(expr))
        while isinstance(holder, cst.Subscript) and holder.value is expr:  # `groups[-n:]`
            expr, holder = holder, flat.parent.get(id(holder))
        call = flat.parent.get(id(holder)) if isinstance(holder, cst.Arg) and holder.keyword is None else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
            return False
        found = resolve_function(index, flat, call.func.value)
        position = next((i for i, a in enumerate(call.args) if a is holder), None)
        if found is None or position is None:
            return False
        params = [p.name.value for p in (*found[1].params.posonly_params, *found[1].params.params)]
        if position >= len(params) or not _flags_only(found[1], params[position]):
            return False
    return True


_FLAG_ATTRS = frozenset({"requires_grad"})
_WALKS_FOR_FLAGS = frozenset({"parameters", "named_parameters", "modules", "children", "named_modules"})


def _flags_only(func: cst.FunctionDef, param: str) -> bool:
    """Does `func` use its parameter `param` (and the items it walks from it) for flags alone: `isinstance(x, ..)`,
    `x.requires_grad = ...`, `x.requires_grad_()`, `for g in x` / `for p in x.parameters()`, or handing it back to
    `func` itself?"""
    flat = flatten(func)
    names = {param}
    for node, _ctx in flat.nodes:  # the loop names over what it walks
        if type(node) is cst.For and isinstance(node.target, cst.Name):
            walked = node.iter
            if isinstance(walked, cst.Call) and isinstance(walked.func, cst.Attribute) and not walked.args:
                walked = walked.func.value if walked.func.attr.value in _WALKS_FOR_FLAGS else walked
            if isinstance(walked, cst.Name) and walked.value in names:
                names.add(node.target.value)
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Name or node.value not in names:
            continue
        parent = flat.parent.get(id(node))
        if isinstance(parent, cst.For) and (parent.target is node or parent.iter is node):
            continue
        if isinstance(parent, cst.Param):
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node:
            grand = flat.parent.get(id(parent))
            if parent.attr.value in _FLAG_ATTRS and isinstance(grand, cst.AssignTarget):
                continue  # `x.requires_grad = True`
            if isinstance(grand, cst.Call) and grand.func is parent and (
                parent.attr.value == "requires_grad_" or parent.attr.value in _WALKS_FOR_FLAGS
            ):
                continue  # `x.requires_grad_(True)`, `for p in x.parameters()`
            return False
        if isinstance(parent, cst.Arg):
            call = flat.parent.get(id(parent))
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
                if call.func.value == "isinstance" and call.args[0] is parent:
                    continue
                if call.func.value == func.name.value:
                    continue  # recursion: the same judgement
        return False
    return True


# Methods that take only the dtype and device of a tensor argument: `x.to(p)`, `x.type_as(p)`.
_DTYPE_DEVICE_OF_ARG = frozenset({"to", "type_as"})
_DS_ATTRS = frozenset({"ds_numel", "ds_shape", "ds_id", "ds_status", "ds_tensor"})


def bulk_written(index: ModelIndex, flat: Flat, node: cst.CSTNode) -> str | None:
    """The in-place list operation `node` (a list of tensors) is the first argument of, when it is one:
    `torch._foreach_mul_(params, m)` writes every tensor of `params`."""
    arg = flat.parent.get(id(node))
    call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    if not isinstance(call, cst.Call) or not call.args or call.args[0] is not arg or arg.keyword is not None:
        return None
    name = call_name(call)
    if not name or not index.qualify(name).startswith("torch.") or not known.FOREACH_INPLACE.match(name.rsplit(".", 1)[-1]):
        return None
    return name


def _of_a_module(node: cst.CSTNode) -> bool:
    """`self.linear.weight`, `layer.weight`: an attribute of a module held or handed here, not one of `self`'s own
    (`self.tokens = nn.Parameter(...)` makes the module's own parameter) nor an item put in a container."""
    return isinstance(node, cst.Attribute) and not (isinstance(node.value, cst.Name) and node.value.value == "self")


def _new_parameter(index: ModelIndex, assign: cst.CSTNode | None) -> bool:
    """`<module>.weight = nn.Parameter(t)`: the attribute is bound to a parameter made here, not tied to another
    module's (`head.weight = embed.weight`). Under ZeRO-3 the module it replaces was partitioned; the new one is
    a full tensor that no hook gathers or partitions, so the assignment writes the parameter's values."""
    if type(assign) is not cst.Assign or type(assign.value) is not cst.Call:
        return False
    qualified = index.qualify(call_name(assign.value) or "")
    return qualified.startswith("torch.") and qualified.endswith(".Parameter")


def _zero3_probe(flat: Flat, node: cst.CSTNode | None) -> bool:
    """Is this size query part of the ZeRO-3 detection idiom (`p.numel() == 0 and hasattr(p, "ds_numel")`,
    `getattr(p, "ds_numel", p.numel())`)? The enclosing expression statement or test mentions a `ds_*` name."""
    current = node
    for _ in range(8):
        current = flat.parent.get(id(current)) if current is not None else None
        if current is None or isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
        if isinstance(current, (cst.BooleanOperation, cst.Call)):
            for inner in walk(current):
                if isinstance(inner, cst.SimpleString) and inner.evaluated_value in _DS_ATTRS:
                    return True
                if isinstance(inner, cst.Attribute) and inner.attr.value in _DS_ATTRS:
                    return True
    return False


def writes_module_params(index: ModelIndex, flat: Flat, fn: cst.BaseExpression) -> str | None:
    """The function a callable `fn` runs (nested in `flat`, of this file or imported), when it writes its module
    argument's parameters: named (`init_fn`), or wrapped in a `partial` or a lambda (`partial(init_fn, std=s)`,
    `lambda m: init_fn(m, s)`), as `model.apply` is handed one."""
    name = dotted(fn)
    if name is None and not isinstance(fn, cst.Attribute) and (inner := wrapped_callee(fn)) is not None:
        name = dotted(inner)
    found = resolve_function(index, flat, name) if name is not None else None
    if found is None and name is not None:
        found = _bound_own_method(index, flat, name)
    if found is None:
        return None
    owner, func = found
    return name if any(effects & {WRITE, INIT} for effects in module_arg_effects(owner, func).values()) else None


def _bound_own_method(index: ModelIndex, flat: Flat, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The method of the function's own plain class a bound method `self.orth` names (`model.apply(self.orth)` in
    an initialiser object): run with each module as its argument after `self`."""
    receiver, _, method = name.partition(".")
    owner = _flat_owner(index, flat) if receiver == "self" and method and "." not in method else None
    found = owner.inherited_method(method) if owner is not None and not owner.is_module else None
    if found is None or found.node is None or not found.node.params.params:
        return None
    return found.index, found.node


def resolve_function(index: ModelIndex, flat: Flat | None, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The function a call names, with the index of its file: nested in `flat`, of this file, or imported; or
    the method of a plain object of the program it is called on (`self.lagged.add`, `ema.update` of a local
    bound to `Ema(model)`: `plain.named_instances`, in `flat` and the class whose method `flat` is), and its
    `__call__` when the object itself is called (`self.initializer(model)` with `self.initializer = Init(std)`)."""
    if "." not in name:
        func = nested_defs(index, flat).get(name) if flat is not None else None
        if func is not None:
            return index, func
        info = index.function_info(name)
        if info is not None and info.node is not None:
            return index, info.node
    elif flat is not None and (method := _plain_method(index, flat, name) or _child_method(index, flat, name)):
        return method
    if flat is not None and "." not in name and (default := _default_function(flat, name)) is not None:
        return resolve_function(index, None, default)  # `hidden_init(fc.weight)` for `hidden_init=ptu.fanin_init`
    if flat is not None and (called := _called_object(index, flat, name)) is not None:
        return called
    if flat is not None and name.startswith("self.") and (handed := _handed_callable(index, flat, name)) is not None:
        return handed
    head, _, rest = name.partition(".")
    local = _local_imports(index, flat).get(head) if flat is not None else None
    # `from mmengine.runner.checkpoint import load_state_dict` inside the function: the name it binds there
    external = index.external_function(
        index.qualify(name) if local is None else f"{local}.{rest}" if rest else local
    )
    if external is None or external[1].node is None:
        return _plain_constructor(index, name) or _class_function(index, flat, name)
    return external[0], external[1].node


def _lists_parameters_of(index: ModelIndex, call: cst.Call, names: set[str]) -> str | None:
    """The argument whose parameters `call` hands back, when it calls a function of the program that returns its
    first parameter's parameters (`def named_params_and_buffers(module): return list(module.named_parameters()) +
    list(module.named_buffers())`), handed an argument of the summarised function first."""
    if not call.args or call.args[0].keyword is not None or not isinstance(call.args[0].value, cst.Name) \
            or call.args[0].value.value not in names:
        return None
    name = call_name(call)
    found = resolve_function(index, None, name) if name and not name.startswith(".") else None
    if found is None:
        return None
    func = found[1]
    first = next(iter((*func.params.posonly_params, *func.params.params)), None)
    if first is None:
        return None
    walks = re.compile(rf"(?<![\w.]){re.escape(first.name.value)}\.(?:named_)?parameters\(")
    if any(type(node) is cst.Return and node.value is not None and walks.search(code_of(node.value, limit=400))
           for node in walk_own(func.body)):
        return call.args[0].value.value
    return None


def _default_function(flat: Flat, name: str) -> str | None:
    """The function a parameter of the flattened function defaults to, as written (`hidden_init=ptu.fanin_init`):
    what a call of the parameter runs unless the caller hands another."""
    root = flat.nodes[0][0] if flat.nodes else None
    if type(root) is not cst.FunctionDef:
        return None
    for param in (*root.params.posonly_params, *root.params.params, *root.params.kwonly_params):
        if param.name.value == name and param.default is not None:
            written = dotted(param.default)
            return written if written and written not in ("None", "True", "False") else None
    return None


def _class_function(index: ModelIndex, flat: Flat | None, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The static or class method `Class.method(...)` runs, `Class` a class of this file or one it imports
    (`MasterOptimizer.build_fp32_params(params)`, `fp16.MasterOptimizer.build(params)`), or `cls.method(...)` in a
    class method of this file's classes; or a base's constructor called on `self` by its class (`MovingAvg.__init__(self,
    self.network)`: its arguments fill its parameters from `self` on)."""
    owner, _, method = name.rpartition(".")
    if owner == "cls" and flat is not None:
        cls = _flat_owner(index, flat)
    elif not owner or not owner.rpartition(".")[2][:1].isupper():
        return None
    else:
        cls = index.classes.get(owner)
    found = (index, cls) if cls is not None else index.external(index.qualify(owner))
    target = found[1].inherited_method(method) if found is not None else None
    if target is None or target.node is None or not (_STATIC_DEF.match(target.text.lstrip()) or method == "__init__"):
        return None
    return target.index, target.node


# A method called on its class, not on an object: `@staticmethod` or `@classmethod` above its `def`.
_STATIC_DEF = re.compile(r"@(?:staticmethod|classmethod)\b")



# Calls that return something other than the module they are given.
_NOT_PASSED_ON = frozenset(
    {"len", "list", "tuple", "print", "str", "repr", "isinstance", "id", "type", "sum", "hasattr", "getattr",
     "sorted", "dict", "set", "iter", "next", "vars", "callable"}
)  # fmt: skip


def returns_argument(index: ModelIndex, flat: Flat | None, call: cst.Call) -> bool:
    """Is `call` one of a function given the module first that returns it (or what wraps it): an unreadable one,
    taken to (`accelerator.unwrap_model(model)`), or one of this file or another that hands its first argument back
    (`def unwrap(m): return m.module if hasattr(m, "module") else m`, `choices.returned_parameters`)? Not a builtin,
    a class, a deep copy or another readable function."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return False
    name = call_name(call) or ""
    last = name.rsplit(".", 1)[-1]
    if not last or last in _NOT_PASSED_ON or not last[:1].islower():
        return False
    found = resolve_function(index, flat, name)
    if found is not None:
        owner, node = found
        return parameter_for(node, call, 0) in returned_parameters(owner, node.name.value)
    return index.qualify(name) not in known.DEEP_COPY

def _plain_constructor(index: ModelIndex, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The `__init__` a call building a plain object of the program runs (`Ema(model)`, `ema.Ema(model)`)."""
    classes = plain_class(index, name)
    init = classes[0].inherited_method("__init__") if classes else None
    return (init.index, init.node) if init is not None and init.node is not None else None


def _called_object(index: ModelIndex, flat: Flat, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The `__call__` a plain object of the program runs when called: a local bound to one (`init = Init(std)`,
    an argument annotated `init: Init`, an item of a list of them), or `self.<name>` where a plain class of this
    file sets that attribute (`self.initializer = Init(std)`)."""
    if "." in name and (name.count(".") != 1 or not name.startswith("self.")):
        return None
    if not _bound_in_file(index, name):
        return None
    return _plain_method(index, flat, f"{name}.__call__")


def _handed_callable(index: ModelIndex, flat: Flat, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """What `self.<name>(...)` runs when the class keeps a callable its constructor is handed (`self.initialiser =
    initialiser`) and a subclass of the file hands that constructor a function of its own (`def initialiser(module):
    ...; super().__init__(initialiser)`): of those functions, one that writes its module argument, else the first."""
    attribute = name[len("self."):]
    owner = _flat_owner(index, flat) if "." not in attribute else None
    if owner is None or f"self.{attribute} = " not in owner.text:
        return None
    found = _constructor_callables(index, owner).get(attribute, ())
    writes = next((f for f in found if any(e & {WRITE, INIT} for e in module_arg_effects(index, f).values())), None)
    return (index, writes or found[0]) if found else None


@memoised
def _constructor_callables(index: ModelIndex, cls: ClassInfo) -> dict[str, tuple[cst.FunctionDef, ...]]:
    """Attribute -> the functions the subclasses of the file hand the constructor argument `cls` keeps there (`self.X =
    x` in `__init__`), through `super().__init__(...)` or `Base.__init__(self, ...)`: a function defined in the
    subclass's constructor or in the file."""
    init = cls.method("__init__")
    node = init.node if init is not None and init.owner is cls else None
    if node is None:
        return {}
    params = [p.name.value for p in node.params.params][1:]  # (after `self`)
    kept: dict[str, str] = {}  # argument -> the attribute keeping it
    for stmt in walk(node.body):
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, cst.Name):
            path = access_path(stmt.targets[0].target)
            if path is not None and path.root == "self" and len(path.parts) == 1 and stmt.value.value in params:
                kept[stmt.value.value] = path.parts[0]
    found: dict[str, list[cst.FunctionDef]] = {}
    for sub in index.classes.values():
        sub_init = sub.method("__init__") if sub is not cls and cls in sub.mro else None
        sub_node = sub_init.node if sub_init is not None and sub_init.owner is sub and kept else None
        if sub_node is None:
            continue
        defs = {n.name.value: n for n in walk(sub_node.body) if isinstance(n, cst.FunctionDef)}
        for call in walk(sub_node.body):
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "__init__"):
                continue
            through_super = isinstance(call.func.value, cst.Call) and call_name(call.func.value) == "super"
            args = list(call.args) if through_super else list(call.args)[1:]  # (`Base.__init__(self, ...)`)
            for position, arg in enumerate(args):
                if arg.star:
                    break
                argument = arg.keyword.value if arg.keyword is not None else (
                    params[position] if position < len(params) else None
                )
                attribute = kept.get(argument or "")
                value = dotted(arg.value)
                if attribute is None or value is None:
                    continue
                func = defs.get(value)
                if func is None and (info := index.function_info(value)) is not None:
                    func = info.node
                if func is not None:
                    found.setdefault(attribute, []).append(func)
    return {attribute: tuple(funcs) for attribute, funcs in found.items()}


@memoised
def _bound_in_file(index: ModelIndex, name: str) -> bool:
    """Text pre-filter of `_called_object`: `name` assigned a call's result or an item somewhere in the file, or
    annotated (`init = Init(std)`, `init = self.inits[i]`, `init: Init`), or a loop's target; for `self.<name>`,
    assigned in a class that is no module."""
    if name.startswith("self."):
        return any(not cls.is_module and _followed_by(cls.text, name, _ASSIGNED) for cls in index.classes.values())
    return _followed_by(index.source, name, _BOUND) or name in _loop_targets(index)


# What follows a name that is assigned (`self.x = ...`, `self.x: T = ...`), and a local bound to a call's result or an
# item, or annotated (`init = Init(std)`, `init = self.inits[i]`, `init: Init`).
_ASSIGNED = re.compile(r"\s*(?::[^=\n]*)?=[^=]")
_BOUND = re.compile(r"\s*(?:=\s*[\w.]+\s*[(\[]|:\s*[\w.]+\s*[,)=\n])")
_LOOP_TARGET = re.compile(r"for(?<!\wfor)\s+(?:\w+\s*,\s*)?(\w+)\s+in\b")  # (the word first, then the look-behind: a `\b` first is tried at every position)


def _followed_by(text: str, name: str, tail: re.Pattern[str]) -> bool:
    """Does `name`, where a word starts in `text`, have `tail` right after it somewhere?"""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")) and tail.match(text, end):
            return True
        at = text.find(name, end)
    return False


@memoised
def _loop_targets(index: ModelIndex) -> frozenset[str]:
    """The names the file's `for` loops bind (the last of a pair: `for k, v in ...`)."""
    return frozenset(_LOOP_TARGET.findall(index.source))


def _plain_method(index: ModelIndex, flat: Flat, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The method `receiver.method(...)` runs when the receiver is one plain class's object (`named_instances`)."""
    receiver, _, method = name.rpartition(".")
    if receiver.partition(".")[0] in index.imports or receiver == "self":
        return None
    classes = named_instances(index, _flat_owner(index, flat) if receiver.startswith("self.") else None, flat, receiver)
    found = classes[0].inherited_method(method) if len(classes) == 1 else None
    if found is None or found.node is None:
        return None
    return found.index, found.node


def _child_method(index: ModelIndex, flat: Flat, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The method `self.<child>.<method>(...)` runs on a child module of one class the class of `flat` built
    (`self.ema.update_parameters(self.model)` for `self.ema = EMAWeights(self.model)`): what it does to the
    modules it is handed is read like a function's."""
    receiver, _, method = name.rpartition(".")
    if not receiver.startswith("self.") or receiver.count(".") != 1 or method.startswith("__") or method == "forward":
        return None
    owner = _flat_owner(index, flat)
    member = facts_of(owner).members.get(receiver[5:]) if owner is not None and owner.is_module else None
    if member is None or member.kind != Kind.MODULE or len(member.classes) != 1:
        return None
    ref = member.classes[0]
    info = index.classes.get(ref)
    found = (index, info) if info is not None else index.external(ref)
    target = found[1].inherited_method(method) if found is not None else None
    return (target.index, target.node) if target is not None and target.node is not None else None


def own_helper_effects(index: ModelIndex, flat: Flat, call: cst.Call) -> list[tuple[int, frozenset[str]]]:
    """`argument_effects` of `self.<method>(...)`, a method of the module class of this file whose method `flat` is,
    read like a function (`self._update_ema(self.target.parameters(), self.net.parameters())`, called by the
    training method that keeps `self.target`)."""
    found = _own_helper(index, flat, call_name(call) or "")
    return _effects_of(found, call, False) if found is not None else []


def _own_helper(index: ModelIndex, flat: Flat, name: str) -> tuple[ModelIndex, cst.FunctionDef] | None:
    """The method `self.<method>(...)` runs, of a module class of this file whose method `flat` is, when it is handed
    what it works on: read like a function. (Not one taking nothing but `self`, whose effects on the module `own`
    reads, nor forward.)"""
    receiver, _, method = name.partition(".")
    if receiver != "self" or "." in method or method.startswith("__") or method == "forward":
        return None
    owner = _flat_owner(index, flat)
    target = owner.inherited_method(method) if owner is not None and owner.is_module else None
    if target is None or target.node is None or target.index is not index:
        return None
    params = target.node.params
    return (index, target.node) if len((*params.posonly_params, *params.params)) > 1 else None


@memoised
def _flat_owner(index: ModelIndex, flat: Flat) -> ClassInfo | None:
    """The class of this file whose method `flat` is (None for a function, a nested def or module code)."""
    root = flat.nodes[0][0] if flat.nodes else None
    if type(root) is not cst.FunctionDef:
        return None
    for cls in index.classes.values():
        span = cls.span.methods.get(root.name.value)
        if span is not None and index.method_info(cls, span).node is root:
            return cls
    return None


@memoised
def _local_imports(index: ModelIndex, flat: Flat) -> dict[str, str]:
    """Names a function binds by an import in its own body -> what the last such import names (`plain.local_imports`);
    once per function."""
    return {name: targets[-1] for name, targets in local_imports(index, flat).items()}


@memoised
def nested_defs(index: ModelIndex, flat: Flat) -> dict[str, cst.FunctionDef]:
    """Functions defined inside a flattened function, by name (once per function), and lambdas bound to a local there
    (read as a def returning the lambda's body); not the function itself (a method `update_average(self)` calling the
    free function `update_average(a, b)` calls no nested def)."""
    found = {n.name.value: n for n, _ in flat.nodes if type(n) is cst.FunctionDef and id(n) in flat.parent}
    for node, _ctx in flat.nodes:  # `npa = lambda m: sum(p.numel() for p in m.parameters())`: a def by another name
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and type(node.value) is cst.Lambda:
            lam = node.value
            found.setdefault(node.targets[0].target.value, cst.FunctionDef(
                name=node.targets[0].target, params=lam.params,
                body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Return(value=lam.body)])])))
    return found


# What a function may do to a module it is given, besides writing (WRITE/INIT) and sizing (SIZE) its parameters.
REPARAMETRIZES = "reparametrize"  # weight_norm(module): new parameters derived from the current weights
DEEPCOPIES = "deepcopy"  # copy.deepcopy(module): a copy of whatever the module holds now
STATES = "state dict"  # module.state_dict() / module.load_state_dict(sd): the whole state, read or loaded
CLIPS = "clip"  # clip_grad_norm_(module.parameters()) or of a parameter iterable given: the gradients clipped
READS = "read"  # the values of the items of a parameter iterable given, computed with (`torch.flatten(v)`)
GRADS = "grad read"  # `p.grad.norm()` of every parameter of a module given: gradients measured, as clipping does
GRAD_WRITES = "grad write"  # `p.grad = delta` for the parameters of a module given: gradients the engine never reads
RUNS = "run"  # `module(x)`, `module.forward(x)` of a module argument: its forward, outside any engine's hooks
WRITTEN = "written"  # `t.copy_(x)` of an argument itself: a tensor handed in written in place (a parameter an
# argument's walk yields handed to the helper writes that argument's parameter; a module has no such method)
CALLS = "calls "  # + a method name: `module.encode_text(x)` of an argument, a method other than forward run on it
COMPUTES = "computes "  # + a path (`proj.weight`): what a module argument holds there computed with (`x @ m.proj.weight`)
# `module.apply(init_fn)` with `init_fn` writing what it visits: a write on the built model, but not under
# `zero.Init`, whose `apply` gathers each module first (so not WRITE/INIT: the caller's scope decides)
APPLIES = "apply"


def _grad_effect(index: ModelIndex, flat: Flat, node: cst.CSTNode, ctx: Ctx) -> str | None:
    """What the code does with `node.grad`: GRADS when it computes with it (`p.grad.norm()`, `p.grad * s`,
    `torch.norm(p.grad)`), GRAD_WRITES when it sets it (`p.grad = delta`, `p.grad.mul_(s)`) or clears it for the
    parameters a test picks (`if "last_layer" in n: p.grad = None`); None when it only tests, clears or sizes it
    (`p.grad is not None`, `p.grad = None`, `p.grad.zero_()`)."""
    grad = flat.parent.get(id(node))
    if not isinstance(grad, cst.Attribute) or grad.value is not node or grad.attr.value != "grad":
        return None
    if gradient_write(flat, grad) is not None or gradient_cancelled(flat, grad, ctx) is not None:
        return GRAD_WRITES
    holder = flat.parent.get(id(grad))
    if isinstance(holder, cst.Arg) and call_name(flat.parent.get(id(holder))) in ("isinstance", "id", "type"):
        return None
    if isinstance(holder, (cst.BinaryOperation, cst.Subscript)) or isinstance(holder, cst.Arg):
        return GRADS
    return GRADS if gradient_read(index, flat, grad) is not None else None


def _parameters_by_name(value: cst.BaseExpression, names: set[str]) -> str | None:
    """The argument whose parameters `value` maps by name (`OrderedDict(m.named_parameters())`, `dict(...)`), else
    None."""
    if not (isinstance(value, cst.Call) and len(value.args) == 1 and value.args[0].keyword is None):
        return None
    if (call_name(value) or "").rsplit(".", 1)[-1] not in ("dict", "OrderedDict"):
        return None
    walk_call = value.args[0].value
    if isinstance(walk_call, cst.Call) and isinstance(walk_call.func, cst.Attribute) and not walk_call.args \
            and walk_call.func.attr.value == "named_parameters" and isinstance(walk_call.func.value, cst.Name):
        return walk_call.func.value.value if walk_call.func.value.value in names else None
    return None


@memoised(cycle={})  # a function that hands its argument to itself: no answer from the cycle
def module_arg_effects(index: ModelIndex, func: cst.FunctionDef) -> dict[str, frozenset[str]]:
    """What `func` does to each module it is given, by parameter name: a summary read once per function.

    The effects are WRITE/INIT (`nn.init.xavier_(m.weight)`, `init_fn(m.weight)`, `p.data.zero_()` for
    `p` in `m.parameters()`, or for `p` in a parameter iterable given), SIZE (`m.weight.shape[0]`,
    `p.numel()`), REPARAMETRIZES (`weight_norm(m)`), DEEPCOPIES (`copy.deepcopy(m)`), STATES
    (`dst.load_state_dict(src.state_dict())`), CLIPS (`clip_grad_norm_(params, c)`) and READS (the items of a
    parameter iterable given, computed with), also through the functions it hands the module on to
    (`return weight_norm(module)` two helpers down, a lambda in a dict of them). `index` is the index of the
    file `func` is in.
    """
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)]
    if isinstance(func.params.star_arg, cst.Param):
        params.append(func.params.star_arg.name.value)  # `def init(*modules)`: walked like a list given
    names = set(params) - {"self", "cls"}
    inner = flatten(func)
    aliases: dict[str, str] = {}  # for m in module.modules(): m -> module
    items: dict[str, str] = {}  # for p in params: p -> params (an iterable given)
    walked: dict[str, cst.Call] = {}  # params = model.parameters(): params -> the walk of a module argument
    param_items: set[str] = set()  # the aliases that walk parameters (`for p in m.parameters()`), not modules
    tensors: dict[str, str] = {}  # w = up.weight.data: w -> up (a parameter of the argument, held by a local)
    # `ema_params = OrderedDict(ema.named_parameters())`: ema_params -> ema (its parameters by name; `ema_params[n]`
    # is one of them, `for n, p in ema_params.items()` walks them)
    by_name: dict[str, str] = {}
    for node, _ctx in inner.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if (owner := _parameters_by_name(node.value, names)) is not None:
                by_name[node.targets[0].target.value] = owner
            value = same_items(node.value)
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                walked[node.targets[0].target.value] = value
            unwrapped = _unwrapped_argument(node.value, names) if not isinstance(node.value, cst.Name) else None
            if unwrapped is None:
                # `prev = get_op_by_name(module, name)`, `layers = [module.get_submodule(n) for n in names]`: a
                # part of the argument (or a list of parts), written through as the argument's
                unwrapped = _part_of_argument(index, inner, node.value, names)
            if unwrapped is None:
                unwrapped = _child_of_argument(node.value, names, aliases)
            if unwrapped is None:
                unwrapped = _handed_back(index, inner, node.value, names)  # `unwrapped = unwrap_model_fn(model)`
            if unwrapped is not None and _bound_once(inner, node.targets[0].target.value):
                # `target = model.module if wrapped(model) else model`: the module itself
                aliases[node.targets[0].target.value] = unwrapped
            held = _parameter_tensor_of(index, node.value, names)
            if held is not None and _bound_once(inner, node.targets[0].target.value):
                tensors[node.targets[0].target.value] = held  # `w = up.weight.data`: that parameter's storage
        if type(node) is cst.For or type(node) is cst.CompFor:
            for target, it in loop_items(node.target, node.iter):
                walked_map = mapping_walked(it)
                if isinstance(target, cst.Name) and isinstance(walked_map, cst.Name) and walked_map is not it \
                        and walked_map.value in by_name:
                    aliases[target.value] = by_name[walked_map.value]  # `for n, p in ema_params.items()`
                    param_items.add(target.value)
                    continue
                if isinstance(it, cst.Name) and it.value in walked:
                    it = walked[it.value]  # `for p in targ_params` after `targ_params = targ.parameters()`
                if isinstance(target, cst.Name) and isinstance(it, cst.Name) and it.value in names:
                    items[target.value] = it.value
                elif isinstance(target, cst.Name) and isinstance(it, cst.Name) and it.value in aliases:
                    items[target.value] = aliases[it.value]  # `for layer in layers`, a list of the argument's parts
                elif isinstance(target, cst.Name) and (root := _listed_parts(it, names)) is not None:
                    items[target.value] = root  # `for layer in (block.a, block.b)`: children of the argument
                if isinstance(target, cst.Name) and isinstance(it, cst.Call) \
                        and (listed := _lists_parameters_of(index, it, names)) is not None:
                    # `for name, tensor in named_params_and_buffers(module)`: a helper listing the argument's
                    # parameters (and buffers), walked as `module.named_parameters()` is
                    aliases[target.value] = listed
                    param_items.add(target.value)
                    continue
                if not (isinstance(target, cst.Name) and isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
                    continue
                owner = it.func.value
                root = (owner.value if owner.value in names else items.get(owner.value)) if isinstance(owner, cst.Name) else None
                if root is None and isinstance(owner, cst.Name) and owner.value not in param_items:
                    root = aliases.get(owner.value)  # `for m in net.modules(): for p in m.parameters(recurse=False)`
                if isinstance(owner, cst.Attribute) and it.func.attr.value in ("parameters", "named_parameters"):
                    held = access_path(owner)  # `for p in m.proj.parameters()`: a child's, part of the argument's
                    root = held.root if held is not None and held.root in names and "[]" not in held.parts else None
                if root is not None and it.func.attr.value in _WALKS:
                    aliases[target.value] = root  # `for m in module.modules()`, also of each `module` in a list given
                    if it.func.attr.value in ("parameters", "named_parameters"):
                        param_items.add(target.value)
    found: dict[str, set[str]] = {}
    for node, ctx in inner.nodes:
        if ctx.guarded:
            continue  # the helper gathers first
        kind = type(node)
        if kind is cst.Attribute:
            path = access_path(node)
            if path is None or not path.parts or path.parts[-1] == "data":
                continue
            owner = path.root if path.root in names else aliases.get(path.root)
            if owner is None:
                owner = items.get(path.root)  # `for layer in reversed(module)`: a child, `layer.weight.data.copy_()`
            if owner is None:
                continue
            if path.parts[-1] not in index.param_names:
                # a name this file registers nowhere (`x @ m.w`: the class's file does): the caller, who knows the
                # class it hands in, tells whether it is a parameter; the whole chain only (not `m.blk` of `m.blk.w`)
                if path.root in names and not _continued(inner, node):
                    use, detail = usage(index, inner, node)
                    if use == READ and computed_with(index, inner, inner.parent.get(id(node)), detail):
                        found.setdefault(owner, set()).add(COMPUTES + ".".join(path.parts))
                continue
            use, detail = usage(index, inner, node)
            if use == READ and _given_callable(inner, node, names):
                use = INIT  # `def init_layer(m, init_fn): init_fn(m.weight)`: an initialiser handed in
            if use in (WRITE, INIT, SIZE):
                found.setdefault(owner, set()).add(use)
            elif use == READ and path.root in names and computed_with(index, inner, inner.parent.get(id(node)), detail):
                found.setdefault(owner, set()).add(COMPUTES + ".".join(path.parts))  # `x @ m.proj.weight.T`
        elif kind is cst.Name and node.value in aliases:
            if isinstance(inner.parent.get(id(node)), (cst.For, cst.CompFor, cst.Tuple)):
                continue
            use, detail = usage(index, inner, node)
            if use in (WRITE, INIT, SIZE):
                found.setdefault(aliases[node.value], set()).add(use)
            elif use == READ and node.value in param_items and not detail.startswith(".grad"):
                if computed_with(index, inner, inner.parent.get(id(node)), detail):
                    found.setdefault(aliases[node.value], set()).add(READS)  # `p.data.clone()` of every parameter
            elif detail.startswith(".grad") and (done := _grad_effect(index, inner, node, ctx)) is not None:
                # `p.grad.norm()` of every parameter: measured gradients, which ZeRO-3 leaves None; `p.grad = d`:
                # set, where the engine never reads them
                found.setdefault(aliases[node.value], set()).add(done)
        elif kind is cst.Subscript and isinstance(node.value, cst.Name) and node.value.value in by_name:
            use, _detail = usage(index, inner, node)  # `ema_params[name].mul_(decay)`: one of its parameters
            if use in (WRITE, INIT):
                found.setdefault(by_name[node.value.value], set()).add(use)
        elif kind is cst.Name and node.value in walked and _walk_owner(walked[node.value], names):
            if bulk_written(index, inner, node):  # `torch._foreach_mul_(params, m)` for `params = list(m.parameters())`
                found.setdefault(_walk_owner(walked[node.value], names), set()).add(WRITE)  # type: ignore[arg-type]
        elif kind is cst.Name and node.value in tensors and (
                _written_in_place(inner, node) or _item_assigned(inner, node)):
            found.setdefault(tensors[node.value], set()).add(WRITE)  # `w[0, 0, i, j] = v`, `w.zero_()`
        elif kind is cst.Name and node.value in names and _written_in_place(inner, node) and not _rebinds(inner, node.value):
            found.setdefault(node.value, set()).add(WRITTEN)  # `tensor.copy_(other)`: the argument itself written
        elif kind is cst.Name and node.value in items:
            parent = inner.parent.get(id(node))
            if isinstance(parent, (cst.For, cst.CompFor, cst.Tuple)):
                continue
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in MODULE_ONLY_METHODS:
                continue  # `for net in nets: net.parameters()`: the items are modules (their walks are judged there)
            use, detail = usage(index, inner, node)
            if use in (WRITE, INIT):
                found.setdefault(items[node.value], set()).add(WRITE)
            elif detail.startswith(".grad"):
                if _grad_effect(index, inner, node, ctx) == GRAD_WRITES:  # `p.grad = g` for `p` of the parameters given
                    found.setdefault(items[node.value], set()).add(GRAD_WRITES)
            elif use == READ and computed_with(index, inner, parent, detail):
                found.setdefault(items[node.value], set()).add(READS)
        elif kind is cst.Call:
            reset = _reset_owner(node, names, aliases, items, param_items)
            if reset is not None:
                found.setdefault(reset, set()).add(INIT)  # `for m in model.children(): m.reset_parameters()`
            if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "state_dict"
                    and state_keys_only(inner, node)):
                _whole_effects(index, node, names, found, aliases)  # (not a state dict read for its keys)
            _run_effects(index, func, node, names, found)
            _method_effects(node, names, found)
            if node.args:
                # a module handed on: an argument itself, or a module a walk of one yields (`for m in
                # model.modules(): init_one(m)`, `for layer in layers: init_layer(layer)`)
                owners = {n: n for n in names} | items | {a: o for a, o in aliases.items() if a not in param_items}
                _call_effects(index, inner, node, owners, found)
                if param_items:  # `self._swap(p_ema, p)` for `p` of `model.parameters()`: a helper writing it
                    _call_effects(index, inner, node, {a: aliases[a] for a in param_items}, found, items_only=True)
                _applied_effects(index, inner, node, owners, found)
    return {name: frozenset(done) for name, done in found.items()}


def _continued(flat: Flat, node: cst.Attribute) -> bool:
    """Is `node` the head of a longer attribute chain (`m.blk` of `m.blk.w`), not a method called on it?"""
    parent = flat.parent.get(id(node))
    if not (isinstance(parent, cst.Attribute) and parent.value is node):
        return False
    grand = flat.parent.get(id(parent))
    return not (isinstance(grand, cst.Call) and grand.func is parent)


def _reset_owner(
    call: cst.Call, names: set[str], aliases: dict[str, str], items: dict[str, str], param_items: set[str],
) -> str | None:
    """The module argument whose parameters `call` sets afresh: its own `reset_parameters()`, or that of a module
    a walk of it yields (`for m in model.children(): m.reset_parameters()`, `for layer in layers: ...`)."""
    func = call.func
    if call.args or not isinstance(func, cst.Attribute) or func.attr.value not in known.TORCH_INITIALISERS:
        return None
    target = func.value
    if not isinstance(target, cst.Name) or target.value in param_items:
        return None
    if target.value in names:
        return target.value
    return aliases.get(target.value) or items.get(target.value)


def _walk_owner(walk_call: cst.Call, names: set[str]) -> str | None:
    """The module argument whose parameters `walk_call` lists (`m.parameters()` for an argument `m`), if any."""
    func = walk_call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("parameters", "named_parameters"):
        if isinstance(func.value, cst.Name) and func.value.value in names:
            return func.value.value
    return None


def _whole_effects(
    index: ModelIndex, call: cst.Call, names: set[str], found: dict[str, set[str]], aliases: dict[str, str] | None = None,
) -> None:
    """A module argument's state read or loaded (`m.state_dict()`), serialised (`m.save_pretrained(d)`, which
    writes its state dict) or pickled whole (`torch.save(m, path)`, `pickle.dump(m, f)`), or its gradients, or
    those of a parameter iterable argument, clipped (`clip_grad_norm_(m.parameters(), c)`, `clip_grad_norm_(params,
    c)`). (A pickled argument that is no module, a config, is told by the caller, who hands no model there.)"""
    func = call.func
    if isinstance(func, cst.Attribute) and (func.attr.value in known.STATE_CALLS or func.attr.value in known.HUB_MIXIN_SAVES):
        if isinstance(func.value, cst.Name) and func.value.value in names:
            found.setdefault(func.value.value, set()).add(STATES)
        elif isinstance(func.value, cst.Name) and aliases and func.value.value in aliases:
            found.setdefault(aliases[func.value.value], set()).add(STATES)  # `target = model.module if ... else model`
        return
    name = call_name(call)
    if name and call.args and call.args[0].keyword is None and index.qualify(name) in known.PICKLERS:
        pickled = call.args[0].value
        if isinstance(pickled, cst.Name) and pickled.value in names:
            found.setdefault(pickled.value, set()).add(STATES)
        return
    target = clipped(call) if name and name.rsplit(".", 1)[-1] in known.CLIP_GRAD else None
    if target is None:
        return
    if isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute) and not target.args:
        if target.func.attr.value == "parameters":
            target = target.func.value
    if isinstance(target, cst.Name) and target.value in names:
        found.setdefault(target.value, set()).add(CLIPS)


def clipped(call: cst.Call) -> cst.BaseExpression | None:
    """The parameters a clip call (`clip_grad_norm_`, `known.CLIP_GRAD`) is handed: its first positional argument
    or its `parameters=` keyword (`clip_grad_norm_(parameters=opt.param_groups[0]["params"], max_norm=c)`)."""
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "parameters":
            return arg.value
    return None


def _run_effects(
    index: ModelIndex, func: cst.FunctionDef, call: cst.Call, names: set[str], found: dict[str, set[str]]
) -> None:
    """A module argument run on an input (`encoder(*inputs)`, `encoder.forward(x)`): annotated as a module,
    named as one or used as one (`holds.module_arguments`), not a callable handed in."""
    target = call.func.value if isinstance(call.func, cst.Attribute) and call.func.attr.value == "forward" else call.func
    if isinstance(target, cst.Call) and (call_name(target) or "").rsplit(".", 1)[-1] == "Sequential" and len(
            target.args) == 1 and isinstance(target.args[0].value, cst.Name):
        target = target.args[0].value  # `nn.Sequential(*cnn_layers)(x)`: a container of the argument's layers, run
    if not call.args or not isinstance(target, cst.Name) or target.value not in names:
        return
    if target.value in module_arguments(index, func):
        found.setdefault(target.value, set()).add(RUNS)


def _method_effects(call: cst.Call, names: set[str], found: dict[str, set[str]]) -> None:
    """A method other than forward called on an argument (`model.encode_text(x)`): `CALLS` + its name. What it
    computes with is the caller's question, who knows the class of the module it hands over."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name) or func.value.value not in names:
        return
    method = func.attr.value
    if method == "forward" or method.startswith("_") or method in known.CONTAINER_METHODS or method in known.SIZE_METHODS:
        return
    found.setdefault(func.value.value, set()).add(CALLS + method)


def state_keys_only(flat: Flat, call: cst.Call) -> bool:
    """Is the state dict `call` takes read for its keys alone (`model.state_dict().keys()`), counted
    (`len(model.state_dict())`) or compared as a set of names (`set(sd)`, `loaded.issuperset(model.state_dict())`)?
    They name the parameters and read none of their values."""
    parent = flat.parent.get(id(call))
    if isinstance(parent, cst.Arg):
        outer = flat.parent.get(id(parent))
        if not (isinstance(outer, cst.Call) and len(outer.args) == 1):
            return False
        if isinstance(outer.func, cst.Attribute):
            return outer.func.attr.value in _KEY_SET_METHODS
        return call_name(outer) in _KEY_READERS
    if isinstance(parent, cst.Attribute) and parent.attr.value == "values":
        return _first_item_placed(flat, flat.parent.get(id(parent)))
    return isinstance(parent, cst.Attribute) and parent.attr.value == "keys"


def _first_item_placed(flat: Flat, values: cst.CSTNode | None) -> bool:
    """Is `values` (`sd.values()`) read for where or in what type its first item lies, and nothing else
    (`next(iter(m.state_dict().values())).device`)?"""
    node = values
    for wrapper in ("iter", "next"):
        arg = flat.parent.get(id(node)) if node is not None else None
        call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
        if not (isinstance(call, cst.Call) and call_name(call) == wrapper and len(call.args) == 1):
            return False
        node = call
    attribute = flat.parent.get(id(node))
    return isinstance(attribute, cst.Attribute) and attribute.attr.value in ("device", "dtype")


# Functions that read a mapping handed to them for its keys alone, and set methods that do the same.
_KEY_READERS = frozenset({"len", "set", "frozenset", "sorted", "list"})
_KEY_SET_METHODS = frozenset({"issuperset", "issubset", "isdisjoint", "union", "intersection", "difference"})


_IDENTITY_TESTS = frozenset({"Is", "IsNot", "In", "NotIn"})  # (names: libcst is loaded only when a file is parsed)


def _local_computed_with(index: ModelIndex, flat: Flat, assign: cst.Assign) -> bool:
    """Is the local `assign` binds (to a parameter) computed with later in the function, before it is rebound?"""
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    for other, _ctx in flat.nodes[flat.position.get(id(assign), 0) + 1:]:
        if type(other) is not cst.Name or other.value != target.value:
            continue
        holder = flat.parent.get(id(other))
        if isinstance(holder, cst.AssignTarget):
            if holder is assign.targets[0]:
                continue  # this very assignment
            return False  # rebound
        if isinstance(holder, cst.Attribute) and holder.value is other:
            call = flat.parent.get(id(holder))
            if not (isinstance(call, cst.Call) and call.func is holder) or holder.attr.value.startswith("is_"):
                continue  # `w.is_leaf`, `w.is_set_to(x)`: what the tensor is, not its values; `w.abs()` computes
        use, detail = usage(index, flat, other)
        if use == READ and not detail.startswith(".grad") and computed_with(index, flat, holder, detail, follow=False):
            return True
    return False


def computed_with(index: ModelIndex, flat: Flat, parent: cst.CSTNode | None, detail: str, follow: bool = True) -> bool:
    """A parameter read for its values: through an operation on it (`v.data`, `v.view(-1)`, as `detail` says), as
    an operand, compared by value (`p == 0`), or handed to a tensor function (`torch.allclose(p, q)`, not
    `torch.nn.utils.*`; einops' `repeat(p, ...)`: `known.TENSOR_FUNCTIONS`); with `follow`, also through a local
    bound to it and then computed with, or handed to a function of the program that computes with it
    (`parameter_computed_with`); not only bound, collected (`groups.append(p)`) or compared by identity."""
    if detail:
        return True
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if isinstance(parent, cst.ComparisonTarget):
        parent = flat.parent.get(id(parent))
    if isinstance(parent, cst.Comparison):  # `(p == 0).sum()`, `p > t`: elementwise, by value (not `is`, not `in`)
        return not any(type(c.operator).__name__ in _IDENTITY_TESTS for c in parent.comparisons)
    if follow and isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return _local_computed_with(index, flat, parent)  # `w = model.enc.weight` ... `w.abs().mean()`
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    if name and _tensor_arithmetic(index, call, name):
        return True  # `ema.mul_(d).add_(p, alpha=1 - d)`, `shadow.lerp_(p, w)`: another tensor computed from it
    if name and _HISTOGRAM.search(name.rsplit(".", 1)[-1]):
        return True  # `writer.add_histogram(name, p, step)`, `wandb.Histogram(p)`: its values binned
    if bool(name) and index.qualify(name).startswith(known.TENSOR_FUNCTIONS) and ".utils." not in name:
        return True
    # `Int8Weight.from_float(module.weight)`, `get_group_qparams(child.weight, n)`: a function of the program (any
    # file), or a static or class method, that computes with the values it is handed there
    if not follow or not name or name.startswith(("self.", ".")) or not isinstance(call, cst.Call):
        return False
    found = resolve_function(index, flat, name)
    if found is None:
        return False
    position = next((i for i, arg in enumerate(call.args) if arg is parent), None)
    param = (
        parent.keyword.value if parent.keyword is not None  # type: ignore[union-attr]
        else parameter_for(found[1], call, position) if position is not None else None
    )
    return param is not None and parameter_computed_with(found[0], found[1], param)


# What a function does only to a module it is handed (`parameter_computed_with`), `NAME` its parameter.
_MODULE_HANDLING = (
    r"\bNAME\.(?:module|parameters|named_parameters|modules|named_modules|children|named_children|state_dict"
    r"|load_state_dict|eval|train|apply|forward)\b|isinstance\(\s*NAME\s*,|\bin\s+NAME\b|(?<![\w.])NAME\("
)


@memoised(cycle=False)
def parameter_computed_with(index: ModelIndex, func: cst.FunctionDef, param: str) -> bool:
    """Does `func` compute with the values of the tensor its parameter `param` is handed (`computed_with` of each of
    its uses, also through the functions it hands the tensor on to: `choose_qparams_affine(w, ...)`)?"""
    text = index.body_text(func)
    if param in ("self", "cls") or param not in text:
        return False
    if re.search(_MODULE_HANDLING.replace("NAME", re.escape(param)), text):
        return False  # (`isinstance(model, DDP)`, `model.module`, `for v in model`: a module handed, not a tensor)
    flat = flatten(func)
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Name or node.value != param:
            continue
        parent = flat.parent.get(id(node))
        if isinstance(parent, (cst.Param, cst.AssignTarget, cst.Tuple)) or (
                isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node):
            continue
        use, op = usage(index, flat, node)
        if use == READ and not _PARTITION_METADATA.match(op) and computed_with(index, flat, parent, op):
            return True
    return False


# DeepSpeed's own metadata of a partitioned parameter (`p.ds_numel`, `p.partition_numel()`): no values read.
_PARTITION_METADATA = re.compile(r"\.(?:ds_\w+|partition_numel|partitioned_size)\b")


# Loggers that bin a tensor's values (TensorBoard's `add_histogram`, `wandb.Histogram`, `log_histogram`).
_HISTOGRAM = re.compile(r"histogram", re.I)
# Tensor methods that compute with their argument's values (besides every in-place method, `x.copy_(p)`).
_TENSOR_ARITHMETIC = frozenset({"add", "sub", "mul", "div", "lerp", "matmul", "mm", "dot", "addcmul", "addcdiv", "where"})


def _tensor_arithmetic(index: ModelIndex, call: cst.Call, name: str) -> bool:
    """Is `call` a tensor's method computing with its arguments (`t.add_(p)`, `t.copy_(p)`, `t.lerp(p, w)`), not a
    function of an imported module (`torch.nn.utils.clip_grad_norm_(p)`, `nn.init.normal_(p)`) nor of `self`?"""
    if not isinstance(call.func, cst.Attribute):
        return False
    method = call.func.attr.value
    if not (known.INPLACE_METHOD.match(method) or method in _TENSOR_ARITHMETIC):
        return False
    if name.startswith("."):
        return True  # a method of a value a call made (`s.mul_(d).add_(p)`)
    head = name.split(".", 1)[0]
    return head != "self" and index.qualify(head) == head and head not in known.CONVENTIONAL_ALIASES


def _given_callable(flat: Flat, node: cst.CSTNode, names: set[str]) -> bool:
    """Is `node` the first argument of a call of one of the function's own arguments (`fn(m.weight, std)`)?"""
    arg = flat.parent.get(id(node))
    call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    return (
        isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in names
        and bool(call.args) and call.args[0] is arg and arg.keyword is None
    )


# Iterations over a module that reach its parameters (or its submodules' parameters).
_WALKS = frozenset({"modules", "parameters", "children", "named_modules", "named_parameters", "named_children"})


def _applied_effects(index: ModelIndex, flat: Flat, call: cst.Call, owners: dict[str, str],
                     found: dict[str, set[str]]) -> None:
    """`module.apply(weight_reset)` of a module argument: the callable, run on each of its submodules, initialises
    them as it does the module it is given (`writes_module_params`): APPLIES, a write outside `zero.Init`."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "apply" or not isinstance(func.value, cst.Name):
        return
    if func.value.value in owners and writes_module_params(index, flat, call.args[0].value):
        found.setdefault(owners[func.value.value], set()).add(APPLIES)


def _call_effects(index: ModelIndex, flat: Flat, call: cst.Call, owners: dict[str, str],
                  found: dict[str, set[str]], items_only: bool = False) -> None:
    """Effects on the function's module arguments of one call it makes: a re-parametrisation, a deep copy,
    or a helper whose own summary says what it does to the argument handed on. `owners`: the names that hold
    a module argument or a module a walk of one yields -> that argument (`items_only`: the parameters a walk of one
    yields, of which only a helper's in-place write of the tensor it is handed counts)."""
    name = call_name(call)
    if not name or name.startswith("."):
        return
    handed = [
        (i, arg) for i, arg in enumerate(call.args)
        if isinstance(arg.value, cst.Name) and arg.value.value in owners and not arg.star
    ]
    # `_lerp(ema.parameters(), model.parameters(), w)`: a module argument's parameters handed on as an iterable
    walks = {
        i: owners[walked] for i, arg in enumerate(call.args)
        if not arg.star and (walked := _parameter_walk_of(arg.value)) is not None and walked in owners
    }
    if not handed and not walks or items_only and not handed:
        return
    qualified = index.qualify(name)
    last = qualified.rsplit(".", 1)[-1]
    first = call.args[0]
    if first.keyword is None and isinstance(first.value, cst.Name) and first.value.value in owners:
        if last in known.REPARAMETRIZE:
            found.setdefault(owners[first.value.value], set()).add(REPARAMETRIZES)
            return
        if qualified in known.DEEP_COPY:
            found.setdefault(owners[first.value.value], set()).add(DEEPCOPIES)
            return
    if name.partition(".")[0] == "super":
        return
    if name.startswith("self.") and name.count(".") == 1:  # a helper method of the function's own class
        owner = _flat_owner(index, flat)
        method = owner.inherited_method(name[5:]) if owner is not None else None
        node = method.node if method is not None else None
        effects = module_arg_effects(method.index, node) if node is not None else {}  # type: ignore[union-attr]
        done = {
            i: effects[p] for i, arg in enumerate(call.args)
            if effects and not arg.star and (p := parameter_for(node, call, i)) in effects  # type: ignore[arg-type]
        }
    else:
        done = dict(argument_effects(index, flat, call, calls=True))
    for position, arg in handed:
        if position in done and (not items_only or WRITTEN in done[position]):
            written = {WRITE} if items_only else done[position]
            found.setdefault(owners[arg.value.value], set()).update(written)  # type: ignore[union-attr]
    for position, owner in walks.items() if not items_only else ():
        # what the helper does to the items of the iterable, it does to the module's parameters
        done_here = {e for e in done.get(position, ()) if not e.startswith((CALLS, COMPUTES))}
        if done_here:
            found.setdefault(owner, set()).update(done_here)


def _written_in_place(flat: Flat, name: cst.Name) -> bool:
    """Is the value `name` holds itself written by a tensor's in-place method (`tensor2.copy_(tmp)`, `t.mul_(d)`),
    not a module's (`m.requires_grad_(False)`) nor a part of it (`m.weight.copy_(w)`)?"""
    parent = flat.parent.get(id(name))
    if not (isinstance(parent, cst.Attribute) and parent.value is name):
        return False
    method = parent.attr.value
    if not method.endswith("_") or method.startswith("_") or method in _MODULE_IN_PLACE:
        return False
    grand = flat.parent.get(id(parent))
    return isinstance(grand, cst.Call) and grand.func is parent


def _parameter_tensor_of(index: ModelIndex, value: cst.BaseExpression, names: set[str]) -> str | None:
    """The module argument whose parameter `value` is, as a tensor (`up.weight.data`, `up.weight`,
    `m.conv.weight.detach()` is not: a new tensor), or None."""
    if isinstance(value, cst.Attribute) and value.attr.value == "data":
        value = value.value
    path = access_path(value)
    if path is None or path.root not in names or not path.parts or "[]" in path.parts:
        return None
    return path.root if path.parts[-1] in index.param_names else None


def _item_assigned(flat: Flat, name: cst.Name) -> bool:
    """Is `name` the tensor an item assignment writes into (`w[0, 0, i, j] = v`, `w[c] += v`)?"""
    parent = flat.parent.get(id(name))
    if not (isinstance(parent, cst.Subscript) and parent.value is name):
        return False
    grand = flat.parent.get(id(parent))
    return isinstance(grand, (cst.AssignTarget, cst.AugAssign)) and grand.target is parent


def _rebound_names(flat: Flat) -> frozenset[str]:
    """The names a function binds anew somewhere (`t = copy.deepcopy(t)`, a loop's target): an argument among
    them may hold another value where it is used."""
    found: set[str] = set()
    for node, _ctx in flat.nodes:
        targets, _value = targets_of(node)
        for target in targets:
            found.update(n.value for n in walk(target) if isinstance(n, cst.Name))
    return frozenset(found)


def _rebinds(flat: Flat, name: str) -> bool:
    """(Asked only of an argument written in place: rare enough to walk the function each time.)"""
    return name in _rebound_names(flat)


# `nn.Module`'s own methods named like in-place tensor operations.
_MODULE_IN_PLACE = frozenset({"requires_grad_", "share_memory_"})


def _parameter_walk_of(value: cst.BaseExpression) -> str | None:
    """The name whose parameters `value` lists: `m.parameters()`, `list(m.parameters())`, `tuple(...)`."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "tuple"):
        if len(value.args) != 1:
            return None
        value = value.args[0].value
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute):
        if value.func.attr.value == "parameters" and isinstance(value.func.value, cst.Name):
            return value.func.value.value
    return None


def _bound_once(flat: Flat, name: str) -> bool:
    """Is `name` assigned exactly once in the function (so what it was bound to is what it holds)?"""
    return sum(1 for node, _ctx in flat.nodes for t in targets_of(node)[0] for n in bound_names(t) if n == name) == 1


def _listed_parts(iterable: cst.BaseExpression, names) -> str | None:
    """The module argument a literal list or tuple holds children of (`(block.a, block.b)`), if all of one."""
    if not isinstance(iterable, (cst.Tuple, cst.List)) or not iterable.elements:
        return None
    roots = set()
    for element in iterable.elements:
        path = access_path(element.value) if not isinstance(element, cst.StarredElement) else None
        if path is None or not path.parts or path.root not in names:
            return None
        roots.add(path.root)
    return roots.pop() if len(roots) == 1 else None


def _child_of_argument(value: cst.BaseExpression, names, aliases: dict[str, str]) -> str | None:
    """The module argument whose child (or list of children) `value` is: `list(net.tails)`, `net.tails`, and an item
    of a local bound to one (`tails[0]`, `tails[-1]`)."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "tuple") \
            and len(value.args) == 1 and not value.args[0].star:
        value = value.args[0].value
    path = access_path(value)
    if path is None or not path.parts or any(p.startswith("_") or p in _NOT_CHILDREN for p in path.parts):
        return None  # (`list(x.shape)` of a tensor argument is its sizes)
    if path.root in names and path.parts[0] != "[]":
        return path.root
    return aliases.get(path.root) if all(p == "[]" for p in path.parts) else None


# Attributes of an argument that are its tensor's metadata, its values or its settings, never a child module.
_NOT_CHILDREN = frozenset({
    "shape", "dtype", "device", "data", "grad", "T", "mT", "ndim", "weight", "bias", "config", "cfg", "args", "layout",
})


def _part_of_argument(index: ModelIndex, flat: Flat, value: cst.BaseExpression, names) -> str | None:
    """The module argument `value` takes a submodule (or a list of submodules) of: `module.get_submodule(name)`, or
    a call of a function of the program handing back a part of its first argument (`get_op_by_name(module, name)`:
    `for n, m in module.named_modules(): if n == name: return m`), or a list of either."""
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        value = value.elt
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "get_submodule" and isinstance(func.value, cst.Name):
        return func.value.value if func.value.value in names else None
    if not value.args or value.args[0].keyword is not None:
        return None
    first = value.args[0].value
    if not (isinstance(first, cst.Name) and first.value in names):
        return None
    name = call_name(value)
    found = resolve_function(index, flat, name) if name and not name.startswith(".") else None
    if found is None or not _hands_back_a_part(*found):
        return None
    return first.value


def _handed_back(index: ModelIndex, flat: Flat, value: cst.BaseExpression, names) -> str | None:
    """The module argument `value` is a call of a readable function handing it back, or what it wraps
    (`unwrap_model_fn(model)`, `def unwrap(m): return m.module if hasattr(m, "module") else m`), else None."""
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None or value.args[0].star:
        return None
    first = value.args[0].value
    name = call_name(value)
    if not (isinstance(first, cst.Name) and first.value in names) or not name or name.startswith("."):
        return None
    found = resolve_function(index, flat, name)
    if found is None or parameter_for(found[1], value, 0) not in returned_parameters(found[0], found[1].name.value) \
            and not _unwraps(*found):
        return None
    return first.value


@memoised
def _unwraps(index: ModelIndex, func: cst.FunctionDef) -> bool:
    """Does `func` hand back its first parameter peeled of wrappers, through a local (`m = model` ... `while
    hasattr(m, "module"): m = m.module` ... `return m`): every value it returns that local, bound only to the
    parameter or to attributes of itself?"""
    params = positional_parameters(func)
    if not params:
        return False
    first = params[0]
    returned: set[str] = set()
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node in walk(func.body):
        if type(node) is cst.Return:
            if not isinstance(node.value, cst.Name):
                return False
            returned.add(node.value.value)
        elif type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            bound.setdefault(node.targets[0].target.value, []).append(node.value)
    if not returned or first in bound:
        return False

    def peeled(value: cst.BaseExpression, local: str) -> bool:
        while isinstance(value, cst.Attribute):
            value = value.value
        return isinstance(value, cst.Name) and value.value in (first, local)

    return all(
        name == first or name in bound and any(isinstance(v, cst.Name) and v.value == first for v in bound[name])
        and all(peeled(v, name) for v in bound[name])
        for name in returned
    )


@memoised(cycle=False)
def _hands_back_a_part(index: ModelIndex, func: cst.FunctionDef) -> bool:
    """Does `func` return a submodule of its first parameter: an item of a walk of it (`for n, m in
    module.named_modules(): ... return m`), or `getattr`/`get_submodule` of it?"""
    params = positional_parameters(func)
    if not params or "return" not in code_of(func.body, limit=100000):
        return False
    first = params[0]
    walked: set[str] = set()
    for node in walk(func.body):
        if isinstance(node, (cst.For, cst.CompFor)):
            for target, it in loop_items(node.target, node.iter):
                if isinstance(target, cst.Name) and isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
                        and it.func.attr.value in _WALKS and dotted(it.func.value) == first:
                    walked.add(target.value)
    returns = [n.value for n in walk(func.body) if isinstance(n, cst.Return) and n.value is not None]
    if not returns:
        return False
    for value in returns:
        if isinstance(value, cst.Name) and value.value in walked:
            continue
        if isinstance(value, cst.Call) and value.args and dotted(value.args[0].value) == first and (
                call_name(value) == "getattr" or isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "get_submodule"):
            continue
        return False
    return True


def _unwrapped_argument(value: cst.BaseExpression, names) -> str | None:
    """The argument a value is, or the module a parallel wrapper of it wraps, on every branch (`model.module if
    is_wrapped(model) else model`, `getattr(model, "module", model)`, `model.module`)."""
    if isinstance(value, cst.IfExp):
        found = {_unwrapped_argument(value.body, names), _unwrapped_argument(value.orelse, names)}
        return found.pop() if len(found) == 1 else None
    if isinstance(value, cst.Attribute) and value.attr.value == "module":
        value = value.value
    elif isinstance(value, cst.Call) and dotted(value.func) == "getattr" and len(value.args) == 3 and (
            const_str(value.args[1].value) == "module"):
        value = value.args[0].value
    return value.value if isinstance(value, cst.Name) and value.value in names else None


def argument_effects(
    index: ModelIndex, flat: Flat | None, call: cst.Call, calls: bool = False
) -> list[tuple[int, frozenset[str]]]:
    """(argument position, what the called function does to it) for each argument of `call` that the
    function's summary (`module_arg_effects`) says it writes, initialises, sizes, re-parametrises or copies
    (with `calls`, also the methods it runs on it, `CALLS` + name, and the attributes of it it computes with,
    `COMPUTES` + path: the caller, who knows the module's class, tells which are parameters); empty when the
    function cannot be read."""
    name = call_name(call)
    found = resolve_function(index, flat, name) if name and not name.startswith(".") else None
    if found is None:
        return _initialiser_by_name(index, call, name)
    return _effects_of(found, call, calls)


def _effects_of(
    found: tuple[ModelIndex, cst.FunctionDef], call: cst.Call, calls: bool
) -> list[tuple[int, frozenset[str]]]:
    """(argument position, what the function `found` does to it) for each argument of `call` it does something to
    (`calls`: the methods it runs on it and the attributes it computes with, too)."""
    effects = module_arg_effects(*found)
    if not effects:
        return []
    done = ((i, effects.get(parameter_for(found[1], call, i) or "")) for i, arg in enumerate(call.args) if not arg.star)
    if not calls:
        done = ((i, frozenset(e for e in effect if not e.startswith((CALLS, COMPUTES)))) for i, effect in done if effect)
    return [(i, effect) for i, effect in done if effect]


@memoised
def runs_argument_methods(index: ModelIndex, name: str) -> bool:
    """Does the function of another file of the program that an imported `name` refers to run a method of one of its
    arguments (a `CALLS` effect of its summary, `module_arg_effects`)? None of an unreadable function's effects is
    (`argument_effects`), so a caller handing only to such functions hands no module to a method."""
    found = index.external_function(index.qualify(name))
    if found is None or found[1].node is None:
        return False
    return any(e.startswith(CALLS) for effects in module_arg_effects(found[0], found[1].node).values() for e in effects)


def _initialiser_by_name(index: ModelIndex, call: cst.Call, name: str | None) -> list[tuple[int, frozenset[str]]]:
    """`argument_effects` of a function of a library the program cannot read, imported by a name that says it
    initialises the module handed first (`normal_init(self.conv, std=0.01)`, `constant_init(m, 0)`,
    `trunc_normal_init(self.proj, std=.02)`, `default_init_weights(self.body, 0.1)`: OpenMMLab's and others'
    weight initialisers): it initialises that argument. Not `bias_init_with_prob(0.01)`, nor `init_process_group`.
    One named for loading a checkpoint into the module handed first (`load_checkpoint(self.teacher, path)`,
    mmengine's), or safetensors' `load_model` / `save_model`, loads or saves its state."""
    if not name or name.startswith(".") or not call.args or call.args[0].keyword is not None or call.args[0].star:
        return []
    head, last = name.partition(".")[0], name.rsplit(".", 1)[-1]
    if head not in index.imports:
        return []
    module = index.qualify(name).rpartition(".")[0]
    if _INITIALISER_NAME.fullmatch(last) or not last.startswith("_") and not last.endswith("_") \
            and not module.startswith("torch.") and _INITIALISERS_MODULE.search(module):
        # (torch's `nn.init` and its look-alikes, `xavier_uniform_(w)`, initialise the tensor they are handed: read
        # elsewhere)
        return [(0, frozenset({INIT}))]
    if _TARGET_UPDATE_NAME.fullmatch(last) and len(call.args) >= 2 and call.args[1].keyword is None:
        # `soft_update(target, source, tau)`, `polyak_update(params, target_params, tau)`: one model's parameters
        # blended into (or copied onto) another's
        written = 1 if last.startswith("polyak") else 0
        return [(written, frozenset({WRITE})), (1 - written, frozenset({READ}))]
    if _COUNTER_NAME.fullmatch(last):
        return [(0, frozenset({SIZE}))]  # `count_parameters(model)`: the sizes of its parameters summed
    if last in _REMOVES_PARAMETRIZATION and module.startswith("torch.nn.utils"):
        # `remove_weight_norm(conv)`: the weight recomputed from its parts and registered anew
        return [(0, frozenset({WRITE}))]
    if _LOADER_NAME.fullmatch(last) or index.qualify(name) in known.STATE_LOADERS | known.STATE_SAVERS:
        return [(0, frozenset({STATES}))]
    return []
# torch's removals of a re-parametrisation, which fold the parts back into one new weight.
_REMOVES_PARAMETRIZATION = frozenset({"remove_weight_norm", "remove_spectral_norm", "remove_parametrizations"})
# A library function's name saying it initialises the module it is handed (`normal_init`, `kaiming_init`,
# `default_init_weights`, `initialize_weights`).
_INITIALISER_NAME = re.compile(r"(?:[a-z0-9]+_)+init|_?(?:[a-z0-9]+_)*init(?:iali[sz]e)?_weights?")
# ... or one of a library module named for initialisers (`weight_init.c2_xavier_fill(conv)` of fvcore's
# `fvcore.nn.weight_init`, `initializers.lecun_normal(m)`).
_INITIALISERS_MODULE = re.compile(r"(?:^|\.)\w*init(?:iali[sz](?:ers?|ation))?$")
# ... or that it updates a target network from another (RL's soft, polyak and hard updates): the target is handed
# first, the source second (`soft_update(target, source, tau)`), except polyak's, which takes the source first.
_TARGET_UPDATE_NAME = re.compile(r"(?:soft|polyak|hard)_update(?:_\w+)?|update_target(?:_\w+)?")
# ... or that it counts the module's parameters (`count_parameters`, `num_params`, `get_n_params`).
_COUNTER_NAME = re.compile(r"(?:count|num|n|get_n|get_num)_(?:trainable_)?param(?:eter)?s|param(?:eter)?s?_count")
# ... or that it loads a checkpoint into it (`load_checkpoint`, `load_pretrained_weights`, `load_model_weights`).
_LOADER_NAME = re.compile(r"_?load_(?:\w+_)?(?:checkpoint|weights|pretrained|state_dict)")


def child_forward_effects(cls: ClassInfo, call: cst.Call) -> list[tuple[int, frozenset[str]]]:
    """`argument_effects` of `self.<child>(...)`: calling a child module of one class runs that class's `forward`
    with the same arguments (`self.diff_sgd(self.module, updates)` with `self.diff_sgd = DiffSGD(lr)`, whose forward
    rewrites the module it is handed); empty when the child's class cannot be read."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
        return []
    member = facts_of(cls).members.get(func.attr.value) if cls.is_module else None
    if member is None or member.kind != Kind.MODULE or len(member.classes) != 1:
        return []
    info = cls.index.classes.get(member.classes[0])
    found = (cls.index, info) if info is not None else cls.index.external(member.classes[0])
    target = found[1].inherited_method("forward") if found is not None else None
    if target is None or target.node is None:
        return []
    effects = module_arg_effects(target.index, target.node)
    modules = module_arguments(target.index, target.node) if effects else ()
    # only what the forward takes as a module (`module.parameters()`), not the tensors handed beside it
    done = ((i, effects.get(parameter)) for i, arg in enumerate(call.args)
            if not arg.star and (parameter := parameter_for(target.node, call, i)) in modules)
    return [(i, frozenset(e for e in effect if not e.startswith((CALLS, COMPUTES)))) for i, effect in done if effect]


def inherited_argument_effects(
    cls: ClassInfo, call: cst.Call, in_file: bool = False
) -> list[tuple[int, frozenset[str]]]:
    """`argument_effects` of `self.<name>(...)` calling a method of a base class in another file (`self._init_layer(
    self.enc.proj)`, `self._add_lagged_network(self.policy.model)`), read there; empty for a method of this file
    (its body is read with the class) unless `in_file` (`self._blocks(self.base)` for a static helper of the class
    computing with the child it is given: what its module gives it is no attribute of `self` there), or one that
    cannot be read."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
        return []
    if not in_file and cls.method(func.attr.value) is not None:
        return []
    method = cls.inherited_method(func.attr.value)
    node = method.node if method is not None else None
    if node is None:
        return []
    effects = module_arg_effects(method.owner.index, node)  # type: ignore[union-attr]
    if not effects:
        return []
    done = ((i, effects.get(parameter_for(node, call, i) or "")) for i, arg in enumerate(call.args) if not arg.star)
    return [(i, effect) for i, effect in done if effect]


def _init_callable(call: cst.Call, arg: cst.Arg, last: str) -> bool:
    """`config.init_method(p)`, `self.init_fn(p)`, `initializer(p)`, `self.embedding_initializer(v.weight)`: a callable
    named for initialising, given `p` first."""
    return (
        bool(_INIT_CALLABLE.search(last))
        and bool(call.args)
        and call.args[0] is arg
        and arg.keyword is None
        and not arg.star
    )


def _produced_callable(index: ModelIndex, flat: Flat, call: cst.Call, arg: cst.Arg, name: str) -> bool:
    """`init(m.weight)` as a statement, where `init = factory.create(**cfg)` earlier in this function: a callable
    we cannot read, made by a call (or picked from a registry, `func = WEIGHT_INIT_DICT[name]`), given the
    parameter as its only argument and its result dropped. Its only effect is on that argument: it writes it (an
    initialiser a factory built from `nn.init.*`). So too a callable the function keeps on `self` (`self._init =
    partial(_initialize_kaiming, ...)`; `self._init(layer.weight)`), unless the call built a module there (`self.fc =
    nn.Linear(...)`: calling it runs its forward)."""
    kept = name.startswith("self.") and name.count(".") == 1
    if "." in name and not kept or name in index.imports or name in index.skeleton.functions:
        return False
    if not isinstance(flat.parent.get(id(call)), cst.Expr):
        return False
    positional = [a for a in call.args if a.keyword is None]
    if positional != [arg] or arg.star:
        return False
    for node, _ in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Subscript:
            # `func = WEIGHT_INIT_DICT[name]`: one of a registry's callables, picked by a setting
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value == name:
                return True
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.value, cst.Call):
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value == name:
                return True
            if kept and dotted(target) == name:
                return classify(index, node.value)[0] not in (Kind.MODULE, Kind.CONTAINER)
        if not kept and type(node) is cst.For and _binds_in_tuple(node.target, name):
            return True  # `for pattern, init in rules: ... init(p)`: an initialiser a list of rules pairs with names
    return False


def _sole_effect(flat: Flat, call: cst.Call, arg: cst.Arg) -> bool:
    """Is the call a statement whose result is dropped, with the parameter its only positional argument
    (`get_initializer(name, act)(linear.weight)`)? A callable made on the spot and called so can only act on what
    it is given: an initialiser, as `init = factory(...)` then `init(p)` is (`_produced_callable`)."""
    if not isinstance(flat.parent.get(id(call)), cst.Expr) or arg.star:
        return False
    return [a for a in call.args if a.keyword is None] == [arg]


def _binds_in_tuple(target: cst.BaseExpression, name: str) -> bool:
    """Is `name` one element of a tuple a `for` unpacks (`for regex, fn in rules`), not the whole item?"""
    return isinstance(target, (cst.Tuple, cst.List)) and any(
        isinstance(e.value, cst.Name) and e.value.value == name for e in target.elements)


_INIT_CALLABLE = re.compile(
    r"^(?:[a-z0-9]+_)*(?:init_method|init_fn|init_func|initiali[sz]er|weight_init|init_weight)$"
)


def _callee_writes(index: ModelIndex, flat: Flat, call: cst.Call, arg: cst.Arg, name: str) -> bool:
    """Does the called function (nested in this method, of this file, or imported from another) write that
    parameter in place?

    `def rescale(param, i): param.div_(i)` then `rescale(layer.proj.weight.data, i)`; `init_lecun_normal(w)`
    from a package's initialisers, which ends in `tensor.normal_(0, std)`.
    """
    if arg.star:
        return False
    receiver, _, method = name.partition(".")
    if receiver == "self" and method and "." not in method:
        # `self._copy_embeddings(model.encoder.embeddings.weight, kind)`: a method of the class (or of a base in
        # another file), read like a function but for `self`
        owner = _flat_owner(index, flat)
        target = owner.inherited_method(method) if owner is not None else None
        if target is None or target.node is None or method.startswith("__"):
            return False
        found = (target.index, target.node)
    elif receiver in ("self", "cls", "super"):
        return False
    else:
        found = resolve_function(index, flat, name)
    if found is None:
        return False
    index, func = found
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if receiver == "self":
        params = params[1:]
    if arg.keyword is not None:
        target = arg.keyword.value
    else:
        position = [a for a in call.args if a.keyword is None].index(arg)
        if position >= len(params):
            return False
        target = params[position]
    return target in _written_params(index, func)


@memoised(cycle=frozenset())  # a function that passes its parameter to itself: no answer from the cycle
def _written_params(index: ModelIndex, func: cst.FunctionDef) -> frozenset[str]:
    """Names of `func`'s parameters that it writes in place (`p.div_()`, `p.data = `, `p[...] = `, `init.*_(p)`)."""
    names = {p.name.value for p in (*func.params.posonly_params, *func.params.params)}
    inner = flatten(func)
    copies = _rebound_to_copies(inner, names)
    written = set()
    for node, ctx in inner.nodes:
        if ctx.guarded:
            continue  # the helper gathers first (`GatheredParameters(out, modifier_rank=0)`)
        if type(node) is cst.Name and node.value in names:
            parent = inner.parent.get(id(node))
            if isinstance(parent, cst.Param):
                continue
            use, _detail = usage(index, inner, node)
            if use in (WRITE, INIT) and not _after_copy(inner, node, copies.get(node.value, ())):
                written.add(node.value)
    return frozenset(written)


# Calls that return a new tensor, never a view of their input: `b = b.clone()` ends the alias.
_COPIES = frozenset(
    {"clone", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "cat", "stack", "tensor",
     "deepcopy", "copy"}
)
# Classes whose construction shares the storage it is given (every other class called builds a new object).
_SHARES_STORAGE = frozenset({"Parameter", "Tensor", "Buffer"})


def _rebound_to_copies(flat: Flat, names: set[str]) -> dict[str, list[tuple[cst.CSTNode, int]]]:
    """For each argument name rebound to a copy (`b = b.clone()`, `b = b * 2`): the block and position of that."""
    found: dict[str, list[tuple[cst.CSTNode, int]]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not (isinstance(target, cst.Name) and target.value in names and _makes_copy(node.value)):
            continue
        block = flat.parent.get(id(node))
        while block is not None and not isinstance(block, (cst.IndentedBlock, cst.FunctionDef)):
            block = flat.parent.get(id(block))
        if block is not None:
            found.setdefault(target.value, []).append((block, flat.position[id(node)]))
    return found


def _makes_copy(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.BinaryOperation):
        return True  # arithmetic makes a new tensor
    if isinstance(value, cst.IfExp):  # `Batch(x, copy=True) if isinstance(x, dict) else deepcopy(x)`
        return _makes_copy(value.body) and _makes_copy(value.orelse)
    while isinstance(value, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(value, cst.Call):
            name = call_name(value) or ""
            last = name.rsplit(".", 1)[-1]
            if last in _COPIES or last[:1].isupper() and last not in _SHARES_STORAGE:
                return True  # a copy, or a new object of a class (`Batch(x, copy=True)`)
            value = value.func
        value = value.value if isinstance(value, (cst.Attribute, cst.Subscript)) else value
    return False


def _after_copy(flat: Flat, node: cst.CSTNode, copies) -> bool:
    """Is `node` after a rebinding to a copy, in that rebinding's block (so it names the copy, not the argument)?"""
    position = flat.position[id(node)]
    for block, where in copies:
        if position <= where:
            continue
        ancestor = flat.parent.get(id(node))
        while ancestor is not None and ancestor is not block:
            ancestor = flat.parent.get(id(ancestor))
        if ancestor is block:
            return True
    return False


def _inplace_initialiser(index: ModelIndex, call: cst.Call, arg: cst.Arg, name: str, last: str) -> bool:
    """`trunc_normal_(p, ...)`: a function named with PyTorch's in-place underscore, taking `p` first.

    A function means an imported name, a function of this file or a conventional alias
    (`torch`, `nn`); `self.w.copy_(p)` is a method of another tensor and only reads `p`.
    """
    head = name.partition(".")[0]
    return (
        (head in index.imports or head in index.skeleton.functions or head in known.CONVENTIONAL_ALIASES)
        and last.endswith("_")
        and not last.startswith(("_", "clip_grad"))
        and bool(call.args)
        and call.args[0] is arg
        and arg.keyword is None
        and arg.star == ""
    )


# What a helper's summary says it does to the model (or the parameters) it is given, as a whole use, most
# telling first: `make_copy(model)` copies it, `sync(src, dst)` reads and loads state dicts, `clip(params, c)`
# clips gradients, `replace(params, new)` writes and `flat(params)` reads every parameter's values.
WHOLE_ORDER = (DEEPCOPIES, STATES, CLIPS, WRITE, INIT, REPARAMETRIZES, APPLIES, READS, SIZE, GRADS, GRAD_WRITES)
WHOLE_USE = {
    DEEPCOPIES: COPY, STATES: STATE, CLIPS: GRAD, GRADS: GRAD, GRAD_WRITES: GRAD, WRITE: WRITE, INIT: WRITE,
    REPARAMETRIZES: WRITE, APPLIES: WRITE, READS: READ, SIZE: SIZE,
}


def written_in_bulk(index: ModelIndex, flat: Flat, node: cst.CSTNode, op: str) -> tuple[str, str]:
    """`torch._foreach_copy_([p.data for p in params], src)`: the listed tensors are the in-place call's target."""
    current = flat.parent.get(id(node))
    if isinstance(current, cst.Attribute) and current.value is node and current.attr.value == "data":
        node, current = current, flat.parent.get(id(current))
    if not isinstance(current, (cst.ListComp, cst.GeneratorExp)) or current.elt is not node:
        return READ, op
    arg = flat.parent.get(id(current))
    call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    name = call_name(call) if isinstance(call, cst.Call) else None
    if name and call.args[0] is arg and re.match(r"^[a-z_]\w*[a-z0-9]_$", name.rsplit(".", 1)[-1]) and not (
            index.qualify(name).startswith("torch.") and name.rsplit(".", 1)[-1] in known.CLIP_GRAD):
        return WRITE, f"{op} (the target of `{name}()`)"  # (torch's `clip_grad_norm_` writes gradients: ZG107's)
    return READ, op
