"""ZG110: a forward pass run inside `__init__`, after submodules were built."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.built import built_module
from ..analysis.choices import options
from ..analysis.effects import RUNS, argument_effects, inherited_argument_effects
from ..program.holds import module_arguments, module_like_name
from ..analysis.flow import Flat, flat_of
from ..analysis.script import method_runs
from ..program import known
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.members import UNKNOWN_CLASS, Kind, classify, facts_of, has_params
from ..program.tree import access_path, call_name, code_of, cst
from ..program.trigger import LOCAL_CONSTRUCTION
from .rule import Report, Rule

# `m = build_ts_model(...)`: a local bound to a model a builder makes (`known.MODEL_BUILDERS`).
_LOCAL_MODEL = re.compile(r"^[ \t]*([a-z_]\w*)\s*=\s*(?:[a-z_]\w*\.)*([a-z_]\w*)\(", re.MULTILINE)
# `ProteinBackbone(n, init_state="alpha")()`: a class built and called on the spot (arguments nested one deep).
_BUILT_AND_CALLED = re.compile(r"(?<![\w.])[A-Z]\w*\((?:[^()]|\([^()]*\))*\)\s*\(")
# `self(`, `self.forward(`, `self.<child>(`, `self.<child>[i](`, `self.<child>.forward(`.
_CALLS_SELF = re.compile(r"self(?<!\wself)(?:\.(\w+)(?:\[[^\]\n]*\])?)?(?:\.forward)?\s*\(")
# `output_dim(self.features, ...)`: a function of the program (a bare lower-case name, no builtin) handed a child of
# `self`.
# `self._calc_input_size(shape, self.cnn)`: a method of the module handed a child.
_HANDS_CHILD_TO_METHOD = re.compile(r"self(?<!\wself)\.[a-z_]\w*\([^()\n]*?(?<![\w.])self\.\w+\s*[,)]")
_HANDS_CHILD = re.compile(
    r"(?<![\w.])(?!(?:enumerate|len|list|tuple|zip|iter|isinstance|getattr|setattr|hasattr|super|print|sorted|sum|any|all"
    r"|max|min|type|id|str|repr|int|float|dict|set|next|reversed|map|filter|callable|vars)\()"
    r"[a-z_]\w*\([^()]*?(?<![\w.])self\.\w+\s*[,)]"  # (first, later or by keyword: `out_dim(c, model=self.cnn)`)
)
# nn.Module's own API, called on `self` in `__init__` without running a forward.
_MODULE_API = frozenset(
    {"add_module", "apply", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval", "modules",
     "children", "parameters", "buffers", "named_parameters", "named_modules", "named_children", "named_buffers",
     "state_dict", "load_state_dict", "requires_grad_", "zero_grad", "get_submodule", "get_parameter", "type",
     "extra_repr", "share_memory", "post_init", "__init__"}
)


def _may_run_forward(cls: ClassInfo, text: str) -> bool:
    """Text test before parsing: a call of `self`, `self.forward` or an attribute that is no method of the class,
    or of a local bound to a construction or a model builder's model (`net = nn.Sequential(...)` ... `net(probe)`,
    `m = build_ts_model(...)` ... `m[0](probe)`), or a call of a function that is handed a child
    (`output_dim(self.features, shape)`, `out_dim(c, model_cnn=self.cnn)`)."""
    if _BUILT_AND_CALLED.search(text):
        return True
    built = [m for m in _LOCAL_MODEL.finditer(text) if m.group(2) in known.MODEL_BUILDERS]
    for match in (*LOCAL_CONSTRUCTION.finditer(text), *built):
        if re.search(r"(?<![\w.])" + match.group(1) + r"(?:\[[^\]\n]*\])?\s*\(", text[match.end():]):
            return True
    if _HANDS_CHILD.search(text) or _HANDS_CHILD_TO_METHOD.search(text) or _calls_an_argument(text):
        return True
    for match in _CALLS_SELF.finditer(text):
        name = match.group(1)
        if name is None or name == "forward":
            return True
        if name in _MODULE_API or name.startswith(("register_", "_register")) or name.endswith(("_fn", "_func")):
            continue  # the module API, or a stored function (`self.rope_init_fn(config)`)
        if "init" in name or cls.inherited_method(name):
            continue  # a method (`self.init_weights()` of a base class in a file not read)
        return True
    return False


def _calls_an_argument(text: str) -> bool:
    """Text test: does the body of the `__init__` in `text` call one of its arguments (`embed(ids)`) or a method
    of one, or of a local bound to a choice of them (`stem = rgbt_stem if rgbt_stem is not None else depth_stem`,
    then `stem.get_patch_layout(size)`)?"""
    start = text.find("def __init__(")
    if start < 0:
        return False
    depth, at = 0, start + len("def __init__")
    for at in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[at], 0)
        if depth == 0:
            break
    names = set(_ARGUMENT.findall(text, start + len("def __init__("), at)) - {"self"}
    if not names:
        return False
    if not names.isdisjoint(_CALLED_NAME.findall(text, at)):
        return True
    chosen = {m.group(1) for m in _CHOSEN_ARGUMENT.finditer(text, at) if {m.group(2), m.group(3)} <= names}
    return not (names | chosen).isdisjoint(_METHOD_ROOT.findall(text, at))


# An argument's name in a signature: after `(` or `,`, past `*`/`**`.
_ARGUMENT = re.compile(r"(?:^|(?<=[(,]))\s*\*{0,2}([a-z_]\w*)")
# A bare lower-case name called (`embed(ids)`), not a method or an attribute's call.
_CALLED_NAME = re.compile(r"(?<![\w.])([a-z_]\w*)\s*\(")
# The name a method is called on (`stem` of `stem.get_patch_layout(size)`).
_METHOD_ROOT = re.compile(r"(?<![\w.])([a-z_]\w*)\.[a-z_]\w*\s*\(")
# `stem = rgbt_stem if rgbt_stem is not None else depth_stem`: a local bound to a choice of two names.
_CHOSEN_ARGUMENT = re.compile(r"^[ \t]*([a-z_]\w*)\s*=\s*([a-z_]\w*)\s+if\b[^\n]*\belse\s+([a-z_]\w*)[ \t]*$", re.M)


class ForwardInInit(Rule):
    """A forward pass runs in `__init__` after submodules with parameters were built.

    ## What it does
    Flags, in a module's `__init__` (or a helper it calls), a call that runs
    a forward: `self(x)`, `self.forward(x)`, or a child module built earlier
    (`self.backbone(torch.zeros(1, 3, 224, 224))`, `self.layers[0](x)`),
    also through a function or lambda defined there that does it
    (`_forward = lambda x: self.forward(x)[0]; strides = _forward(probe)`),
    or through a function of any file handed the built child that runs it
    (`d = output_dim(self.features, (c, h, w))`), or on a local container of
    layers built there (`probe = nn.Sequential(*layers); probe(x)`).
    The usual purpose is to measure an output shape or stride with a dummy
    input. A function that builds a module and returns it counts the same
    way when it hands a module it made to a helper (of any file) that runs
    it (`hidden = compute_output_size(shape, encoder)` before `return
    Policy(encoder, hidden)`). Calls inside `GatheredParameters` or a zero3
    branch are fine.

    ## Why is this bad under ZeRO-3?
    Under `deepspeed.zero.Init` each submodule is partitioned as soon as its
    own `__init__` returns, and the hooks that gather parameters around a
    forward are installed later, by `deepspeed.initialize`. A forward in
    `__init__` therefore computes with empty placeholders: it fails on a
    shape mismatch, or produces sizes (strides, feature dims) from tensors
    of size 0.

    ## Example
    ```python
    self.backbone = Backbone(cfg)
    feat = self.backbone(torch.zeros(1, 3, 224, 224))
    self.head = nn.Linear(feat.shape[1], n_classes)
    ```

    ## Use instead
    ```python
    self.backbone = Backbone(cfg)
    self.head = nn.Linear(self.backbone.num_features, n_classes)  # from the config
    ```
    or run the probe inside `with deepspeed.zero.GatheredParameters(list(self.parameters())):`.
    """

    code = "ZG110"
    name = "forward-in-init"

    VALID = (
        # The forward runs before any submodule exists; an activation has no parameters.
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.act = nn.GELU()
        scale = self.act(torch.ones(1))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)
""",
        # Gathered first.
        """
import deepspeed
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, backbone, n):
        super().__init__()
        self.backbone = nn.Conv2d(3, 64, 3)
        with deepspeed.zero.GatheredParameters(list(self.backbone.parameters())):
            feat = self.backbone(torch.zeros(1, 3, 32, 32))
        self.head = nn.Linear(feat.shape[1], n)
""",
    )
    INVALID = (
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.backbone = nn.Conv2d(3, 64, 3)
        feat = self.backbone(torch.zeros(1, 3, 32, 32))
        self.head = nn.Linear(feat.shape[1], n)
""",
        # Through a nested function that runs the whole model.
        """
import torch
from torch import nn

class Detector(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(ch, 16, 3), nn.Conv2d(16, 16, 3, stride=2))

        def _forward(x):
            return self.forward(x)

        self.stride = torch.tensor([256 / x.shape[-2] for x in [_forward(torch.zeros(1, ch, 256, 256))]])

    def forward(self, x):
        return self.model(x)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls, method in index.methods("init"):
            if not _may_run_forward(cls, method.text) or any(m is method for m in cls.forward_methods):
                continue  # a method forward runs too: its calls are the forward, judged once, there
            flat = flat_of(method)
            if flat is None:
                continue
            rank = next((i for i, m in enumerate(cls.init_methods) if m is method), 0)
            runners = _forward_runners(index, cls, method, flat, rank)
            for node, ctx in flat.nodes:
                if type(node) is not cst.Call or ctx.guarded or _inside_def(flat, node, method):
                    continue
                what = _runs_forward(index, cls, method, flat, node, rank)
                if what is None and isinstance(node.func, cst.Name) and node.func.value in runners:
                    what = f"`{node.func.value}`, which runs `{runners[node.func.value]}`,"
                if what is None:
                    continue
                message = (
                    f"{what} runs a forward pass in `__init__` after submodules were built; under "
                    "`deepspeed.zero.Init` they are partitioned and nothing gathers them yet, so it computes "
                    "with empty placeholders"
                )
                yield self.finding(index, method.snippet, node, message, _HELP)
        for info, node, arg, helper in _builder_runs(index):
            message = (
                f"`{code_of(node.func)}(...)` runs the forward of `{arg}`, a module `{info.name}` made before "
                f"building the module it returns; under `deepspeed.zero.Init` `{arg}` is partitioned once made and "
                "nothing gathers it yet, so it computes with empty placeholders"
            )
            yield self.finding(index, info.snippet, node, message, _HELP)


def _builder_runs(index: ModelIndex) -> Iterator[tuple[MethodInfo, cst.Call, str, str]]:
    """In a function of the file that builds a module and returns it (`policy = Policy(encoder, n); return
    policy`), a helper that runs a module argument's forward (`compute_output_size(shapes, encoder)`, read in
    its file) handed a module made earlier in the function (`encoder = factory.create(shape)`)."""
    for span in index.skeleton.functions.values():
        text = index.skeleton.text(span.start, span.end)
        if not _RETURNS_NAME.search(text) or not LOCAL_CONSTRUCTION.search(text):
            continue
        info = index.function_info(span.name)
        flat = flat_of(info) if info is not None else None
        if flat is None or not _returns_built(index, flat):
            continue
        made: dict[str, int] = {}  # locals bound to a call's result -> position
        for node, ctx in flat.nodes:
            if type(node) is cst.Assign and isinstance(node.value, cst.Call):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        made.setdefault(target.target.value, flat.position[id(node)])
            if type(node) is not cst.Call or ctx.guarded or not node.args:
                continue
            for position, done in argument_effects(index, flat, node):
                arg = node.args[position].value
                if RUNS in done and isinstance(arg, cst.Name) and made.get(arg.value, 1 << 30) < flat.position[id(node)]:
                    yield info, node, arg.value, call_name(node) or ""
                    break


# `return policy`, `return q_funcs, forwarder`: a function returning locals.
_RETURNS_NAME = re.compile(r"^[ \t]+return[ \t]+\(?[a-z_]\w*", re.MULTILINE)


def _returns_built(index: ModelIndex, flat: Flat) -> bool:
    """Does every `return` of the function return (first) a local bound to a module construction?"""
    built = set()
    returns = []
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            kind, classes = classify(index, node.value, resolve=True)
            if kind in (Kind.MODULE, Kind.CONTAINER) and any(has_params(index, c) is not False for c in classes or ("",)):
                built.add(node.targets[0].target.value)
        elif type(node) is cst.Return:
            returns.append(node.value)
    firsts = [r.elements[0].value if isinstance(r, cst.Tuple) and r.elements else r for r in returns]
    return bool(firsts) and all(isinstance(f, cst.Name) and f.value in built for f in firsts)


def _runs_forward(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat, call: cst.Call,
                  rank: int) -> str | None:
    """`self(...)`, `self.forward(...)` after a child was built, or a built child called: its text."""
    if isinstance(call.func, cst.Call) and _builds_parameters(index, call.func):
        # `X_init = ProteinBackbone(n, use_internal_coords=True)()`: a module built and run on the spot (its forward
        # may take no input), partitioned once built
        return f"`{code_of(call.func.func)}(...)()`"
    if not call.args:
        # a forward takes an input; `self.class_embed()` calls a stored layer factory. A method of a module its
        # caller built may run its layers on a probe it makes itself (`obs_encoder.output_shape()`).
        path = access_path(call.func)
        if path is None or path.root == "self" or len(path.parts) != 1 or path.parts[0] in _MODULE_API:
            return None
        return _built_callee(index, cls, method, flat, call.func, call, rank)
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    if _built_callee(index, cls, method, flat, func, call, rank) is not None:
        return f"`{code_of(call.func)}(...)`"
    return _handed_to_runner(index, cls, method, flat, call, rank)


def _builds_parameters(index: ModelIndex, call: cst.Call) -> bool:
    """Does `call` build a module that owns parameters (a class of any file, torch's layers)?"""
    kind, classes = classify(index, call)
    return kind == Kind.MODULE and any(has_params(index, c) for c in classes)


def _handed_to_runner(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat, call: cst.Call,
                      rank: int) -> str | None:
    """A built child or local module handed to a function (of any file, `effects.argument_effects`) that runs its
    forward: `d = output_dim(self.features, (c, h, w))` with `def output_dim(net, shape): return net(torch.zeros(1,
    *shape)).shape[1]`."""
    name = call_name(call)
    own = name is not None and name.startswith("self.") and name.count(".") == 1 and not any(
        m.name == name[5:] for m in cls.forward_methods)  # `self._calc_input_size(shape, self.cnn)`: a helper method
    if name is None or not own and (
            not name.rsplit(".", 1)[-1][:1].islower() or index.qualify(name).startswith(("torch.", "self."))):
        return None  # a function of the program or a helper method, not a constructor, torch's own or a forward
    built = {
        i for i, arg in enumerate(call.args) if isinstance(arg.value, (cst.Name, cst.Attribute))
        and _built_callee(index, cls, method, flat, arg.value, call, rank) is not None
    }
    effects = (inherited_argument_effects(cls, call, in_file=True) if own else argument_effects(index, flat, call)) \
        if built else ()
    for position, done in effects:
        if RUNS in done and position in built:
            return f"`{code_of(call.func)}(...)`, handed `{code_of(call.args[position].value)}`,"
    return None


def _built_callee(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat, func: cst.BaseExpression,
                  call: cst.Call, rank: int) -> str | None:
    """`self`, a child built before `call`, a module handed to the constructor or a local module built there, when
    `call` runs it: its text."""
    path = access_path(func)
    if path is not None and path.root != "self" and path.parts in ((), ("[]",)):
        # `net = nn.Sequential(nn.Conv2d(...), ...)` then `net(probe)` (or its first stage, `net[0](probe)`): a
        # local module, partitioned once built
        if _local_module(index, method, flat, path.root, call):
            return f"`{code_of(func)}(...)`"
        # `embed(ids)` of `def __init__(self, embed: nn.Embedding)`: a module its caller built, partitioned then
        if path.root in _handed_instances(index, method):
            return f"`{code_of(func)}(...)`, a module its caller built,"
        return None
    if path is not None and path.root != "self" and len(path.parts) == 1 and func is call.func:
        # `stem.get_patch_layout(img_size)` of `stem = rgbt_stem if rgbt_stem is not None else depth_stem`: a method
        # of a module its caller built that runs its layers (on a probe: ImageBind sizes its tokens so)
        classes = _handed_classes(index, method, flat, path.root)
        if classes and method_runs(index, classes, path.parts[0], False, False):  # (readable, defined)
            return f"`{code_of(func)}(...)`, a method of a module its caller built that runs its layers,"
        return None
    if path is None or path.root != "self" or "[]" in path.parts[1:]:
        return None
    if not path.parts or path.parts == ("forward",):
        position = method.order.get(id(call), 0)
        for member in facts_of(cls).members.values():
            if member.kind in (Kind.MODULE, Kind.CONTAINER) and member.order < (rank, position):
                # a container of layers we cannot name (`nn.Sequential(*layers)`) may hold parameters
                if not member.classes or any(has_params(index, ref) is not False for ref in member.classes):
                    return f"`{code_of(func)}(...)`"
            if member.kind == Kind.UNKNOWN and member.order < (rank, position) and _handed_module(cls, member.name):
                return f"`{code_of(func)}(...)`"  # (`self.spiking_model = model`: a module its caller built)
        return None
    member = facts_of(cls).members.get(path.parts[0])
    if member is None or len(path.parts) > 2 or (len(path.parts) == 2 and path.parts[1] != "[]"):
        return None
    if member.kind == Kind.UNKNOWN and member.order < (rank, method.order.get(id(call), 0)):
        # a module handed to the constructor (`self.backbone = backbone`), called on a probe input
        return f"`{code_of(func)}(...)`" if _handed_module(cls, member.name) else None
    if built_module(index, cls, method, flat, func, rank, call):
        return f"`{code_of(func)}(...)`"
    return None


def _local_module(index: ModelIndex, method: MethodInfo, flat: Flat, name: str, at: cst.CSTNode) -> bool:
    """Is `name` bound, before `at`, to a module or layer container built there that owns parameters?"""
    position = method.order.get(id(at), 0)
    built = False
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and method.order.get(id(node), 0) < position:
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
                kind, classes = classify(index, node.value) if isinstance(node.value, cst.Call) else (Kind.VALUE, ())
                # (a container of layers we cannot name, `nn.Sequential(*layers)`, may hold parameters; so does a
                # model a builder makes, `build_ts_model(arch, c_in)`)
                built = kind in (Kind.MODULE, Kind.CONTAINER) and (
                    any(has_params(index, c) for c in classes)
                    or (kind == Kind.CONTAINER and all(c == UNKNOWN_CLASS for c in classes))
                ) or kind == Kind.UNKNOWN and (call_name(node.value) or "").rsplit(".", 1)[-1] in known.MODEL_BUILDERS
    return built


@memoised
def _handed_instances(index: ModelIndex, method: MethodInfo) -> frozenset[str]:
    """Arguments of the constructor that hold a built module, one the caller built (so, under `zero.Init`,
    partitioned before this `__init__` runs): a module argument (`embed: nn.Embedding`, `backbone`) the constructor
    keeps as a child (`self.embed = embed`) or walks or reads a weight of (`embed.weight`, `embed.parameters()`);
    a layer class or factory handed in (`norm_layer=nn.LayerNorm`, called to build one) is kept by neither. An
    argument the constructor rebinds (`if norm_layer is None: norm_layer = nn.BatchNorm2d`) or calls to build a
    child (`self.bn1 = norm_layer(planes)`) is a factory, whatever else it does."""
    node = method.node
    flat = flat_of(method) if node is not None and method.name == "__init__" else None
    if flat is None:
        return frozenset()
    arguments = {
        name for name, classes in module_arguments(index, node).items()
        if any(has_params(index, c) is not False for c in classes)
    }
    found, factories = set(), set()
    for item, _ctx in flat.nodes if arguments else ():
        if type(item) is cst.Assign:
            value = item.value
            if isinstance(value, cst.Name) and value.value in arguments and any(_on_self(t.target) for t in item.targets):
                found.add(value.value)  # `self.embed = embed`
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in arguments:
                if any(_on_self(t.target) for t in item.targets):
                    factories.add(value.func.value)  # `self.bn1 = norm_layer(planes)`: builds a child
            factories.update(t.target.value for t in item.targets if isinstance(t.target, cst.Name))  # rebound
        elif type(item) is cst.Attribute and isinstance(item.value, cst.Name) and item.value.value in arguments:
            if item.attr.value in _INSTANCE_ATTRIBUTES:
                found.add(item.value.value)  # `embed.weight.shape`, `embed.parameters()`
    return frozenset(found - factories)


def _handed_classes(index: ModelIndex, method: MethodInfo, flat: Flat, name: str) -> tuple[str, ...]:
    """The classes a constructor argument holding a module its caller built may have (`_handed_instances`), also
    through a local bound once to one of several (`stem = rgbt_stem if rgbt_stem is not None else depth_stem`)."""
    handed = _handed_instances(index, method)
    names = [name] if name in handed else []
    if not names:
        bound = [n.value for n, _ctx in flat.nodes if type(n) is cst.Assign and len(n.targets) == 1
                 and isinstance(n.targets[0].target, cst.Name) and n.targets[0].target.value == name]
        if len(bound) != 1:
            return ()
        arms = options(index, bound[0]) or (bound[0],)
        names = [a.value for a in arms if isinstance(a, cst.Name) and a.value in handed]
        if len(names) != len(arms):
            return ()
    arguments = module_arguments(index, method.node) if names and method.node is not None else {}
    return tuple(dict.fromkeys(c for n in names for c in arguments.get(n, ()) if c != UNKNOWN_CLASS))


# What only a module instance has (a class or factory handed in has none of them).
_INSTANCE_ATTRIBUTES = frozenset({"weight", "parameters", "named_parameters"})


def _on_self(target: cst.BaseExpression) -> bool:
    """`self.<name>`."""
    return isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"


def _handed_module(cls: ClassInfo, name: str) -> bool:
    """`self.<name> = <value>` in `__init__` from a bare name, the attribute or the value named like a module
    (`self.backbone = backbone`, `self.spiking_model: nn.Module = model`): what the caller handed in."""
    assigned = re.compile(rf"self\.{name}\s*(?::[^=\n]*)?=\s*([A-Za-z_]\w*)[ \t]*$", re.M)
    return any(
        module_like_name(name) or module_like_name(found.group(1))
        for m in cls.init_methods for found in assigned.finditer(m.text)
    )


def _forward_runners(index: ModelIndex, cls: ClassInfo, method: MethodInfo, flat: Flat, rank: int) -> dict[str, str]:
    """Functions and lambdas defined in `method` whose body runs a forward: name -> what they run."""
    found: dict[str, str] = {}
    for node, _ctx in flat.nodes:
        body: cst.CSTNode | None = None
        name = None
        if type(node) is cst.FunctionDef:
            name, body = node.name.value, node
        elif type(node) is cst.Assign and isinstance(node.value, cst.Lambda) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                name, body = target.value, node.value
        if name is None or body is None:
            continue
        for inner, inner_ctx in flat.nodes[flat.position[id(body)]:]:
            if inner is not body and not flat.within(inner, body):
                break
            if type(inner) is cst.Call and not inner_ctx.guarded:
                what = _runs_forward(index, cls, method, flat, inner, rank)
                if what is not None:
                    found[name] = code_of(inner.func)
                    break
    return found


def _inside_def(flat: Flat, node: cst.CSTNode, method: MethodInfo) -> bool:
    """Is `node` inside a function or lambda defined in the method (it runs when that is called)?"""
    current = flat.parent.get(id(node))
    while current is not None and current is not method.node:
        if isinstance(current, (cst.FunctionDef, cst.Lambda)):
            return True
        current = flat.parent.get(id(current))
    return False


_HELP = (
    "take the shape from the config, or run the probe inside "
    "`with deepspeed.zero.GatheredParameters(list(self.parameters())):`"
)
