"""Accesses to parameters owned by submodules, and what the code does with them.

`accesses` lists, for one method of a module class, every expression that
names a parameter of a submodule (`self.embed.weight`, `self.layers[0].attn.q.bias`),
or a parameter obtained by iterating `self.parameters()` / `self.child.parameters()`,
together with how it is used: read for computation, size queried, written
in place, initialised, only its metadata read, or checked. ZG101-ZG103 and
ZG301 are filters over this list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..program import known
from ..program.holds import annotated_module, config_like, module_arguments, module_like_name
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import (
    UNKNOWN_CLASS, Kind, Member, child_getter, classify, facts_of, has_params, holds_parameter_containers, member_of, member_param,
    parameter_container, parameter_dict, torch_base,
)
from ..program.tree import Path, access_path, call_name, code_of, cst, parameter_for, walk
from .access import INIT, READ, SIZE, WRITE, ParamAccess, Reach, Via
from .calls import ModuleCalls
from .effects import (
    APPLIES, STATES, argument_effects, child_forward_effects, inherited_argument_effects, resolve_function, usage,
)
from .flow import Ctx, Flat, flat_of, loop_items, mapping_walked, own_only, same_items
from .returned import is_property, property_attributes, returned_attributes

__all__ = ["accesses", "listed_submodules", "parameters_passed_in", "narrowed", "kept_parameter_lists", "NOT_A_SUBMODULE"]


@memoised
def accesses(index: ModelIndex, cls: ClassInfo, method: MethodInfo) -> list[ParamAccess]:
    """Parameter accesses through submodules in `method`, read with the members of `cls` (not placed in a scope)."""
    flat = flat_of(method)
    return [] if flat is None else _Finder(index, cls, method, flat).accesses()


def _unknown(name: str) -> Member:
    """A local or argument that may hold a module of a class we cannot tell (`for m in self.modules()`)."""
    return Member(name, Kind.UNKNOWN, (UNKNOWN_CLASS,), (-1, 0))


class _Bindings:
    """What the names of one method hold, read in a first pass: modules, parameter lists, `self` itself."""

    def __init__(self, index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat) -> None:
        members = facts_of(cls).members
        self.index, self.cls = index, cls
        # Locals bound to submodules (`for layer in self.layers`) or to modules built here (`lin = nn.Linear(...)`).
        self.modules = {
            name: Member(name, Kind.MODULE, classes, (-1, 0))
            for name, classes in ModuleCalls(index, cls, flat, method.name).aliases.items()
        }
        # Modules passed in as arguments (an adapter's wrapped layer, a tied embedding handed to a head): built by
        # the caller, so partitioned already; taken as modules only when their `.weight` is used.
        self.passed_in: set[str] = set()
        node = method.node
        walked = _walked_arguments(flat) if node is not None and "parameters(" in method.text else frozenset()
        for name in [a.name.value for a in (*node.params.params, *node.params.kwonly_params)] if node else ():
            if name not in ("self", "cls") and name not in self.modules and (not config_like(name) or name in walked):
                self.modules[name] = _unknown(name)
                self.passed_in.add(name)
        # `def __init__(self, *heads: nn.Linear)`: each item a module the caller built
        star = node.params.star_arg if node is not None and isinstance(node.params.star_arg, cst.Param) else None
        self.star_modules = (
            star.name.value if star is not None and (
                star.annotation is not None and annotated_module(index, star.annotation.annotation)
                or star.annotation is None and module_like_name(star.name.value)
            ) else None
        )
        # Parameters handed into this constructor (`Head(cfg, self.embed.weight)`, `w: nn.Parameter`): a caller's
        # module built them, so they are partitioned placeholders under zero.Init.
        self.given = frozenset()
        if method.name == "__init__":
            self.given = parameters_passed_in(index).get(cls.name, frozenset())
        for name in self.given:
            self.modules.pop(name, None)
            self.passed_in.discard(name)
        self.built_here: set[str] = set()  # locals assigned a module construction
        # each binding of a local to a module built here, in order: (position, member); a name bound again
        # (`lay = nn.Linear(d, d)` ... `lay = Wrapper(lay)`) holds the earlier module until the later binding
        self.built_at: dict[str, list[tuple[int, Member]]] = {}
        # locals bound once to an item of a container built here (`fc = nn.Sequential(...)` ... `final = fc[2]`):
        # name -> the container's access path to the item, so `final.bias` is `fc[2].bias`
        self.items: dict[str, Path] = {}
        # locals bound once to a part of `self` (`m = self.model[-1]`): name -> its path, so a loop over `m.m` walks
        # `self.model[-1].m`
        self.self_paths: dict[str, Path] = {}
        self.listed: dict[str, str] = {}  # `for pair in self.model_pairs` of a list of submodules: `pair` -> the list
        self.rebuilt: dict[str, int] = {}  # `self.a.b` assigned a newly built module in this method -> where
        self.param_lists: dict[str, str] = {}  # `ps = list(self.parameters())`: name -> the source iterated
        # Locals bound to a collection of a walk's parameters (`ps = list(self.model.parameters())`, `by_name =
        # dict(self.model.named_parameters())`, `[by_name[n] for n in names]`, what a helper of the class returns):
        # name -> (the walk, the binding's value, its context)
        self.collected: dict[str, tuple[str, cst.BaseExpression, Ctx]] = {}
        self.param_dicts: dict[str, str] = {}  # `ps = dict(self.model.named_parameters())`: name -> the source
        self.selves = {"self"} | {  # `m = self`
            n.targets[0].target.value for n, _ in flat.nodes
            if type(n) is cst.Assign and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
            and isinstance(n.value, cst.Name) and n.value.value == "self"
        }
        # `m = self` ... `while hasattr(m, "base_layer"): m = m.base_layer`: after the walk `m` is that child (or one
        # below it), so `m.weight` is the child's parameter, not the module's own
        self.walked: dict[str, str] = {}
        for n, _ in flat.nodes:
            if type(n) is cst.Assign and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                name, value = n.targets[0].target.value, n.value
                if name in self.selves and name != "self" and isinstance(value, cst.Attribute) \
                        and isinstance(value.value, cst.Name) and value.value.value == name:
                    self.walked[name] = value.attr.value if self.walked.get(name, value.attr.value) == value.attr.value else ""
        # Locals bound to a `ParameterList`/`ParameterDict` of `self` or to one of its tensors: name -> the container
        self.param_holders: dict[str, str] = {}
        self.param_items: dict[str, str] = {}
        self.in_forward = any(m is method for m in cls.forward_methods) and "self" in method.text
        bound_else: set[str] = set()  # locals also bound to something that is no container's tensor
        taken: set[str] = set()  # locals bound to a tensor taken by key or index (`w = self.weights[k]`)
        for node, _ctx in flat.nodes:
            if type(node) is cst.For or type(node) is cst.CompFor:
                self._loop(node, members)
                if self.in_forward:
                    self._param_items_loop(index, cls, node)
            elif type(node) is cst.Call or type(node) is cst.AugAssign:
                self._fill(node)
            elif type(node) is cst.Assign and len(node.targets) == 1:
                self._assign(index, flat, node)
                self._collect(index, cls, node, _ctx)
                if self.in_forward and isinstance(node.targets[0].target, cst.Name):
                    name = node.targets[0].target.value
                    if not self._param_items_assign(index, cls, name, node.value):
                        bound_else.add(name)
                    elif name in self.param_items:
                        taken.add(name)
        # `e = self.params["emb"] if ... else e = self.nets["emb"](t)`: the uses of `e` do not say which value they
        # read, so the tensor is judged where it is taken (`analysis.params._param_container_item`)
        self.param_items_rebound = frozenset(bound_else & taken)
        self.handed = {k: v for k, v in self.modules.items() if k not in self.passed_in}  # modules a helper may get

    def collection(self, index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression) -> str | None:
        """The walk whose parameters `value` collects: `list(self.model.parameters())`, `dict(...named_parameters())`,
        `[by_name[n] for n in names]` of such a mapping, a local bound to one, a helper of the class returning one."""
        if isinstance(value, cst.Name):
            return self.collected[value.value][0] if value.value in self.collected else None
        source = _parameter_list(value, self.passed_in) or _parameter_dict(value, self.passed_in)
        if source is None and isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Subscript):
            source = self.collection(index, cls, value.elt.value)  # items of a mapping of parameters
        return source if source is not None else _returned_walks(index, cls, value, 1)[0]

    def _collect(self, index: ModelIndex, cls: ClassInfo, node: cst.Assign, ctx: Ctx) -> None:
        """Record a local bound to a collection of a walk's parameters (see `collected`)."""
        target, value = node.targets[0].target, node.value
        if isinstance(target, cst.Name):
            source = self.collection(index, cls, value)
            if source is not None:
                self.collected[target.value] = (source, value, ctx)
        elif isinstance(target, cst.Tuple) and isinstance(value, cst.Call):
            # `weights, buffers = self._get_weights_buffers()`: position by position
            for element, source in zip(target.elements, _returned_walks(index, cls, value, len(target.elements))):
                if source is not None and isinstance(element.value, cst.Name):
                    self.collected[element.value.value] = (source, value, ctx)

    def _loop(self, node: cst.For | cst.CompFor, members: dict[str, Member]) -> None:
        name = _modules_loop(node)
        if name is not None:  # for m in self.modules(): every submodule, of any class
            self.modules[name] = _unknown(name)
        if self.star_modules is not None:
            for part, items in loop_items(node.target, node.iter):
                if isinstance(part, cst.Name) and isinstance(items, cst.Name) and items.value == self.star_modules:
                    self.modules[part.value] = _unknown(part.value)  # `for h in heads`: one a caller built
                    self.passed_in.add(part.value)
        for name in _container_items(node, members, self.selves, self.self_paths):  # zip(self.cv2, self.cv3)
            self.modules.setdefault(name, _unknown(name))
        for part, items in loop_items(node.target, node.iter):
            # `for conv in [conv_a, conv_b]:` of modules built here: each is one of them
            listed = [e.value for e in items.elements] if isinstance(items, (cst.List, cst.Tuple)) else []
            if isinstance(part, cst.Name) and listed and all(
                    isinstance(e, cst.Name) and e.value in self.built_here for e in listed):
                classes = tuple(dict.fromkeys(c for e in listed for c in self.modules[e.value].classes))
                self.modules[part.value] = Member(part.value, Kind.MODULE, classes, (-1, 0))
                self.built_here.add(part.value)
            elif isinstance(part, cst.Name) and _submodule_list(items, members):
                # `for coder in self.encoder, self.decoder:` with one of them a module of a class we cannot read
                self.modules.setdefault(part.value, _unknown(part.value))
        for name in _listed_items(self.index, self.cls, node, members, self.selves):  # for enc, enc_m in self.model_pairs
            self.modules.setdefault(name, _unknown(name))
            self.listed[name] = code_of(node.iter)

    def param_container(self, index: ModelIndex, cls: ClassInfo, expr: cst.BaseExpression) -> str | None:
        """What `expr` names when it is a `ParameterList`/`ParameterDict` of the module (`self.weights`,
        `self.transform[k]` of a `ModuleDict` of them, a local bound to either), as written; else None."""
        if isinstance(expr, cst.Name):
            return self.param_holders.get(expr.value)
        path = access_path(expr)
        if path is None or path.root not in self.selves or not path.parts:
            return None
        if len(path.parts) == 1 and parameter_container(index, cls, path.parts[0]):
            return code_of(expr)
        if len(path.parts) == 2 and path.parts[1] == "[]" and holds_parameter_containers(cls, path.parts[0]):
            return code_of(expr)
        if len(path.parts) == 1 and path.parts[0] in cls.property_names and path.parts[0] not in facts_of(cls).members:
            return property_container(index, cls, path.parts[0])  # `self.weight_dict`: made of `self.weights`
        return None

    def _param_items_assign(self, index: ModelIndex, cls: ClassInfo, name: str, value: cst.BaseExpression) -> bool:
        """Record `name` bound to a container of parameters or to one of its tensors; was it?"""
        holder = self.param_container(index, cls, value)
        if holder is not None:
            self.param_holders[name] = holder  # `params = self.transform[degree]`
            return True
        if isinstance(value, cst.Subscript):
            holder = self.param_container(index, cls, value.value)
            if holder is not None:
                self.param_items[name] = holder  # `w = self.weights[key]`
                return True
        return False

    def _param_items_loop(self, index: ModelIndex, cls: ClassInfo, node: cst.For | cst.CompFor) -> None:
        """`for w in self.weights`, `.values()`, `for k, w in self.weights.items()`: `w` is one of its tensors."""
        for part, items in loop_items(node.target, node.iter):
            bare = not isinstance(items, cst.Call)  # `for k in self.weights`, not `.values()` nor `.items()`
            if isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and not items.args:
                if items.func.attr.value not in ("values", "items"):
                    continue
                items = items.func.value
            holder = self.param_container(index, cls, items) if isinstance(part, cst.Name) else None
            if holder is not None and bare and self._keyed(index, cls, holder):
                continue  # `for k in self.prior_params` of a `ParameterDict`: its keys, no tensor
            if holder is not None:
                self.param_items[part.value] = holder  # type: ignore[union-attr]

    @staticmethod
    def _keyed(index: ModelIndex, cls: ClassInfo, holder: str) -> bool:
        """Is the container written `holder` (`self.prior_params`, `self.transform[k]`) a `ParameterDict`?"""
        path = access_path(cst.parse_expression(holder))
        return path is not None and bool(path.parts) and parameter_dict(index, cls, path.parts[0])

    def _fill(self, node: cst.Call | cst.AugAssign) -> None:
        """`unused.extend(list(self.b.parameters()))`, `ps += list(self.b.parameters())`: the local list then holds that
        walk's parameters (a list that gathers several walks is of the first one filled into it)."""
        if type(node) is cst.AugAssign:
            target, value = node.target, node.value if type(node.operator) is cst.AddAssign else None
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "extend" and len(node.args) == 1:
            target, value = node.func.value, node.args[0].value
        else:
            return
        if not isinstance(target, cst.Name) or value is None:
            return
        source = _parameter_list(value, self.passed_in) or _parameters_source(value, self.passed_in)
        if source is not None:
            self.param_lists.setdefault(target.value, source)

    def _built_item(self, flat: Flat, name: str, value: cst.Subscript) -> bool:
        """Record `name = fc[2]` for `fc` a container built here (`fc = nn.Sequential(...)`) when `name` is bound
        nowhere else: the item is a module of that container, partitioned with it."""
        path = access_path(value)
        container = self.modules.get(path.root) if path is not None else None
        if container is None or container.kind != Kind.CONTAINER or path.root not in self.built_here:
            return False
        if any(p != "[]" for p in path.parts) or _bound_once(flat, value) != name:
            return False
        self.items[name] = path
        return True

    def module_at(self, name: str, position: int) -> Member | None:
        """The module the local `name` holds at `position`: the last module built into it before there, when it was
        bound to more than one; else what `modules` holds."""
        bindings = self.built_at.get(name)
        if bindings and len(bindings) > 1 or bindings and self.modules.get(name) is not bindings[-1][1]:
            before = [member for at, member in bindings if at < position]
            if before:
                return before[-1]
        return self.modules.get(name)

    def _assign(self, index: ModelIndex, flat: Flat, node: cst.Assign) -> None:
        target = node.targets[0].target
        if isinstance(target, cst.Name):
            source = _parameter_list(node.value, self.passed_in)
            if source is not None:
                self.param_lists[target.value] = source
                return
            source = _parameter_dict(node.value, self.passed_in)
            if source is not None:
                self.param_dicts[target.value] = source
                return
            kind, classes = classify(index, node.value)
            if classes and type(node.value) is cst.Call and (
                kind == Kind.MODULE or kind == Kind.CONTAINER and _torch_container(index, node.value)
            ):  # (`fc = nn.Sequential(...)`: a container built here; not what a function of lists hands back)
                self.modules[target.value] = Member(target.value, kind, classes, (-1, 0))
                self.built_here.add(target.value)
                self.built_at.setdefault(target.value, []).append(
                    (flat.position.get(id(node), 0), self.modules[target.value]))
            elif type(node.value) is cst.Subscript and self._built_item(flat, target.value, node.value):
                pass
            elif isinstance(node.value, (cst.Attribute, cst.Subscript)) and _bound_once(flat, node.value) and (
                    (path := access_path(node.value)) is not None and path.root == "self" and path.parts):
                self.self_paths[target.value] = path  # `m = self.model[-1]`
            elif target.value not in self.modules and _from_self(node.value):
                # `emb = self.get_input_embeddings()`, `new = super().resize_token_embeddings(n)`: a module of
                # the model when its `.weight` is used (only `weight`/`bias` count on an unknown module)
                self.modules[target.value] = _unknown(target.value)
        elif type(node.value) is cst.Call:
            # `self.emb.pos = nn.Embedding(n, d)` outside `__init__`: a new module, not partitioned, from here on
            path = access_path(target)
            built = path is not None and path.root == "self" and bool(path.parts)
            if built and classify(index, node.value, resolve=True)[0] == Kind.MODULE:
                self.rebuilt.setdefault(code_of(target), flat.position[id(node)])


class _Finder:
    """The parameter accesses of one method: a second pass over its nodes with what `_Bindings` read."""

    def __init__(self, index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat) -> None:
        self.index, self.cls, self.method, self.flat = index, cls, method, flat
        self.members = facts_of(cls).members
        self.bound = _Bindings(index, cls, method, flat)
        self.param_aliases: dict[str, str] = {}  # name -> what it iterates ("self.parameters()")
        self.param_locals: dict[str, ParamAccess] = {}  # `w = self.base.weight`: name -> the access it binds
        self.reported_collections: set[str] = set()  # collected locals already reported (`_handed_collection`)
        # Run by someone else on the built module (`bias_init`): every child is built, even ones set by a subclass.
        self.late = any(m is method for m in cls.late_init_methods)
        self.init = any(m is method for m in cls.init_methods)
        # (`__repr__`/`extra_repr` too: printing the built model runs them outside any forward)
        self.entry = self.late or any(m is method for m in (*cls.entry_methods, *cls.repr_methods))
        self.foreach = self.entry and "_foreach_" in method.text  # (the trigger of `_foreach_lists`)
        self.returned_as_is = method.name != "forward" and any(m is method for m in cls.forward_methods)
        # In a method called on the built model its own parameters are partitioned too (a base class
        # such as a ModelMixin registers none itself, but every subclass does).
        self.has_children = self.entry or bool(cls.container_kind) or any(
            m.kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in m.classes)
            # (`self.net = backbone`: a model the caller built and handed in, named as one)
            or m.kind == Kind.UNKNOWN and m.classes == (UNKNOWN_CLASS,) and known.module_like_name(m.name)
            for m in self.members.values()
        )

        # A wrapper of a module it was handed (`self.wrapped = layer`, class unknown): its helpers may compute with
        # that module's parameters, like those of a child it built.
        self.follows_helpers = self.has_children or any(
            m.kind == Kind.UNKNOWN and m.classes == (UNKNOWN_CLASS,) and not config_like(m.name)
            for m in self.members.values()
        )
        # A forward given a module by its caller (`def forward(self, module, grads)`): a helper it hands that module
        # to may rewrite the module's parameters, which no hook of that module gathered.
        self.forward_arguments: set[str] = set()
        if self.bound.passed_in and method.node is not None and any(m is method for m in cls.forward_methods):
            self.forward_arguments = self.bound.passed_in & module_arguments(index, method.node).keys()

    def accesses(self) -> list[ParamAccess]:
        found: list[ParamAccess] = []
        for node, ctx in self.flat.nodes:
            kind = type(node)
            if kind is cst.For or kind is cst.CompFor:
                self._loop(node)
            elif kind is cst.Name:
                found.extend(self._name(node, ctx))
            elif kind is cst.Call:
                if self.follows_helpers:
                    found.extend(self._call(node, ctx))
                elif self.forward_arguments:
                    found.extend(self._module_handed_to_writer(node, ctx))
                if self.foreach and not ctx.guarded:
                    found.extend(self._foreach_lists(node, ctx))
            elif kind is cst.Attribute:
                found.extend(self._attribute(node, ctx))
            if self.bound.in_forward and (kind is cst.Subscript or kind is cst.Name):
                found.extend(self._param_container_item(node, ctx))
            elif self.bound.in_forward and kind is cst.Attribute:
                found.extend(self._param_container_whole(node, ctx))
        return found

    def _foreach_lists(self, node: cst.Call, ctx: Ctx) -> list[ParamAccess]:
        """A collection of parameters handed to a `torch._foreach_*` operation in a method run on the built model
        (`torch._foreach_mul(list(self.qf.parameters()), tau)`, `torch._foreach_add_(targets, u)` for `targets =
        list(self.target.parameters())`): the operation computes with every tensor of each list, and the in-place
        one (`_foreach_mul_`) writes every tensor of its first; outside any forward they are placeholders."""
        name = call_name(node)
        if not name or not name.rsplit(".", 1)[-1].startswith("_foreach_") or not self.index.qualify(name).startswith("torch."):
            return []
        found = []
        for position, arg in enumerate(node.args):
            if arg.keyword is not None or arg.star:
                continue
            source = self.bound.collection(self.index, self.cls, arg.value)
            if source is None:
                continue
            written = position == 0 and known.FOREACH_INPLACE.match(name.rsplit(".", 1)[-1]) is not None
            op = f" ({'the target' if written else 'an operand'} of `{name}()`)"
            found.append(self.access(arg.value, ctx, use=WRITE if written else READ, op=op,
                                     via=Via(Reach.PARAMETERS, source), param=code_of(arg.value)))
        return found

    def _param_container_whole(self, node: cst.Attribute, ctx: Ctx) -> list[ParamAccess]:
        """A `ParameterList`/`ParameterDict` the module holds, handed whole to a call in its forward (`torch.stack(
        list(self.weights))`, `run(x, self.weights)`, `[*self.weights]`, `sum(self.gains.values())`,
        `dict(zip(names, self.weights))`): the call computes with every tensor of a child no hook gathers. A loop
        over it is judged where its items are used (`_param_container_item`), `len(self.weights)` reads no tensor."""
        owner = self.bound.param_container(self.index, self.cls, node)
        if owner is None or not (_handed_whole(self.flat, node) or _made_copy(self.flat, node, owner)):
            return []
        member = self.members.get(self._container_member(owner))
        return [self.access(node, ctx, use=READ, op="", owner=owner, param=member.name if member else owner,
                            first=member, owner_classes=(self.cls.name,))]

    def _param_container_item(self, node: cst.Subscript | cst.Name, ctx: Ctx) -> list[ParamAccess]:
        """A tensor of a `ParameterList`/`ParameterDict` the module holds, used in its forward (`self.weights[k]`,
        `w` of `for k, w in self.weights.items()`, `params["w_gate"]` of `params = self.transform[degree]`): the
        container is a child module that is never called, so no hook gathers its tensors; the holder's own hooks
        gather only the parameters registered on the holder itself."""
        if type(node) is cst.Subscript:
            owner = self.bound.param_container(self.index, self.cls, node.value)
            parent = self.flat.parent.get(id(node))
            if owner is None or isinstance(parent, cst.Subscript) and parent.value is node and not parameter_container(
                self.index, self.cls, self._container_member(owner)
            ):
                return []  # not a container's tensor, or `self.transform[k]["w"]`: the outer subscript is
            # (`self.kernels[layer][i]`: a slice of a tensor of a `ParameterList`, read)
            if isinstance(parent, cst.Assign) and isinstance(parent.targets[0].target, cst.Name):
                if parent.targets[0].target.value not in self.bound.param_items_rebound:
                    return []  # `w = self.weights[k]`: judged where `w` is used
                # a local bound to other values too: the tensor is read where it is taken
                return [self.access(node, ctx, use=READ, op="", owner=owner, param=self._container_member(owner),
                                    first=self.members.get(self._container_member(owner)), owner_classes=(self.cls.name,))]
        else:
            owner = self.bound.param_items.get(node.value)
            parent = self.flat.parent.get(id(node))
            if owner is None or _binds(self.flat, node, parent) or node.value in self.bound.param_items_rebound:
                return []
        use, op = usage(self.index, self.flat, node)
        if use != READ:
            return []
        path = access_path(cst.parse_expression(owner))
        member = self.members.get(path.parts[0]) if path is not None and path.parts else None
        # judged by the holder's class and the container's name: `persistence.persistent_param` sizes its tensors
        return [self.access(node, ctx, use=use, op=op, owner=owner, param=member.name if member else owner,
                            first=member, owner_classes=(self.cls.name,))]

    def _container_member(self, owner: str) -> str:
        """The member of the class a container written `owner` (`self.params`, `self.transform[k]`) is."""
        path = access_path(cst.parse_expression(owner))
        member = self.members.get(path.parts[0]) if path is not None and path.parts else None
        return member.name if member is not None else owner

    def access(self, node: cst.CSTNode, ctx: Ctx, **fields) -> ParamAccess:
        """A record of `node` in this method; its use read from where it sits unless given."""
        if "use" not in fields:
            fields["use"], fields["op"] = usage(self.index, self.flat, node)
        fields.setdefault("order", self.method.order.get(id(node), 0))
        fields.setdefault("op", "")
        return ParamAccess(
            node, ctx, where=self.method.name, snippet=self.method.snippet, cls=self.cls, method=self.method, **fields
        )

    def _loop(self, node: cst.For | cst.CompFor) -> None:
        for part, items in loop_items(node.target, node.iter):
            # (`for p in layer.parameters()` for `layer` in `self.layers`, or `fc = self.fc`: a submodule's own walk;
            # not a module the method built itself, which is partitioned only under zero.Init)
            walked = self.bound.passed_in | (self.bound.modules.keys() - self.bound.built_here)
            source = _parameters_source(items, walked)
            if source is None and isinstance(items, cst.Name):
                source = self.bound.param_lists.get(items.value)
            if source is None and (mapping := mapping_walked(items)) is not items and isinstance(mapping, cst.Name):
                source = self.bound.param_dicts.get(mapping.value)  # `for n, p in params.items()`, `.values()`
            if source is None and isinstance(items, cst.Attribute) and isinstance(items.value, cst.Name):
                if items.value.value in self.bound.selves:  # `for p in self.params`, kept by `__init__`
                    source = kept_parameter_lists(self.index, self.cls).get(items.attr.value)
            root = source.partition(".")[0] if source is not None else ""
            if root in self.bound.listed:  # `pair[0].parameters()`: a walk of submodules the list of `self` holds
                source = self.bound.listed[root] + source[len(root):]  # type: ignore[operator]
            if source is not None and isinstance(part, cst.Name):
                self.param_aliases[part.value] = source

    def _handed_collection(self, node: cst.Name) -> list[ParamAccess]:
        """A local bound to a collection of a child's parameters, handed to a call (`graph(x, *weights)`,
        `make_fx(m, extra=weights + buffers)`) that neither gathers them nor is handed that child too: the
        parameters are read there with no hook of the child running, reported where they were collected."""
        source, value, ctx = self.bound.collected[node.value]
        if node.value in self.reported_collections or not self.bound.in_forward:
            return []
        if not self.has_children and not self._walks_wrapped(source):
            return []  # the module's own parameters, gathered by its own hook
        call = _handing_call(self.flat, node)
        if call is None:
            return []
        name = call_name(call)
        if known.is_gather_context(name) or name in _MEASURING_BUILTINS:
            return []
        owner = source.rsplit(".", 1)[0]
        if any(code_of(arg.value, limit=200) == owner for arg in call.args):
            return []  # `functional_call(self.model, params, x)`: the child runs, through its hooks
        self.reported_collections.add(node.value)
        return [self.access(value, ctx, use=READ, op="", via=Via(Reach.PARAMETERS, source), param=node.value)]

    def _name(self, node: cst.Name, ctx: Ctx) -> list[ParamAccess]:
        mapping = self.bound.param_dicts.get(node.value)
        handed_in = mapping is not None and mapping.partition(".")[0] in self.bound.passed_in
        if node.value in self.bound.collected and (self.bound.in_forward and not handed_in or mapping is None):
            # (outside forward, or of a module a forward is handed, `m_param[k]` of such a mapping: below)
            return self._handed_collection(node)
        parent = self.flat.parent.get(id(node))
        bound = self.param_locals.get(node.value)
        if bound is not None and bound.order < self.method.order.get(id(node), 0):
            # `w = self.base.weight` ... `w.data.add_(d)`: writes the parameter the local is bound to
            use, op = usage(self.index, self.flat, node)
            if use in (WRITE, INIT):
                return [self.access(node, ctx, use=use, op=op, owner=bound.owner, param=bound.param, first=bound.first,
                                    owner_classes=bound.owner_classes, local=bound.local)]
            return []
        if node.value in self.bound.given:
            if isinstance(parent, (cst.Param, cst.Arg, cst.Tuple)):
                return []  # its definition, or handed on (followed at the callee)
            return [self.access(node, ctx, owner=node.value, param=node.value, first=_unknown(node.value),
                                owner_classes=(UNKNOWN_CLASS,), given=True)]
        if node.value in self.bound.param_dicts and type(parent) is cst.Subscript and parent.value is node:
            return self._param_dict_item(parent, ctx, self.bound.param_dicts[node.value])
        if node.value in self.param_aliases:
            if isinstance(parent, (cst.CompFor, cst.For)) and parent.target is node or isinstance(parent, cst.Tuple):
                return []
            if isinstance(parent, cst.Element) and self._loop_target(parent):
                return []  # `for name, p in self.named_parameters()`: the name bound, not a use
            if self.param_aliases[node.value].endswith("named_parameters()") and _first_item(parent):
                return []  # `np[0]` of `for np in self.named_parameters()`: the name of the pair, not the parameter
            source = self.param_aliases[node.value]
            if not self.has_children and source.startswith("self") and not self._walks_wrapped(source):
                return []  # the module's own parameters only: not partitioned in its `__init__`/forward
            return [self.access(node, ctx, via=Via(Reach.PARAMETERS, self.param_aliases[node.value]), param=node.value)]
        return []

    def _param_dict_item(self, item: cst.Subscript, ctx: Ctx, source: str) -> list[ParamAccess]:
        """`params[name]` of `params = dict(m.named_parameters())`: the parameter of that name, as an item of the
        walk (`params[name] = t` rebinds the entry, no use of the parameter)."""
        if isinstance(self.flat.parent.get(id(item)), cst.AssignTarget):
            return []
        if not self.has_children and source.startswith("self") and not self._walks_wrapped(source):
            return []  # the module's own parameters only: not partitioned in its `__init__`/forward
        return [self.access(item, ctx, via=Via(Reach.PARAMETERS, source), param=code_of(item))]

    def _walks_wrapped(self, source: str) -> bool:
        """Does `source` walk a member of unknown class (`self.module.parameters()` of a module `__init__` was
        handed)? The walk tells it is a module, a child: its parameters are not the holder's own."""
        parts = source.split(".")  # `self.module.parameters()`, `self.heads.[].parameters()`
        member = self.members.get(parts[1]) if len(parts) > 2 else None
        if member is not None and member.kind == Kind.CONTAINER and not member.classes:
            return True  # `self.nets = Sequential(*convnet.children())`: modules of no class we read
        return member is not None and member.kind == Kind.UNKNOWN and member.classes == (UNKNOWN_CLASS,) \
            and not config_like(member.name)

    def _loop_target(self, element: cst.Element) -> bool:
        """Is `element` one of the names a `for` binds (`for name, p in ...`)?"""
        tup = self.flat.parent.get(id(element))
        loop = self.flat.parent.get(id(tup)) if isinstance(tup, (cst.Tuple, cst.List)) else None
        return isinstance(loop, (cst.CompFor, cst.For)) and loop.target is tup

    def _call(self, node: cst.Call, ctx: Ctx) -> list[ParamAccess]:
        found = self._module_handed_to_writer(node, ctx)
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            found += self._through_helper(node, func.attr.value, ctx)
        return found

    def _attribute(self, node: cst.Attribute, ctx: Ctx) -> list[ParamAccess]:
        path = access_path(node)
        if path is None and isinstance(node.value, cst.Call):
            return self._of_built_inline(node, ctx) or self._of_returned(node, ctx) or self._of_child_getter(node, ctx)
        if path is None or not path.parts:
            return []
        if path.root in self.bound.selves and path.root != "self":
            child = self.bound.walked.get(path.root)
            if child and path.parts[0] != child:  # `m.weight` after `m = m.base_layer`: `self.base_layer.weight`
                path = path.__class__("self", (child, *path.parts), (None, *path.keys))
            else:
                path = path.__class__("self", path.parts, path.keys)
        item = self.bound.items.get(path.root)
        if item is None and path.root in self.bound.self_paths and self.bound.module_at(path.root, 0) is None:
            item = self.bound.self_paths[path.root]  # `last.weight` for `last = self.mlp.layers[-1]`, a local no
            # other binding tells of: that path's weight
        if item is not None:  # `final.bias` for `final = fc[2]`: `fc[2].bias`
            path = item.__class__(item.root, (*item.parts, *path.parts), (*item.keys, *path.keys))
        if path.root != "self":
            first = self.bound.module_at(path.root, self.flat.position.get(id(node), 0))
            if first is not None and _shadowed(self.flat, node, path.root, self.method.node):
                first = None  # `def _apply_fn(m)` nested in the method: its own `m`, not the method's loop variable
            if first is not None and first.kind == Kind.UNKNOWN and ctx.conds:
                first = narrowed(self.index, first, ctx) or first
            return self._owned(node, ctx, path, first, path.parts)
        found: list[ParamAccess] = []
        if len(path.parts) == 1 and self.follows_helpers and not isinstance(self.flat.parent.get(id(node)), cst.Call):
            found += self._through_helper(node, path.parts[0], ctx, prop=True)
        borrowed = facts_of(self.cls).borrowed.get(path.parts[0])
        if borrowed is not None and len(path.parts) == 1 and self.members.get(path.parts[0]) is not None:
            # `self.w = lin.weight` with `lin = nn.Linear(...)` built here: `lin`'s partitioned parameter (or
            # `self.w = self.linear.weight`: the child's, tied under a second name)
            local, classes, param = borrowed
            first = Member(local, Kind.MODULE, classes, self.members[path.parts[0]].order)
            return found + [self.access(node, ctx, owner=local, param=param, first=first, owner_classes=classes,
                                        local=not local.startswith("self."))]
        if len(path.parts) < 2:
            own = self.members.get(path.parts[0]) if self.entry else None
            if own is None and self.entry and path.parts[0] in layer_base_params(self.index, self.cls):
                own = Member(path.parts[0], Kind.PARAM, (), (-1, 0))  # `self.weight` of an `nn.Linear` base
            if own is not None and own.kind == Kind.PARAM and not own.classes:  # the module's own, partitioned here
                found.append(self.access(node, ctx, via=Via(Reach.OWN), owner="self", param=path.parts[0],
                                         owner_classes=(self.cls.name,)))
            return found
        first = self.members.get(path.parts[0])
        if first is None and is_property(self.cls, path.parts[0]):
            # `self.wrapped.weight` for a property returning `self.base_layer`: that child's parameter
            for name in sorted(property_attributes(self.cls, path.parts[0])):
                found += self._owned(node, ctx, path, self.members.get(name), path.parts[1:])
            return found
        if first is None and self.late and _set_elsewhere(self.cls, path.parts[0]):
            first = _unknown(path.parts[0])  # `self.output_layer.weight` in a base class whose subclasses build it
        return found + self._owned(node, ctx, path, first, path.parts[1:])

    def _owned(self, node: cst.Attribute, ctx: Ctx, path: Path, first: Member | None,
               rest: tuple[str, ...]) -> list[ParamAccess]:
        """`<first>.<rest>` when it ends at a parameter of a submodule (or of a module a local holds)."""
        if first is not None and first.kind == Kind.PARAM and first.classes:
            # `self.proj = nn.Parameter(...) if raw else nn.Linear(...)`: `.weight` is the Linear's
            first = Member(first.name, Kind.MODULE, first.classes, first.order)
        if first is not None and _of_unread_class(self.index, first):
            # `self.mlp = MLP(d)` of a package we cannot read, then `nn.init.zeros_(self.mlp.weight)`: a module,
            # known by its use (an initialiser takes parameters)
            unread = Member(first.name, Kind.UNKNOWN, (UNKNOWN_CLASS,), first.order)
            if _initialised_attribute(self.index, self.flat, node, unread, rest, items=True):
                first = unread
        if first is None or first.kind not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
            return []
        owner_classes = _param_owner(self.index, first, rest)
        if owner_classes is None and _initialised_attribute(self.index, self.flat, node, first, rest):
            owner_classes = (UNKNOWN_CLASS,)  # `nn.init.normal_(self.vit.cls_token)`: a parameter, known by its use
        if owner_classes is None:
            return []
        if self.returned_as_is and path.root == "self" and isinstance(self.flat.parent.get(id(node)), cst.Return):
            return []  # `return self.embed.weight` from a helper forward calls: reported where it is used
        if owner_classes == (UNKNOWN_CLASS,) and _batch_norm(self.method, code_of(node.value, limit=200)):
            owner_classes = ("torch.nn.BatchNorm2d",)
        owner = code_of(node.value)
        fresh = self.bound.rebuilt.get(owner, len(self.flat.nodes)) < self.flat.position[id(node)]
        found = self.access(node, ctx, owner=owner, param=path.parts[-1], first=first, owner_classes=owner_classes,
                            local=path.root in self.bound.built_here or fresh)
        local = _bound_to_parameter(self.flat, node, path.parts[-1])
        if local is not None and found.use == READ and not found.op:
            self.param_locals[local] = found
        elif found.use == READ:
            # `b = mi.bias.view(na, -1)` ... `b.data[:, 4] += d`, `w = self.embeds[i].proj.weight.data` ...
            # `trunc_normal_(w.view(...))`: the storage (or a view of it), written through the local
            storage = _storage_of(self.flat, node)
            view = _viewed_as(self.flat, storage)
            local = _bound_to_parameter(self.flat, view if view is not None else storage, path.parts[-1]) \
                if view is not None or storage is not node else None
            if local is not None:
                self.param_locals[local] = found
        return [found]

    def _through_helper(self, node: cst.CSTNode, name: str, ctx: Ctx, prop: bool = False) -> list[ParamAccess]:
        """`self.helper()`, a property `self.weight`, or a stored lambda `self.to_logits(h)` whose body reads a
        submodule's parameter: the read happens here. Helpers `forward` reaches in this file are checked in
        their own body instead."""
        found = []
        for parts in _helper_reads(self.index, self.cls, name, prop):
            member = self.members.get(parts[0])
            owner_classes = _param_owner(self.index, member, parts[1:]) if member is not None else None
            if owner_classes is not None:
                found.append(self.access(node, ctx, via=Via(Reach.HELPER, name), owner="self." + ".".join(parts[:-1]),
                                         param=parts[-1], first=member, owner_classes=owner_classes))
        return found

    def _of_built_inline(self, node: cst.Attribute, ctx: Ctx) -> list[ParamAccess]:
        """`nn.Embedding(1, d).weight[0]`: a parameter of a module built right there and kept by nobody (under
        `deepspeed.zero.Init` partitioned as soon as its constructor returns)."""
        built = self._built_inline(node.value)
        owner_classes = _param_owner(self.index, built, (node.attr.value,)) if built is not None else None
        if owner_classes is None:
            return []
        return [self.access(node, ctx, owner=built.name, param=node.attr.value, first=built,
                            owner_classes=owner_classes, local=True)]

    def _of_returned(self, node: cst.Attribute, ctx: Ctx) -> list[ParamAccess]:
        """`self.get_base_layer().weight`, `innermost(self).weight`: a parameter of the child the call hands back
        (`analysis.returned`)."""
        param = node.attr.value
        if param not in self.index.param_names and param not in self.index.related_param_names:
            return []
        found: list[ParamAccess] = []
        for name in sorted(returned_attributes(self.index, self.cls, self.flat, node.value)):
            found += self._owned(node, ctx, Path("self", (name, param), (None, None)), self.members.get(name), (param,))
        return found

    def _of_child_getter(self, node: cst.Attribute, ctx: Ctx) -> list[ParamAccess]:
        """`self.llm.get_input_embeddings().weight`: a method of a child (not its forward) handing back a module,
        whose `.weight` is then a parameter of that child (partitioned once the child is built)."""
        getter = child_getter(self.members, node.value)
        if getter is None or not known.torch_param_name(node.attr.value):
            return []
        member, path = getter
        first = Member(code_of(node.value), Kind.UNKNOWN, (UNKNOWN_CLASS,), member.order)
        return self._owned(node, ctx, Path("self", (*path.parts, node.attr.value), (*path.keys, None)), first,
                           (node.attr.value,))

    def _first_child(self) -> Member | None:
        """The first child with parameters `__init__` builds (a walk of `self` before it reaches none)."""
        children = [
            m for m in self.members.values()
            if m.kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(self.index, c) is not False for c in m.classes)
        ]
        return min(children, key=lambda m: m.order) if children else None

    def _built_inline(self, expr: cst.BaseExpression) -> Member | None:
        """`nn.Linear(d, d)` written as an argument: a module with parameters, built right there."""
        if not isinstance(expr, cst.Call):
            return None
        kind, classes = classify(self.index, expr)
        if kind != Kind.MODULE or not any(has_params(self.index, c) for c in classes):
            return None
        return Member(code_of(expr), kind, classes, (-1, 0))

    def _set_by_subclass(self, expr: cst.BaseExpression) -> bool:
        """`self.decoder` in an initialiser run on the built module, never assigned in the class: a subclass sets it."""
        return self.late and self._assigned_elsewhere(expr)

    def _set_outside(self, expr: cst.BaseExpression) -> bool:
        """`self.model` in a method run on the built model, never assigned in the class: a base class of another
        file (or a subclass) sets it; a module when the helper it is handed takes it as one (`_walks_a_module`)."""
        return self.entry and self._assigned_elsewhere(expr)

    def _assigned_elsewhere(self, expr: cst.BaseExpression) -> bool:
        """`self.x`, one attribute deep, that the class never assigns and another class of its family does."""
        path = access_path(expr)
        return (
            path is not None and path.root == "self" and len(path.parts) == 1
            and path.parts[0] not in self.members and _set_elsewhere(self.cls, path.parts[0])
        )

    def _unread_child(self, expr: cst.BaseExpression) -> bool:
        """`self.ipa_block.attn.to_out`: an attribute of a member built by a class no file we read defines."""
        path = access_path(expr)
        if path is None or path.root != "self" or len(path.parts) < 2:
            return False
        member = self.members.get(path.parts[0])
        return member is not None and _of_unread_class(self.index, member)

    def _lazy(self, expr: cst.BaseExpression) -> bool:
        """`self.target` that `__init__` sets to `None` (a model built lazily, on first use), outside `__init__`."""
        path = access_path(expr)
        if not self.entry or path is None or path.root != "self" or len(path.parts) != 1:
            return False
        member = self.members.get(path.parts[0])
        return member is not None and member.kind == Kind.VALUE and f"self.{path.parts[0]} = None" in self.cls.text

    def _forward_argument(self, value: cst.BaseExpression) -> bool:
        """Is `value` an argument of this forward (not `self`'s child), as is (`module`, not `module.layer`)?"""
        return isinstance(value, cst.Name) and value.value in self.forward_arguments

    def _module_handed_to_writer(self, call: cst.Call, ctx: Ctx) -> list[ParamAccess]:
        """A built module handed to a helper that initialises or sizes its parameters: `init_layer(self.conv1)`,
        `named_apply(init_fn, self)` (a walk over every submodule without `nn.Module.apply`'s gathering)."""
        name = call_name(call)
        if not name or name.startswith("."):
            return []
        order = self.method.order.get(id(call), 0)
        if _FREE_APPLY.search(name.rsplit(".", 1)[-1]) and "." not in name:
            return [
                self.access(arg.value, ctx, use=INIT, via=Via(Reach.WALK, name), owner="self", param="parameters",
                            order=order)
                for arg in call.args if isinstance(arg.value, cst.Name) and arg.value.value == "self"
            ]
        selves = [  # (`init_weights(self.modules())`: a helper writing each module of the walk it is handed)
            i for i, arg in enumerate(call.args)
            if any(isinstance(value, cst.Name) and value.value == "self" for value in _handed_values(arg.value))
        ]
        if selves and self.has_children and ("." not in name or _module_function(self.index, name)):
            # `init_weights(self)`, a function of this file or another that walks the module it is given and
            # initialises what it yields: the children built before the call are partitioned
            done = dict(argument_effects(self.index, self.flat, call))
            # (`load_pretrained_network(self, path)`: a checkpoint loaded into the children too, as into one child)
            walked = [i for i in selves if INIT in done.get(i, ()) or WRITE in done.get(i, ())
                      or self.init and STATES in done.get(i, ())]
            if walked:
                return [self.access(call.args[i].value, ctx, use=INIT, via=Via(Reach.WALK, name), owner="self",
                                    param="parameters", order=order, first=self._first_child()) for i in walked]
            # `self.n_params = count_parameters(self)`: the sizes of the children built before it, placeholders'
            sized = [i for i in selves if SIZE in done.get(i, ())]
            if sized:
                return [self.access(call.args[i].value, ctx, use=SIZE, via=Via(Reach.WALK, name), owner="self",
                                    param="parameters", order=order, first=self._first_child()) for i in sized]
        inline = {i: built for i, arg in enumerate(call.args) if (built := self._built_inline(arg.value)) is not None}
        if not inline and not any(
            _module_arg(value, self.members, self.bound.handed) or self._set_by_subclass(value)
            or self._lazy(value) or self._set_outside(value) or self._forward_argument(value) or self._unread_child(value)
            for arg in call.args for value in _handed_values(arg.value)
        ):
            return []  # no module handed over: do not read the function at all
        out = []
        # (in `__init__`, a method of this class too: `self.init_conv_(self.up[0], 4)` initialises the child it is
        # handed, partitioned once built, as a function of the file would; reported at the call that hands it)
        effects = argument_effects(self.index, self.flat, call) or inherited_argument_effects(
            self.cls, call, in_file=self.init) or child_forward_effects(self.cls, call)
        for position, done in effects:
            use = INIT if INIT in done else WRITE if WRITE in done else SIZE if SIZE in done else None
            if use is None and APPLIES in done and self.entry:
                use = INIT  # `reset_all(self.head)` running `head.apply(reset)` on the built model: no zero.Init there
            if use is None and STATES in done and self.init:
                use = INIT  # `load_module_ckpt(self.paraphraser, path)`: a checkpoint loaded into a built child
            if use is None and READ in done and self.entry:
                use = READ  # `self.ema.update_parameters(self.model)` on the built model: its values, placeholders
            if use is None and READ in done and any(self._forward_argument(v) for v in _handed_values(call.args[position].value)):
                use = READ  # `update_module(module, updates)` in a forward: `p + u` of a module no hook of which ran
            if use is None:
                continue
            for value in _handed_values(call.args[position].value):
                path = access_path(value)
                if path is None and position not in inline:
                    continue
                if position in inline:
                    first = inline[position]  # `zero_init(nn.Linear(d, d))`: built (and partitioned) before it is handed
                elif path.root == "self" and path.parts:
                    first = self.members.get(path.parts[0])
                    if first is None and self.late and _set_elsewhere(self.cls, path.parts[0]):
                        first = _unknown(path.parts[0])  # `initialize_decoder(self.decoder)`: a subclass builds it
                    elif self._lazy(value) and _walks_a_module(self.index, self.flat, call, position):
                        first = _unknown(path.parts[0])  # `self.target = None`, built later; the helper walks a module
                    elif self._set_outside(value) and _walks_a_module(self.index, self.flat, call, position):
                        first = _unknown(path.parts[0])  # `self.model` a base class of another file built
                    elif first is not None and _of_unread_class(self.index, first) and len(path.parts) > 1 \
                            and _walks_a_module(self.index, self.flat, call, position):
                        first = _unknown(path.parts[0])  # `init_zero_(self.ipa_block.attn.to_out)` of a library's block
                else:
                    first = self.bound.handed.get(path.root)
                    if first is None and self._forward_argument(value) and _walks_a_module(self.index, self.flat, call, position):
                        first = _unknown(path.root)  # `update_module(module, updates)` in a forward handed `module`
                if first is None or first.kind not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                    continue
                if any(has_params(self.index, c) is not False for c in first.classes) or (
                    not first.classes and first.kind == Kind.CONTAINER and _walks_a_module(self.index, self.flat, call, position)
                ):  # (a container of no class we read, a base's of another file, that the helper walks as a module)
                    # (the owner of a parameter handed itself, `zero_([self.head.weight])`, is its module)
                    owned = value.value if isinstance(value, cst.Attribute) and value.attr.value in \
                        self.index.param_names and path is not None and len(path.parts) > 1 else value
                    out.append(self.access(value, ctx, use=use, via=Via(Reach.PASSED, name), owner=code_of(owned),
                                           param="parameters", first=first, order=order))
        return out


def _of_unread_class(index: ModelIndex, member: Member) -> bool:
    """Was `member` built by a constructor of a class no file we read defines (`self.ipa_block = IPABlock(d)` of a
    library not installed)? Such a value is a VALUE by default; one whose attribute a helper takes as a module,
    `init_zero_(self.ipa_block.attn.to_out)`, holds built layers: zero.Init partitions every module built inside it."""
    if member.kind != Kind.VALUE or member.classes or member.call is None:
        return False
    name = call_name(member.call)
    if not name or name.startswith(".") or name.startswith("self."):
        return False
    qualified = index.qualify(name)
    last = qualified.rsplit(".", 1)[-1]
    return last[:1].isupper() and "." in qualified and not qualified.startswith("torch.") \
        and name not in index.classes and qualified not in index.classes and index.external(qualified) is None \
        and index.external_function(qualified) is None


def _walks_a_module(index: ModelIndex, flat: Flat, call: cst.Call, position: int) -> bool:
    """Does the function `call` names take argument `position` as a module (named or used as one,
    `ma_model.parameters()`), not as a list of tensors?"""
    name = call_name(call)
    found = resolve_function(index, flat, name) if name and not name.startswith(".") else None
    if found is None:
        return False
    parameter = parameter_for(found[1], call, position)
    return parameter is not None and parameter in module_arguments(found[0], found[1])


def _initialised_attribute(index: ModelIndex, flat: Flat, node: cst.Attribute, first: Member,
                           rest: tuple[str, ...], items: bool = False) -> bool:
    """`nn.init.normal_(self.vit.cls_token)`, `init_pos(pos=self.vit.encoder.pos_embedding)`: an attribute of a module
    whose class we cannot read (a library's, handed in), given to an initialiser or to a helper that writes it in
    place. Initialisers take parameters: the attribute is one, known by its use. `items`: also the weight or bias of
    an item of a container it holds (`self.mlp.layers[-1].weight`)."""
    if items and "[]" in rest:
        if len(rest) > 3 or rest[-1] not in ("weight", "bias") or rest[0] == "[]":
            return False
        rest = tuple(part for part in rest if part != "[]")
    if not 1 <= len(rest) <= 2 or "[]" in rest or any(NOT_A_SUBMODULE.search(p) for p in rest) or config_like(first.name):
        return False
    if rest[-1] in index.buffer_names:
        return False  # `read(layer.norm.running_mean)`: a buffer, which ZeRO-3 never partitions
    if first.kind not in (Kind.MODULE, Kind.UNKNOWN) or any(has_params(index, c) is not None for c in first.classes):
        return False  # a class we can read says which names are its parameters
    use, detail = usage(index, flat, node)
    if items and use == WRITE and rest[-1] in ("weight", "bias"):
        return True  # (`self.mlp.weight.data.zero_()` of a child built here: only a parameter is written so)
    return use == INIT or use == WRITE and detail.startswith(" passed to")


def _batch_norm(method: MethodInfo, name: str) -> bool:
    """Does the method read `<name>.running_var` / `.running_mean`? Then `<name>` is a batch norm, whose
    per-channel weight and bias stay gathered."""
    return f"{name}.running_var" in method.text or f"{name}.running_mean" in method.text


def narrowed(index: ModelIndex, alias: Member, ctx: Ctx) -> Member | None:
    """`if isinstance(branch, Conv):`: inside, an argument of unknown class has that module class."""
    for test in reversed(ctx.conds):
        if not isinstance(test, cst.Call) or call_name(test) != "isinstance" or len(test.args) != 2:
            continue
        subject, classes = test.args[0].value, test.args[1].value
        if not isinstance(subject, cst.Name) or subject.value != alias.name:
            continue
        found: tuple[str, ...] = ()
        for option in classes.elements if isinstance(classes, cst.Tuple) else [cst.Element(classes)]:
            kind, refs = classify(index, cst.Call(func=option.value), resolve=True)
            if kind != Kind.MODULE:
                return None  # a class we cannot read: keep the argument unknown
            found += refs
        return Member(alias.name, Kind.MODULE, found, alias.order)
    return None


def _container_items(
    node: cst.For | cst.CompFor, members: dict[str, Member], self_names: set[str], paths: dict[str, Path]
) -> list[str]:
    """Loop variables bound to elements of module containers of `self` (or of a local bound to `self`, or to a part
    of it, `paths`): `for a, b in zip(self.xs, self.ys)`, `for layer in m.layers` after `m = self`, `for mi in m.m`
    after `m = self.model[-1]`."""
    found = []
    for part, items in loop_items(node.target, node.iter):
        mapping = mapping_walked(items)
        path = access_path(items) or (access_path(mapping) if mapping is not items else None)
        if path is not None and path.root in paths:
            base = paths[path.root]
            path = base.__class__(base.root, (*base.parts, *path.parts), (*base.keys, *path.keys))
        if path is None or path.root not in self_names or not path.parts or not isinstance(part, cst.Name):
            continue
        member = members.get(path.parts[0])
        if member is not None and member.kind == Kind.CONTAINER and (
            len(path.parts) == 1
            # `for name, layer in self.nets["decoder"].nets.items()`: a container an entry of one holds
            or path.parts[1] == "[]" and not any(config_like(p) or NOT_A_SUBMODULE.search(p) for p in path.parts[2:])
        ):
            found.append(part.value)
    return found


def _listed_items(
    index: ModelIndex, cls: ClassInfo, node: cst.For | cst.CompFor, members: dict[str, Member], self_names: set[str]
) -> list[str]:
    """Loop variables bound to items of a plain list or tuple of `self` that the class fills with its submodules
    (`for enc, enc_m in self.model_pairs`, `for pair in self.model_pairs` of `[[self.enc, self.enc_m], ...]`): each
    item a submodule, or a list of them, whose `.parameters()` are the submodule's."""
    path = access_path(node.iter)
    if path is None or path.root not in self_names or len(path.parts) != 1:
        return []
    member = members.get(path.parts[0])
    if member is None or member.kind != Kind.VALUE or not listed_submodules(index, cls, path.parts[0]):
        return []
    target = node.target
    parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
    return [part.value for part in parts if isinstance(part, cst.Name)]


@memoised
def listed_submodules(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Does every assignment of the class family to `self.<name>` make a plain list or tuple of its submodules, or
    of lists of them (`self.model_pairs = [[self.enc, self.enc_m], [self.proj, self.proj_m]]`), and is there one?"""
    members = facts_of(cls).members
    written = f"self.{name}"
    found = False
    for method in cls.all_methods():
        if f"{written} =" not in method.text or method.node is None:
            continue
        for node in walk(method.node.body):
            if type(node) is cst.Assign and len(node.targets) == 1 and code_of(node.targets[0].target) == written:
                if not _submodule_list(node.value, members):
                    return False
                found = True
    return found


def _submodule_list(value: cst.BaseExpression, members: dict[str, Member]) -> bool:
    """Is `value` a literal list or tuple whose items are all attributes of `self` or such lists, one at least a
    submodule (`[[self.enc, self.enc_m]]` with `self.enc_m = deepcopy(self.enc)`, a copy of one)?"""
    items = _listed_attributes(value)
    return bool(items) and all(item in members for item in items) and any(
        members[item].kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN) for item in items
    )


def _listed_attributes(value: cst.BaseExpression) -> list[str] | None:
    """The names of the attributes of `self` a literal list or tuple (of such lists) holds; None for any other item."""
    if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
        return None
    found: list[str] = []
    for element in value.elements:
        item = element.value
        inner = _listed_attributes(item) if isinstance(item, (cst.List, cst.Tuple)) else None
        path = access_path(item) if inner is None else None
        if inner is None and (path is None or path.root != "self" or len(path.parts) != 1):
            return None
        found += inner if inner is not None else [path.parts[0]]  # type: ignore[union-attr]
    return found


def parameters_passed_in(index: ModelIndex) -> dict[str, frozenset[str]]:
    """Module classes of this file -> names of `__init__` arguments that receive a parameter of a built module.

    An argument annotated `nn.Parameter`, or one that a constructor call in this file fills with a
    submodule's parameter (`LMHead(config, self.embeddings.word_embeddings.weight)`) or with such an
    argument of its own, handed on (followed to a fixed point). Computed once per file.
    """
    return _passed_in(index)[0]


def parameter_handoffs(index: ModelIndex) -> list[Handoff]:
    """Each constructor call of the file that hands a module class of the file a partitioned parameter of a built
    child (`BertPreTrainingHeads(config, self.bert.embeddings.word_embeddings.weight)`), or one its own constructor
    was handed, on (`BertLMPredictionHead(config, bert_model_embedding_weights)`): `parameters_passed_in`'s edges."""
    return _passed_in(index)[1]


@dataclass(frozen=True)
class Handoff:
    """A constructor call in `method` of `caller` handing `arg` to the argument `target` of the class `callee`."""

    caller: str
    method: MethodInfo
    arg: cst.BaseExpression
    callee: str
    target: str
    handed: str | None  # the name of the caller's own argument handed on, or None for a child's parameter


@memoised
def _passed_in(index: ModelIndex) -> tuple[dict[str, frozenset[str]], list[Handoff]]:
    """`parameters_passed_in` and `parameter_handoffs`, found together."""
    found: dict[str, set[str]] = {}
    edges: dict[tuple[int, str], Handoff] = {}
    classes = [c for c in index.module_classes() if c.method("__init__") is not None]
    for cls in classes:
        init = cls.method("__init__")
        if init is None or "Parameter" not in init.text.split(":\n", 1)[0] or init.node is None:
            continue  # no `x: nn.Parameter` in the signature: no need to parse it
        node = init.node
        for param in (*node.params.params, *node.params.kwonly_params):
            if param.annotation is not None and _PARAMETER_TYPE.search(code_of(param.annotation.annotation, 200)):
                found.setdefault(cls.name, set()).add(param.name.value)
    names = "|".join(re.escape(c.name) for c in classes)
    constructs = re.compile(r"(?<![\w.])(?:" + names + r")\s*\(") if names else None
    for _round in range(4):  # a parameter handed through a few constructors
        grew = False
        for cls in classes:
            for method in cls.init_methods:
                handed = found.get(cls.name, set()) if method.name == "__init__" else set()
                if constructs is None or not constructs.search(method.text):
                    continue
                if not _PASSES_PARAMETER.search(method.text) and not any(n in method.text for n in handed):
                    continue
                grew |= _constructor_params(index, cls, method, handed, found, edges)
        if not grew:
            break
    return {name: frozenset(args) for name, args in found.items()}, list(edges.values())


_PARAMETER_TYPE = re.compile(r"(?<![\w])(?:nn\.|torch\.nn\.)?Parameter\b")
_PASSES_PARAMETER = re.compile(r"\.(?:weight|bias)\s*[,)]")


def _constructor_params(index: ModelIndex, cls: ClassInfo, method: MethodInfo, handed: set[str],
                        found: dict[str, set[str]], edges: dict[tuple[int, str], Handoff]) -> bool:
    """Record the constructor arguments that calls in `method` fill with a partitioned parameter."""
    flat = flat_of(method)
    if flat is None:
        return False
    grew = False
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Call:
            continue
        name = call_name(node)
        callee = index.classes.get(name or "")
        init = callee.method("__init__") if callee is not None and callee.is_module else None
        if init is None or init.node is None:
            continue
        for position, arg in enumerate(node.args):
            value = arg.value
            path = access_path(value)
            if path is None or arg.star:
                continue
            if path.parts:
                member = facts_of(cls).members.get(path.parts[0]) if path.root == "self" else None
                if member is None or member.kind not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
                    continue
                if len(path.parts) < 2 or path.parts[-1] not in ("weight", "bias") or "[]" in path.parts:
                    continue
            elif path.root not in handed:
                continue
            target = parameter_for(init.node, node, position)
            if target is None:
                continue
            edges.setdefault((id(value), target), Handoff(
                cls.name, method, value, callee.name, target, None if path.parts else path.root))  # type: ignore[union-attr]
            if target not in found.get(callee.name, set()):  # type: ignore[union-attr]
                found.setdefault(callee.name, set()).add(target)  # type: ignore[union-attr]
                grew = True
    return grew


def handoff_origins(index: ModelIndex, cls: str, name: str) -> list[Handoff]:
    """The calls that first hand a child's partitioned parameter (by a few constructors) into the argument `name` of
    the constructor of class `cls`."""
    edges = parameter_handoffs(index)
    found: list[Handoff] = []
    todo, seen = [(cls, name)], set()
    while todo:
        at = todo.pop()
        if at in seen:
            continue
        seen.add(at)
        for edge in edges:
            if (edge.callee, edge.target) == at:
                if edge.handed is None:
                    found.append(edge)
                else:
                    todo.append((edge.caller, edge.handed))
    return found


@memoised
def layer_base_params(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """The parameters a torch layer registers that `self` holds in the methods of `cls`: the layer `cls` derives
    from (`class LoraLinear(nn.Linear)`), or, for a mixin, one every module class of the file deriving from `cls`
    derives from too (`class LoraLinear(LoraMixin, nn.Linear)`: `self.weight` in `LoraMixin.merge`)."""
    base = torch_base(cls)
    if base is not None:
        return frozenset(known.TORCH_PARAMS[base])
    heirs = [info for info in index.classes.values() if info is not cls and any(b is cls for b in info.mro)]
    names = [frozenset(known.TORCH_PARAMS[b]) if (b := torch_base(info)) is not None else frozenset() for info in heirs]
    return frozenset.intersection(*names) if names else frozenset()


def _torch_container(index: ModelIndex, call: cst.Call) -> bool:
    """Is `call` a construction of one of torch's module containers (`nn.Sequential(...)`, `nn.ModuleList(...)`,
    `nn.ParameterDict` of modules)?"""
    qualified = index.qualify(call_name(call) or "")
    return qualified.rsplit(".", 1)[-1] in _TORCH_CONTAINERS and (qualified.startswith("torch.") or "." not in qualified)


_TORCH_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "ParameterDict", "ParameterList"})


def _viewed_as(flat: Flat, node: cst.BaseExpression) -> cst.Call | None:
    """`node.view(...)`, `node.reshape(...)`, `node.view_as(t)`: a view sharing the parameter's storage, as the call."""
    method = flat.parent.get(id(node))
    call = flat.parent.get(id(method)) if isinstance(method, cst.Attribute) and method.value is node else None
    if isinstance(call, cst.Call) and call.func is method and method.attr.value in _VIEWS:  # type: ignore[union-attr]
        return call
    return None


_VIEWS = frozenset({"view", "view_as", "reshape", "flatten", "unflatten", "t", "transpose", "squeeze", "unsqueeze"})


def _assigned_to(flat: Flat, node: cst.BaseExpression) -> cst.Name | None:
    """The local `node` is the whole value of (`w = self.base.weight`), as the target's name."""
    assign = flat.parent.get(id(node))
    if type(assign) is not cst.Assign or len(assign.targets) != 1 or assign.value is not node:
        return None
    target = assign.targets[0].target
    return target if isinstance(target, cst.Name) else None


def _bound_once(flat: Flat, node: cst.BaseExpression) -> str | None:
    """The local `node` is the whole value of (`w = self.base.weight`), when the function binds it nowhere else."""
    target = _assigned_to(flat, node)
    if target is None:
        return None
    return target.value if next(_other_bindings(flat, target), None) is None else None


def _other_bindings(flat: Flat, target: cst.Name):
    """What binds the name of `target` elsewhere in the function: each holder (an `AssignTarget`, a loop, a `with`,
    a parameter, an unpacking)."""
    for other, _ctx in flat.nodes:
        if type(other) is cst.Name and other.value == target.value and other is not target:
            holder = flat.parent.get(id(other))
            if isinstance(holder, (cst.AssignTarget, cst.For, cst.CompFor, cst.WithItem, cst.AnnAssign, cst.Param,
                                   cst.Tuple, cst.List, cst.NamedExpr)):
                yield holder


def _module_function(index: ModelIndex, name: str) -> bool:
    """Is `name` a function of an imported module by its dotted name (`net_util.init_tails`), not a method?"""
    head, _, last = name.partition(".")
    return "." not in last and head in index.imports and last[:1].islower()


def _bound_to_parameter(flat: Flat, node: cst.BaseExpression, param: str) -> str | None:
    """The local `node` is the whole value of (`w = self.base.weight`, `b = conv.bias.view(1, -1)`), when every other
    binding of it in the function takes a parameter of the same name too (`b = conv.bias.view(1, -1)` in each of
    two loops over heads): each use reads the binding before it."""
    target = _assigned_to(flat, node)
    if target is None:
        return None
    for holder in _other_bindings(flat, target):
        binding = flat.parent.get(id(holder)) if isinstance(holder, cst.AssignTarget) else None
        if not (type(binding) is cst.Assign and len(binding.targets) == 1 and (
                _takes_parameter(binding.value, param) or _storage_binding(binding.value))):
            return None  # (`w = self.proj_weights[i].data` in the other branch: a storage too, read as its own)
    return target.value


def _takes_parameter(value: cst.BaseExpression, param: str) -> bool:
    """Is `value` an attribute named `param` (`conv.bias`), its storage (`conv.bias.data`) or a view of either
    (`conv.bias.view(1, -1)`)?"""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _VIEWS:
        value = value.func.value
    if _storage_binding(value):
        value = value.value  # type: ignore[attr-defined]
    return isinstance(value, cst.Attribute) and value.attr.value == param


def _storage_binding(value: cst.BaseExpression) -> bool:
    """Is `value` the storage of some tensor (`self.proj_weights[i].data`)?"""
    return isinstance(value, cst.Attribute) and value.attr.value == "data"


def _storage_of(flat: Flat, node: cst.BaseExpression) -> cst.BaseExpression:
    """`p.data` for the parameter `p` (the storage the parameter holds, written through it), else `p` itself."""
    parent = flat.parent.get(id(node))
    stored = isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "data"
    return parent if stored else node


def _set_elsewhere(cls: ClassInfo, name: str) -> bool:
    """Is `self.<name>` neither a method, a property nor assigned in any method of `cls` (so a subclass sets it)?"""
    if cls.inherited_method(name) is not None:
        return False
    word = re.escape(name)  # (`\bself`, the word first: `program/trigger.py`)
    assigned = re.compile(r"self(?<!\wself)\." + word + r"\s*(?::[^=\n]*)?=[^=]|[\"']" + word + r"[\"']")
    return not any(assigned.search(m.text) for m in cls.all_methods())


def _from_self(value: cst.BaseExpression) -> bool:
    """A call of a method of `self` or `super()` (`self.get_input_embeddings()`)."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    root = value.func.value
    if isinstance(root, cst.Call) and call_name(root) == "super":
        return True
    return isinstance(root, cst.Name) and root.value == "self"


@memoised
def kept_parameter_lists(index: ModelIndex, cls: ClassInfo) -> dict[str, str]:
    """Attributes `__init__` sets to a list of a module's parameters (`self.params = list(self.enc.parameters())`),
    with what they list: walked later, they are those parameters, partitioned outside their modules' forwards."""
    if not any("parameters(" in method.text for method in cls.init_methods):
        return {}
    found = {}
    for name, member in facts_of(cls).members.items():
        source = _parameter_list(member.call, set()) if member.call is not None else None
        if source is not None:
            found[name] = source
    return found


def _parameter_list(value: cst.BaseExpression, passed_in: set[str]) -> str | None:
    """`list(self.parameters())` or `[p for n, p in self.named_parameters() if ...]`: what it lists."""
    if isinstance(value, cst.Call) and call_name(value) in {"list", "tuple"} and value.args:
        return _parameters_source(value.args[0].value, passed_in)
    if isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Name) and value.for_in.inner_for_in is None:
        for part, items in loop_items(value.for_in.target, value.for_in.iter):
            if isinstance(part, cst.Name) and part.value == value.elt.value:
                return _parameters_source(items, passed_in)
    return None


def _returned_walks(index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression, n: int) -> tuple[str | None, ...]:
    """For `self.helper()`, the walk each of the `n` values the helper returns collects the parameters of (a
    collection its own bindings know), else None."""
    none = (None,) * n
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name)
            and value.func.value.value == "self"):
        return none
    return _walks_returned(index, cls, value.func.attr.value, n)


@memoised
def _walks_returned(index: ModelIndex, cls: ClassInfo, name: str, n: int) -> tuple[str | None, ...]:
    method = cls.inherited_method(name) if cls.method(name) is None else cls.method(name)
    none = (None,) * n
    if method is None or "parameters(" not in method.text or "return" not in method.text:
        return none
    flat = flat_of(method)
    if flat is None:
        return none
    bound = _Bindings(index, cls, method, flat)
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Return or node.value is None:
            continue
        values = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
        if len(values) != n:
            return none
        return tuple(bound.collection(index, cls, v) for v in values)
    return none


def _handing_call(flat: Flat, node: cst.Name) -> cst.Call | None:
    """The call `node` is handed to as an argument, as is, unpacked or concatenated (`f(*ps)`, `f(extra=a + b)`,
    `f(*(xs + ps))`); None when it is used otherwise."""
    parent = flat.parent.get(id(node))
    while isinstance(parent, (cst.BinaryOperation, cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
        parent = flat.parent.get(id(parent))
    if not isinstance(parent, cst.Arg):
        return None
    call = flat.parent.get(id(parent))
    return call if isinstance(call, cst.Call) else None


# Builtins handed a collection only to measure or show it (`len(weights)`).
_MEASURING_BUILTINS = frozenset({"len", "print", "isinstance", "id", "type", "repr", "str", "bool"})


def _parameter_dict(value: cst.BaseExpression, passed_in: set[str]) -> str | None:
    """`dict(self.named_parameters())`, `OrderedDict(model.named_parameters())` or `{n: p for n, p in
    self.model.named_parameters()}`: a mapping from names to the parameters of the walk it names."""
    if isinstance(value, cst.Call) and (call_name(value) or "").rsplit(".", 1)[-1] in _DICTS and len(value.args) == 1:
        source = _parameters_source(value.args[0].value, passed_in)
        return source if source is not None and source.endswith("named_parameters()") else None
    if isinstance(value, cst.DictComp) and isinstance(value.value, cst.Name) and value.for_in.inner_for_in is None:
        for part, items in loop_items(value.for_in.target, value.for_in.iter):
            if isinstance(part, cst.Name) and part.value == value.value.value:
                return _parameters_source(items, passed_in)
    return None


_DICTS = frozenset({"dict", "OrderedDict"})


def _modules_loop(node: cst.For | cst.CompFor) -> str | None:
    """The loop variable of `for m in self.modules()` / `for n, m in self.child.named_modules()`."""
    for part, items in loop_items(node.target, node.iter):
        if not isinstance(items, cst.Call) or not isinstance(items.func, cst.Attribute) or not isinstance(part, cst.Name):
            continue
        if items.func.attr.value not in {"modules", "named_modules", "children", "named_children"}:
            continue
        path = access_path(items.func.value)
        if path is not None and path.root == "self":
            return part.value
    return None


def _first_item(node: cst.CSTNode | None) -> bool:
    """Is `node` a subscript taking item 0 (`pair[0]`)?"""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"


def _shadowed(flat: Flat, node: cst.CSTNode, name: str, method: cst.CSTNode | None) -> bool:
    """Is `name` at `node` a parameter of a function or lambda nested in the method (not the method's own local)?"""
    parent = flat.parent.get(id(node))
    while parent is not None and parent is not method:
        if isinstance(parent, (cst.FunctionDef, cst.Lambda)) and any(
            p.name.value == name for p in (*parent.params.params, *parent.params.posonly_params,
                                            *parent.params.kwonly_params)
        ):
            return True
        parent = flat.parent.get(id(parent))
    return False


def _walked_arguments(flat: Flat) -> frozenset[str]:
    """Names whose parameters the function walks (`weight.parameters()`): modules, however they are named (an
    argument called `weight` that the class's own calls bind to `self.to_k`)."""
    return frozenset(
        node.func.value.value for node, _ctx in flat.nodes
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
        and node.func.attr.value in ("parameters", "named_parameters")
    )


def _parameters_source(iterable: cst.BaseExpression, passed_in: set[str]) -> str | None:
    """`self.parameters()` / `self.child.named_parameters()` / `model.parameters()` of a module handed in: the
    text, if the loop walks a module's parameters."""
    iterable = same_items(iterable)
    if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Attribute):
        return None
    name = iterable.func.attr.value
    listing = name not in {"parameters", "named_parameters"}
    if listing and not _LISTS_PARAMETERS.match(name):
        return None
    if own_only(iterable):  # parameters(recurse=False): only the module's own, gathered in its forward
        return None
    path = access_path(iterable.func.value)
    if path is None or (path.root != "self" and path.root not in passed_in) or listing and not path.parts:
        return None
    return path.root + "".join("." + p for p in path.parts) + "." + iterable.func.attr.value + "()"


# A child's method named as listing its parameters (`self.network.regularization_params()`,
# `self.encoder.trainable_parameters()`); not `get_params()`, sklearn's settings.
_LISTS_PARAMETERS = re.compile(r"(?!get_params$)\w+_param(?:eter)?s$")


# Attributes of an unknown object that hold settings or state, not submodules.
NOT_A_SUBMODULE = re.compile(r"conf|cfg|args|opt|hparams|kwargs|setting|state|stats|cache|data|grad")


def _param_owner(index: ModelIndex, first: Member, rest: tuple[str, ...]) -> tuple[str, ...] | None:
    """If `self.<first>.<rest...>` ends at a parameter of a submodule, the classes of that submodule."""
    kind, classes = first.kind, first.classes
    item = False  # the last part took an item of a container
    for i, part in enumerate(rest):
        last = i == len(rest) - 1
        if kind == Kind.CONTAINER:
            if last and part != "[]":
                # a member built as a container on one path and as a layer on another (`nn.Conv2d` or a stem)
                layers = tuple(c for c in classes if member_param(index, c, part))
                return layers or None
            if part != "[]" and part in known.CONTAINER_METHODS:
                return None
            kind = Kind.MODULE  # `layers[0]`, or a ModuleDict entry by attribute (`transformer.wpe`)
            item = part == "[]"
            continue
        if kind == Kind.MODULE and part == "[]" and item:
            continue  # `self.fc_layers[0][0]`: a container in a container, whose items the members list as its own
        item = False
        if kind == Kind.UNKNOWN or classes in ((UNKNOWN_CLASS,), ()):
            if i == 0 and kind == Kind.UNKNOWN and config_like(first.name):
                return None  # `self.cfg.loss.weight`: a settings object, not a module
            if part == "[]" or (not last and not NOT_A_SUBMODULE.search(part)):
                continue  # `self.model.decoder.embed_tokens.weight` of a wrapped model we cannot read
            if last and known.torch_param_name(part):
                return (UNKNOWN_CLASS,)  # `self.module.weight`, `self.module.in_proj_weight` of a wrapped attention
            if last and i == 0 and not NOT_A_SUBMODULE.search(first.name) and part in index.related_param_names:
                return (UNKNOWN_CLASS,)  # `self.encoder.pos_embedding`: a parameter name of this package
            if part == "[]":
                continue
            if last:
                return (UNKNOWN_CLASS,) if part in {"weight", "bias"} else None
            settings = any(NOT_A_SUBMODULE.search(p) for p in rest[:-1])  # `self.model.config.loss.weight`
            if i == 0 and kind == Kind.UNKNOWN and not config_like(first.name) and rest[-1] in {"weight", "bias"} \
                    and not settings:
                # `self.decoders.token_embedding.weight` of a module loaded or passed in: we cannot see its
                # children, but a `.weight` two levels down is a child's parameter
                return (UNKNOWN_CLASS,) if "[]" not in rest and len(rest) <= 3 else None
            return None
        if kind == Kind.MODULE and part == "[]" and any(_container_class(index, c) for c in classes):
            kind, classes = Kind.UNKNOWN, (UNKNOWN_CLASS,)  # `self.main[-2]` of a Sequential subclass: an element
            continue
        if kind == Kind.MODULE and part == "[]" and i == 0 and first.name not in ("self", "") and classes:
            # `m[-1]` for `m` in `[self.reward, *self.qs]`, Sequentials known by the classes of their items: a module
            # indexed is a container, and its item one of those classes
            continue
        if kind != Kind.MODULE or part == "[]":
            return None
        next_member = None
        for ref in classes:
            answer = member_param(index, ref, part)
            if answer or (answer is None and last and part in {"weight", "bias"}):
                return classes if last else None
            if last and _property_parameter(index, ref, part):
                return classes  # `self.pos.weight`, a property of the child's class returning its child's weight
            next_member = next_member or member_of(index, ref, part) or _property_member(index, ref, part)
        if next_member is None and not last and classes and all(_unread_class(index, ref) for ref in classes):
            # `layer.attn.proj.weight` for `attn` of a library's class we cannot read: read on as a model we cannot
            # see into (the `UNKNOWN` steps above)
            kind, classes = Kind.UNKNOWN, (UNKNOWN_CLASS,)
            continue
        if next_member is None:
            return None
        kind, classes = next_member.kind, next_member.classes
    return None


def _unread_class(index: ModelIndex, ref: str) -> bool:
    """A class of a library we cannot read: not of this file, of another file we read, or of torch."""
    return (
        ref != UNKNOWN_CLASS and ref not in index.classes and not known.is_torch_module_class(index.qualify(ref))
        and not ref.startswith("torch.") and index.external(ref) is None
    )


def _property_member(index: ModelIndex, ref: str, name: str) -> Member | None:
    """The child a property of module class `ref` hands back as is (`@property def embedding(self): return
    self._embedding`), so that `self.vq.embedding.weight` is that child's weight; None for any other attribute."""
    found = index.located(ref)
    if found is None or not is_property(found[1], name):
        return None
    home, cls = found
    returned = property_attributes(cls, name)
    member = facts_of(cls).members.get(next(iter(returned))) if len(returned) == 1 else None
    if member is None or home is index:
        return member
    return Member(member.name, member.kind, tuple(home.global_name(c) for c in member.classes), member.order)


def _container_class(index: ModelIndex, ref: str) -> bool:
    """Is `ref` a ModuleList/ModuleDict/Sequential, or a class of this or another file deriving from one?"""
    if ref.rsplit(".", 1)[-1] in ("ModuleList", "ModuleDict", "Sequential"):
        return True
    local = index.classes.get(ref)
    if local is not None:
        return bool(local.container_kind)
    external = index.external(ref) if ref != UNKNOWN_CLASS else None
    return external is not None and bool(external[1].container_kind)


@memoised(cycle=())
def _helper_reads(index: ModelIndex, cls: ClassInfo, name: str, prop: bool) -> tuple[tuple[str, ...], ...]:
    """Paths `self.a.b.weight` that a helper method, property or stored lambda of `cls` returns or computes with."""
    body: cst.CSTNode | None = None
    reached = own = False
    if not prop and name in facts_of(cls).lambdas:
        body = facts_of(cls).lambdas[name].body
    else:
        method = cls.inherited_method(name)
        is_property = method is not None and method.text.lstrip().startswith("@property")
        # (a property is judged by what it returns, at each read: what forward reaches of it is its own body's)
        reached = method is not None and not is_property and any(m is method for m in cls.forward_methods)
        # A helper of the class itself that forward reaches is checked in its own body, where a reader of the class
        # sees it; only a parameter it returns as is concerns the caller. One a base class defines (`self.masked()`
        # of a wrapper's base) computes with the parameter at each call in the subclass's forward, where a reader
        # of that forward sees the hazard: reported there too, whatever it returns.
        own = reached and method.owner is cls  # type: ignore[union-attr]
        if reached and ("return self." if own else "return ") not in method.text:  # type: ignore[union-attr]
            method = None
        if method is not None and is_property == prop and method.node is not None:
            body = method.node
    found: list[tuple[str, ...]] = []
    if body is not None:
        values = [body] if isinstance(body, cst.BaseExpression) else [
            stmt.value for stmt in walk(body) if isinstance(stmt, cst.Return) and stmt.value is not None
        ]
        if own:
            values = [v for v in values if isinstance(v, cst.Attribute)]
        elif not isinstance(body, cst.BaseExpression):
            values += _bound_values(body, values)  # `w = self.wrapped.weight` ... `return w * scale`
        for value in values:
            described = {
                id(e.value) for e in walk(value)
                if isinstance(e, cst.Attribute) and (e.attr.value in known.METADATA_ATTRS or e.attr.value in known.SIZE_ATTRS)
            }
            for expr in walk(value):
                if isinstance(expr, cst.Attribute) and id(expr) not in described:
                    path = access_path(expr)
                    # (an item of a container child only in what a property returns: `self.decoders[-1].weight`)
                    if path and path.root == "self" and len(path.parts) >= 2 and ("[]" not in path.parts or prop):
                        if path.parts[-1] in index.param_names and path.parts not in found:
                            found.append(path.parts)
    return tuple(found)


def _property_parameter(index: ModelIndex, ref: str, name: str) -> bool:
    """Is `name` a property of module class `ref` that returns a parameter of one of its children
    (`@property def weight(self): return self.linear.weight`)? Reading it reads that parameter. A class of another
    file answers there."""
    cls = index.classes.get(ref)
    if cls is None and ref != UNKNOWN_CLASS:
        external = index.external(ref)
        if external is not None and external[0] is not index:
            return _property_parameter(external[0], external[1].name, name)
    if cls is None or not cls.is_module:
        return False
    method = cls.inherited_method(name)
    if method is None or not method.text.lstrip().startswith("@property"):
        return False
    if _helper_reads(index, cls, name, True):
        return True
    members = facts_of(cls).members
    node = method.node
    return node is not None and any(  # `return self.weight * self.scale`: its own parameter
        isinstance(stmt, cst.Return) and stmt.value is not None and any(
            isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"
            and (member := members.get(e.attr.value)) is not None and member.kind == Kind.PARAM and not member.classes
            for e in walk(stmt.value)
        )
        for stmt in walk(node)
    )


def _bound_values(body: cst.CSTNode, values: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
    """The values bound to the locals that the returned `values` name, and to the locals those name in turn."""
    bound: dict[str, list[cst.BaseExpression]] = {}
    for stmt in walk(body):
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
            bound.setdefault(stmt.targets[0].target.value, []).append(stmt.value)
    found: list[cst.BaseExpression] = []
    seen: set[str] = set()
    todo = list(values)
    while todo:
        for node in walk(todo.pop()):
            if type(node) is cst.Name and node.value in bound and node.value not in seen:
                seen.add(node.value)
                found += bound[node.value]
                todo += bound[node.value]
    return found


def _handed_values(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
    """What an argument hands over: the elements of a list or tuple written there (`init([self.conv1,
    self.conv2])`, a helper that walks each module it is given), the module whose walk it is (`init(self.up.modules())`:
    a helper writing each module it iterates writes the module's and its children's parameters), else the argument
    itself."""
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements and not any(
        isinstance(e, cst.StarredElement) for e in expr.elements
    ):
        return tuple(e.value for e in expr.elements)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _MODULE_WALKS \
            and not expr.args:
        return (expr.func.value,)
    return (expr,)


_MODULE_WALKS = frozenset({"modules", "children"})


def _module_arg(expr: cst.BaseExpression, members, module_aliases) -> bool:
    """Is `expr` a submodule of `self` or a local bound to a module (by its first name only)?"""
    path = access_path(expr)
    if path is None:
        return False
    if path.root == "self":
        member = members.get(path.parts[0]) if path.parts else None
        return member is not None and member.kind in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN)
    return path.root in module_aliases


_FREE_APPLY = re.compile(r"^(?:named_apply|\w+_apply|apply_\w+)$")


@memoised
def property_container(index: ModelIndex, cls: ClassInfo, name: str) -> str | None:
    """The `ParameterList`/`ParameterDict` of `cls` that the property `name` hands back, as is or regrouped by the
    calls it is handed to whole (`return self.weights`, `return dict(zip(self.names, self.weights))`,
    `TensorDict(...)`): reading the property reads that container's tensors. None when a return is anything else."""
    method = cls.method(name)
    if method is None or method.node is None or "return" not in method.text:
        return None
    found: set[str] = set()
    for stmt in walk(method.node):
        if isinstance(stmt, cst.Return):
            made = _made_of_container(index, cls, stmt.value) if stmt.value is not None else None
            if made is None:
                return None
            found.add(made)
    return found.pop() if len(found) == 1 else None


def _made_of_container(index: ModelIndex, cls: ClassInfo, value: cst.BaseExpression) -> str | None:
    """`self.<container>` when `value` is it, its `.values()`/`.items()`, or a call or list it is handed to whole."""
    path = access_path(value)
    if path is not None and path.root == "self" and len(path.parts) == 1:
        return code_of(value) if parameter_container(index, cls, path.parts[0]) else None
    if isinstance(value, (cst.List, cst.Tuple)):
        items = [e.value for e in value.elements]
    elif isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Name) and func.value in ("len", "isinstance", "id", "type"):
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in ("values", "items") and not value.args:
            return _made_of_container(index, cls, func.value)
        items = [a.value for a in value.args]
    else:
        return None
    made = {m for m in (_made_of_container(index, cls, v) for v in items) if m is not None}
    return made.pop() if len(made) == 1 else None


# Calls that take a container's size or walk it lazily, reading no tensor of it by themselves.
_NO_TENSOR_READ = frozenset({"len", "enumerate", "zip", "reversed", "iter", "isinstance", "id", "type", "range"})


def _handed_whole(flat: Flat, node: cst.BaseExpression) -> bool:
    """Is the container `node` (or its `.values()`/`.items()`, a list or tuple of it, starred) an argument of a
    call that computes with its tensors, not the iterable of a loop, nor only sized or walked lazily?"""
    handed = False
    parent = flat.parent.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in ("values", "items"):
            call = flat.parent.get(id(parent))
            if not (isinstance(call, cst.Call) and call.func is parent):
                return False
            node, parent = call, flat.parent.get(id(call))
            continue
        if isinstance(parent, (cst.Arg, cst.StarredElement, cst.Element, cst.List, cst.Tuple)):
            node, parent = parent, flat.parent.get(id(parent))
            continue
        if isinstance(parent, cst.Call) and node is not parent.func:
            name = parent.func.value if isinstance(parent.func, cst.Name) else None
            if name in ("len", "isinstance", "id", "type"):
                return False
            if name not in _NO_TENSOR_READ and name not in ("list", "tuple", "dict"):
                handed = True  # (`list(...)`, `dict(zip(...))` only regroup the tensors: the outer call decides)
            node, parent = parent, flat.parent.get(id(parent))
            continue
        if isinstance(parent, (cst.For, cst.CompFor)) and node is parent.iter:
            return False  # a loop over it: its items are judged where used
        break
    return handed


def _made_copy(flat: Flat, node: cst.BaseExpression, owner: str) -> bool:
    """Is `node` a property standing for the container `owner` (`self.weight_dict`, a `TensorDict` of its tensors)
    whose own method is called (`self.weight_dict.clone()`)? The object the property built computes with the
    tensors; the container itself has no such methods, and its walks (`keys`, `values`, `items`) are judged apart."""
    if code_of(node) == owner:
        return False
    parent = flat.parent.get(id(node))
    call = flat.parent.get(id(parent))
    return (
        isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value not in ("keys", "values", "items")
        and isinstance(call, cst.Call) and call.func is parent
    )


def _binds(flat: Flat, name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """Is `name` where a loop or an assignment binds it (`for k, w in ...`, `w = ...`), not a use?"""
    while isinstance(parent, (cst.Tuple, cst.List, cst.Element)):
        name, parent = parent, flat.parent.get(id(parent))  # type: ignore[assignment]
    if isinstance(parent, (cst.For, cst.CompFor)):
        return parent.target is name
    return isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.Param)
