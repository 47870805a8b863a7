"""ZG303: a submodule method other than forward uses that submodule's own parameters."""

from __future__ import annotations

import re
from collections.abc import Iterator

from zgen.findings import Severity

from ..analysis.access import READ, SIZE, WRITE, Reach, Scope
from ..analysis.bound import bound_calls, bound_names, runs_handed
from ..analysis.by_hand import hand_runs
from ..analysis.calls import ModuleCalls, handed_read
from ..analysis.flow import flat_of, loop_items, mapping_walked
from ..analysis.divergence import NOT_RUNS
from ..analysis.own import (
    answering_classes, calls_child_method, imported_module_methods, method_uses, package_module_classes,
    package_module_methods, uses_self_whole,
)
from ..analysis.effects import CALLS, argument_effects, runs_argument_methods
from ..analysis.handed import outside_functions
from ..analysis.instances import may_join, method_returned
from ..analysis.instances import (
    Instance, annotated_receiver, function_arguments, function_flat, instance_methods, member_instance, properties_read,
    reads_own,
    reads_own_by_name,
    receiver_instance, instance_attributes,
)
from ..analysis.script import function_scope
from ..analysis.scopes import param_accesses
from ..analysis.value_reads import reads_values
from ..program import known
from ..program.holds import averaged_attributes, held_attributes, held_path_classes, module_arguments, reached_models
from ..program.tree import access_path
from ..program.index import ClassInfo, MethodInfo, ModelIndex, entry_name, memoised, registered_names
from ..program.members import UNKNOWN_CLASS, Kind, creates_parameters, facts_of, generic_module
from ..program.tree import call_name, code_of, cst, walk
from ..program.trigger import line_matches
from .rule import Report, Rule

# `<something other than self>.name(`: a method called on another object.
_FLATTEN = re.compile(r"\.flatten_parameters\(")  # (`_flattened`)
_OTHER_CALL = re.compile(r"\.(?<!\bself\.)(?<!\(\)\.)(\w+)\s*\(")  # `.` first: see index._ATTR_NOT_ON_SELF
# `self.unet.sample(`: a method called on an attribute (the method's name).
_SELF_CALL = re.compile(r"self(?<!\wself)(?:\.\w+)+\.(\w+)\s*\(")  # `\bself`, the word first (10x faster)
_HEADER = re.compile(r"def\s+\w+\s*\((.*?)\)\s*(?:->[^:]*)?:", re.S)
_PARAM = re.compile(r"(?:^|[(,])\s*\**([A-Za-z_]\w*)")
def _handed_to_own_forward(access) -> bool:
    """Is the parameter an argument of the module's own `self.forward(...)` call?"""
    flat = flat_of(access.method)
    parent = flat.parent.get(id(access.node)) if flat is not None else None
    call = flat.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
    return isinstance(call, cst.Call) and code_of(call.func) in ("self.forward", "super().forward")


_PRINTING = frozenset({"__repr__", "__str__", "__format__", "extra_repr"})
_SKIP = {"forward", "__call__", "extra_repr", "__repr__", "_init_weights", "reset_parameters"}


class ChildMethodBypass(Rule):
    """A forward calls a submodule's method (not its forward) that computes with the submodule's own parameters.

    ## What it does
    Flags, in `forward` and the methods it calls, `self.child.method(...)`
    where `child` is a module class of this file and `method` (or what it
    calls) computes with `child`'s own parameters, for example
    `self.embeddings.interpolate_pos_encoding(x)` reading
    `self.position_embeddings`, or `self.tok.attend(h)` returning
    `h @ self.weight.T`, or `self.codebook.lookup(z)` indexing the weight
    of the codebook's own `nn.Embedding` (no hook of either module runs).
    The same call from a class that holds a model without being one (a
    trainer's `self.unet.sample(x)`, also through a local bound to it,
    `model = self.ema if use_ema else self.net`), or from a method a
    training loop calls on the built model (`sample`), is flagged too. A
    method that runs the module's forward by name (`self.forward(x)` inside
    `forward_with_cond_scale`) computes with what that forward reads of the
    module's own parameters. A module whose class cannot be told (handed in,
    an argument) is taken to be one of the module classes, of this file or
    imported into it, that define the called method. Methods that only call
    the child's submodules, or read buffers or parameters small enough to
    stay gathered, are fine. A child whose class cannot be read (a registry
    lookup by name such as `timm.create_model(name)`, a model handed in, or
    a package that is not installed) is flagged only for the methods by which
    vision backbones run their forward in parts (`forward_features`,
    `forward_intermediates`, `get_intermediate_layers`: they never call
    `forward` and compute with the model's own position embeddings and
    tokens); any other method may run its own forward (`generate`) or only
    its submodules, and only its class says which. A function handed a module and a tensor input
    that calls a method of the module with values derived from the module's
    own parameters (`conv._conv_forward(x, conv.weight * s, b)`) runs the
    module by hand, with no hook of it: flagged at that call. A call of an
    `@abstractmethod` of a module interface that no class we read fills in
    (`self.adapter.encode(x)` with `adapter: AdapterBase`) runs a module of
    the user's, which computes with its own parameters there. The
    method's own reads are flagged as well: a method other than forward
    that a training loop or a holder runs on the built model (`sample_p`,
    `get_target_q`, a regulariser) and that computes with the model's own
    parameters or its children's (`self.log_alpha.exp()`,
    `self.head[0].weight`) is the same bypass one level up, reported at
    the read (and as ZG109, since the read sees an empty placeholder).

    ## Why is this bad under ZeRO-3?
    ZeRO-3 gathers `child`'s parameters only when `child` itself is called.
    Inside another method they are partitioned: DeepSpeed's engine fetches
    each on access, blocking and outside the prefetch schedule, and a
    runtime without that fallback computes with empty partitions.

    ## Example
    ```python
    class Embed(nn.Module):
        def attend(self, h):
            return h @ self.weight.T

    class LM(nn.Module):
        def forward(self, ids):
            h = self.blocks(self.embed(ids))
            return self.embed.attend(h)
    ```

    ## Use instead
    Route the computation through the child's `forward` (for example a
    `mode="attend"` argument), or register the parameter with
    `deepspeed.zero.register_external_parameter(self, self.embed.weight)`.
    """

    code = "ZG303"
    name = "child-method-bypass"
    severity = Severity.WARNING

    VALID = (
        """
import torch
from torch import nn

class Rotary(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.register_buffer("inv_freq", torch.ones(d))

    def tables(self, t):
        return torch.outer(t, self.inv_freq)

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.rope = Rotary(d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, t):
        return self.proj(x) * self.rope.tables(t).sum()
""",
    )
    INVALID = (
        """
import torch
from torch import nn

class Embed(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))

    def forward(self, ids):
        return self.weight[ids]

    def attend(self, h):
        return h @ self.weight.T

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embed(10, 4)

    def forward(self, ids):
        return self.embed.attend(self.embed(ids))
""",
        # The child's method indexes its own submodule's weight without calling it.
        """
import torch
from torch import nn

class Codebook(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.embedding = nn.Embedding(k, d)

    def forward(self, z):
        return self.embedding(z)

    def lookup(self, idx):
        return torch.index_select(self.embedding.weight, 0, idx)

class Quantiser(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.codebook = Codebook(k, d)

    def forward(self, idx):
        return self.codebook.lookup(idx)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        names = _candidate_methods(index)
        forward = list(index.methods("forward", None))
        init = {id(m) for _, m in index.methods("init", _OTHER_CALL)}
        for cls, method in (*forward, *index.methods("entry", _OTHER_CALL), *index.methods("init", _OTHER_CALL)):
            called = {m.group(1) for m in _OTHER_CALL.finditer(method.text)} | bound_names(method.text, index=index)
            called = (called | set(_VALUE_CALL.findall(method.text))) - _SKIP  # `self.get_v().m(`: a returned value
            external = _external_methods(index, cls)
            unknown = called - names - external - known.FORWARD_PARTS
            if unknown & _typed_receiver_calls(method.text):
                # names no class of the file nor a child built by name defines: the classes of its typed attributes
                external = external | instance_methods(index, cls)
            if unknown - external:
                # a module whose class nothing names may be one of the module classes the file imports by name
                external = external | (imported_module_methods(index) & unknown)
                # or, where none defines the method, of its package's other files (called on an attribute:
                # `self.model.decode(x)`, not a list's `self.cache.get(k)`)
                rest = (unknown - external - known.CONTAINER_METHODS - known.SIZE_METHODS) & _held_receiver_calls(method.text)
                external = external | (package_module_methods(index) & rest) if rest else external
            called &= names | external | known.FORWARD_PARTS
            in_forward = any(method is m for _, m in forward)
            if not in_forward:
                called.discard("flatten_parameters")  # (outside any forward: a read of placeholders, ZG109 tells it)
            if called and not in_forward:
                # run on the built model: only methods that can compute with parameters are worth parsing for
                called = {name for name in called if name in external or name in known.FORWARD_PARTS
                          or _computes(index, name)}
            if not called:
                continue
            flat = flat_of(method)
            if flat is None:
                continue
            calls = None
            for node, target, name in _method_calls(index, flat, called):
                calls = calls or ModuleCalls(index, cls, flat, method.name)
                if isinstance(target, cst.Name) and target.value == "self":
                    continue
                classes = calls.classes_of(target)
                if classes is None and name in known.FORWARD_PARTS and _registry_built(index, cls, target):
                    classes = (UNKNOWN_CLASS,)  # `self.model = timm.create_model(name)`: a model of no readable class
                if not classes and isinstance(target, cst.Name) and method.node is not None:
                    if target.value in module_arguments(index, method.node):
                        classes = (UNKNOWN_CLASS,)  # `def p_sample_loop(self, unet, ...)`: a module handed in
                if name in known.FORWARD_PARTS and _unreadable(index, classes) \
                        and not _parts_of_plain_holders(index, name):
                    # a model of a class we cannot read (a registry or hub builder, handed in) run only by the
                    # parts of its forward: those compute with its own top-level parameters, no hook of it runs
                    message = (
                        f"`{code_of(node.func)}(...)` runs `{code_of(target)}`'s forward by parts without its forward; "
                        f"what `{name}` computes with of `{code_of(target)}`'s own parameters (position embeddings, "
                        "class tokens) is not gathered by any hook, and ZeRO-3 must fetch it on access"
                    )
                    yield self.finding(index, method.snippet, node, message, _forward_or_register(code_of(target)))
                    continue
                instance, by_name = _instance_of(index, cls, flat, target, classes, name, method)
                # in `__init__` the built child computes with placeholders (its writes there are ZG103's)
                uses = (READ, SIZE) if id(method) in init else (READ, SIZE, WRITE)
                if by_name and reads_own_by_name(index, instance, name, uses, in_forward) is None:  # type: ignore[arg-type]
                    continue
                for ref in instance.classes if instance is not None else ():
                    found = reads_own(index, Instance((ref,), instance.exact), name, uses, in_forward)  # type: ignore[union-attr]
                    used = found.param if found is not None else None
                    if used:
                        message = f"{_called(node, target, name)} computes with {_unfetched(used, code_of(target))}"
                        help = f"compute it in `{ref.rsplit('.', 1)[-1]}.forward`, or register the parameter as external"
                        yield self.finding(index, method.snippet, node, message, help)
                        break
        yield from self._entry_reads(index)
        yield from self._clip_text_towers(index)
        yield from self._flattened(index)
        yield from self._held(index)
        yield from self._averaged(index)
        yield from self._handed_by_classes(index)
        yield from self._handed_to_other_files(index)
        for run in hand_runs(index):
            if run.method:
                message = (
                    f"`{code_of(run.node.func)}(...)` is given values computed from `{run.module}.{run.param}`, "  # type: ignore[attr-defined]
                    f"a parameter of `{run.module}`, outside `{run.module}`'s forward; ZeRO-3 has not gathered it "
                    "and must fetch it on access"
                )
                help = f"call `{run.module}(...)` (its forward), or gather its parameters around the call"
                yield self.finding(index, run.snippet, run.node, message, help)

    def _entry_reads(self, index: ModelIndex) -> Iterator[Report]:
        """Reads of parameter values in a method run on the built model outside forward (`def sample_p(self):
        ... self.py0_mean ...`): no hook of the module runs for that method, so what it computes with is fetched on
        access (DeepSpeed) or is an empty partition (a runtime without that fallback). A read handed to a
        submodule's call is that module's forward's (ZG301)."""
        for access in param_accesses(index, Scope.ENTRY):
            if access.use != READ or access.method is None or access.method.name in _PRINTING:
                continue  # printing the model (`extra_repr`) reads values (ZG109) but computes nothing with them
            if access.via.reach is Reach.PASSED:
                continue  # a child handed whole to a helper that copies its values (an EMA update): ZG109's
            if not reads_values(index, access) or handed_read(index, access) is not None:
                continue
            if _handed_to_own_forward(access):
                continue  # `self.forward(x, self.groups)`: the call is ZG302's
            owner = "its own parameters" if access.via_parameters else (
                "its own parameter" if access.owner == "self" else f"a parameter of its child `{access.owner}`")
            message = (
                f"`{code_of(access.node)}{access.detail}` computes with {owner} in `{access.where}`, a method other "
                "than forward run on the built model: no forward hook of the module runs for it, so nothing gathers "
                "the parameter and ZeRO-3 must fetch it on access, outside the prefetch schedule"
            )
            help = ("compute it in the module's `forward` (a mode argument), or gather it around the call with "
                    "`deepspeed.zero.GatheredParameters`")
            yield self.finding(index, access.snippet, access.node, message, help)

    def _clip_text_towers(self, index: ModelIndex) -> Iterator[Report]:
        """`self.clip.encode_text(ids)` on a CLIP model a class keeps (`clip.load(name)`,
        `open_clip.create_model_and_transforms(name)`, or an attribute named for CLIP of no class a file defines):
        CLIP's text tower adds CLIP's own `positional_embedding` and projects with its own `text_projection`, which
        only CLIP's forward hook gathers; called by this method, no hook of CLIP runs."""
        if ".encode_text(" not in index.source:
            return
        for cls in index.classes.values():
            if ".encode_text(" not in cls.text:
                continue
            loaded = _clip_attributes(cls)
            members = facts_of(cls).members
            for method in cls.all_methods():
                if method.owner is not cls or ".encode_text(" not in method.text or method.node is None:
                    continue
                for node in walk(method.node):
                    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                            and node.func.attr.value == "encode_text"):
                        continue
                    path = access_path(node.func.value)
                    if path is None or path.root != "self" or len(path.parts) != 1:
                        continue
                    attr = path.parts[0]
                    member = members.get(attr)
                    readable = member is not None and bool(member.classes) and not _unreadable(index, member.classes)
                    if readable or not (attr in loaded or "clip" in attr.lower()):
                        continue
                    if f"self.{attr}(" in method.text:
                        continue  # CLIP's own forward runs in this method too: its hook gathered them
                    message = (
                        f"`{code_of(node.func)}(...)` runs CLIP's text tower outside CLIP's forward: it computes with "
                        f"CLIP's own `positional_embedding` and `text_projection`, which no hook of `self.{attr}` "
                        "gathered, and ZeRO-3 must fetch them on access"
                    )
                    yield self.finding(index, method.snippet, node, message, _forward_or_register(f"self.{attr}"))

    def _flattened(self, index: ModelIndex) -> Iterator[Report]:
        """`self.lstm.flatten_parameters()` in a forward before the LSTM runs: torch's recurrent layers lay their
        weights out again for cuDNN there, reading every one of them outside the layer's hooks."""
        for cls, method in index.methods("forward", _FLATTEN):
            flat = flat_of(method)
            calls = ModuleCalls(index, cls, flat, method.name) if flat is not None else None
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                    continue
                target = node.func.value
                if node.func.attr.value != "flatten_parameters" or isinstance(target, cst.Name) and target.value == "self":
                    continue
                classes = calls.classes_of(target)  # type: ignore[union-attr]
                # (a child of a class no file tells, `self.rnn = rnn_cell(d, h)` for `rnn_cell = self.supported_rnns[
                # kind]`: only torch's recurrent layers lay their weights out)
                unread = classes is not None and all(ref == UNKNOWN_CLASS for ref in classes)
                if not classes or not unread and not any(
                        method_uses(index, ref, "flatten_parameters") for ref in classes):
                    continue
                message = (
                    f"`{code_of(node.func)}()` lays out the weights of `{code_of(target)}` again outside its forward; "
                    "ZeRO-3 has not gathered them there and must fetch each on access"
                )
                help = (f"drop the call under ZeRO-3 (the layer's own forward handles its weights), or gather "
                        f"`{code_of(target)}`'s parameters around it")
                yield self.finding(index, method.snippet, node, message, help)

    def _held(self, index: ModelIndex) -> Iterator[Report]:
        """Code outside the model classes calling a method other than forward on a model it holds or is given, or
        on a submodule of one (`self.unet.sample(x)`, `model.blk.logits(x)` in `def tweak(model)`): no forward
        of that module runs, so no hook gathers what it reads."""
        if index.other_framework:
            return  # a TensorFlow/JAX file: its layers are no torch modules
        for span, cls in outside_functions(index):
            if cls is None and not entry_name(span.name):
                continue  # an initialiser, a hook, a loader given a model: not a step of the training loop
            text = index.skeleton.text(span.start, span.end)
            # a chain, a returned value, a property, a local bound from `self` (`m = self.a.module if c else self.a`)
            joined = cls is not None and (
                may_join(cls, text) or bool(_LOCAL_FROM_SELF.search(text)) or _calls_on_parameters(text)
            )  # (a method's parameter is typed by the class's own calls: `self.encode_with(self.model.book, z)`)
            if not any(  # `w.copy_(...)`: a tensor's in-place op, no module method
                not _never_computes(name) for name in (*_holder_calls(text, cls is not None), *bound_names(text, _roots(text, cls is not None), index))
            ) and not (cls is not None and _HELD_LOCAL.search(text)) and not joined:
                continue  # no `<holder>.<method>(...)`, nor a local bound to an attribute, that could call one
            held = held_attributes(index, cls) if cls is not None else {}
            method = cls.method(span.name) if cls is not None else None
            if method is not None and method.owner is not cls:
                continue
            scope = function_scope(index, span)
            if scope is None or not isinstance(scope.node, cst.FunctionDef):
                continue
            arguments = reached_models(index, scope.node) if span.name != "__init__" else {}
            typed = bool(held or arguments) or (cls is not None and bool(instance_attributes(index, cls)))
            if not typed and not joined:
                continue
            for node, receiver, name, via, classes in self._calls(
                index, scope.flat, held, arguments, cls, text, joined, scope.node
            ):
                if _never_computes(name):
                    continue
                if cls is not None:
                    instance = receiver_instance(index, cls, scope.flat, receiver, 0, method)
                else:  # `trainer.model.book` of an argument annotated with a plain class of the program
                    instance = annotated_receiver(index, scope.node, receiver)
                if instance is None and name in known.CONTAINER_METHODS:
                    continue  # `self.heads.update(...)`: a container's own method, unless the class says otherwise
                if instance is None and classes and all(ref == UNKNOWN_CLASS or generic_module(ref) for ref in classes):
                    # a model of no named class (or typed only as `nn.Module`, which defines no such method): one of
                    # the module classes defining the method, each computing with its own parameters in it (a step
                    # of the training loop)
                    instance = Instance(
                        answering_classes(index, (UNKNOWN_CLASS,), name, cls.name if cls else "", True), True
                    )
                    found = reads_own_by_name(index, instance, name, in_forward=False)
                else:
                    instance = instance or Instance(classes, True)
                    found = reads_own(index, instance, name, in_forward=False)  # a step of the training loop
                used = found.param if found is not None else None
                if used is None and name in known.FORWARD_PARTS and _unreadable(index, classes):
                    used = f"{name}()"  # a model of no readable class run by the parts of its forward
                if used is None:
                    continue
                target = code_of(receiver)
                held_as = f"`{via}`" if via == target else f"`{target}` (`{via}`)"
                message = (
                    f"{_called(node, receiver, name)} computes with {_what(used, held_as)}, outside "
                    f"its forward; ZeRO-3 has not gathered it and must fetch it on access"
                )
                help = f"call `{via}(...)` (its forward), or gather its parameters around the call"
                yield self.finding(index, scope.snippet, node, message, help)


    def _averaged(self, index: ModelIndex) -> Iterator[Report]:
        """An update of a library's weight average (`known.AVERAGERS`) over a model the class holds or is given
        (`self.ema = EMA(self.model)`, `holds.averaged_attributes`), called in any method but `__init__`
        (`self.ema.update()`): the averager blends in every parameter of that model, with no hook of it running."""
        if "(" not in index.source or index.other_framework:
            return
        for cls in index.classes.values():
            averaged = averaged_attributes(index, cls)
            if not averaged:
                continue
            for method in cls.later_methods:
                if not any(f"self.{name}." in method.text for name in averaged):
                    continue
                flat = flat_of(method)
                for node, ctx in flat.nodes if flat is not None else ():
                    if type(node) is not cst.Call or ctx.guarded or not isinstance(node.func, cst.Attribute):
                        continue
                    path = access_path(node.func.value)
                    if path is None or path.root != "self" or len(path.parts) != 1 or path.parts[0] not in averaged:
                        continue
                    if node.func.attr.value not in known.AVERAGER_BLENDS:
                        continue  # `copy_to()`, `restore()`: they write the model (ZG101's), reading only the average
                    target = code_of(node.func.value)
                    message = (
                        f"`{code_of(node.func)}(...)` reads every parameter of the model the average `{target}` was built "
                        "over, outside that model's forward; ZeRO-3 has not gathered them and must fetch each on access"
                    )
                    help = "update the average inside `deepspeed.zero.GatheredParameters(model.parameters())`"
                    yield self.finding(index, method.snippet, node, message, help)

    @staticmethod
    def _calls(index: ModelIndex, flat, held, arguments, cls: ClassInfo | None, text: str, joined: bool, function=None):
        """`_held_calls`, then, where the text shows a join (`instances.may_join`), every other call of a method on a
        receiver other than `self` that `instances.receiver_instance` types through a chain or a returned value."""
        seen: set[int] = set()
        if held or arguments or (cls is not None and instance_attributes(index, cls)):
            for found in _held_calls(index, flat, held, arguments, cls, text):
                seen.add(id(found[0]))
                yield found
        if cls is None and function is not None:
            # `trainer.model.book.quantize(z)` of an argument annotated with a plain class: typed by `_held`
            annotated = {p.name.value for p in (*function.params.params, *function.params.kwonly_params) if p.annotation}
            for node, ctx in flat.nodes if annotated else ():
                if type(node) is not cst.Call or id(node) in seen or ctx.guarded or not isinstance(node.func, cst.Attribute):
                    continue
                path = access_path(node.func.value)
                if path is not None and path.root in annotated and path.parts and not _never_computes(node.func.attr.value):
                    yield node, node.func.value, node.func.attr.value, code_of(node.func.value), ()
        if not joined or cls is None:
            return
        for node, ctx in flat.nodes:
            if type(node) is not cst.Call or id(node) in seen or ctx.guarded or not isinstance(node.func, cst.Attribute):
                continue
            receiver = node.func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self" or _never_computes(node.func.attr.value):
                continue
            if isinstance(receiver, (cst.Call, cst.Name, cst.Attribute)):
                yield node, receiver, node.func.attr.value, code_of(receiver), ()

    def _handed_to_other_files(self, index: ModelIndex) -> Iterator[Report]:
        """A forward, or a method of a plain class holding a model, handing a typed child to a function of another
        file (`embed_with(self.enc, x)`, `from .utils import embed_with`) that runs a method of it other than
        forward, itself or through the functions it hands the module on to (`effects.CALLS`): reported at the call,
        where the class of what is handed is known (the function's own file cannot tell)."""
        # (only a function of the program that runs a method of what it is given: the others hand nothing on)
        imported = [alias for alias in index.imports if alias[:1].islower() and runs_argument_methods(index, alias)]
        if not imported:
            return
        # (each name first, then its look-behind: a pattern opening on the look-behind is tried at every position)
        handing = re.compile(
            "(?:" + "|".join(rf"{n}(?<![\w.]{n})" for n in sorted(map(re.escape, imported))) + r")\s*\("
        )
        methods = [(cls, method, True) for cls, method in index.methods("forward", None)]
        for span, cls in outside_functions(index):
            method = cls.method(span.name) if cls is not None else None
            if method is not None and method.owner is cls and span.name != "__init__" and instance_attributes(index, cls):
                methods.append((cls, method, False))
        for cls, method, in_forward in methods:
            if not handing.search(method.text):
                continue
            flat = flat_of(method)
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or ctx.guarded or not node.args or not isinstance(node.func, cst.Name):
                    continue
                if node.func.value not in index.imports:
                    continue
                # (`self` handed on: its own methods' summaries, `own`; the function read only when a typed child is
                # handed, most calls handing values)
                instances = {
                    position: instance for position, arg in enumerate(node.args)
                    if not (isinstance(arg.value, cst.Name) and arg.value.value == "self")
                    and (instance := receiver_instance(index, cls, flat, arg.value, 0, method)) is not None
                }
                for position, done in argument_effects(index, flat, node, calls=True) if instances else ():
                    called = sorted(
                        m for e in done if e.startswith(CALLS)
                        and (m := e[len(CALLS):]) not in _SKIP and m not in NOT_RUNS and not m.endswith("_")
                    )  # (a state dict loaded or taken, `.to()`, `.parameters()`: ZG1's, or no computation)
                    arg = node.args[position].value
                    instance = instances.get(position)
                    for name in called if instance is not None else ():
                        found = reads_own(index, instance, name, in_forward=in_forward)
                        if found is None or not found.param:
                            continue
                        written = code_of(arg)
                        message = (
                            f"`{code_of(node.func)}(...)` runs `{written}.{name}(...)`, which computes with "
                            f"{_unfetched(found.param, written)}"
                        )
                        help = f"call `{written}(...)` (its forward), or gather its parameters around the call"
                        yield self.finding(index, method.snippet, node, message, help)
                        break

    def _handed_by_classes(self, index: ModelIndex) -> Iterator[Report]:
        """A function of the file the classes hand a typed child to (`run(self.v, x)` in a forward) calling a
        method of it that computes with its own parameters (`def run(v, x): return v.attend(x)`)."""
        for name, span in index.skeleton.functions.items():
            text = index.skeleton.text(span.start, span.end)
            header = _HEADER.search(text)
            params = set(_PARAM.findall(header.group(1))) if header else set()
            if not params or not re.search(r"\b(?:" + "|".join(sorted(map(re.escape, params))) + r")(?:\.\w+)*\.\w+\s*\(", text):
                continue
            arguments = function_arguments(index, name)
            flat = function_flat(index, name) if arguments else None
            for node, ctx in flat.nodes if flat is not None else ():
                if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute) or ctx.guarded:
                    continue
                target, method = node.func.value, node.func.attr.value
                path = access_path(target)  # the argument, or a submodule of it (`holder.book.quantize(z)`)
                if path is None or path.root not in arguments or "[]" in path.parts:
                    continue
                if method in _SKIP or method in NOT_RUNS or method.startswith("__") or method.endswith("_"):
                    continue
                typed = member_instance(index, arguments[path.root], path.parts)
                found = reads_own(index, typed, method) if typed is not None else None
                if found is None:
                    continue
                written = code_of(target)
                message = (
                    f"`{code_of(node.func)}(...)` computes with {_what(found.param, f'`{written}`')}, outside "
                    f"`{written}`'s forward; ZeRO-3 has not gathered it and must fetch it on access"
                )
                help = f"call `{written}(...)` (its forward), or gather its parameters around the call"
                yield self.finding(index, index.parse(span), node, message, help)  # type: ignore[arg-type]




def _never_computes(name: str) -> bool:
    """A method no module's own code defines to compute with its parameters: forward, torch's bookkeeping
    (`parameters()`, `train()`), dunders, in-place tensor ops (`w.copy_(...)`). A container's method name
    (`update`, `pop`) may be a module class's own (`ema.update()`): the receiver's class decides."""
    return (
        name in _SKIP or name in NOT_RUNS and name not in known.CONTAINER_METHODS or name.startswith("__")
        or name.endswith("_")
    )


def _instance_of(
    index: ModelIndex, cls: ClassInfo, flat, target: cst.BaseExpression, classes: tuple[str, ...] | None, name: str,
    method: MethodInfo | None = None,
) -> tuple[Instance | None, bool]:
    """What the module a method is called on is an instance of: the classes the calls know, else what the receiver
    is typed as (`self.<attr>`, a property returning one, a local bound to either), else, for a module of a class
    nothing names, the module classes of the file or imported into it that define the method (then True: known
    by the method's name only)."""
    if classes and any(ref != UNKNOWN_CLASS for ref in classes):
        return Instance(classes, True), False
    typed = receiver_instance(index, cls, flat, target, 0, method)
    if typed is not None:
        return typed, False
    if classes == ():
        classes = (UNKNOWN_CLASS,)  # an item of a container whose modules no constructor names
    # the classes that could answer the call; of the package's other files only for a model held or handed in
    held = _held_model(index, cls, target, method)
    answering = answering_classes(index, classes, name, cls.name, held)
    if not answering or answering == classes:
        return None, False
    return Instance(answering, True), True


def _held_model(index: ModelIndex, cls: ClassInfo, target: cst.BaseExpression, method: MethodInfo | None) -> bool:
    """Is `target` a module the class holds (`self.model`, `holds.held_attributes`: named, annotated or used as one)
    or one handed to the method (`module_arguments`), not any argument kept (`self.space = action_space`)?"""
    path = access_path(target)
    if path is None or path.parts and path.parts[0] == "[]":
        return False
    if path.root == "self":
        return bool(path.parts) and path.parts[0] in held_attributes(index, cls)
    node = method.node if method is not None else None
    return not path.parts and node is not None and path.root in module_arguments(index, node)


# `v = self.v`, `v, n = self.v, 2`, `v = self.a if c else self.b`: a local bound from an attribute of `self`.
_LOCAL_FROM_SELF = re.compile(r"^[ \t]*(\w+)(?:[ \t]*,[ \t]*\w+)*[ \t]*=[^=\n][^\n]*\bself\.\w", re.MULTILINE)
# `self.vs[0].m(`, `self.heads["a"].m(`: a method called on an element of a container of `self`.
_SELF_ITEM_CALL = re.compile(r"self(?<!\wself)\.\w+\[[^\]\n]*\]\.(\w+)\s*\(")  # (word first: `program/trigger.py`)
# `for v in self.vs:`, `for k, v in self.vd.items():`: loop names bound to what a container of `self` holds.
_LOOP_FROM_SELF = re.compile(r"for(?<!\wfor)[ \t]+([\w \t,()]+?)[ \t]+in[ \t]+[^\n]*?\bself\.\w")  # (word first)


def _typed_receiver_calls(text: str) -> set[str]:
    """Text pre-filter of instance typing: names of methods called on a path from `self` (`self.v.m(`,
    `self.core.m(`, `self.vs[0].m(`), on a call's value (`self.get_v().m(`), on a local or loop name bound from one (`v = self.v` ... `v.m(`), or on a
    parameter of the method (`def _run(self, v, x): v.m(x)`, typed by the class's own calls)."""
    found = set(_SELF_CALL.findall(text)) | set(_SELF_ITEM_CALL.findall(text)) | set(_VALUE_CALL.findall(text))
    bound = {m.group(1) for m in line_matches(_LOCAL_FROM_SELF, text, "self.")} - {"self"}
    bound |= {name for names in _LOOP_FROM_SELF.findall(text) for name in re.findall(r"\w+", names)}
    header = _HEADER.search(text)
    if header:
        bound |= set(_PARAM.findall(header.group(1))) - {"self", "cls"}
    if bound:
        found |= _calls_on(text, bound)
    return found


def _held_receiver_calls(text: str) -> set[str]:
    """Text pre-filter of a module held untyped: names of methods called on a path from `self` (`self.model.m(`,
    `self.vs[0].m(`), not on the method's tensors."""
    found = set(_SELF_CALL.findall(text)) | set(_SELF_ITEM_CALL.findall(text))
    return {name for name in found if not _never_computes(name)}


# `self.get_v().m(`, `unwrap(self.v).m(`: a method called on what a call returned (`instances.returned_instance`).
_VALUE_CALL = re.compile(r"\)\s*\.\s*(\w+)\s*\(")
# `v.m(`: a method called on a plain name (the name, the method).
_NAME_CALL = re.compile(r"(?<![\w.])(\w++)\.(\w++)\s*\(")


def _calls_on(text: str, receivers: set[str]) -> set[str]:
    """Names of the methods `text` calls on a plain name of `receivers` (`v.m(`, `_NAME_CALL`), matched where the text
    holds a receiver's `v.` alone (the pattern opens on a word: `re` would try it at every word of the text)."""
    found = set()
    for receiver in receivers:
        needle = receiver + "."
        at = text.find(needle)
        while at >= 0:
            match = _NAME_CALL.match(text, at)
            if match is not None:
                found.add(match.group(2))
            at = text.find(needle, at + 1)
    return found


def _calls_on_parameters(text: str) -> bool:
    """Text pre-filter: does the function call a method on one of its parameters (`book.nearest(z)` in `def
    encode_with(self, book, z)`)?"""
    header = _HEADER.search(text)
    params = set(_PARAM.findall(header.group(1))) - {"self", "cls"} if header else set()
    return bool(_calls_on(text, params))


def _forward_or_register(module: str) -> str:
    """The help for a module run by parts of it: call its forward, or register its direct parameters."""
    return f"call `{module}(...)` (its forward), or register its direct parameters with " \
        "`deepspeed.zero.register_external_parameter`"


def _clip_attributes(cls: ClassInfo) -> set[str]:
    """Attributes the class binds to a CLIP model it loads (`self.clip_model, self.preprocess = clip.load(name)`,
    `self.clip = clip.load(arch)[0]`, or a local so bound first: `clip, _, pre = open_clip.create_model_and_transforms(
    name)` ... `self.clip = clip`)."""
    found: set[str] = set()
    for method in cls.init_methods:
        if method.node is None or not _CLIP_LOAD.search(method.text):
            continue
        locals_: set[str] = set()
        for stmt in walk(method.node):
            if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
                continue
            target, value = stmt.targets[0].target, stmt.value
            while isinstance(value, cst.Subscript):
                value = value.value  # `clip.load(arch)[0]`
            if isinstance(value, cst.Call) and _CLIP_LOAD.fullmatch(call_name(value) or ""):
                first = target.elements[0].value if isinstance(target, (cst.Tuple, cst.List)) else target
                path = access_path(first)
                if path is not None and path.root == "self" and len(path.parts) == 1:
                    found.add(path.parts[0])
                elif isinstance(first, cst.Name):
                    locals_.add(first.value)
            elif isinstance(value, cst.Name) and value.value in locals_:
                path = access_path(target)
                if path is not None and path.root == "self" and len(path.parts) == 1:
                    found.add(path.parts[0])
    return found


# The loaders of OpenAI's and OpenCLIP's models (`clip.load(name)`, `open_clip.create_model_and_transforms(name)`).
_CLIP_LOAD = re.compile(r"(?:clip\.load|open_clip\.create_model(?:_and_transforms|_from_pretrained)?)")


def _registry_built(index: ModelIndex, cls: ClassInfo, target: cst.BaseExpression) -> bool:
    """Is `target` an attribute `self.<name>` that `__init__` binds to what a model builder returns?"""
    path = access_path(target)
    if path is None or path.root != "self" or len(path.parts) != 1:
        return False
    for method in cls.init_methods:
        node = method.node
        if node is None or path.parts[0] not in method.text:
            continue
        for stmt in walk(node):
            if not isinstance(stmt, (cst.Assign, cst.AnnAssign)) or not isinstance(stmt.value, cst.Call):
                continue
            targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
            if not any(code_of(t) == f"self.{path.parts[0]}" for t in targets):
                continue
            callee = call_name(stmt.value) or ""
            if callee.rsplit(".", 1)[-1] in known.MODEL_BUILDERS or index.qualify(callee) in known.MODEL_BUILDERS_QUALIFIED:
                return True
    return False


def _parts_of_plain_holders(index: ModelIndex, name: str) -> bool:
    """Do the module classes of the package that define method `name` (`forward_features` of the pixel decoders a
    registry builds) all register no parameter of their own? Then the part runs only children, each through its own
    hooks, whichever of them the registry built."""
    found = [found for ref in package_module_classes(index, name) if (found := index.external(ref)) is not None]
    return bool(found) and not any(creates_parameters(owner, cls) for owner, cls in found)


def _unreadable(index: ModelIndex, classes: tuple[str, ...] | None) -> bool:
    """Is a module of `classes` one whose class we cannot read (unknown, or named but found in no file)?"""
    if not classes:
        return False
    for ref in classes:
        if ref == UNKNOWN_CLASS:
            continue
        if ref in index.classes or index.external(ref) is not None:
            return False
    return True


def _unfetched(used: str, owner: str) -> str:
    """The rest of a message about a method computing with `used` of the module written `owner`, outside its forward."""
    return (
        f"{_what(used, f'`{owner}`')}, outside `{owner}`'s forward; ZeRO-3 has not gathered it and must fetch it on access"
    )


def _what(used: str, owner: str) -> str:
    """What the method computes with: a parameter of the module, or its parameters through a method it calls."""
    if used.endswith(")"):
        return f"parameters of {owner} (through `{used}`)"
    return f"`{used}`, a parameter of {owner}"


# `model = self.ema.ema_model if self.use_ema else self.prior`: a local bound to an attribute of the class.
_HELD_LOCAL = re.compile(r"^[ \t]+\w+[ \t]*=[ \t]*(?:[^\n]*\belse[ \t]+)?self\.\w+[ \t]*$", re.MULTILINE)


def _method_calls(index: ModelIndex, flat, called: set[str]) -> Iterator[tuple[cst.Call, cst.BaseExpression, str]]:
    """(call, receiver, method name) of every call of a method in `called` on something other than `self`: spelt
    `<receiver>.<name>(...)`, or through a bound method kept as a value or handed on (`analysis/bound.py`)."""
    for node, _ctx in flat.nodes:
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value in called:
            target = node.func.value
            if not (isinstance(target, cst.Name) and target.value == "self"):
                yield node, target, node.func.attr.value
    for bound in bound_calls(flat, index):
        if bound.name in called and not (bound.handed and not runs_handed(index, bound)):
            yield bound.node, bound.receiver, bound.name


def _called(node: cst.Call, receiver: cst.BaseExpression, name: str) -> str:
    """How a finding names the call: `` `self.v.m(...)` `` as spelt, or through the bound method it runs
    (`` `f(...)` (`self.v.m`) ``, `` `solve(...)` (handed `self.v.m`) ``)."""
    spelt = f"{code_of(receiver)}.{name}"
    if isinstance(node.func, cst.Attribute) and code_of(node.func) == spelt:
        return f"`{spelt}(...)`"
    handed = any(not a.star and code_of(a.value) == spelt for a in node.args)
    return f"`{code_of(node.func)}(...)` ({'handed ' if handed else ''}`{spelt}`)"


def _held_calls(
    index: ModelIndex, flat, held: dict[str, tuple[str, ...]], arguments: dict[str, tuple[str, ...]],
    typed: ClassInfo | None = None, text: str = "",
) -> Iterator[tuple[cst.Call, cst.BaseExpression, str, str, tuple[str, ...]]]:
    """Unguarded calls of a method on a held or given module, or on a submodule of one, with the receiver, the
    method's name, the module's path and its classes: `self.<attr>.<name>(...)`, `model.blk.<name>(...)`, or
    `<local>.<name>(...)` where the local was bound to `self.<attr>` (alone or as a branch of a conditional
    expression); in a class `typed` whose attributes are instances of module classes
    (`instances.instance_attributes`), `self.<attr>.<name>(...)`; and the same through a bound method kept as a
    value or handed on (`f = self.act.get_action; f(s)`, `analysis/bound.py`)."""
    for node, via, classes in _spelt_held_calls(index, flat, held, arguments, typed):
        yield node, node.func.value, node.func.attr.value, via, classes  # type: ignore[union-attr]
    names = bound_names(text, _roots(text, typed is not None), index)
    for bound in bound_calls(flat, index) if names else ():
        if bound.name not in names or bound.handed and not runs_handed(index, bound):
            continue
        path = access_path(bound.receiver)
        if path is None or "[]" in path.parts:
            continue
        instance = None
        if typed is not None and path.root == "self" and len(path.parts) == 1 and path.parts[0] not in held:
            instance = instance_attributes(index, typed).get(path.parts[0])
        if instance is not None:
            yield bound.node, bound.receiver, bound.name, code_of(bound.receiver), instance.classes
            continue
        if path.root not in arguments and not (path.root == "self" and held):
            continue
        written = ".".join((path.root, *path.parts))
        classes = held_path_classes(index, written, arguments, held)
        if classes:
            head = next(h for h in (written, *_prefixes(written)) if h in arguments or h[5:] in held)
            yield bound.node, bound.receiver, bound.name, head, classes


def _spelt_held_calls(
    index: ModelIndex, flat, held: dict[str, tuple[str, ...]], arguments: dict[str, tuple[str, ...]],
    typed: ClassInfo | None = None,
) -> Iterator[tuple[cst.Call, str, tuple[str, ...]]]:
    """`_held_calls` of the calls spelt `<receiver>.<name>(...)`, with the module's path and its classes."""
    # a local bound to a held or given model, a submodule of one (`cb = self.model.vq`, `enc = model.enc`), what a
    # method of one returns (`enc = model.get_encoder()`), or a loop's variable over a container of one (`for blk
    # in self.model.blocks`): its path (`.[]` for an item) and the method whose returned value it is
    local: dict[str, tuple[str, str | None]] = {}
    for node, ctx in flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            target = node.targets[0].target.value
            local.pop(target, None)
            value = node.value
            for part in (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,):
                part, returned = _returned_by(part)
                written = _reached(part, held, arguments)
                if written:
                    local[target] = (written, returned)
            continue
        if type(node) is cst.For:
            for part, items in loop_items(node.target, node.iter):
                if not isinstance(part, cst.Name):
                    continue
                local.pop(part.value, None)
                written = _reached(mapping_walked(items), held, arguments)
                if written:
                    local[part.value] = (f"{written}.[]", None)
            continue
        if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute) or ctx.guarded:
            continue
        owner = node.func.value
        receiver, returned = _returned_by(owner)
        if returned is not None:
            written = _reached(receiver, held, arguments)  # `model.get_encoder().embed(x)`
            classes = _classes_at(index, written, returned, held, arguments) if written else None
            if classes:
                yield node, code_of(owner), classes
            continue
        if isinstance(owner, cst.Name) and owner.value in local:
            written, returned = local[owner.value]
            classes = _classes_at(index, written, returned, held, arguments)
            if classes:
                yield node, (written if returned is None and "[]" not in written else owner.value), classes
            continue
        path = access_path(owner)
        if typed is not None and path is not None and path.root == "self" and len(path.parts) == 1:
            instance = instance_attributes(index, typed).get(path.parts[0]) if path.parts[0] not in held else None
            if instance is not None:
                yield node, code_of(owner), instance.classes
                continue
        if path is None or "[]" in path.parts or path.root not in arguments and not (path.root == "self" and held):
            continue
        written = ".".join((path.root, *path.parts))
        classes = held_path_classes(index, written, arguments, held)
        if classes:
            head = next(h for h in (written, *_prefixes(written)) if h in arguments or h[5:] in held)
            yield node, head, classes


def _returned_by(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, str | None]:
    """(`model`, "get_encoder") for `model.get_encoder()`, a method call with no arguments; (`expr`, None) for
    anything else."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
        return expr.func.value, expr.func.attr.value
    return expr, None


def _classes_at(
    index: ModelIndex, written: str, returned: str | None, held: dict[str, tuple[str, ...]],
    arguments: dict[str, tuple[str, ...]],
) -> tuple[str, ...] | None:
    """The classes of the module at the path `written`, or of what its method `returned` hands back (none for a model
    of no readable class)."""
    classes = held_path_classes(index, written, arguments, held)
    return method_returned(index, classes, returned) if classes and returned else classes


def _reached(expr: cst.BaseExpression, held: dict[str, tuple[str, ...]], arguments: dict[str, tuple[str, ...]]) -> str | None:
    """`expr` written as a path from a held attribute (`self.model.enc`) or a given model (`model.enc`)."""
    path = access_path(expr)
    if path is None or "[]" in path.parts:
        return None
    if path.root == "self" and path.parts and path.parts[0] in held or path.root in arguments:
        return ".".join((path.root, *path.parts))
    return None


def _holder_calls(text: str, in_class: bool) -> list[str]:
    """Text pre-filter of `_held_calls`: the names of methods called on a path from one of the function's
    arguments (`model.blk.logits(`) or, in a class, from `self` (`self.unet.sample(`), or on a local bound from
    one or a loop's variable over one (`enc = model.enc`, `for blk in self.model.blocks:`)."""
    header = _HEADER.search(text)
    names = {n for n in _PARAM.findall(header.group(1))} - {"self", "cls"} if header else set()
    roots = names | {"self"} if in_class else names
    if roots:
        bound = _BOUND_FROM.findall(text)
        names |= {a or b for a, b, root in bound if root in roots} - {"self", "cls"}
    found = _SELF_CALL.findall(text) if in_class else []
    if names:
        found += [method for root, method in _PATH_CALL.findall(text) if root in names]
    return found


# `for blk in model.blocks:`, `enc = self.enc`: a local bound from a path (the loop's variable or the local, the root).
_BOUND_FROM = re.compile(
    r"^[ \t]+(?:for[ \t]+(?:\w+[ \t]*,[ \t]*)?(\w+)[ \t]+in[ \t]+(?:\w+\()?|(\w+)[ \t]*=[ \t]*)(\w+)\.\w", re.M
)
# `model.blk.logits(`: a method called on a path (its root, the method).
_PATH_CALL = re.compile(r"\b(\w+)(?:\.\w+)*\.(\w+)\s*\(")


def _roots(text: str, in_class: bool) -> set[str]:
    """The names a held model can be reached from in a function: its parameters and, in a class, `self`."""
    header = _HEADER.search(text)
    names = set(_PARAM.findall(header.group(1))) - {"self", "cls"} if header else set()
    return names | {"self"} if in_class else names


def _prefixes(path: str) -> Iterator[str]:
    """`a.b.c` -> `a.b`, `a`."""
    while "." in path:
        path = path.rsplit(".", 1)[0]
        yield path


@memoised
def _computes(index: ModelIndex, name: str) -> bool:
    """Text pre-filter: could a method `name` of some module class of the file, or what it calls on `self`, use
    that module's parameters: name one of its own (`self.null`), a child's (`self.fc.weight`), run its forward by
    name, or call a child's method that might?"""
    for cls in index.module_classes():
        if name not in cls.span.methods:
            continue
        own = registered_names(cls.text)
        # the method, what it reaches on `self`, and the properties of the class it reads (`self.codes`)
        for method in (*cls.reachable(name), *(cls.method(p) for p in properties_read(index, cls.name, name))):
            if method is None:
                continue
            text = method.text
            if index.mentions_param(text) or "self.forward(" in text or any(f"self.{p}" in text for p in own):
                return True
            if calls_child_method(index, text) or uses_self_whole(text):
                return True
    return False


def _candidate_methods(index: ModelIndex) -> set[str]:
    """Names of non-forward methods of module classes in the file (what a call could bypass with)."""
    names: set[str] = set()
    for cls in index.module_classes():
        for name in cls.span.methods:
            if name not in _SKIP and not name.startswith("__"):
                names.add(name)
    return names


@memoised
def _external_methods(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Names of the non-forward methods of classes of other files that `cls`'s `__init__` builds children of
    (`self.encoder = Encoder(...)`, read from the text: the class's members are parsed only if one is called)."""
    names: set[str] = set()
    text = "".join(method.text for method in cls.init_methods)
    for written in set(_BUILT_CHILD.findall(text)):
        if written in index.classes:
            continue
        external = index.external(index.qualify(written))
        if external is not None and external[1].is_module:
            names.update(n for n in external[1].method_names if not n.startswith("__"))
    return frozenset(names - _SKIP)


# `self.encoder = Encoder(...)`, `self.encoder = layers.Encoder(...)`: a child built from a named class.
_BUILT_CHILD = re.compile(r"self(?<!\wself)\.\w+\s*(?::[^=\n]*)?=\s*((?:[a-z_]\w*\.)*[A-Z]\w*)\(")
