"""Models a function constructs and then loads a state dict into, or deep-copies.

`built_then_loaded(index)` finds, in any function or method of the file,
`model = Net(...)` / `model = cls(...)` (a classmethod of a module class) /
`encoder = EncoderClass(...)` followed by `model.load_state_dict(sd)` (or through a function handing the model
back, `unwrap(model).load_state_dict(sd)`): the
pattern of every `from_pretrained` and `load(path)`. Under
`deepspeed.zero.Init`, which such loaders run in, the model is partitioned as
soon as its constructor returns, so the load copies into empty placeholders.
`built_then_copied(index)` finds `copy.deepcopy(model)` of such a model (`model, _ = configure_model(cfg)` ...
`model_to_save = deepcopy(model)`): the copy duplicates the placeholders; so does a library's weight average built
over such a model or its parameters (`ema = ExponentialMovingAverage(model.parameters(), decay=d)`, `EMA(model)`,
`known.AVERAGERS`), which clones them as its shadow.
What counts as a constructed model is `holds.constructed_models`'.
`zoo_weights_loaded(index)` finds a model zoo's builder asked for its pretrained weights
(`torchvision.models.vgg19(pretrained=True)`, `resnet50(weights=ResNet50_Weights.DEFAULT)`,
`timm.create_model(name, pretrained=True)`): the builder constructs the model and then loads the weights into it,
the same pattern inside the library.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..program import known
from ..program.holds import (
    averager, config_like, constructed_models, looked_up_models, module_like_name, wraps_a_model, wraps_itself,
)
from ..program.index import MethodInfo, ModelIndex, Snippet, memoised
from ..program.members import class_named
from ..program.tree import call_name, code_of, cst, dotted, walk
from .flow import Flat, flat_of, targets_of
from .access import INIT, WRITE
from .effects import DEEPCOPIES, READS, STATES, argument_effects, nested_defs, returns_argument, state_keys_only

__all__ = [
    "built_then_loaded", "built_then_read", "built_then_saved", "built_then_written", "built_then_pickled",
    "built_then_copied", "built_then_initialised", "built_then_handed_state", "built_then_handed_values",
    "zoo_weights_loaded", "built_where",
]


@memoised
def built_then_loaded(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `load_state_dict` call, the local) for each load into a model the same function built."""
    texts = (".load_state_dict(", "load_model(", "load_checkpoint_in_model(", "Checkpointer(")
    return _built_then(index, texts, _loaded, children=True)


@memoised
def built_then_read(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the call, the local) for each walk of the tensors of the state dict of a model the same function
    built (`{k: v for k, v in model.state_dict().items() if ...}` to fill a checkpoint): they are placeholders. (Its
    keys alone, `model.state_dict().keys()`, are whole.)"""
    return _built_then(index, (".state_dict().items(", ".state_dict().values("), _state_read)


@memoised
def built_then_saved(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `state_dict()` call, the local) for each state dict of a model the same function built, handed
    on whole (`torch.save({"model": model.state_dict()}, p)`, `best = copy.deepcopy(model.state_dict())`,
    `ema.load_state_dict(model.state_dict())`, `ckpt["model"] = model.state_dict()`) or one entry read
    (`decoder.state_dict()[key]`): its tensors are placeholders. Not one read for its keys alone
    (`effects.state_keys_only`), nor walked item by item (`built_then_read` tells those)."""
    found = [  # `save_model(model, path)` of safetensors: the state dict taken inside
        (method, node, local) for method, node, local in _built_then(
            index, ("save_model(",), lambda index, node: _handed_first(index, node, known.STATE_SAVERS), layers=False)
    ]
    # `model.save_pretrained(path)`: transformers' save takes the model's state dict as it is (a trainer or
    # accelerate gathers it first and hands it in as `state_dict=`)
    found += _built_then(index, (".save_pretrained(",), _pretrained_saved, layers=False, children=True)
    for method, node, local, writes in _states_taken(index):
        if writes:
            continue  # (`built_then_written` tells where its entries are written)
        flat = flat_of(method)
        parent = flat.parent.get(id(node)) if flat is not None else None
        handed = isinstance(parent, (cst.Arg, cst.DictElement, cst.Element)) and not state_keys_only(flat, node)
        entry = type(parent) is cst.Subscript and parent.value is node  # `decoder.state_dict()[name]`: one tensor
        # (`save_dict["model_state_dict"] = net.state_dict()`: kept whole in a checkpoint's entry)
        stored = type(parent) is cst.Assign and all(type(t.target) is cst.Subscript for t in parent.targets)
        if handed or entry or stored or _bound_then_read(flat, parent):
            found.append((method, node, local))
    return found


@memoised
def built_then_written(index: ModelIndex) -> list[tuple[MethodInfo, cst.CSTNode, str]]:
    """(function, the write, the local) for each write into an entry of the state dict of a model the same function
    built (`sd = model.state_dict()` ... `sd[k].copy_(sd_hf[k])`, the hand-written `from_pretrained` of GPT ports):
    the entries are the model's partitioned placeholders, so the write lands in one; each write is told where it is."""
    return [(method, write, local) for method, _node, local, writes in _states_taken(index) for write in writes]


@memoised
def _states_taken(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str, list[cst.CSTNode]]]:
    """(function, the `state_dict()` call, the local, the writes into its entries) for each state dict taken of a
    model the same function built: read once for `built_then_saved` and `built_then_written`."""
    found = []
    for method, node, local in _built_then(index, (".state_dict()",), _state_whole, layers=False, children=True):
        flat = flat_of(method)
        writes = _entry_writes(flat, flat.parent.get(id(node))) if flat is not None else []
        found.append((method, node, local, writes))
    return found


def _entry_writes(flat: Flat, parent: cst.CSTNode | None) -> list[cst.CSTNode]:
    """For the binding `parent` of a state dict to a local (`sd = model.state_dict()`), the writes into its entries
    that follow: an in-place method of an entry or of its `.data` (`sd[k].copy_(v)`, `sd[k].data.zero_()`), or an
    assignment into one (`sd[k][:n] = v`)."""
    if type(parent) is not cst.Assign or len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
        return []
    name, at = parent.targets[0].target.value, flat.position.get(id(parent), 0)

    def entry(expr: cst.CSTNode) -> bool:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr = expr.value
        return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == name

    writes: list[cst.CSTNode] = []
    for node, _ctx in flat.nodes:
        if flat.position.get(id(node), 0) <= at:
            continue
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and entry(node.func.value) \
                and known.INPLACE_METHOD.match(node.func.attr.value):
            writes.append(node)
        elif type(node) in (cst.Assign, cst.AugAssign) and any(
                isinstance(t, cst.Subscript) and entry(t.value) for t in targets_of(node)[0]):
            writes.append(node)
    return writes


def _bound_then_read(flat: Flat, parent: cst.CSTNode | None) -> bool:
    """Is `parent` the binding of a state dict to a local (`sd = model.state_dict()`) whose entries are read or
    written later (`sd[k].copy_(v)`, `sd.items()`), not only its keys (`len(sd)`, `k in sd`, `sd.keys()`)?"""
    if type(parent) is not cst.Assign or len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
        return False
    name = parent.targets[0].target.value
    for node, _ctx in flat.nodes:
        if type(node) is not cst.Name or node.value != name or node is parent.targets[0].target:
            continue
        used = flat.parent.get(id(node))
        if isinstance(used, cst.Subscript) and used.value is node:
            return True  # `sd[k]`: an entry, its tensor
        if isinstance(used, cst.Attribute) and used.value is node and used.attr.value in ("items", "values"):
            return True
        handed = isinstance(used, (cst.Arg, cst.DictElement, cst.Element)) and used.value is node
        if handed and not _keys_only(flat, used):
            return True  # `torch.save(sd, path)`, `{"model": sd}`: the tensors handed on whole
    return False


def _keys_only(flat: Flat, used: cst.CSTNode) -> bool:
    """Is the argument `used` handed to a builtin that reads only a mapping's keys (`len(sd)`, `sorted(sd)`)?"""
    call = flat.parent.get(id(used))
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _KEY_READERS


_KEY_READERS = frozenset({"len", "list", "sorted", "set", "tuple", "iter", "isinstance", "type", "id", "bool"})


@memoised
def built_then_pickled(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `torch.save` / `pickle.dump` call, the local) for each model the same function built and then
    pickled whole (`model = engine.module.cpu()` ... `torch.save(model, path)`): its tensors are placeholders."""
    return _built_then(index, _PICKLE_TEXTS, _pickled, layers=False)


def _pickled(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The value `node` pickles whole (`torch.save(model, path)`), or None."""
    if not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    value = node.args[0].value
    if isinstance(value, cst.Name) and config_like(value.value):
        return None  # `torch.save(state_dict, path)`: a mapping the function filled, not a model
    return value if index.qualified_call(node) in known.PICKLERS else None


_PICKLE_TEXTS = ("save(", "dump(", "dumps(")


@memoised
def built_then_copied(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the `copy.deepcopy` call or the weight average's construction, the local) for each copy of a model
    the same function built (`model, _ = configure_model(cfg)` ... `deepcopy(model)`, `EMA(model)`): the copy takes
    its placeholders."""
    found = _built_then(index, _COPY_TEXTS, _copied, constructors=False)  # (`__init__`'s: `built.py`, ZG105)
    # (`ema = EMA(model=model)` of a class of another file whose constructor deep-copies what it is given)
    told = {id(node) for _method, node, _local in found}
    return found + [each for each in _handed_to_helpers(index, DEEPCOPIES) if id(each[1]) not in told]


@memoised
def built_then_handed_state(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the call, the local) for each model the same function built and then handed to a function whose
    summary saves or loads its state (`model = Net()` ... `save_checkpoint(model.module, path)` of a helper in
    another file): it sees the placeholders."""
    return _handed_to_helpers(index, STATES)


@memoised
def built_then_handed_values(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the call, the local) for each model the same function built and then handed to a function whose
    summary computes with the values of its parameters (`update_ema(ema, model.module)`, reading `p.data` of each of
    `model.named_parameters()`): it reads placeholders."""
    return _handed_to_helpers(index, READS)


def _handed_to_helpers(index: ModelIndex, effect: str) -> list[tuple[MethodInfo, cst.Call, str]]:
    return [(method, node, local) for method, node, local, done in _helpers_handed(index) if done == effect]


@memoised
def _helpers_handed(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str, str]]:
    """(function, the call, the local, the effect) for each model the same function built and then handed to a
    function of another file whose summary deep-copies it, saves or loads its state, or computes with its parameters'
    values (`_HANDED_EFFECTS`, the first that applies), read in one pass for the three."""
    effects: dict[int, str] = {}

    def handed(index: ModelIndex, node: cst.Call, flat: Flat) -> cst.BaseExpression | None:
        found = _handed_effect(index, node, flat)
        if found is None:
            return None
        effects[id(node)] = found[1]
        return found[0]

    found = _built_then(
        index, _BuildsThenHands(index, parts=True), handed, constructors=False, children=True, with_flat=True)
    return [(method, node, local, effects[id(node)]) for method, node, local in found]


# What a helper's summary may do to a model it is handed, in the order one call is told by (`_helpers_handed`).
_HANDED_EFFECTS = (DEEPCOPIES, STATES, READS)


def _handed_effect(index: ModelIndex, node: cst.Call, flat: Flat) -> tuple[cst.BaseExpression, str] | None:
    """The model `node` hands to a function of another file, or to one defined inside the function that built it
    (`def load(module, prefix=""): module._load_from_state_dict(...)` ... `load(model)` after `model = cls(config)`),
    and what the function's summary does to it (of `model.module`, and of `model.module if ddp else model`, the model
    itself: `_unwrapped`). A function of this file is told in its own body, where it does it; a write or an
    initialiser is ZG103's (`_initialised`). What a summary computes with may be any iterable it was given
    (`train_exs`, `clip_list`): only a value named as modules are counts for `READS`."""
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("apply", "load_state_dict", "state_dict"):
        return None  # (the model's own methods: told by the finders above)
    name = dotted(node.func) or ""
    if name.startswith(("self.", "cls.")) or name in index.skeleton.functions or name in index.classes:
        return None
    nested = "." not in name and name in nested_defs(index, flat)
    done_by = [(position, done) for position, done in argument_effects(index, flat if nested else None, node)
               if not (done & _INITIALISES) and not node.args[position].star]
    for effect in _HANDED_EFFECTS:
        for position, done in done_by:
            if effect not in done:
                continue
            value = _unwrapped(node.args[position].value)
            root = value
            while isinstance(root, cst.Attribute):
                root = root.value
            if effect != READS or isinstance(root, cst.Name) and module_like_name(root.value):
                return value, effect
    return None


@memoised
def built_then_initialised(index: ModelIndex) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the call, the local) for each model the same function built and then handed to a function whose
    summary writes or initialises its parameters (`model = NativeModel(cfg)` ... `initialize_native_model(model,
    cfg)`): under `deepspeed.zero.Init` the model was partitioned when its constructor returned, so the writes land
    in placeholders. Not `model.apply(fn)`, which ZG103 reads itself."""
    return _built_then(index, _BuildsThenHands(index), _initialised, constructors=False)


class _BuildsThenHands:
    """The text trigger of `built_then_initialised`: a local bound to a call of a module class of the program or of
    torch (`block = Block()`), or named as modules are and bound to a function of the program (`model =
    build(cfg)`), then handed to a call (`init_block(block, std)`). Classes and functions are looked up in the
    skeletons, before any parse."""

    def __init__(self, index: ModelIndex, parts: bool = False) -> None:
        self.index = index
        self._handed: re.Pattern[str] | bool | None = None  # (read once per file; False: none in the file)
        # (with `parts`, a part of the local handed counts too, and an option of a conditional expression:
        # `update_ema(ema, model.module if ddp else model)`)
        self._local, self._part = (_HANDED_PART, r"(?:\.\w+)*") if parts else (_HANDED_LOCAL, "")

    def search(self, text: str) -> bool:
        if self._handed is None:
            source = self.index.source
            made = {name for name, callee in set(_BOUND_TO_CALL.findall(source)) if self._builds(name, callee)}
            if made:
                names = "|".join(sorted(map(re.escape, made)))
                start = r"(?:\w\(|,|\belse)" if self._part else r"(?:\w\(|,)"
                self._handed = re.compile(start + r"\s*(?:\w+\s*=\s*)?(" + names + r")" + self._part + r"\s*[,)]")
            if not made or not self._handed.search(source):  # type: ignore[union-attr]
                self._handed = False  # (no local built and handed anywhere in the file: no function to read)
                return False
        if self._handed is False:
            return False
        found = self._handed.search(text)
        return found is not None and re.search(rf"^[ \t]*{found.group(1)}[ \t]*=", text, re.M) is not None

    def _builds(self, name: str, callee: str) -> bool:
        index = self.index
        if callee.rsplit(".", 1)[-1][:1].isupper():
            cls = class_named(index, callee)
            return cls.is_module if cls is not None else known.is_torch_module_class(index.qualify(callee))
        if not module_like_name(name) or callee.startswith("self."):
            return False
        if callee == "cls":
            return True  # `model = cls(config)` in a classmethod (`constructed_models` tells a module class's)
        return index.function_info(callee) is not None if "." not in callee and callee in index.skeleton.functions \
            else index.external_function(index.qualify(callee)) is not None


# `block = Block(`, `model = nets.build(`: a local bound to what a call makes (the name, the callee).
_BOUND_TO_CALL = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*([\w.]+)\(", re.M)
# `init_block(block, std)`, `copy_params(src, dst_module=net)`: a name handed to a call.
_HANDED_LOCAL = re.compile(r"(?:\w\(|,)\s*(?:\w+\s*=\s*)?(\w+)\s*[,)]")
# ... or a part of it (`update_ema(ema, model.module)`), also as the last option of a conditional expression.
_HANDED_PART = re.compile(r"(?:\w\(|,|\belse)\s*(?:\w+\s*=\s*)?(\w+)(?:\.\w+)*\s*[,)]")


def _initialised(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The argument `node` hands to a function that writes or initialises its parameters, if any."""
    if not node.args or isinstance(node.func, cst.Attribute) and node.func.attr.value == "apply":
        return None
    for position, done in argument_effects(index, None, node):
        if done & _INITIALISES and isinstance(node.args[position].value, cst.Name):
            return node.args[position].value
    return None


_INITIALISES = frozenset({WRITE, INIT})


# Text one of whose items a function copying a model contains: `deepcopy(` or a weight average's class.
_COPY_TEXTS = ("deepcopy(", *sorted(name + "(" for name in known.AVERAGER_NAMES))


def _loaded(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The model `node` loads a state into (`model.load_state_dict(sd)`, safetensors' `load_model(model, path)`)."""
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "load_state_dict":
        return node.func.value
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in _CHECKPOINTER_LOADS:
        made = node.func.value  # `DetectionCheckpointer(model, save_dir=d).resume_or_load(path)`: fvcore's
        if isinstance(made, cst.Call) and (call_name(made) or "").endswith("Checkpointer") and made.args \
                and made.args[0].keyword is None and not made.args[0].star:
            return made.args[0].value  # checkpointers load the file into the model they were built over
    return _handed_first(index, node, known.STATE_LOADERS)


_CHECKPOINTER_LOADS = frozenset({"load", "resume_or_load"})


def _handed_first(index: ModelIndex, node: cst.Call, functions: frozenset[str]) -> cst.BaseExpression | None:
    """The module `node` hands first to one of the library `functions` (`save_model(model, path)`), else None."""
    if node.args and node.args[0].keyword is None and not node.args[0].star and index.qualified_call(node) in functions:
        return node.args[0].value
    return None


def _state_read(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The model whose state's tensors `node` walks (`model.state_dict().items()`, `.values()`)."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values") and isinstance(func.value, cst.Call):
        inner = func.value.func
        if isinstance(inner, cst.Attribute) and inner.attr.value == "state_dict" and not func.value.args:
            return inner.value
    return None


def _pretrained_saved(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The model `node` saves with transformers' `save_pretrained(path)`, not handed a gathered `state_dict=`."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "save_pretrained" and not any(
            arg.keyword is not None and arg.keyword.value == "state_dict" or arg.star == "**" for arg in node.args):
        return _unwrapped(func.value)
    return None


def _state_whole(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The model whose state dict `node` takes (`model.state_dict()`, given nothing; `model.module.state_dict()`, of
    the model a data-parallel wrapper bound to the same name wraps)."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "state_dict" and not node.args:
        return _unwrapped(func.value)
    return None


def _unwrapped(held: cst.BaseExpression) -> cst.BaseExpression:
    """The model `held` names: itself, the model of `model.module`, and of `(model.module if ddp else model)` the
    option that names one."""
    if isinstance(held, cst.IfExp):
        options = [_unwrapped(option) for option in (held.body, held.orelse)]
        return next((o for o in options if isinstance(o, cst.Name)), held)
    return held.value if isinstance(held, cst.Attribute) and held.attr.value == "module" else held


def _copied(index: ModelIndex, node: cst.Call) -> cst.BaseExpression | None:
    """The value `node` deep-copies (`copy.deepcopy(model)`), or the model whose parameters a library's weight
    average built over it clones (`EMA(model)`, `ExponentialMovingAverage(model.parameters())`)."""
    if not node.args or node.args[0].keyword is not None:
        return None
    qualified = index.qualified_call(node)
    if qualified in known.DEEP_COPY:
        return node.args[0].value
    if averager(index, qualified or ""):
        value = node.args[0].value
        if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "parameters":
            return value.func.value  # `model.parameters()`: the model's own parameters
        return value
    return None


def _built_then(
    index: ModelIndex, texts: tuple[str, ...] | _BuildsThenHands, used, constructors: bool = True,
    layers: bool = True, children: bool = False, with_flat: bool = False,
) -> list[tuple[MethodInfo, cst.Call, str]]:
    """(function, the call, the local) for each call `used` says takes a model the same function built before it (or
    the module-level code built, used as a global: `_top_models_used`); only functions whose text holds one of
    `texts` (or that the trigger finds) are read. Without `layers`, a torch layer the function builds on the spot
    (`probe = nn.Linear(4, 4)`, a helper of its own) is no such model. With `children`, a part of that model
    reached by attributes counts too (`diffusion.denoise_fn.state_dict()`), told by its path."""
    found: list[tuple[MethodInfo, cst.Call, str]] = []

    def holds(text: str) -> bool:
        return bool(texts.search(text)) if not isinstance(texts, tuple) else any(t in text for t in texts)

    if not holds(index.source):
        return found
    functions = [(index.function_info(name), None) for name in index.skeleton.functions]
    for cls in index.classes.values():
        functions += [(m, cls) for m in cls.all_methods() if m.owner is cls]
    for method, owner in functions:
        if method is None or not constructors and owner is not None and any(m is method for m in owner.init_methods):
            continue
        if not holds(method.text) or method.node is None:
            continue
        built = constructed_models(index, method.node, owner)
        if not layers:  # (not a data-parallel wrapper around the model the name held: `m = DDP(m)`)
            built = {n: c for n, c in built.items() if wraps_itself(c, cst.Name(n))
                     or not known.is_torch_module_class(index.qualified_call(c) or "")}
        looked_up = looked_up_models(index, method.node)  # `model = zoo.get_architecture(cfg)`, used as a model
        tops = _top_models_used(index, method, layers) if owner is None else ()
        flat = flat_of(method) if built or looked_up or tops else None
        if flat is None:
            continue
        first = {name: flat.position.get(id(call), 0) for name, call in built.items()}
        for name in tops:
            first.setdefault(name, -1)  # built before the function runs
        for node, _ctx in flat.nodes if looked_up else ():
            if type(node) is cst.Assign and isinstance(node.targets[0].target, cst.Name):
                if node.targets[0].target.value in looked_up:
                    # (from the end of the binding: not a call in its own value, `model = copy.deepcopy(model)`)
                    # (before a wrapper around it, `model = DistributedDataParallel(model)`, built later)
                    end = max(flat.position.get(id(n), 0) for n in walk(node.value))
                    first[node.targets[0].target.value] = min(first.get(node.targets[0].target.value, end), end)
        add_stand_ins(flat, first)
        for node, ctx in flat.nodes:
            if type(node) is not cst.Call or ctx.guarded:
                continue
            target = used(index, node, flat) if with_flat else used(index, node)
            if target is None:
                continue
            while isinstance(target, cst.Call) and returns_argument(index, flat, target):
                target = target.args[0].value  # `unwrap(model).load_state_dict(sd)`: the model handed back
            if isinstance(target, (cst.List, cst.Tuple)):  # `torch.save([model, criterion, optimizer], f)`
                target = next((e.value for e in target.elements if type(e.value) is cst.Name and e.value.value in first
                               and first[e.value.value] < flat.position[id(node)]), None)
            local = _child_path(target, first) if children and type(target) is cst.Attribute else None
            if local is None and not isinstance(target, cst.Name):
                continue
            local = local or target.value  # type: ignore[union-attr]
            root = local.partition(".")[0]
            if root in first and first[root] < flat.position[id(node)]:
                found.append((method, node, local))
    return found


def _child_path(target: cst.Attribute, first: dict[str, int]) -> str | None:
    """The path of a part of a model in `first` reached by attributes alone (`diffusion._denoise_fn`), else None."""
    part = _model_part(target)
    return ".".join(part) if part is not None and part[0] in first else None


def _model_part(value: cst.BaseExpression) -> list[str] | None:
    """`[root, *attributes]` of a part of a local reached by attributes alone (`diffusion._denoise_fn`), else None: not
    through a setting or a part that keeps a state of its own (`model.config`, `model.optimizer`)."""
    parts = []
    while type(value) is cst.Attribute:
        parts.append(value.attr.value)
        value = value.value
    if type(value) is not cst.Name or any(
            config_like(part) or known.OWN_STATE_PART.search(part.lower()) for part in parts):
        return None
    return [value.value, *reversed(parts)]


def add_stand_ins(flat: Flat, first: dict[str, int]) -> None:
    """Add to `first` (a built model's local -> flat position from which it holds it) each local bound after that
    to the same model or to its parameters, and to nothing else: `model_without_ddp = model`, `net = model.module`,
    `model_params = list(model_without_ddp.parameters())` (what `copy.deepcopy` or `torch.save` then takes is
    placeholders too)."""
    if not first:
        return
    bindings: dict[str, list[cst.Assign]] = {}
    for node, _ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            bindings.setdefault(node.targets[0].target.value, []).append(node)
    for name, assigns in bindings.items():
        held = {stands_for(a.value) for a in assigns}  # (`m = model` ... `m = model.module`: the same model)
        if name in first or len(held) != 1:
            continue
        model = held.pop()
        at = flat.position.get(id(assigns[0]))
        if model in first and at is not None and first[model] < at:
            first[name] = at


def stands_for(value: cst.BaseExpression) -> str | None:
    """The local whose model `value` is or whose parameters it lists: `model`, `model.module`,
    `model.parameters()`, `list(model.parameters())`, both options of `model.module if hasattr(model, "module") else
    model`, else None."""
    if type(value) is cst.IfExp:
        held = stands_for(value.body)
        return held if held is not None and held == stands_for(value.orelse) else None
    if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in ("list", "tuple") \
            and len(value.args) == 1:
        value = value.args[0].value
    if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "parameters" \
            and not value.args:
        value = value.func.value
    if type(value) is cst.Attribute and value.attr.value == "module":
        value = value.value
    if type(value) is cst.Name:
        return value.value if value.value not in ("None", "True", "False") else None
    return _parts_of(value)


def _parts_of(value: cst.BaseExpression) -> str | None:
    """The local whose parts `value` holds: a part reached by attributes (`res_g_conv5 = all_blocks.layer4`, not a
    setting or a part keeping a state of its own: `model.config`, `model.optimizer`), or a torch container built
    around parts (`nn.Sequential(*all_blocks.layer3[1:])`), else None."""
    if type(value) is cst.Call and (dotted(value.func) or "").rsplit(".", 1)[-1] in _PART_CONTAINERS \
            and len(value.args) == 1 and value.args[0].keyword is None:
        value = value.args[0].value
        while type(value) is cst.Subscript:  # (`all_blocks.layer3[1:]`: some of its blocks)
            value = value.value
    part = _model_part(value) if type(value) is cst.Attribute else None
    if part is None or part[0] in ("self", "cls") or not all(name.islower() for name in part[1:]):
        return None
    return part[0]


_PART_CONTAINERS = frozenset({"Sequential", "ModuleList"})


def built_where(method: MethodInfo, local: str) -> str:
    """Where the model `local` of a `_built_then` finding was built, as a message tells it: in `train` above, or at
    the top of the script when the function does not bind it."""
    flat = flat_of(method) if isinstance(method.node, cst.FunctionDef) else None
    if flat is not None:
        from .script import bound_here  # (the script scopes read this module's neighbours)

        local = local.partition(".")[0]  # (`diffusion` of its part `diffusion.denoise_fn`)
        if local not in bound_here(method.node, flat):
            return "at the top of this script"
        for node, _ctx in flat.nodes:  # a stand-in `add_stand_ins` added: say for which model
            if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                    and node.targets[0].target.value == local \
                    and (held := stands_for(node.value)) not in (None, local):
                listed = "parameters(" in code_of(node.value)
                part = _parts_of(node.value) is not None and not listed
                return f"in `{method.name}` above (" + (
                    f"`{local}` lists the parameters of `{held}`)" if listed
                    else f"`{local}` holds parts of `{held}`)" if part else f"as `{held}`)")
    return f"in `{method.name}` above"


def _top_models_used(index: ModelIndex, function: MethodInfo, layers: bool) -> list[str]:
    """The models the module-level code built (`model = MemTransformerLM(...)` at the top of a script) that
    `function` uses as globals, not binding the name itself (`script.global_models`); without `layers`, not a torch
    layer (a data-parallel wrapper, `net = nn.DataParallel(net)`, holds the model it wraps)."""
    from .script import bound_here, global_models  # (the script scopes read this module's neighbours)

    models = global_models(index)
    names = [n for n, classes in models.items() if n in function.text
             and (layers or not all(c.startswith("torch.") and not wraps_a_model(c) for c in classes))]
    flat = flat_of(function) if names and isinstance(function.node, cst.FunctionDef) else None
    if flat is None:
        return []
    bound = bound_here(function.node, flat)
    return [n for n in names if n not in bound]


@memoised
def constructors_loading(index: ModelIndex) -> list[tuple[Snippet, cst.Call, MethodInfo]]:
    """(where, the call, the constructor) for each call of a module class's alternative constructor of the program
    (`VisualBert.from_pretrained(name)`, the class's own or a base's of another file) that builds the model and then
    loads a state into it (`model = cls(config)` ... `load(model)` of old BERT ports, `built_then_loaded`,
    `built_then_handed_state` there): under `deepspeed.zero.Init` the load copies into placeholders. Told at the
    call, where the caller builds its model."""
    source = index.source
    written = {  # (the text first: only a call of a constructor that loads is worth parsing the code around it for)
        (owner.group(0), match.group(1)) for match in _ALTERNATIVE_CONSTRUCTOR.finditer(source)
        if (owner := _OWNER_BEFORE.search(source, max(0, match.start() - 80), match.start())) is not None
    }
    if not any(_loading_constructor(index, owner, name) for owner, name in written):
        return []
    found: list[tuple[Snippet, cst.Call, MethodInfo]] = []
    for snippet, _flat, node in _unguarded_calls(index, _ALTERNATIVE_CONSTRUCTOR):
        func = node.func
        owner = dotted(func.value) if type(func) is cst.Attribute else None
        constructor = _loading_constructor(index, owner, func.attr.value) if owner else None  # type: ignore[attr-defined]
        if constructor is not None:
            found.append((snippet, node, constructor))
    return found


def _unguarded_calls(index: ModelIndex, trigger: re.Pattern[str]) -> Iterator[tuple[Snippet, Flat, cst.Call]]:
    """(where, its flat, the call) for each call not guarded for ZeRO-3 in the methods, functions and script code
    whose text `trigger` finds, each call once."""
    from .script import script_scopes  # (the script scopes read this module's neighbours)

    if not trigger.search(index.source):
        return
    scopes = [(m.snippet, flat_of(m)) for _cls, m in index.methods("all", trigger)]
    scopes += [(s.snippet, s.flat) for s in script_scopes(index, trigger)]
    seen: set[int] = set()
    for snippet, flat in scopes:
        if flat is None or snippet is None:
            continue
        for node, ctx in flat.nodes:
            if type(node) is cst.Call and id(node) not in seen and not ctx.guarded:
                seen.add(id(node))
                yield snippet, flat, node


@memoised
def _loading_constructor(index: ModelIndex, owner: str, name: str) -> MethodInfo | None:
    """The classmethod `owner.name` (`Bert.from_pretrained`) when its class is a module class of the program and the
    method builds the model and then loads into it."""
    if not name.startswith("from_"):
        return None
    cls = class_named(index, owner)
    method = cls.inherited_method(name) if cls is not None and cls.is_module else None
    if method is None or method.node is None or not any(
            dotted(d.decorator) == "classmethod" for d in method.node.decorators):
        return None
    where = method.index
    loads = [m for m, _node, _local in built_then_loaded(where) + built_then_handed_state(where)]
    return method if any(m is method for m in loads) else None


# A call of an alternative constructor through a class: `Bert.from_pretrained(`.
_ALTERNATIVE_CONSTRUCTOR = re.compile(r"\.(from_\w+)\(")
# ... and the dotted name before it, ending where the call's `.from_` begins (searched in a window before it).
_OWNER_BEFORE = re.compile(r"[A-Za-z_][\w.]*(?=$)")


@memoised
def zoo_weights_loaded(index: ModelIndex) -> list[tuple[Snippet, cst.Call]]:
    """(where, the call) for each model zoo builder the file asks for pretrained weights, in a module's methods, a
    function or script code: `models.vgg19(pretrained=True)`, `resnet50(weights="DEFAULT")`,
    `models.__dict__[arch](weights=w if pretrained else None)`, `timm.create_model(name, pretrained=True)`. The
    builder loads them into the model after its constructor returned, which under `deepspeed.zero.Init` partitioned
    it. Not `pretrained=False`, `weights=None`, a test guarded for ZeRO-3, nor a decorator (torchvision's own
    `@handle_legacy_interface(weights=("pretrained", ...))` over its builders)."""
    return [
        (snippet, node) for snippet, flat, node in _unguarded_calls(index, _ASKS_FOR_WEIGHTS)
        if _zoo_builder(index, node) and _asks_for_weights(node)
        and type(flat.parent.get(id(node))) is not cst.Decorator
    ]


_ASKS_FOR_WEIGHTS = re.compile(r"\b(?:pretrained|weights)\s*=")
# Builders of a library that load a checkpoint into the model they construct when asked to.
_LOADING_BUILDERS = frozenset({"timm.create_model", "torch.hub.load"})


def _zoo_builder(index: ModelIndex, call: cst.Call) -> bool:
    """Is `call` a model zoo's builder (`torchvision.models.resnet50`, `models.__dict__[arch]`, `getattr(models, name)`,
    `timm.create_model`)?"""
    func = call.func
    zoo = None
    if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute) \
            and func.value.attr.value == "__dict__":
        zoo = dotted(func.value.value)  # `models.__dict__[arch](...)`
    elif isinstance(func, cst.Call) and dotted(func.func) == "getattr" and func.args:
        zoo = dotted(func.args[0].value)  # `getattr(torchvision.models, name)(...)`
    if zoo is not None or not isinstance(func, (cst.Name, cst.Attribute)):
        return zoo is not None and known.model_zoo(index.qualify(zoo))
    qualified = index.qualified_call(call) or ""
    return known.model_zoo_function(qualified) or qualified in _LOADING_BUILDERS


def _asks_for_weights(call: cst.Call) -> bool:
    """Does the call ask for pretrained weights: `pretrained=` or `weights=` given anything but a literal
    `False`/`None`/`0` or a `...NONE` weights name (either arm of a conditional counts)?"""
    return any(
        arg.keyword is not None and arg.keyword.value in ("pretrained", "weights") and _some_weights(arg.value)
        for arg in call.args
    )


def _some_weights(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _some_weights(value.body) or _some_weights(value.orelse)
    if isinstance(value, cst.Name):
        return value.value not in ("False", "None")
    if isinstance(value, cst.Integer):
        return value.value != "0"
    if isinstance(value, cst.SimpleString):
        return "NONE" not in value.value.upper() and len(value.value.strip("'\"rbuRBU")) > 0
    if isinstance(value, cst.Attribute):
        return value.attr.value.upper() != "NONE"
    return True

