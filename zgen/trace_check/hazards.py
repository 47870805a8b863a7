"""A partitioned parameter used where nothing gathers it: which rule that is, and which statement did it.

Called for each use `AccessWatch` reports; nothing happens when the
parameter is gathered (`Partitions.gathered`, and during the build
`zero_init.gathered_in_build`). Otherwise, from the Python stack:

* during the build, a module called while an `__init__` runs is a forward in
  `__init__` (ZG110, at that call);
* a plain read with the owner's `forward` on the stack, entered without
  `__call__` (`child.forward(x)`, `self.forward` from `generate`, a bound
  `forward` handed to a callback): ZG302 at the call that bypassed the hooks;
* a plain read in another method of the owner called from outside while some
  forward runs: ZG303 at that call;
* a plain read while some other module's forward runs (a tied weight read
  through another module, a lambda, a helper): ZG301 at the read;
* otherwise, ZG1xx at the statement, by what the op does and where it
  happens: `copy.deepcopy` (ZG105), a parametrization (ZG104), `state_dict`
  or `load_state_dict` after the build (ZG108; loading during the build is a
  lost write, ZG101), `torch.nn.init` or a random fill (ZG103), another write
  (ZG101), a size query (ZG102), a read (ZG109). A gradient read by
  `clip_grad_norm_` is ZG107 whatever the parameter's size: ZeRO-3 keeps every
  gradient partitioned.

A statement that rewrites a parameter from its own values and leaves them
as they were (`p.data = F.pad(p.data, (0, n - m))` with `n == m`, a cast to
the dtype it has) loses nothing, whatever sizes it read to do so: its ZG1
finding is kept as a note (severity info). A write of equal values taken from
elsewhere (an EMA copy of a model it was copied from) is not such a rewrite.

A conversion of the whole module (`model.to(torch.bfloat16)`, `.half()`,
`.cpu()`, torch's `Module._apply`) is not a use: ZeRO-3 converts the
partitions. torch's own module classes that use another module's parameters in their
own methods (`nn.MultiheadAttention` initialising `out_proj.bias` in
`__init__` and passing `out_proj.weight` to a functional in `forward`,
`nn.TransformerEncoder` cloning the layer it is given) are left alone: that is
torch's code, not the user's to change, and DeepSpeed fetches those parameters for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import FrameType

import torch
from torch import nn

from zgen.plan.frames import is_user_file

from .access import Access
from .partitions import Partitions
from .sites import Site, caller_site, site_of, use_frame, user_frame
from .zero_init import gathered_in_build

__all__ = ["Hazard", "Hazards"]

_TORCH = os.path.dirname(torch.__file__) + os.sep
_PARAMETRIZE = ("parametrize.py", "weight_norm.py", "spectral_norm.py", "parametrizations.py")


@dataclass(frozen=True, slots=True)
class Hazard:
    """A finding before it is a `Finding`: the code, the statement, the fact and what to do."""

    code: str
    site: Site
    message: str
    help: str
    severity: str | None = None  # the rule's, unless set (a note: "info")


class Hazards:
    """Collects hazards of one check, once per (family, statement).

    `phase()` names what runs: `build`, `step`, or an entry. `build_call()`
    gives the site of the module call running during the build while an
    `__init__` runs (ZG110), or None.
    """

    def __init__(self, partitions: Partitions, phase: Callable[[], str],
                 build_call: Callable[[], Site | None] = lambda: None) -> None:
        self.partitions = partitions
        self.phase = phase
        self.build_call = build_call
        self.found: dict[tuple[str, str, int], Hazard] = {}  # (family, file, line)
        self._unnamed: list[tuple[tuple[str, str, int], torch.Tensor, str]] = []
        self._read: dict[tuple[str, int], set[int]] = {}  # statement -> partitioned parameters it read

    def add(self, hazard: Hazard, param: torch.Tensor | None = None) -> None:
        """Keep one hazard of a family at a statement (a loop, or one call doing several things): the first,
        unless a later one says more of what the statement does (it writes what it first sized)."""
        key = (hazard.code[:3], hazard.site.file, hazard.site.line)
        old = self.found.get(key)
        if old is None or _EFFECT.get(hazard.code, 99) < _EFFECT.get(old.code, 99):
            self.found[key] = hazard
            if param is not None and self.phase() == "build":
                self._unnamed.append((key, param, self.partitions.name(param)))

    def name_build_hazards(self) -> None:
        """Once the model is built, name the parameters of build hazards by their place in it (`embed.weight`
        rather than `Embedding.weight`)."""
        for key, param, provisional in self._unnamed:
            name = self.partitions.names.get(id(param))
            hazard = self.found.get(key)
            if name and hazard is not None:
                self.found[key] = replace(hazard, message=hazard.message.replace(f"`{provisional}`", f"`{name}`"))
        self._unnamed = []

    def access(self, kind: Access, param: torch.Tensor, op: str, frame: FrameType,
               new: torch.Tensor | None = None) -> None:
        """A use of a partitioned parameter at `frame` (the frame that called the op); `new`: what a write of
        the whole tensor puts there."""
        parts = self.partitions
        phase = self.phase()
        op = _user_op(frame, op)
        if kind is Access.GRAD:
            if phase != "build" and _within(frame, ("clip_grad.py",)) is not None:
                self._zg1("ZG107", param, op, frame, phase)
            return None
        if parts.gathered(param):
            return None
        owners = parts.owners(param)
        if _within(frame, (), ("_apply",)) is not None:
            return None  # `model.to(dtype)`, `.half()`, `.cpu()`: a conversion ZeRO-3 applies to the partitions
        if phase == "build":
            if gathered_in_build(frame, param):
                return None
            call = self.build_call()
            if call is not None:
                return self.add(Hazard("ZG110", call, _message("ZG110", parts, param, op), _HELP["ZG110"]), param)
        if _within(frame, _PARAMETRIZE) is None and _torch_module_code(frame, owners):
            return None
        code = _zg1_code(kind, frame, phase)
        if phase == "build" or code not in ("ZG109", "ZG102"):
            # a write, an initialisation, a copy: the same under any forward
            return self._zg1(code, param, op, frame, phase, kind, new)
        entered = _owner_method(frame, owners)
        if entered is not None:
            method, owner = entered
            site = caller_site(method)
            if site is not None:
                if method.f_code.co_name == "forward":
                    return self.add(Hazard("ZG302", site, _bypass_message(parts, owner, param),
                                           f"call the module itself (`{parts.module_name(owner)}(...)`), so its "
                                           "hooks gather its parameters"))
                if parts.running and code == "ZG109":
                    return self.add(Hazard("ZG303", site, _method_message(parts, owner, method, param),
                                           f"compute it in `{type(owner).__name__}.forward`, or register the "
                                           "parameter with `deepspeed.zero.register_external_parameter"
                                           f"({parts.module_name(parts.running[-1])}, <param>)` in `__init__`"))
        if parts.running and code == "ZG109":
            site = self._here(frame, param)
            if site is not None:
                running = parts.running[-1]
                return self.add(Hazard("ZG301", site, _external_message(parts, owners, running, param),
                                       f"call `{parts.module_name(owners[0]) if owners else 'the owner'}` instead, "
                                       "or register the parameter in `__init__` with `deepspeed.zero."
                                       f"register_external_parameter(self, <param>)` on `{type(running).__name__}`"))
        return self._zg1(code, param, op, frame, phase)

    def created_in_forward(self, param: torch.Tensor, frame: FrameType) -> None:
        """A parameter registered while a forward runs, after the model was partitioned (ZG106)."""
        f = user_frame(frame)
        site = None if f is None else site_of(f.f_code.co_filename, f.f_lineno)
        if site is None or not self.partitions.running:
            return
        running = self.partitions.running[-1]
        self.add(Hazard("ZG106", site,
                        f"a parameter of shape {tuple(param.shape)} is created while "
                        f"`{self.partitions.module_name(running)}` runs its forward; ZeRO-3 partitioned the model "
                        "before and neither partitions nor gathers it", _HELP["ZG106"]))

    def _zg1(self, code: str, param: torch.Tensor, op: str, frame: FrameType, phase: str,
             kind: Access | None = None, new: torch.Tensor | None = None) -> None:
        site = self._here(frame, param)
        if site is None:
            return
        statement = (site.file, site.line)
        if kind is Access.READ:
            self._read.setdefault(statement, set()).add(id(param))
        self.add(Hazard(code, site, _message(code, self.partitions, param, op, phase), _HELP[code]), param)
        if new is not None and id(param) in self._read.get(statement, ()) and _unchanged(param, new):
            key = ("ZG1", site.file, site.line)
            hazard = self.found[key]
            if hazard.severity is None:
                self.found[key] = replace(hazard, severity="info", message=hazard.message + (
                    f"; here the statement only rewrites `{self.partitions.name(param)}` from its own values, "
                    "unchanged, so nothing is lost in this run"))

    def _here(self, frame: FrameType | None, param: torch.Tensor) -> Site | None:
        """The statement of a use of `param` (`sites.use_frame`: out of helpers of other packages handed it)."""
        parts = self.partitions

        def handed(value: object) -> bool:
            return isinstance(value, torch.Tensor) and parts.param_of(value) is param

        f = use_frame(frame, handed)
        return None if f is None else site_of(f.f_code.co_filename, f.f_lineno)


def _unchanged(param: torch.Tensor, new: torch.Tensor) -> bool:
    """Whether writing `new` over `param` leaves its values as they are (real tensors of one shape only)."""
    try:
        return (isinstance(new, torch.Tensor) and new.shape == param.shape and new.dtype == param.dtype
                and not new.is_meta and not param.is_meta and bool(torch.equal(new.detach(), param.detach())))
    except (RuntimeError, TypeError):
        return False


def _user_op(frame: FrameType | None, op: str) -> str:
    """The op as the user's statement called it: the outermost public torch function between the statement and
    the op (`kaiming_normal_`, not the `shape` it reads first; `state_dict`), else the op itself."""
    name = op
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        code = frame.f_code
        if code.co_filename.startswith(_TORCH) and not code.co_name.startswith(("_", "<")) \
                and code.co_name != "forward":
            name = code.co_name
        frame = frame.f_back
    return name


def _within(frame: FrameType | None, files: tuple[str, ...], names: tuple[str, ...] = ()) -> FrameType | None:
    """The innermost torch frame below the user's code in one of `files` or named one of `names`."""
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH):
        code = frame.f_code
        if os.path.basename(code.co_filename) in files or code.co_name in names:
            return frame
        frame = frame.f_back
    return None


def _zg1_code(kind: Access, frame: FrameType, phase: str) -> str:
    if _within(frame, ("copy.py",), ("__deepcopy__",)) is not None or _deepcopy_on_stack(frame):
        return "ZG105"
    if _within(frame, _PARAMETRIZE) is not None:
        return "ZG104"
    if _within(frame, (), ("load_state_dict", "_load_from_state_dict")) is not None:
        return "ZG101" if phase == "build" else "ZG108"  # loaded into placeholders: lost
    if phase != "build" and _within(frame, (), ("state_dict", "_save_to_state_dict")) is not None:
        return "ZG108"
    if kind is Access.INIT or _within(frame, ("init.py",)) is not None:
        return "ZG103"
    return {Access.WRITE: "ZG101", Access.SIZE: "ZG102"}.get(kind, "ZG109")


def _deepcopy_on_stack(frame: FrameType | None) -> bool:
    """`copy.deepcopy` between the op and the user's statement (the standard library's frames sit there)."""
    while frame is not None:
        code = frame.f_code
        if code.co_name in ("deepcopy", "__deepcopy__", "_reconstruct", "_deepcopy_dict"):
            return True
        if not code.co_filename.startswith(_TORCH) and os.path.basename(code.co_filename) != "copy.py":
            return False
        frame = frame.f_back
    return False


def _owner_method(frame: FrameType | None, owners: list[nn.Module]) -> tuple[FrameType, nn.Module] | None:
    """The method of an owner (`self` is it) on the stack that the use happens in, and that owner: its innermost
    `forward` (entered without the hooks, or its owner would be gathered), else its outermost method."""
    found = None
    while frame is not None:
        code = frame.f_code
        if code.co_argcount >= 1 and code.co_varnames[0] == "self":
            obj = frame.f_locals.get("self")
            for o in owners:
                if obj is o:
                    if code.co_name == "forward":
                        return frame, o
                    found = (frame, o)
        frame = frame.f_back
    return found


def _torch_module_code(frame: FrameType | None, owners: list[nn.Module]) -> bool:
    """Whether the use happens in a method of one of torch's own module classes on another module than the
    owner (`nn.MultiheadAttention` initialising or reading its `out_proj`, `nn.TransformerEncoder` cloning
    the layer it is given), before the user's code is reached: torch's code, not the user's to change."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        code = frame.f_code
        if code.co_argcount >= 1 and code.co_varnames[0] == "self":
            obj = frame.f_locals.get("self")
            if isinstance(obj, nn.Module):
                if any(obj is o for o in owners):
                    return False
                if type(obj).__module__.startswith("torch."):
                    return True
        frame = frame.f_back
    return False


def _message(code: str, parts: Partitions, param: torch.Tensor, op: str, phase: str = "build") -> str:
    name = parts.name(param)
    where = ("after its module's `__init__` returned (ZeRO-3's `zero.Init` partitions it there)"
             if phase == "build" else "where ZeRO-3 has partitioned it and no forward gathers it")
    if code == "ZG110":
        return (f"a forward runs during `__init__` and reads `{name}`, which `zero.Init` has already partitioned; "
                "it computes with an empty placeholder")
    return {
        "ZG101": f"`{name}` is written (`{op}`) {where}; the write lands in an empty placeholder and is lost",
        "ZG102": f"the size of `{name}` is read (`{op}`) {where}; a placeholder's size is 0",
        "ZG103": f"`{name}` is initialised (`{op}`) {where}; the initialisation is lost",
        "ZG104": f"`{name}` is re-parametrised {where}; the parametrization reads an empty placeholder",
        "ZG105": f"`copy.deepcopy` copies `{name}` {where}; the copy holds an empty placeholder",
        "ZG107": f"`clip_grad_norm_` reads the gradient of `{name}`, which ZeRO-3 keeps partitioned in the optimizer;"
                 " it clips nothing",
        "ZG108": f"the state dict reads `{name}` {where}; the saved or loaded tensor is an empty placeholder",
        "ZG109": f"the values of `{name}` are read (`{op}`) {where}; the read sees an empty placeholder",
    }[code]


def _external_message(parts: Partitions, owners: list[nn.Module], running: nn.Module, param: torch.Tensor) -> str:
    owner = parts.module_name(owners[0]) if owners else "its module"
    return (f"`{parts.name(param)}` is a parameter of `{owner}`, read while `{parts.module_name(running)}` runs its "
            f"forward and `{owner}` does not; ZeRO-3 has not gathered it and must fetch it on access, blocking and "
            "outside the prefetch schedule")


def _bypass_message(parts: Partitions, owner: nn.Module, param: torch.Tensor) -> str:
    name = parts.module_name(owner)
    return (f"`{name}.forward(...)` is called directly, skipping the hooks of `{name}`; ZeRO-3 does not gather its "
            f"parameters for this call (`{parts.name(param)}` is read partitioned) and must fetch them on access")


def _method_message(parts: Partitions, owner: nn.Module, method: FrameType, param: torch.Tensor) -> str:
    name = parts.module_name(owner)
    return (f"`{name}.{method.f_code.co_name}(...)` computes with `{parts.name(param)}`, a parameter of `{name}`, "
            f"outside `{name}`'s forward; ZeRO-3 has not gathered it and must fetch it on access")


# Of the ZG1 uses one statement makes, the one its finding names: what it does to the parameter (a copy, a
# re-parametrisation, a save or load, an initialisation, a write) before what it reads to do so.
_EFFECT = {"ZG105": 0, "ZG104": 1, "ZG108": 2, "ZG103": 3, "ZG101": 4, "ZG102": 5, "ZG109": 6}

_HELP = {
    "ZG101": "write it in the owning module's `__init__` before it returns, in a function passed to `model.apply`, "
             "or inside `deepspeed.zero.GatheredParameters([...], modifier_rank=0)`",
    "ZG102": "take the size from the config, or use `ds_shape`/`ds_numel` when present "
             "(`getattr(p, 'ds_numel', p.numel())`)",
    "ZG103": "initialise it in its own module's `__init__` or `reset_parameters`, in a function passed to "
             "`model.apply` (DeepSpeed gathers each module for it), or inside "
             "`deepspeed.zero.GatheredParameters([...], modifier_rank=0)`",
    "ZG104": "apply the parametrization in the module's own `__init__` before it returns, or inside "
             "`deepspeed.zero.GatheredParameters`",
    "ZG105": "construct a new module instead of copying a built one, or copy inside "
             "`deepspeed.zero.GatheredParameters`",
    "ZG106": "create every parameter and submodule in `__init__`, before the model is partitioned",
    "ZG107": "set `gradient_clipping` in the DeepSpeed config: the engine clips the partitioned gradients",
    "ZG108": "save with `engine.save_checkpoint(...)` (or `save_16bit_model` with "
             "`stage3_gather_16bit_weights_on_model_save`), or read inside `deepspeed.zero.GatheredParameters`",
    "ZG109": "read it inside `deepspeed.zero.GatheredParameters([...])`, or inside the forward of a module that "
             "holds it",
    "ZG110": "take the size from the config instead of a probe forward, or run the probe inside "
             "`deepspeed.zero.GatheredParameters(list(self.parameters()))`",
}
