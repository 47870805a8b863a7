"""Which parameters ZeRO-3 keeps gathered, and which module calls gather any.

`zgen.zero_policy` states the rule (a parameter of at most
`stage3_param_persistence_threshold` elements stays gathered everywhere);
this module applies it to the checked code, where sizes are rarely known:
a layer's size from its constructor call (`program/size.py`), a norm's
weight, a bias (one element per output feature), a 1-D or scalar
`nn.Parameter`, a batch norm recognised by its running statistics. A call
of a module whose parameters all stay gathered gathers nothing.

Persistence keeps a small parameter gathered only once something fetched it:
`zero.Init` partitions small parameters like the rest; DeepSpeed does not
release a persistent one after a module's forward fetched it, and re-gathers
all of them after each optimizer step; inside the engine's forward a read of
one that is not available gathers it on the spot. Outside any forward (a
trainer, a plain class's method, a model's `sample` called by the training
loop, an agent's rollout before its first update) nothing gathers it, so the
read sees the placeholder. `kept_gathered(..., in_forward)` is that question,
asked in one place: small reads are exempt in forward context only, and, outside
it, for a small parameter `__init__` creates only under a test
(`nn.Parameter(...) if cond else None`): whether it exists at all is the
configuration's, which the file does not settle.
"""

from __future__ import annotations

import ast
import re

from zgen.zero_policy import stays_gathered

from ..program import known
from ..program.given import constructions_of
from ..program.index import ClassInfo, ModelIndex, memoised
from ..program.members import (
    UNKNOWN_CLASS, Member, constructors_in, creates_parameters, facts_of, has_params, holds_parameter_containers,
    member_param, parameter_container, torch_base,
)
from ..program.size import param_numel, vector_weight
from ..program.tree import access_path, call_name, code_of, const_str, cst, dotted, walk
from .access import READ, ParamAccess
from .counts import local_bindings
from .flow import Flat, flat_of
from .plain import all_bases

__all__ = ["gathers", "member_gathers", "persistent_param", "optional_param", "is_persistent", "kept_gathered", "small_read_gathered"]

@memoised(cycle=True)
def gathers(index: ModelIndex, ref: str) -> bool:
    """Does calling a module of class `ref` (possibly) all-gather parameters?

    False for modules without parameters and for norm layers, whose 1-D
    parameters stay gathered under ZeRO-3's default persistence threshold
    (`stage3_param_persistence_threshold`, 1e5 elements).
    """
    if has_params(index, ref) is False:
        return False
    local = index.classes.get(ref)
    if local is None:
        external = index.external(ref)
        if external is not None:
            return gathers(external[0], external[1].name)
    if local is not None:
        calls = _parameter_calls(index, local)
        if not calls or not all(_vector(call) and not _per_row(index, local, call) for call, _name in calls):
            return True
        return _builds_gathering(index, local, "".join(method.text for method in local.init_methods))
    return ref.rsplit(".", 1)[-1] not in known.NORMS


def member_gathers(index: ModelIndex, member: Member) -> bool:
    """Does calling the child `member` (possibly) all-gather parameters? Its class's answer (`gathers`), narrowed by
    the sizes its constructor call gives torch layers (the layer's own, or those of a `Sequential` built of them):
    `nn.Linear(8, 16)` and `nn.Sequential(nn.Linear(1, d), nn.SiLU())` keep their weights gathered, so a call
    gathers nothing; a size the call does not settle (`nn.Linear(d, d)` for an argument `d`) may gather."""
    if not any(gathers(index, ref) for ref in member.classes):
        return False
    call = member.call
    if call is None or not all(known.is_torch_module_class(ref) for ref in member.classes):
        return True
    layers = [call]
    if index.qualify(call_name(call) or "") == "torch.nn.Sequential":
        layers = [arg.value for arg in call.args if isinstance(arg.value, cst.Call) and not arg.star]
        if len(layers) != len(call.args):
            return True  # (`nn.Sequential(*blocks)`: layers it does not show)
    return not all(_layer_kept(index, layer, member.env or {}) for layer in layers)


def _layer_kept(index: ModelIndex, call: cst.Call, env: dict[str, int]) -> bool:
    """Does the torch layer `call` builds keep all its parameters gathered (none, a norm's, a small or vector
    weight)?"""
    name = call_name(call)
    ref = index.qualify(name) if name is not None else ""
    if not known.is_torch_module_class(ref):
        return False
    last = ref.rsplit(".", 1)[-1]
    if has_params(index, ref) is False or last in known.NORMS or vector_weight(last, call):
        return True
    numel = param_numel(last, "weight", call, env)
    return numel is not None and stays_gathered(numel, index.persistence_threshold)


def persistent_param(index: ModelIndex, ref: str, name: str) -> bool:
    """Is parameter `name` of class `ref` small enough that ZeRO-3 keeps it gathered (a norm
    weight, a 1-D vector, a scalar)? Judged from how `__init__` creates it."""
    local = index.classes.get(ref)
    if local is None:
        external = index.external(ref)
        if external is not None:
            return persistent_param(external[0], external[1].name, name)
        return ref.rsplit(".", 1)[-1] in known.NORMS
    if not gathers(index, ref):
        return True
    base = torch_base(local)
    if base is not None and name not in facts_of(local).members:
        # a torch layer's own parameter (`class Linear(nn.Linear)`): its bias and a norm's weight are vectors
        return base in known.NORMS or name.startswith("bias")
    calls = _parameter_calls(index, local)
    call = next((call for call, assigned in calls if assigned == name), None)
    if call is None and (parameter_container(index, local, name) or holds_parameter_containers(local, name)):
        # a `ParameterList`/`ParameterDict` (or a container of them): a child module no one calls, so no hook ever
        # gathers its tensors, however small; persistence keeps a tensor gathered only once a hook has gathered it
        return False
    return call is not None and _small(index, local, call)


def _small(index: ModelIndex, cls: ClassInfo, call: cst.Call) -> bool:
    """Is the `nn.Parameter(...)` that `call` makes a vector or a scalar, and no per-row table of an embedding?"""
    return (_vector(call) or _scalar(call) or _sized_vector(call)) and not _per_row(index, cls, call)


def _per_row(index: ModelIndex, cls: ClassInfo, call: cst.Call) -> bool:
    """A vector with one element per row of an embedding table the class builds (`nn.Embedding(self.n_items, d)`
    beside `nn.Parameter(torch.zeros(self.n_items))`, an item bias): as long as the vocabulary, users or items,
    which is no feature width and runs past the persistence threshold."""
    rows = _table_rows(index, cls)
    fill = _fill(_only_argument(call)) if rows else None
    dims = [arg.value for arg in fill.args if arg.keyword is None and not _one(arg.value)] if fill is not None else []
    return len(dims) == 1 and code_of(dims[0]) in rows


@memoised
def _table_rows(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """The row counts, as written, of the embedding tables `cls`'s `__init__` builds (`nn.Embedding(n, d)`: `n`), and
    the names they are computed from."""
    rows = set()
    for method in cls.init_methods:
        flat = flat_of(method) if "Embedding(" in method.text and "Parameter(" in method.text else None
        for node, _ctx in flat.nodes if flat is not None else ():
            if type(node) is cst.Call and (call_name(node) or "").rsplit(".", 1)[-1] in _TABLES and node.args:
                first = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "num_embeddings"),
                             node.args[0].value if node.args[0].keyword is None else None)
                # the count, or a name it is computed from (`nn.Embedding(n_items + 1, d)`: `n_items`)
                for part in walk(first) if first is not None else ():
                    if isinstance(part, (cst.Name, cst.Attribute)) and dotted(part) is not None:
                        rows.add(code_of(part))
    return frozenset(rows)


_TABLES = frozenset({"Embedding", "EmbeddingBag"})


@memoised
def _parameter_calls(index: ModelIndex, cls: ClassInfo) -> list[tuple[cst.Call, str | None]]:
    """The `nn.Parameter(...)` calls of `cls`'s `__init__` and its helpers, in source order, each with the
    attribute it is assigned to (`self.<name> = nn.Parameter(...)`, else None). Text without `Parameter(`
    is not parsed."""
    found: list[tuple[cst.Call, str | None]] = []
    for method in cls.init_methods:
        flat = flat_of(method) if "Parameter(" in method.text else None
        for node, _ctx in flat.nodes if flat is not None else ():
            if type(node) is cst.Call and (call_name(node) or "").endswith("Parameter"):
                found.append((_local_spelled_out(flat, node), _assigned_to(flat, node)))
    return found


def _local_spelled_out(flat: Flat, call: cst.Call) -> cst.Call:
    """`nn.Parameter(log_std)` for a local bound once to `torch.ones(action_dim)` in the same method, as
    `nn.Parameter(torch.ones(action_dim))` (what its size is read from); else the call itself."""
    value = _only_argument(call)
    if type(value) is not cst.Name:
        return call
    bound = local_bindings(flat).get(value.value, [])
    if len(bound) != 1 or not isinstance(bound[0], cst.Call):
        return call
    return call.with_changes(args=[call.args[0].with_changes(value=bound[0]), *call.args[1:]])


def _assigned_to(flat: Flat, call: cst.Call) -> str | None:
    """`name` when `call` begins the value of `self.<name> = ...` (`nn.Parameter(...) if c else None` too)."""
    child, parent = call, flat.parent.get(id(call))
    while isinstance(parent, (cst.IfExp, cst.BinaryOperation, cst.Attribute, cst.Call, cst.Subscript)):
        leading = {cst.IfExp: "body", cst.BinaryOperation: "left", cst.Attribute: "value", cst.Call: "func",
                   cst.Subscript: "value"}[type(parent)]
        if getattr(parent, leading) is not child:
            return None
        child, parent = parent, flat.parent.get(id(parent))
    if isinstance(parent, cst.AnnAssign) and parent.value is child:
        target = parent.target
    elif isinstance(parent, cst.Assign) and parent.value is child:
        target = parent.targets[-1].target
    else:
        return None
    path = access_path(target)
    return path.parts[0] if path is not None and path.root == "self" and len(path.parts) == 1 else None


_FILLS = frozenset({"ones", "zeros", "empty", "full", "randn", "rand", "Tensor", "FloatTensor"})


def _only_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The one argument of `nn.Parameter(x)`, given by position (else None); a `requires_grad=` beside it changes
    no size (`nn.Parameter(torch.zeros(d), requires_grad=False)`, a running statistic)."""
    args = [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value == "requires_grad")]
    value = args[0].value if len(args) == 1 and args[0].keyword is None and not args[0].star else None
    while isinstance(value, cst.Call) and value.args and _INITIALISER.fullmatch(dotted(value.func) or ""):
        value = value.args[0].value  # `nn.init.xavier_normal_(torch.empty(n, n))`: the tensor it fills in place
    return value


# An in-place initialiser of `torch.nn.init` (`nn.init.zeros_`, `init.trunc_normal_`): it hands back its argument.
_INITIALISER = re.compile(r"(?:[\w.]*\.)?init\.\w+_")


def _fill(expr: cst.BaseExpression | None) -> cst.Call | None:
    """`torch.ones(...)`, `torch.zeros(...)`, ...: a tensor made of one value (or of random ones)."""
    if isinstance(expr, cst.Call) and (dotted(expr.func) or "").rpartition(".")[::2] in {("torch", f) for f in _FILLS}:
        return expr
    return None


def _plain(expr: cst.BaseExpression) -> bool:
    """A name, a dotted name or a number (`dim`, `config.hidden_size`, `512`)."""
    return isinstance(expr, (cst.Integer, cst.Float)) or dotted(expr) is not None


def _one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.value == "1"


def _few(expr: cst.BaseExpression) -> bool:
    """A literal dimension of at most 4 beside a channel count (`torch.Tensor(channels, 1, 3)`: three numbers per
    channel, still a per-channel parameter)."""
    return isinstance(expr, cst.Integer) and int(expr.evaluated_value) <= 4


def _vector(call: cst.Call) -> bool:
    """`nn.Parameter(torch.ones(dim))`, also with singleton dimensions (`torch.zeros(1, 1, dim)`, a class token;
    `torch.zeros(dim, 1)`, a column) and keyword options (`dtype=...`): one element per channel."""
    fill = _fill(_only_argument(call))
    if fill is None or any(arg.star for arg in fill.args):
        return False
    dims = [arg.value for arg in fill.args if arg.keyword is None]
    options = [arg.value for arg in fill.args if arg.keyword is not None]
    sized = [d for d in dims if not _one(d) and not _few(d)]
    return bool(dims) and len(sized) <= 1 and all(_plain(d) for d in sized) and all(_plain(o) for o in options)


def _scalar(call: cst.Call) -> bool:
    """`nn.Parameter(torch.tensor(0.5))`: one number."""
    value = _only_argument(call)
    if not isinstance(value, cst.Call) or dotted(value.func) != "torch.tensor":
        return False
    inner = _only_argument(value)
    return inner is not None and not isinstance(inner, (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.Subscript))


def _sized_vector(call: cst.Call) -> bool:
    """More vectors: a length that is a call's value (`torch.zeros(w.size(0))`, `len(vocab)`; not `w.size()`),
    singleton dimensions around it (`torch.ones(dim, 1, 1)`), and a scale in front (`init_values * torch.ones(dim)`,
    a layer scale)."""
    value = _only_argument(call)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        scale = value.left.expression if isinstance(value.left, cst.UnaryOperation) else value.left
        if not _plain(scale):
            return False
        value = value.right
    fill = _fill(value)
    if fill is None or any(arg.star or arg.keyword is not None for arg in fill.args):
        return False
    dims = [arg.value for arg in fill.args]
    sized = [d for d in dims if not _one(d)]
    if len(sized) > 1 or not dims:
        return False
    length = sized[0] if sized else dims[-1]
    if isinstance(length, cst.Call):  # `w.size(0)`, `len(vocab)`: one plain argument
        inner = _only_argument(length)
        return dotted(length.func) is not None and inner is not None and _plain(inner)
    return _plain(length)


def _builds_gathering(index: ModelIndex, cls: ClassInfo, text: str) -> bool:
    for written in constructors_in(text):
        if written in index.classes and written != cls.name and index.classes[written].is_module:
            if gathers(index, written):
                return True
        elif written[:1].isupper() or "." in written:
            qualified = index.qualify(written)
            if known.is_torch_module_class(qualified) and known.torch_has_params(qualified):
                if qualified.rsplit(".", 1)[-1] not in known.NORMS:
                    return True
            elif index.external(qualified) is not None and index.is_module_base(qualified):
                if gathers(index, qualified):
                    return True
    return False


def is_persistent(index: ModelIndex, access: ParamAccess) -> bool:
    """Is the accessed parameter below the persistence threshold, so ZeRO-3 keeps it gathered everywhere?"""
    return _persistent(index, access)


def kept_gathered(index: ModelIndex, access: ParamAccess, in_forward: bool) -> bool:
    """Does reading the accessed parameter find it gathered with no hook of its module running, or is it not
    reported for another reason of size? Below the persistence threshold, and in forward context (a forward, a
    function reached from one) or an optional parameter: see the module's docstring."""
    if access.use == READ and _parametrized(access):
        return True  # `self.rotate_layer.weight` of `orthogonal(layer)`: computed by a call of its parametrization
    if not in_forward and not _optional(index, access):
        return False  # the size is not asked
    return _persistent(index, access)


# torch's module-based parametrizations (`torch.nn.utils.parametrizations.orthogonal(layer)`): the tensor they
# name is computed on each read by calling the registered parametrization modules, whose hooks gather what they
# hold (not the old `torch.nn.utils.weight_norm`, which recomputes the weight only in a forward pre-hook).
_PARAMETRIZATIONS = frozenset({"orthogonal", "spectral_norm", "weight_norm"})


def _parametrized(access: ParamAccess) -> bool:
    """Is the read tensor one a module-based parametrization of the child computes (the child built as
    `parametrizations.orthogonal(layer)`, for its `weight` or the `name` given)?"""
    member = access.first
    call = member.call if member is not None else None
    if call is None or access.owner != f"self.{member.name}":
        return False
    name = dotted(call.func) or ""
    if ".parametrizations." not in f".{name}" or name.rsplit(".", 1)[-1] not in _PARAMETRIZATIONS:
        return False
    named = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "name"), None)
    if named is None and len([a for a in call.args if a.keyword is None]) > 1:
        named = [a for a in call.args if a.keyword is None][1].value
    return access.param == (const_str(named) if named is not None else "weight")


def small_read_gathered(persistent: bool, in_forward: bool, optional: bool = False) -> bool:
    """`kept_gathered` for a use whose persistence is already known (`own.OwnUse.persistent`, `.optional`)."""
    return persistent and (in_forward or optional)


def optional_param(index: ModelIndex, ref: str, name: str) -> bool:
    """Does class `ref`'s `__init__` create parameter `name` only under a test (`nn.Parameter(...) if c else
    None`)? Only classes of the file."""
    local = index.classes.get(ref)
    return local is not None and name in _optional_params(index, local)


@memoised
def _optional_params(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    names = set()
    for method in cls.init_methods:
        text = method.text
        flat = flat_of(method) if "Parameter(" in text and " else None" in text else None
        for node, _ctx in flat.nodes if flat is not None else ():
            if type(node) is cst.IfExp and isinstance(node.orelse, cst.Name) and node.orelse.value == "None":
                body = node.body
                if type(body) is cst.Call and (call_name(body) or "").endswith("Parameter"):
                    name = _assigned_to(flat, body)
                    if name is not None:
                        names.add(name)
    return frozenset(names)


def _optional(index: ModelIndex, access: ParamAccess) -> bool:
    classes = [ref for ref in access.owner_classes if ref in index.classes]
    return bool(classes) and all(optional_param(index, ref, access.param) for ref in classes)


def _persistent(index: ModelIndex, access: ParamAccess) -> bool:
    """Below the persistence threshold: a norm weight, a vector, or a layer whose built size is known small; not
    a parameter of a child the class never runs (`F.layer_norm(x, s, self.norm.weight, self.norm.bias)` with
    `self.norm` called nowhere): no hook ever gathered it, so persistence has nothing to keep."""
    first = access.first
    if first is not None and access.owner == f"self.{first.name}":
        if access.cls is not None and never_run(index, access.cls, first.name):
            return False
        if first.call is not None and first.classes:
            last = first.classes[0].rsplit(".", 1)[-1]
            if last not in known.TORCH_PARAMS:
                last = _torch_layer_as_is(index, first.classes[0]) or last
            numel = param_numel(last, access.param, first.call, first.env or {})
            if numel is not None and len(first.classes) == 1:
                return stays_gathered(numel, index.persistence_threshold)
            if len(first.classes) == 1 and _forwarded_small(index, access, last):
                return True
    return _layer_bias(index, access) or _persistent_by_class(index, access) or _norm_named(access)


# A child named as a normalisation layer is (`self.rbr_dense.bn`, `self.ln_f`, `self.attn_norm`): its weight and bias
# hold one value per channel.
_NORM_NAME = re.compile(r"(?:^|_)(?:bn|ln|gn|norm|layernorm|batchnorm|groupnorm|rmsnorm)\d*$|^norm")


def _norm_named(access: ParamAccess) -> bool:
    """A `weight` or `bias` of a child named as a norm layer is, of a class zgen cannot tell or one of several it may
    be (`self.rbr_dense.bn` of a `Sequential` of a conv and a batch norm): a vector of one value per channel, below
    the threshold."""
    if access.param not in ("weight", "bias") or _NORM_NAME.search(access.owner.rsplit(".", 1)[-1]) is None:
        return False
    return all(c == UNKNOWN_CLASS for c in access.owner_classes) or any(
        "Norm" in c.rsplit(".", 1)[-1] for c in access.owner_classes)


@memoised
def never_run(index: ModelIndex, cls: ClassInfo, name: str) -> bool:
    """Is the child `self.<name>` of `cls` used only for what it holds (`self.norm.weight`, `self.norm.eps`), never
    called, handed on or asked to do anything, in the class, its bases of the program or a class of the file deriving
    from it? (A library's base, `BaseModule`, knows no child of a subclass by name.)"""
    subclasses = (other for other in index.classes.values() if cls in other.local_bases)
    texts = [*(c.text for c in all_bases(cls)), *(other.text for other in subclasses)]
    used = re.compile(rf"self\.{re.escape(name)}\b")
    seen = False
    for text in texts:
        for match in used.finditer(text):
            rest = text[match.end():match.end() + 80]
            if _ASSIGNED.match(rest):
                continue
            read = _ATTRIBUTE_READ.match(rest)
            if read is None or read.group(2):
                return False  # called, handed on, or a method of it run (`self.norm(x)`, `f(self.norm)`, `.forward(x)`)
            seen = True
    return seen


_ASSIGNED = re.compile(r"\s*(?::[^=\n]*)?=(?!=)")
_ATTRIBUTE_READ = re.compile(r"\.(\w+)\b(\s*\()?")


def _torch_layer_as_is(index: ModelIndex, ref: str) -> str | None:
    """The torch layer (`Linear`) a class of the program derives from and builds as torch does: no parameters of
    its own, and a constructor taking torch's leading arguments (`class Linear(nn.Linear)` with `__init__(self,
    in_features, out_features, bias=True, init="default")`, also reached through `partial(Linear, bias=False)`), so
    that a construction's sizes are the torch layer's."""
    found = index.located(ref)
    if found is None:
        return None
    owner, local = found
    layer = torch_base(local)
    leading = _TORCH_LEADING.get(layer or "")
    if leading is None or creates_parameters(owner, local):
        return None
    init = local.inherited_method("__init__")
    node = init.node if init is not None and init.owner.index is owner else None
    if init is not None and node is None:
        return None
    if node is not None:
        names = [p.name.value for p in (*node.params.posonly_params, *node.params.params)][1:]
        if tuple(names[: len(leading)]) != leading:
            return None
    return layer


# The leading constructor arguments of the torch layers `size.param_numel` sizes.
_TORCH_LEADING = {
    "Linear": ("in_features", "out_features"), "Embedding": ("num_embeddings", "embedding_dim"),
    **{f"Conv{n}d": ("in_channels", "out_channels", "kernel_size") for n in (1, 2, 3)},
}


def _forwarded_small(index: ModelIndex, access: ParamAccess, layer: str) -> bool:
    """`self.net = nn.Linear(*args, **kwargs)` in a class that forwards its constructor's arguments to the layer:
    the sizes come from the file's constructions of the class (`MonotonicLinear(1, 1)`, `MonotonicLinear(1,
    hidden_dim)`), each a small or vector weight; unknown when the file builds it nowhere or spreads arguments."""
    call, cls = access.first.call, access.cls  # type: ignore[union-attr]
    init = cls.method("__init__") if cls is not None else None
    node = init.node if init is not None else None
    star = node.params.star_arg if node is not None else None
    if not (isinstance(star, cst.Param) and call.args and call.args[0].star == "*"):
        return False
    if not (isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == star.name.value):
        return False
    if any(not arg.star for arg in call.args):
        return False  # (`nn.Linear(*args, bias=False)`: sizes beside the spread are not the construction's alone)
    built = constructions_of(index, cls.name)  # type: ignore[union-attr]
    if not built or any(isinstance(a, ast.Starred) for c in built for a in c.args):
        return False
    for construction in built:
        if any(k.arg is None for k in construction.keywords):
            return False
        arguments = [ast.unparse(a) for a in construction.args] + [f"{k.arg}={ast.unparse(k.value)}" for k in construction.keywords]
        try:
            layer_call = cst.parse_expression(f"{code_of(call.func)}({', '.join(arguments)})")
        except cst.ParserSyntaxError:  # a construction we cannot restate
            return False
        if not isinstance(layer_call, cst.Call):
            return False
        if access.param == "weight" and vector_weight(layer, layer_call):
            continue
        numel = param_numel(layer, access.param, layer_call, {})
        if numel is None or not stays_gathered(numel, index.persistence_threshold):
            return False
    return True


def _layer_bias(index: ModelIndex, access: ParamAccess) -> bool:
    """A bias of a torch layer, or of a module we cannot see: one element per output feature (`in_proj_bias`, and
    attention's `bias_k`, RNNs' `bias_hh_l0`).

    Like `nn.Parameter(torch.zeros(n))` (see `ModelIndex.persistent_param`), a vector of unknown
    length counts as below the threshold; a size known from the constructor call was decided before.
    """
    if not (access.param.endswith("bias") or access.param.startswith("bias_")) or not access.owner_classes:
        return False
    return all(
        ref == UNKNOWN_CLASS or known.is_torch_module_class(ref) or _inherits_torch_param(index, ref, access.param)
        for ref in access.owner_classes
    )


def _persistent_by_class(index: ModelIndex, access: ParamAccess) -> bool:
    # Only the classes that have the parameter (`nn.Identity()` in the other branch has none).
    classes = [ref for ref in access.owner_classes if member_param(index, ref, access.param) is not False]
    return bool(classes) and all(persistent_param(index, ref, access.param) for ref in classes)


def _inherits_torch_param(index: ModelIndex, ref: str, name: str, depth: int = 0) -> bool:
    """Does class `ref` (this file or another) get parameter `name` from a torch layer base, unchanged?

    `class Conv2dSame(nn.Conv2d)` has nn.Conv2d's `bias` unless its own `__init__` assigns `self.bias`.
    """
    found = (index, index.classes[ref]) if ref in index.classes else index.external(ref)
    if found is None or depth > 4:
        return False
    owner, info = found
    if re.search(r"self(?<!\wself)\." + re.escape(name) + r"\s*=", "".join(m.text for m in info.init_methods)):
        return False
    for cls in info.mro:
        for base in cls.qualified_bases:
            if known.is_torch_module_class(base) and known.torch_params(base.rsplit(".", 1)[-1], name):
                return True
        for base_index, base_info in cls.external_bases:
            if _inherits_torch_param(base_index, base_info.name, name, depth + 1):
                return True
    return False
