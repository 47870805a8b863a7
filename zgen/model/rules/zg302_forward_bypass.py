"""ZG302: a submodule's forward called directly, bypassing its hooks."""

from __future__ import annotations

import re
from collections.abc import Iterator

from zgen.findings import Severity

from ..analysis.calls import ModuleCalls
from ..analysis.exposed import exposed_methods
from ..analysis.flow import flat_of, loop_items
from ..analysis.handed import outside_functions
from ..analysis.own import answering_classes, forward_parts_outside
from ..analysis.instances import function_arguments, possible_classes, receiver_instance, self_attributes
from ..analysis.persistence import persistent_param
from ..analysis.plain import all_bases
from ..analysis.script import function_scope
from ..analysis.unregistered import stashed_runs, unregistered_runs
from ..program.holds import (
    annotated_module, held_attributes, held_path_classes, reached_models, wrapped_attributes,
)
from ..program.index import ClassInfo, MethodInfo, ModelIndex
from ..program import known
from ..program.members import UNKNOWN_CLASS, Kind, facts_of, has_params, parameter_container, torch_base
from ..program.tree import access_path, call_name, code_of, cst, dotted, walk
from ..program.trigger import Trigger
from .rule import Report, Rule

# `.forward(` called, or `.forward` handed on as a callback (`fn=unet.forward`).
# (the literal first, then the look-behind: a pattern opening on a look-behind is tried at every position)
_TRIGGER = Trigger(".forward", pattern=r"\.forward(?<!super\(\)\.forward)(?:\s*\(|\s*[,)\n])")


class ForwardBypass(Rule):
    """A submodule's `forward` is called directly instead of calling the module.

    ## What it does
    Flags `self.child.forward(x)` (or `layer.forward(x)` for a layer taken
    from a `ModuleList`) in a model's methods when the submodule owns
    parameters directly; the same `.forward` handed on as a callback
    (`sample(fn=self.unet.forward)`); and `self.forward(x)` in a method that
    runs outside the module's forward (`def denoise(self, x):
    self.forward(...)`) when that forward reads parameters the module owns itself.
    `super().forward(x)` and calling the module itself, `self.child(x)`, are
    fine. Methods of a held model exposed on the wrapper under names known
    only at run time (`setattr(self, name, getattr(self.ema_model, name))`)
    are called by the wrapper's users with no hook of the model running.
    Outside the model classes, a bound `forward` set as another module's
    forward (`model.head.forward = other.forward`) skips the same hooks.
    A module the constructor builds and keeps only in a plain list, tuple
    or dict (`self.nets = [nn.Linear(d, d)]`) has no hooks at all: no
    submodule, it is run past any gather (`self.nets[0](x)`); so is a module
    the constructor stashes in the instance dictionary to keep it out of the
    checkpoint (`self.__dict__["t5"] = t5`, `object.__setattr__(self, "t5",
    t5)`), wherever it is run (`self.t5(**inputs)`, `apply_model(self.demucs,
    wav)`).

    ## Why is this bad under ZeRO-3?
    ZeRO-3 gathers a module's parameters in a hook that runs when the
    module is *called*; `.forward()` skips it. DeepSpeed's engine then
    fetches each of the module's parameters on first access, blocking and
    outside the prefetch schedule, and a runtime without that fallback
    computes with empty partitions. Other hooks (activation checkpointing,
    profilers) are skipped too.

    ## Example
    ```python
    def forward(self, x):
        return self.backbone.forward(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return self.backbone(x)
    ```
    """

    code = "ZG302"
    name = "forward-bypass"
    severity = Severity.WARNING

    VALID = (
        """
from torch import nn

class Wide(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Wide(4, 4)

    def forward(self, x):
        return self.proj(x)
""",
    )
    INVALID = (
        """
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj.forward(x)
""",
        """
from torch import nn

class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls, method in index.methods("all", _TRIGGER):
            flat = flat_of(method)
            if flat is None:
                continue
            calls = None
            in_forward = any(m is method for m in cls.forward_methods)
            for node, _ctx in flat.nodes:
                if type(node) is not cst.Attribute or node.attr.value != "forward":
                    continue
                parent = flat.parent.get(id(node))
                called = isinstance(parent, cst.Call) and parent.func is node
                handed = isinstance(parent, cst.Arg) or isinstance(parent, cst.Assign) and parent.value is node
                if not (called or handed):
                    continue  # `self.forward = self.forward_train`, `hasattr(m, "forward")`: no call
                if not called and isinstance(parent, cst.Arg) and _inspected(flat, parent):
                    continue  # `inspect.signature(child.forward)`: read for its parameters, never called
                target = node.value
                if isinstance(target, cst.Name) and target.value == "self":
                    # the module's own forward from a method run outside it (`def sample(self): self.forward(x)`):
                    # inside a forward the hooks already ran
                    if in_forward or not _forward_reads_own(index, cls, code_of(parent, limit=2000) if called else ""):
                        continue
                elif _torch_sequential(index, cls, target):
                    continue  # `nn.Sequential.forward` calls each of its modules, whose hooks run
                else:
                    calls = calls or ModuleCalls(index, cls, flat, method.name)
                    classes = calls.classes_of(target)
                    typed = None
                    if not classes or all(ref == UNKNOWN_CLASS for ref in classes):
                        # what the receiver is an instance of: an annotated attribute, a property returning one, a
                        # local or loop variable bound to either or to an element of a container of them
                        typed = receiver_instance(index, cls, flat, target, 0, method)
                    if typed is not None:
                        if not any(_owns_params(owner, ref) for owner, ref in possible_classes(index, typed)):
                            continue
                    elif classes is not None:
                        # known classes, or `()`: a container's modules no constructor names, a `Sequential` of
                        # layers as often as not (`down.forward(y)` for `down` in timm's `downsamp_modules`); a
                        # child never called as a module anywhere loses its small parameters too: no hook of its own
                        # ever fetched them for persistence to keep
                        small = not _called_as_module(cls, target)
                        if not any(_owns_params(index, ref, small) for ref in classes):
                            continue
                    elif not _module_by_use(index, cls, flat, target, parent if called else None, method):
                        continue
                if called:
                    message = (
                        f"`{code_of(node)}(...)` skips the hooks of `{code_of(target)}`; ZeRO-3 does not "
                        "gather its parameters for this call and must fetch them on access"
                    )
                    site = parent
                else:
                    message = (
                        f"`{code_of(node)}` is handed on as a function: whoever calls it skips the hooks of "
                        f"`{code_of(target)}`, so ZeRO-3 does not gather its parameters for those calls"
                    )
                    site = node
                yield self.finding(
                    index, method.snippet, site, message, f"call the module itself: `{code_of(target)}(...)`"
                )
        yield from self._outside(index)
        yield from self._forward_parts(index)
        yield from self._unregistered(index)
        for exposed in exposed_methods(index):
            message = (
                f"`{code_of(exposed.node)}` exposes methods of `{exposed.model}` as this object's own: calling them "
                f"never calls `{exposed.model}` as a module, so its hooks do not run and ZeRO-3 does not gather its "
                "parameters for those calls"
            )
            help = f"call `{exposed.model}(...)` itself, or wrap each exposed method in a call that gathers its parameters"
            yield self.finding(index, exposed.method.snippet, exposed.node, message, help)

    def _forward_parts(self, index: ModelIndex) -> Iterator[Report]:
        """A method the module's forward runs (`forward_on_codes`), called on `self` from a method run on the built
        model outside any forward (`generate`): the part of the forward runs without the module's own hooks, so
        the parameters it reads of the module's own are placeholders there, small ones too (nothing fetched them)."""
        for cls, method, node in forward_parts_outside(index):
            message = (
                f"`self.{node.func.attr.value}(...)`, a part of `{cls.name}`'s forward that reads its own "
                f"parameters, runs here in `{method.name}`, outside any forward: no hook of `{cls.name}` "
                "gathers them, so ZeRO-3 must fetch them on access (and nothing has fetched even the small ones)"
            )
            yield self.finding(index, method.snippet, node, message, "call the module itself: `self(...)`")

    def _unregistered(self, index: ModelIndex) -> Iterator[Report]:
        """A module the constructor built and kept in a plain list, tuple or dict, run in a forward."""
        for run in unregistered_runs(index):
            message = (
                f"`{code_of(run.node, limit=60)}` runs a module `{run.cls.name}` built in `__init__` and keeps in "
                f"the plain container `self.{run.attr}`, which registers no submodule: ZeRO-3 partitioned its "
                "parameters when it was built but installs no hook on it, so nothing gathers them for this call"
            )
            yield self.finding(index, run.snippet, run.node, message, _UNREGISTERED_HELP)
        for stash in stashed_runs(index):
            message = (
                f"`{code_of(stash.node, limit=60)}` runs `self.{stash.attr}`, a module `{stash.cls.name}` keeps in "
                "its instance dictionary (`self.__dict__`), which registers no submodule: ZeRO-3 partitioned its "
                "parameters when it was built or loaded but installs no hook on it, so nothing gathers them here"
            )
            yield self.finding(index, stash.snippet, stash.node, message, _STASHED_HELP)

    def _outside(self, index: ModelIndex) -> Iterator[Report]:
        """The same in code outside the model classes: a function given a module (`def sample(unet, ...):
        solver(fn=unet.forward)`), a class that holds one (a trainer's `self.unet.forward(x)`)."""
        if index.other_framework or not _TRIGGER.search(index.source):
            return
        for span, cls in outside_functions(index):
            if not _TRIGGER.search(index.skeleton.text(span.start, span.end)):
                continue
            scope = function_scope(index, span)
            if scope is None or not isinstance(scope.node, cst.FunctionDef):
                continue
            arguments = reached_models(index, scope.node)  # given, or reached through another object
            held = held_attributes(index, cls) if cls is not None else {}
            wrapped = wrapped_attributes(index, cls) if cls is not None else frozenset()
            for node, ctx in scope.flat.nodes:
                if type(node) is not cst.Attribute or node.attr.value != "forward" or ctx.guarded:
                    continue
                parent = scope.flat.parent.get(id(node))
                called = isinstance(parent, cst.Call) and parent.func is node
                # handed on, or set as another module's forward (`model.head.forward = other.forward`; not kept in a
                # local to be put back, `t = self.model.forward` ... `self.model.forward = t`)
                assigned = isinstance(parent, cst.Assign) and parent.value is node
                handed = isinstance(parent, cst.Arg) or assigned and (any(
                    isinstance(t.target, cst.Attribute) and t.target.attr.value == "forward"
                    and code_of(t.target.value) != code_of(node.value) for t in parent.targets
                ) or _local_handed_on(scope.flat, parent))
                if not (called or handed):
                    continue
                if not called and isinstance(parent, cst.Arg) and _inspected(scope.flat, parent):
                    continue  # `inspect.signature(model.forward)`: read for its parameters, never called
                target = code_of(node.value)
                if wrapped and target.startswith("self.") and target[len("self."):] in wrapped:
                    continue  # a wrapper object around the held model: its `forward` runs the model with its hooks
                classes = held_path_classes(index, target, arguments, held)
                if not classes and scope.partitioned_models and _partitioned_here(scope, node.value):
                    # `model = Unet()` ... `deepspeed.initialize(model=model)` ... `sample(model.forward, x)`
                    classes = held_path_classes(index, target, scope.partitioned_models, {})
                if not classes and isinstance(node.value, cst.Name):
                    # `enc = model.encoder`, `for blk in model.blocks`: a local bound to a part of a given model
                    classes = _bound_part(index, scope.flat, node.value.value, arguments, held)
                if not classes and not called and not scope.partitioned_models and isinstance(node.value, cst.Name):
                    # `model = DiT_models[name](...)` ... `sample_fn = model.forward` handed on: a model the function
                    # built, under `zero.Init` (where the function partitions a model itself, that decides)
                    classes = scope.built_models.get(node.value.value, ())
                typed = None
                if cls is None and not classes and isinstance(node.value, cst.Name):
                    typed = function_arguments(index, span.name).get(target)  # `run(self.v, x)` in a forward
                elif cls is not None:  # an annotation names a base: the subclasses it may be count too
                    typed = receiver_instance(index, cls, scope.flat, node.value, 0, cls.method(span.name))  # `self.v: Base`, `v = self.v`
                whole = called and _whole_model(node.value, arguments, held, cls)
                if typed is not None:
                    if whole and set(typed.classes) <= _GENERIC_MODULE:
                        continue  # `self.model: nn.Module`, its forward called: told below
                    if not any(_owns_params(owner, ref) for owner, ref in possible_classes(index, typed)):
                        continue
                elif not classes or whole and set(classes) <= _GENERIC_MODULE or not any(
                    _owns_params(index, ref) for ref in classes
                ):
                    # (a model handed in of no class we can read, its forward called: a whole model's root most often
                    # owns no parameter of its own, its children run as modules inside that forward; handed on as a
                    # callback, `solver(fn=unet.forward)`, it runs where no engine sees it, and is reported)
                    continue
                if called:
                    message = (
                        f"`{target}.forward(...)` skips the hooks of `{target}`, a module `{span.name}` is given or "
                        "holds; ZeRO-3 does not gather its parameters for this call and must fetch them on access"
                    )
                else:
                    message = (
                        f"`{target}.forward` is handed on as a function: whoever calls it skips the hooks of "
                        f"`{target}`, so ZeRO-3 does not gather its parameters for those calls"
                    )
                site = parent if called else node
                yield self.finding(index, scope.snippet, site, message, f"call the module itself: `{target}(...)`")


def _local_handed_on(flat, assign: cst.Assign) -> bool:
    """Is the local `assign` binds (`sample_fn = model.forward`) later handed to a call (`p_sample_loop(sample_fn, z)`)
    in the same function, the module's own `forward` never set again there (`m.forward = wrapper`: a wrapper install,
    its hooks run first)?"""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return False
    name, owner = assign.targets[0].target.value, code_of(assign.value.value)  # type: ignore[attr-defined]
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and any(  # `m.forward = wrapped`: the original kept to be wrapped, hooks run first
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "forward"
                and code_of(t.target.value) == owner for t in node.targets):
            return False
    for node, _ctx in flat.nodes:
        if type(node) is cst.Name and node.value == name and node is not assign.targets[0].target \
                and flat.function_of(node) is flat.function_of(assign):  # (not in a closure installed elsewhere)
            if isinstance(flat.parent.get(id(node)), cst.Arg):
                return True  # (called here, it is a call of the forward, judged as one)
    return False


# What a model handed in is known as when no class of it can be read: no class, or only `nn.Module` (annotated so).
_GENERIC_MODULE = frozenset({UNKNOWN_CLASS, "torch.nn.Module", "torch.nn.modules.module.Module"})


def _whole_model(receiver: cst.BaseExpression, arguments, held, cls: ClassInfo | None) -> bool:
    """`model`, `self.model`: a model the function is given or the object was handed and keeps, itself, not a named
    part of one (`model.fc`, likely a layer), a local bound to a part (`enc = model.encoder`) nor a child the class
    built of a class of another library (`self.mlp = MultiAgentMLP(...)`, which may own parameters itself)."""
    if isinstance(receiver, cst.Name):
        return receiver.value in arguments
    if not (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self" and receiver.attr.value in held and cls is not None):
        return False
    return not _built_by_the_class(cls, receiver.attr.value)


def _built_by_the_class(cls: ClassInfo, name: str) -> bool:
    """Does a constructor of `cls` (or of a base) set `self.<name>` to what a call makes, other than a typing cast of
    what it was handed (`self.model: nn.Module = cast(nn.Module, self.forward_func)`)?"""
    for owner in all_bases(cls):
        for method in owner.init_methods:
            if f"self.{name}" not in method.text or method.node is None:
                continue
            for node in walk(method.node):
                if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(node.value, cst.Call):
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                    if any(dotted(t) == f"self.{name}" for t in targets) and (
                        call_name(node.value) or "").rsplit(".", 1)[-1] != "cast":
                        return True
    return False


_UNREGISTERED_HELP = (
    "keep the modules in an `nn.ModuleList`/`nn.ModuleDict` (or set each as an attribute) so that they are submodules"
)
_STASHED_HELP = (
    "set it as an attribute (`self.t5 = t5`) so that it is a submodule, and keep it out of the checkpoint by filtering "
    "the state dict; or gather its parameters around the call (`deepspeed.zero.GatheredParameters`)"
)


def _module_by_use(
    index: ModelIndex, cls: ClassInfo, flat, target: cst.BaseExpression, call: cst.Call | None,
    method: MethodInfo | None = None,
) -> bool:
    """A receiver of `.forward` whose class nothing names (a loop variable over a list a factory of another package
    built or over `self.children()`, a local, an argument): a module by that use, of a class that may own
    parameters, like a child of unknown class. Not a class itself (`Base.forward(self, x)`, a base class's forward
    run on this module) nor `super(Net, self)`, nor an attribute `__init__` sets to a plain value, a buffer or a
    parameter, nor a local, a property or an argument of the class's own call bound to such attributes alone
    (`v = self.v` with `self.v = self.core_class(d)` of a plain class: `instances.self_attributes`). A local annotated with a module class (`down: ModuleInterface = self.downs[i]`, a TorchScript
    interface) is of that class. In a file defining a class that is no module but has a `forward` of its own, the
    use tells nothing."""
    if any(not c.is_module and "forward" in c.span.methods for c in index.classes.values()):
        return False
    if call is not None and call.args and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "self":
        return False  # `Base.forward(self, x)`, `Base.forward(self=self, ...)`: the module's own forward, as a base's
    root = target
    while isinstance(root, (cst.Subscript, cst.Attribute)):
        root = root.value
    if isinstance(root, cst.Call):
        return False  # `super(Net, self).forward(x)`, `self.get(k).forward(x)`: what the call returns, unknown
    if not isinstance(root, cst.Name) or root.value in index.imports or index.local_class(root.value) is not None:
        return False  # `nn.Linear.forward(...)`, `Block.forward(...)`: a class, not a module
    if root is target:
        for node, _ctx in flat.nodes:
            if type(node) is cst.AnnAssign and isinstance(node.target, cst.Name) and node.target.value == root.value:
                annotated = annotated_module(index, node.annotation.annotation)
                if annotated:
                    return any(_owns_params(index, ref) for ref in annotated)
    members = facts_of(cls).members
    # `v = self.v`, `self.core` (a property), `self._run(self.v, x)`: what the attributes behind it hold decides
    attributes = self_attributes(cls, flat, target, method)
    if attributes is None:
        path = access_path(target)
        attributes = frozenset({path.parts[0]}) if root.value == "self" and path is not None and path.parts else None
    if attributes is not None:
        return any(
            members.get(name) is None or members[name].kind in (Kind.UNKNOWN, Kind.MODULE, Kind.CONTAINER)
            for name in attributes
        )
    if root is target:
        answering = _answering_by_methods(index, flat, root.value)
        if answering:
            return any(_owns_params(index, ref) for ref in answering)
    return True


def _answering_by_methods(index: ModelIndex, flat, name: str) -> tuple[str, ...]:
    """The module classes of the file or its package that define every other method the method calls on the name
    (`pos.apply_2d_rotary_pos_emb(q, f)` beside `pos.forward(x)`: only the rotary embedding's class has it), which
    the value must be one of; none when no such method is called or no class we read defines them all."""
    called = {
        node.func.attr.value
        for node, _ctx in flat.nodes
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
        and node.func.value.value == name and node.func.attr.value not in _MODULE_API
    }
    found: set[str] | None = None
    for method in called:
        classes = answering_classes(index, (UNKNOWN_CLASS,), method, package=True)
        if UNKNOWN_CLASS in classes:
            return ()
        found = set(classes) if found is None else found & set(classes)
    return tuple(sorted(found)) if found else ()


# Methods every module has (`nn.Module`'s API and `forward`): calling one tells nothing of the module's class.
_MODULE_API = known.NOT_RUNS | {"forward", "__call__"}


def _bound_part(
    index: ModelIndex, flat, name: str, arguments: dict[str, tuple[str, ...]], held: dict[str, tuple[str, ...]]
) -> tuple[str, ...] | None:
    """The classes of the module a local `name` holds when the function binds it to a submodule of a model it is
    given or holds (`enc = model.encoder`), or walks the modules of one (`for blk in model.blocks`, `.values()`,
    `.children()`): an element of a submodule is a module of a class the path cannot name."""
    found = None
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1:
            if isinstance(node.targets[0].target, cst.Name) and node.targets[0].target.value == name:
                path = access_path(node.value)
                written = ".".join((path.root, *path.parts)) if path is not None and "[]" not in path.parts else None
                found = held_path_classes(index, written, arguments, held) if written else None
        elif type(node) is cst.For or type(node) is cst.CompFor:
            for part, items in loop_items(node.target, node.iter):
                if not (isinstance(part, cst.Name) and part.value == name):
                    continue
                if isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and not items.args:
                    if items.func.attr.value not in ("values", "children"):
                        continue
                    items = items.func.value
                path = access_path(items)
                if path is not None and "[]" not in path.parts and path.parts:
                    held_by = held_path_classes(index, ".".join((path.root, *path.parts[:-1])), arguments, held)
                    found = (UNKNOWN_CLASS,) if held_by else None
    return found


def _partitioned_here(scope, target: cst.BaseExpression) -> bool:
    """Is `target` (`model`, `engine.module`, `model.decoder`) a model the function partitioned by this point, or a
    part of one?"""
    while True:
        if scope.wrapped_name(target, target) is not None:
            return True
        if not isinstance(target, cst.Attribute):
            return False
        target = target.value


def _inspected(flat, arg: cst.Arg) -> bool:
    call = flat.parent.get(id(arg))
    return isinstance(call, cst.Call) and (call_name(call) or "").rsplit(".", 1)[-1] in ("signature", "getfullargspec")


def _forward_reads_own(index: ModelIndex, cls: ClassInfo, call: str = "") -> bool:
    """Does the module's forward (or what it reaches), or the call of it (`self.forward(x, self.group_features)`),
    name a parameter the module owns itself (a torch layer's base: its `weight` and `bias`)? Only those are lost when
    `self.forward(...)` skips the module's own hooks: a bias the forward never reads (BERT4Rec's, read by the loss)
    is not. Small ones count too: run from a method outside any forward (`generate`), the module's own hooks never
    fetched them, so persistence has kept nothing gathered."""
    text = "".join(m.text for m in cls.forward_methods) + call
    base = torch_base(cls)
    if base is not None and _READS_BASE.search(text) is not None:
        return True
    return any(
        m.kind == Kind.PARAM and not parameter_container(index, cls, name)
        and re.search(rf"\bself\.{re.escape(name)}\b", text) is not None
        for name, m in facts_of(cls).members.items()
    )


# A torch layer's subclass reading what its base owns: `self.weight`, `self.bias`, or the base's own forward.
_READS_BASE = re.compile(r"\bself\.(?:weight|bias)\b|\bsuper\(\)\.forward\b")


def _torch_sequential(index: ModelIndex, cls: ClassInfo, target: cst.BaseExpression) -> bool:
    """Is `target` a child `self.<name>` that `__init__` builds as torch's `nn.Sequential(...)`?"""
    path = access_path(target)
    if path is None or path.root != "self" or len(path.parts) != 1:
        return False
    member = facts_of(cls).members.get(path.parts[0])
    return member is not None and member.call is not None and \
        index.qualify(call_name(member.call) or "") == "torch.nn.Sequential"


def _called_as_module(cls: ClassInfo, target: cst.BaseExpression) -> bool:
    """Is the child `self.<name>` that `target` reads called as a module somewhere in the class (`self.attention(h)`),
    so that its own hooks fetch its small parameters for persistence to keep? (True where `target` is no child the
    class builds: nothing to tell.)"""
    path = access_path(target)
    member = facts_of(cls).members.get(path.parts[0]) if path is not None and path.root == "self" and len(
        path.parts) == 1 else None
    if member is None or member.made_by is None:
        return True  # (not a child the class builds itself: one handed in may be called as a module by its caller)
    return re.search(rf"\bself\.{re.escape(path.parts[0])}\s*\(", cls.text) is not None


def _owns_params(index: ModelIndex, ref: str, small: bool = False) -> bool:
    """Does the module own parameters itself (not only through children, whose hooks still run) that ZeRO-3 does
    not keep gathered? A module holding only a small one (a null embedding of `1 x d`) loses nothing when its
    own hooks are skipped: that parameter stays gathered, once some call of the module fetched it (`small`: count
    the small ones too, for a module no call ever runs as one). A `ParameterList` it holds is a child: its
    parameters were never the module's to gather."""
    local = index.class_of(ref)
    if local is None:  # a class of another file of the program: what it owns, read there
        external = index.external(ref) if ref != UNKNOWN_CLASS else None
        if external is not None and external[1].is_module:
            index, local = external
    if local is not None:
        base = torch_base(local)  # `class Conv2dSame(nn.Conv2d)`: the torch layer's own weight
        return base is not None and base not in known.NORMS or any(
            m.kind == Kind.PARAM and not parameter_container(index, local, name)
            and (small or not persistent_param(index, local.name, name))
            for name, m in facts_of(local).members.items()
        )
    return has_params(index, ref) is not False
