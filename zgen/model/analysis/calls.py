"""Which calls in a method of a module class run a submodule that owns parameters (and so all-gather them).

`ModuleCalls` resolves a call's callee through the class's members and the
locals bound to them (`for layer in self.layers`, `expert = self.experts[i]`);
`runs.py` adds the calls that run submodules through helper methods.
"""

from __future__ import annotations

import re
from collections import ChainMap

from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program import known
from ..program.known import CALLS_FIRST_ARGUMENT
from ..program.members import UNKNOWN_CLASS as UNKNOWN, Kind, classify, facts_of, member_of
from ..program.tree import access_path, call_name, code_of, cst, dotted, parameter_for, unwrapped_argument, walk
from .callables import wrapped_callee
from .choices import options
from .flow import Flat, bound_names, flat_of, loop_items, same_items, targets_of
from .access import READ
from .persistence import gathers
from .returned import is_property, property_attributes

__all__ = ["ModuleCalls", "HeldCalls", "follow", "handed_to_module", "handed_read"]


class ModuleCalls:
    """Finds the calls in a method of `cls` that run a submodule owning parameters.

    A call counts when its callee resolves to a child module whose class has
    (or may have) parameters: `self.block(x)`, `self.layers[i](x)`, a local
    bound to one (`for layer in self.layers`, `expert = self.experts[i]`),
    `self[...]` in a ModuleList/ModuleDict subclass, `getattr(self, name)`,
    or the module itself (`self(...)`, `self.forward(...)`). Activation and
    dropout modules do not count: they gather nothing.
    """

    def __init__(self, index: ModelIndex, cls: ClassInfo, flat: Flat, method_name: str) -> None:
        self.index = index
        self.cls = cls
        self.method_name = method_name
        self.aliases: dict[str, tuple[str, ...]] = {}
        self.sequences: set[str] = set()  # locals holding a list of submodules (`layers = [l for l in self.layers]`)
        self.filtered: set[str] = set()  # ... chosen by a condition: its length is not fixed by the model
        # `def p_losses(self, unet, x)` called as `self.p_losses(self.get_unet(n), x)`: the parameter is a submodule
        # (kept apart from `aliases`, the locals bound in this method, which the parameter-access analysis reads)
        arguments = argument_modules(index, cls, method_name) if flat.nodes and method_name != "forward" else {}
        self.bound = ChainMap(self.aliases, arguments) if arguments else self.aliases  # what each name holds
        building = any(m.name == method_name for m in cls.init_methods)
        self._row_locals: dict[str, list[list[cst.BaseExpression]]] = {}  # (`_rows`: locals bound to rows)
        for node, _ctx in flat.nodes:
            if building and type(node) is cst.Call:
                self._appended(node)
            targets, value = targets_of(node)
            if value is None or type(node) is cst.AugAssign and not (
                type(node.operator) is cst.AddAssign and isinstance(value, (cst.List, cst.Tuple, cst.ListComp))
            ):
                continue  # (`x /= self.scale`: `x` stays what it was; `layers += [self.head]` grows a list of them)
            if building and type(node) is cst.Assign and (built := self._built_sequence(value)) is not None:
                # `layers = [nn.Linear(d, d) for _ in range(n)]`, `layers = make_layers(d, n)` in a constructor: a
                # list of modules built (each partitioned when its own `__init__` returned) before the loop over it
                for target in targets:
                    for name in bound_names(target):
                        self.aliases[name] = built
                        self.sequences.add(name)
                continue
            if type(node) is cst.Assign and (rows := self._rows(value)) is not None:
                # `pairs = ((unwrapped, "model"),)`, `pairs = ((self.ema, "ema"),) + pairs`: rows a loop unpacks
                for target in targets:
                    if isinstance(target, cst.Name):
                        self._row_locals[target.value] = self._row_locals.get(target.value, []) + rows
            if isinstance(node, (cst.For, cst.CompFor)) and isinstance(node.target, (cst.Tuple, cst.List)) and (
                    rows := self._rows(node.iter)) is not None:
                # `for model, name in ((self.net, "net"), (self.ema, "ema")):` each name takes its column's items
                # (a column where some item is a submodule: the others, `self.ema.ema_model`, may be models we
                # cannot read; a column holding a literal is not one of modules)
                for at, part in enumerate(node.target.elements):
                    column = [row[at] for row in rows if at < len(row)]
                    found = [classes for item in column if (classes := self.classes_of(item)) is not None]
                    if found and not any(type(item).__name__ in _LITERALS for item in column):
                        for name in bound_names(part.value):
                            self.aliases[name] = _union(found)  # type: ignore[arg-type]
                continue
            if isinstance(node, (cst.For, cst.CompFor)):
                # for layer in self.layers / enumerate(self.layers) / zip(self.layers, keeps): its items
                for part, items in loop_items(node.target, node.iter):
                    classes = self._elements_of(items)
                    if classes is not None:
                        for name in bound_names(part):
                            self.aliases[name] = classes
                continue
            if type(node) is cst.Assign and any(isinstance(t, (cst.Tuple, cst.List)) for t in targets) and (
                    unpacked := self._elements_of(value)) is not None:
                # `resnet, resnet2 = self.local_cond_encoder`: each name one of the container's modules; `c, bn =
                # self.conv, self.bn`: each name its own
                for target in targets:
                    pairs = _paired(target, value)
                    for name in bound_names(target):
                        classes = self.classes_of(pairs[name]) if name in pairs else unpacked
                        if classes is not None:
                            self.aliases[name] = classes
                continue
            classes = self.classes_of(value)
            if classes is None and (wrapped := wrapped_callee(value)) is not None:
                # `fn = self.unet.forward`, `functools.partial(self.unet, ...)`, `lambda x: self.unet(x)`: called later
                classes = self.classes_of(wrapped)
            if classes is None and type(value).__name__ in _CHOICES and _may_choose(index, value, self.classes_of):
                # `model = self.ema or self.net`, `default(self.ema, self.net)`: one of the submodules it chooses among
                # (not a choice of module lists, `self.blocks if reverse else self.irrev_blocks`: walked as lists)
                chosen = options(index, value)
                if not any(self._elements_of(option) is not None for option in chosen):
                    classes = _union(self.classes_of(option) for option in chosen)
            if classes is None and self._returned_sequence(value) is not None:
                # `layers = dropout_layers(self.layers, p)`: some of the same submodules, how many not fixed
                for target in targets:
                    for name in bound_names(target):
                        self.aliases[name] = self._returned_sequence(value)  # type: ignore[assignment]
                        self.sequences.add(name)
                        self.filtered.add(name)
                continue
            if classes is None and (drawn := self._drawn_sequence(value)) is not None:
                # `critics = random.sample(list(self.critics), k)`: some of the submodules, which ones drawn
                for target in targets:
                    for name in bound_names(target):
                        self.aliases[name] = drawn
                        self.sequences.add(name)
                        self.filtered.add(name)
                continue
            if classes is None and self._filtered_sequence(value) is not None:
                filtered = bool(value.for_in.ifs)  # type: ignore[attr-defined]
                for target in targets:
                    for name in bound_names(target):
                        self.aliases[name] = self._filtered_sequence(value)  # type: ignore[assignment]
                        self.sequences.add(name)
                        if filtered:
                            self.filtered.add(name)
                continue
            if classes is None:
                continue
            for target in targets:
                for name in bound_names(target):
                    self.aliases[name] = classes

    def _rows(self, expr: cst.BaseExpression) -> list[list[cst.BaseExpression]] | None:
        """The rows a literal sequence of tuples holds (`((net, "net"), (ema, "ema"))`, joined with `+`, or a local
        bound to one), each as its items; None for anything else."""
        if isinstance(expr, cst.Name):
            return self._row_locals.get(expr.value)
        if isinstance(expr, cst.BinaryOperation) and type(expr.operator) is cst.Add:
            left, right = self._rows(expr.left), self._rows(expr.right)
            return left + right if left is not None and right is not None else None
        if not isinstance(expr, (cst.List, cst.Tuple)) or not expr.elements:
            return None
        rows = []
        for element in expr.elements:
            if not isinstance(element, cst.Element) or not isinstance(element.value, (cst.Tuple, cst.List)):
                return None
            rows.append([item.value for item in element.value.elements])
        return rows

    def _built_sequence(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """The classes of a plain list of modules `value` builds (a display, a comprehension, a factory function
        of any file returning one), or None."""
        if not isinstance(value, (cst.List, cst.Tuple, cst.ListComp, cst.Call)):
            return None
        if isinstance(value, cst.Call) and not isinstance(value.func, cst.Name):
            return None  # `nn.ModuleList(...)`, `self.build(...)`: a module or a member, known otherwise
        kind, classes = classify(self.index, value)
        return classes if kind == Kind.CONTAINER and classes and not _module_container_call(value) else None

    def _appended(self, call: cst.Call) -> None:
        """`layers.append(nn.Linear(d, d))` to a local list: the list holds that module from here on."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "append" and isinstance(func.value, cst.Name)):
            return
        if len(call.args) != 1 or not isinstance(call.args[0].value, cst.Call):
            return
        name = func.value.value
        if name in self.aliases and name not in self.sequences:
            return
        kind, classes = classify(self.index, call.args[0].value)
        if kind == Kind.MODULE and classes:
            self.aliases[name] = _union((self.aliases.get(name), classes))  # type: ignore[assignment]
            self.sequences.add(name)

    def _returned_sequence(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """A function of this file handed a list of submodules: what it returns may be some of them."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return None
        if value.func.value not in self.index.skeleton.functions or not value.args:
            return None
        return self._elements_of(value.args[0].value)

    def _drawn_sequence(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """`random.sample(list(self.layers), k)`, `random.choices(self.heads, k=2)`: items drawn from a container
        of submodules (which of them, and how many of each, a draw decides)."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.args):
            return None
        if value.func.attr.value not in _DRAWN_ITEMS or value.args[0].keyword is not None:
            return None
        return self._elements_of(same_items(value.args[0].value))

    def _filtered_sequence(self, value: cst.BaseExpression) -> tuple[str, ...] | None:
        """`[l for l in self.layers if ...]`: a local list of (some of) the same submodules."""
        if isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Name):
            comp = value.for_in
            if comp.inner_for_in is None and isinstance(comp.target, cst.Name) and comp.target.value == value.elt.value:
                return self._elements_of(same_items(comp.iter))
        return None

    def _elements_of(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """Classes of the modules that iterating over `expr` yields, if it is a module container."""
        if isinstance(expr, cst.Call) and (drawn := self._drawn_sequence(expr)) is not None:
            return drawn
        if isinstance(expr, cst.Subscript):  # self.layers[:n]
            return self._elements_of(expr.value)
        if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
            # `for lin in (self.q, self.k, self.v)`: a literal sequence of submodules, every element one
            # (`[self.reward, *self.qs]`: a starred container gives its items)
            found = [self.classes_of(e.value) if isinstance(e, cst.Element) else self._elements_of(e.value)
                     for e in expr.elements]
            return _union(found) if all(found) else None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            owner = code_of(expr.func.value)
            if owner == "self._modules" and expr.func.attr.value in ("values", "items") or owner == "self" and (
                    expr.func.attr.value in ("children", "named_children")):
                # `for name, module in self._modules.items()`, `for m in self.children()`: this module's own children
                return facts_of(self.cls).elements or (UNKNOWN,)
            if expr.func.attr.value in ("values", "items"):  # a ModuleDict's modules (`items()`: its pairs' second)
                # a ModuleDict of modules no constructor names (`()`) holds modules all the same, as when iterated
                found = self._elements_of(expr.func.value)
                return found if found is not None else self._dict_like(expr.func.value, expr.func.attr.value)
            return None
        path = access_path(expr)
        if path is None:
            return None
        if path.root == "self" and not path.parts and self.cls.container_kind:
            return facts_of(self.cls).elements or (UNKNOWN,)
        if path.root in self.bound and not path.parts:
            return self.bound[path.root]
        resolved = self._resolve(path.root, path.parts)
        if resolved is None:
            return None
        kind, classes = resolved
        if kind == Kind.CONTAINER:
            return classes
        # `for block in self.transformer.blocks`: an entry of a ModuleDict that is iterated is a list of the modules
        # the dict holds (`nn.ModuleDict(dict(blocks=nn.ModuleList([...])))`; `follow` gives its entries their classes)
        if len(path.parts) > 1 and path.parts[-1] != "[]":
            holder = self._resolve(path.root, path.parts[:-1])
            if holder is not None and holder[0] == Kind.CONTAINER:
                return classes
        return None

    def _dict_like(self, expr: cst.BaseExpression, method: str) -> tuple[str, ...] | None:
        """`self.embeddings.items()` on a submodule whose class defines `items()` (a module that hands out the
        modules of the ModuleDict it wraps): its items are modules, known by that use."""
        path = access_path(expr)
        resolved = self._resolve(path.root, path.parts) if path is not None else None
        if resolved is None or resolved[0] != Kind.MODULE:
            return None
        for ref in resolved[1]:
            local = self.index.class_of(ref)
            found = (self.index, local) if local is not None else self.index.external(ref)
            if found is not None and found[1].method(method) is not None and found[1].is_module:
                return (UNKNOWN,)
        return None

    def classes_of(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """Classes of the module an expression evaluates to, or None if it is not a submodule."""
        if isinstance(expr, cst.Call) and call_name(expr) == "getattr" and expr.args:
            first = expr.args[0].value
            if isinstance(first, cst.Name) and first.value == "self":
                return (UNKNOWN,)
            return None
        if (given := unwrapped_argument(expr)) is not None:
            # `self.accelerator.unwrap_model(self.net)`: the submodule it was given, handed back
            return self.classes_of(given)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            # `self._get_module(etype)(x)`: a method of the class that returns one of its submodules
            owner = expr.func.value
            if isinstance(owner, cst.Name) and owner.value == "self":
                return self.returned_submodule(expr.func.attr.value)
            return None
        path = access_path(expr)
        if path is None:
            return None
        if path.root == "self" and len(path.parts) == 1 and path.parts[0] not in facts_of(self.cls).members:
            method = self.cls.method(path.parts[0])
            if method is not None and "@property" in method.text:
                # `self.unwrapped_model` for `@property def unwrapped_model(self): return unwrap(self.model)`
                return self.returned_submodule(path.parts[0])
        if path.root == "self" and path.parts[:1] == ("[]",) and self.cls.container_kind:
            rest = path.parts[1:]
            return (facts_of(self.cls).elements or (UNKNOWN,)) if not rest else None
        if path.root == "self" and path.parts == ("[]",) and items_are_modules(self.cls):
            return (UNKNOWN,)  # `self[self._sampled](x)` of a class whose `__getitem__` hands out its submodules
        if path.root in self.bound:
            if not path.parts:
                return None if path.root in self.sequences else self.bound[path.root]
            if path.parts == ("[]",):
                return (UNKNOWN,)
            if path.root in self.sequences or "[]" in path.parts:
                return None
            # `block.attn.norm` for `block` in `self.blocks`: a child of the submodule the local holds
            resolved = self._follow(Kind.MODULE, self.bound[path.root], path.parts)
            return resolved[1] if resolved is not None and resolved[0] == Kind.MODULE else None
        resolved = self._resolve(path.root, path.parts)
        if resolved is None:
            return None
        kind, classes = resolved
        return classes if kind in (Kind.MODULE, Kind.UNKNOWN, Kind.CONTAINER) else None

    def returned_submodule(self, name: str) -> tuple[str, ...] | None:
        """Classes of the submodule `self.<name>(...)` returns (`return self.mods[key]`), or None."""
        method = self.cls.method(name)
        if method is None or "return self." not in method.text or name in facts_of(self.cls).members:
            return None
        return _returned_submodule(self.index, self.cls, method)

    def resolve(self, parts: tuple[str, ...]) -> tuple[Kind, tuple[str, ...]] | None:
        """What `self.<parts>` holds (kind and classes), following members of this class and its children."""
        return self._resolve("self", parts)

    def _resolve(self, root: str, parts: tuple[str, ...]) -> tuple[Kind, tuple[str, ...]] | None:
        """Follow `self.a[0].b` through the members of this class and its children."""
        if root != "self" or not parts or parts[0] == "[]":
            return None
        members = facts_of(self.cls).members
        member = members.get(parts[0])
        if member is None and is_property(self.cls, parts[0]):
            # `self.model[0]` for `@property def model(self): return self._model` (of this class or a base of any
            # file): the member the getter hands back as is
            held = property_attributes(self.cls, parts[0])
            member = members.get(next(iter(held))) if len(held) == 1 else None
        if member is None:
            return None
        return self._follow(member.kind, member.classes, parts[1:])

    def _follow(self, kind: Kind, classes: tuple[str, ...], parts: tuple[str, ...]) -> tuple[Kind, tuple[str, ...]] | None:
        return follow(self.index, kind, classes, parts)

    def is_module_sequence(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` a container of submodules (`self.layers`, `self.layers[:n]`), all of them run?"""
        if isinstance(expr, cst.Name) and expr.value in self.filtered:
            return False
        if isinstance(expr, cst.Call) and self._drawn_sequence(expr) is not None:
            return False  # `random.sample(self.layers, k)`: some of them
        return self._elements_of(expr) is not None

    def callee(self, call: cst.Call) -> str | None:
        """A description of the submodule this call runs (`self.layers[i]`), or None."""
        func = call.func
        name = call_name(call) or ""
        if call.args and name.rsplit(".", 1)[-1] in _CALLER_NAMES and self.index.qualify(name) in CALLS_FIRST_ARGUMENT:
            given = call.args[0].value  # `jvp(self.model, ...)`, `jvp(self.model if c else f, ...)`: it runs the module
            for option in (given.body, given.orelse) if isinstance(given, cst.IfExp) else (given,):
                ran = self.callee(cst.Call(func=option)) if isinstance(option, (cst.Name, cst.Attribute)) else None
                if ran is not None:
                    return ran
            return None
        if isinstance(func, cst.Name) and func.value == "self":
            return "self" if self.method_name != "forward" else None
        by_name = isinstance(func, cst.Attribute) and func.attr.value in {"forward", "__call__"}
        if by_name:
            target = func.value
            if isinstance(target, cst.Name) and target.value == "self":
                return "self.forward" if self.method_name != "forward" else None
            if isinstance(target, cst.Call) and call_name(target) == "super":
                # the parent class's forward on the same module: its own parameters are gathered already, but the
                # children it runs gather theirs (`r = super().forward(text, proms, resp)` in a decoding loop)
                return "super().forward" if self._has_children() else None
            func = target
        classes = self.classes_of(func)
        if classes is None:
            return None
        if not classes and not by_name:
            # `block(x)` for `block` in `nn.ModuleList(self._replicate(blocks, n))`: an item of a container of
            # modules no constructor names, called, runs its hooks and its children's
            return code_of(func)
        if not any(gathers(self.index, ref) for ref in classes):
            return None
        return code_of(func)

    def _has_children(self) -> bool:
        """Does the class hold a child module whose call gathers parameters (not a torch layer's subclass calling
        its base, `nn.Linear.forward`, which runs no other module)?"""
        return any(
            member.kind in (Kind.MODULE, Kind.CONTAINER) and (
                not member.classes or any(gathers(self.index, ref) for ref in member.classes))
            for member in facts_of(self.cls).members.values()
        )


# Methods of a random generator that draw items of a sequence given first (`random.sample(xs, k)`).
_DRAWN_ITEMS = frozenset({"sample", "choices"})
# Literal node types (by name: libcst is loaded only when a file needs parsing): no module among them.
_LITERALS = frozenset({"SimpleString", "ConcatenatedString", "FormattedString", "Integer", "Float", "Imaginary"})
# Deep copies of a model: the copy has the model's classes.


def _self_attribute(target: cst.BaseExpression) -> str | None:
    """`self.old_actor` as a target: its dotted name."""
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return f"self.{target.attr.value}"
    return None


# Expressions that may only choose among other values (`choices.options`), by node type name (libcst is loaded on
# first use, not when this module is imported).
_CHOICES = frozenset({"BooleanOperation", "IfExp", "Call"})


def _may_choose(index: ModelIndex, value: cst.BaseExpression, classes_of) -> bool:
    """Is a call one of a function of this file given a module among its arguments (only then is the function worth
    reading as a choice)? Tests and conditional expressions are always worth their options."""
    if type(value) is not cst.Call:
        return True
    func = value.func
    if type(func) is not cst.Name or func.value not in index.skeleton.functions:
        return False
    return any(not arg.star and classes_of(arg.value) is not None for arg in value.args)


def items_are_modules(cls: ClassInfo) -> bool:
    """Does a module class (not a container's subclass) hand out its submodules by `__getitem__` (`return
    self._modules[str(idx)]`, `return getattr(self, name)`, `return self.blocks[index]` of a module list)?"""
    getter = cls.inherited_method("__getitem__") if cls.is_module else None
    if getter is None or getter.owner is None:
        return False
    if "self._modules[" in getter.text or "getattr(self," in getter.text:
        return True
    members = facts_of(getter.owner).members
    return any(
        (member := members.get(name)) is not None and member.kind == Kind.CONTAINER
        for name in _RETURNED_ITEM.findall(getter.text)
    )


_RETURNED_ITEM = re.compile(r"return\s+self\.(\w+)\[")


def _module_container_call(value: cst.BaseExpression) -> bool:
    """`ModuleList(...)` / `Sequential(...)` imported bare: a container module, not a plain list."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value[:1].isupper()


def _union(found) -> tuple[str, ...] | None:
    """The classes of every option that is a module, or None when none is."""
    out: tuple[str, ...] = ()
    for classes in found:
        out += tuple(c for c in classes or () if c not in out)
    return out or None


def _paired(target: cst.BaseExpression, value: cst.BaseExpression) -> dict[str, cst.BaseExpression]:
    """The names of a tuple target bound element by element to a literal tuple of the same length (`c, bn = self.conv,
    self.bn`): name -> its value."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))) or len(
            target.elements) != len(value.elements):
        return {}
    return {
        t.value.value: v.value for t, v in zip(target.elements, value.elements)
        if isinstance(t.value, cst.Name) and isinstance(v, cst.Element)
    }


def follow(
    index: ModelIndex, kind: Kind, classes: tuple[str, ...], parts: tuple[str, ...]
) -> tuple[Kind, tuple[str, ...]] | None:
    """What `<a module of kind and classes>.<parts>` holds, following the members of its classes."""
    item = False  # the last part took an item of a container, whose classes are those of the items of its items
    for part in parts:
        if kind == Kind.CONTAINER:
            kind = Kind.MODULE
            classes = classes or (UNKNOWN,)  # `self.linears = nn.ModuleDict()` filled later: any module
            if part == "[]":
                item = True
                continue
            if part in known.CONTAINER_METHODS or part.startswith("_"):
                return None  # a method of the list (`self.layers.append`), or its own state
            continue  # a ModuleDict entry by attribute (`self.transformer.ln_f`): one of its modules
        if kind == Kind.UNKNOWN:
            return (Kind.UNKNOWN, (UNKNOWN,)) if part == "[]" else None
        if kind == Kind.MODULE and part == "[]" and item:
            continue  # `self.fc_layers[0][0]`: a container in a container, whose items the members list as its own
        item = False
        if kind != Kind.MODULE or part == "[]":
            return None
        nxt = None
        for ref in classes:
            nxt = member_of(index, ref, part)
            if nxt is not None:
                break
        if nxt is None:
            return None
        kind, classes = nxt.kind, nxt.classes
    return kind, classes


class HeldCalls:
    """Calls that run a model reached from names that hold one, in code that is not the model's own method.

    `roots` maps dotted names to the classes of the model they hold (a
    trainer's `self.model`, a function's `model` argument, `self.policy`
    built by an agent); a call runs that model when its callee is the model,
    its `forward`, a child it holds (`model.encoder`, `model.layers[i]`,
    `model.heads[key]`, `getattr(model, name)`), or a local bound to one of
    these, the bound method included (`fn = model.unet.forward`). Children of
    a model whose class cannot be read count only when indexed
    (`model.layers[i](x)`) or called through `.forward`.
    """

    def __init__(self, index: ModelIndex, roots: dict[str, tuple[str, ...]], flat: Flat | None = None) -> None:
        self.index = index
        self.roots = dict(roots)
        for node, _ctx in flat.nodes if flat is not None and roots else ():
            if type(node) is not cst.Assign:
                continue
            value = node.value
            if type(value) is cst.Call and call_name(value) in known.DEEP_COPY and value.args:
                value = value.args[0].value  # `self.old_actor = deepcopy(self.actor)`: a copy runs as the model does
            classes = self.module_of(value, bound=True)
            if classes is None and type(value).__name__ in _CHOICES and _may_choose(index, value, self.module_of):
                # `eval_model = default(self.ema_model, self.model)`: one of the models it chooses among
                classes = _union(self.module_of(option, bound=True) for option in options(index, value))
            if classes is None:
                continue
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.roots.setdefault(target.target.value, classes)
                elif (name := _self_attribute(target.target)) is not None:
                    self.roots.setdefault(name, classes)  # bound on `self` in this function, called later in it

    def module_of(self, expr: cst.BaseExpression, loose: bool = False, bound: bool = False) -> tuple[str, ...] | None:
        """Classes of the module `expr` is (reached from a root), or None. `loose`: any child of a model whose
        class cannot be read counts; `bound`: a bound `forward` counts as its module."""
        if (given := unwrapped_argument(expr)) is not None:  # `accelerator.unwrap_model(self.model)`: that model
            return self.module_of(given, loose, bound)
        if bound and (wrapped := wrapped_callee(expr)) is not None:  # `model.forward`, a partial or lambda of it
            return self.module_of(wrapped, loose=True)
        if isinstance(expr, cst.Call) and call_name(expr) == "getattr" and expr.args:
            return (UNKNOWN,) if self.module_of(expr.args[0].value, loose=True) is not None else None
        if isinstance(expr, cst.Call) and not expr.args and (name := dotted(expr.func)) is not None:
            return self.roots.get(f"{name}()")  # `model = self.unwrapped()`: a method handing back a held model
        path = access_path(expr)
        if path is None:
            return None
        names = (path.root, *path.parts)
        for cut in range(len(names), 0, -1):
            classes = self.roots.get(".".join(names[:cut]))
            if classes is not None:
                break
        else:
            return None
        rest = names[cut:]
        if not rest:
            return classes
        if not any(self.index.classes.get(ref) or self.index.external(ref) for ref in classes):
            return (UNKNOWN,) if loose or "[]" in rest else None  # what an unreadable model holds is not known
        found = follow(self.index, Kind.MODULE, classes, rest)
        if found is None or found[0] not in (Kind.MODULE, Kind.UNKNOWN):
            return None
        return found[1]

    def callee(self, call: cst.Call) -> str | None:
        """The model or child this call runs (`model.layers[i]`), or None (not a method that runs nothing,
        `model.eval()`, nor a tensor's, `crt_net[k].size()`)."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in known.NOT_RUNS:
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
            classes = self.module_of(func.value, loose=True)
        else:
            classes = self.module_of(func)
        if classes is None or not any(ref == UNKNOWN or gathers(self.index, ref) for ref in classes):
            return None
        return code_of(func)


_CALLER_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in CALLS_FIRST_ARGUMENT)


@memoised(cycle={})
def argument_modules(
    index: ModelIndex, cls: ClassInfo, name: str, used: frozenset[str] | None = None
) -> dict[str, tuple[str, ...]]:
    """Parameters of the method `name` that the class's own calls of it (`self.name(...)`) bind to a submodule: of
    those the method calls, or of `used` (`network` of `save_network(self, network)` saving its state)."""
    method = cls.method(name)
    if method is None or method.node is None:
        return {}
    params = method.node.params
    names = set(_CALLED_NAME.findall(method.text)) if used is None else used
    called = {  # only parameters the method calls (`unet(x)`, `unet.forward(x)`) are worth reading the callers for
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value in names
    } - {"self"}
    if not called:
        return {}
    call_text = f"self.{name}("
    found: dict[str, tuple[str, ...]] = {}
    for caller in cls.all_methods():
        if caller is method or call_text not in caller.text:
            continue
        flat = flat_of(caller)
        if flat is None:
            continue
        calls = ModuleCalls(index, cls, flat, caller.name)
        for node, _ctx in flat.nodes:
            if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute) or node.func.attr.value != name:
                continue
            if not (isinstance(node.func.value, cst.Name) and node.func.value.value == "self"):
                continue
            for position, arg in enumerate(node.args):
                if arg.star:
                    continue
                classes = calls.classes_of(arg.value)
                param = parameter_for(method.node, node, position) if classes is not None else None
                if param in called:
                    found[param] = classes  # type: ignore[assignment]
    return found


@memoised(cycle=None)
def _returned_submodule(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> tuple[str, ...] | None:
    """What `method` returns when every value it returns is a submodule of `cls` (through locals and `.get()`)."""
    node = method.node
    if node is None:
        return None
    calls = ModuleCalls(index, cls, flat_of(method) or Flat(), method.name)
    locals_: dict[str, tuple[str, ...] | None] = {}
    found: tuple[str, ...] = ()
    for stmt in walk(node.body):
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
            locals_[stmt.targets[0].target.value] = _submodule_of(calls, stmt.value)
        elif isinstance(stmt, cst.Return) and stmt.value is not None:
            value = stmt.value
            classes = locals_.get(value.value) if isinstance(value, cst.Name) else _submodule_of(calls, value)
            if not classes:
                return None
            found += tuple(c for c in classes if c not in found)
    return found or None


def _submodule_of(calls: ModuleCalls, value: cst.BaseExpression) -> tuple[str, ...] | None:
    """`self.mods[key]`, `self.mods.get(key)`: the submodule a container member holds; `unwrap_model(self.model)`:
    the submodule an unwrapping call is given."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get":
        container = calls.classes_of(value.func.value)
        return (UNKNOWN,) if container is not None else None
    if (wrapped := unwrapped_argument(value)) is not None:
        return calls.classes_of(wrapped)
    if isinstance(value, cst.Call):
        return None
    return calls.classes_of(value)


def handed_to_module(index: ModelIndex, cls: ClassInfo, method: MethodInfo, node: cst.CSTNode) -> str | None:
    """The submodule a call runs when `node` is one of that call's arguments, as written (`self.criterion` for
    `self.criterion(out, prototype_weights=self.model.prototypes.weight)`); else None. The module computes with
    the argument in its forward, where its hooks gather its own parameters only: a parameter of another module
    handed in is read there, outside its owner's forward, wherever the call is made."""
    flat = flat_of(method)
    arg = flat.parent.get(id(node)) if flat is not None else None
    call = flat.parent.get(id(arg)) if isinstance(arg, cst.Arg) and arg.value is node else None
    if not isinstance(call, cst.Call) or not isinstance(call.func, (cst.Attribute, cst.Name, cst.Subscript)):
        return None
    path = access_path(call.func)
    if path is None or path.root != "self" or not path.parts or call_name(call) in ("self.forward",):
        return None
    classes = ModuleCalls(index, cls, flat, method.name).classes_of(call.func)  # type: ignore[arg-type]
    return code_of(call.func) if classes and UNKNOWN not in classes else None


def handed_read(index: ModelIndex, access) -> str | None:
    """`handed_to_module` for a parameter read (`ParamAccess`) of a module method: the module that reads it."""
    if access.use != READ or access.cls is None or access.method is None or access.owner in ("", "self"):
        return None
    return handed_to_module(index, access.cls, access.method, access.node)


# A name called, or its forward (`unet(x)`, `unet.forward(x)`), as `\b<name>` matches it.
_CALLED_NAME = re.compile(r"\b(\w+)(?:\.forward)?\s*\(")
