"""Run the user's model once on the `meta` device and record what ZeRO-3 needs to know.

This is the one place before training where zgen imports and executes user
code (the static check never does). The model is built under
`torch.device("meta")`, so no memory is allocated and no arithmetic happens;
one forward and one backward on meta inputs still run every Python line of the
model, which is enough to record:

* the order in which modules start their forward, and the order in which
  their backward starts (the gradient of one of their outputs arrives);
* every parameter's shape, its canonical name and all its aliases (tied
  weights have several);
* every op that reads a parameter, with the stack of running modules, so the
  planner can tell when a unit reads a parameter another unit owns.

* the bytes autograd saves for backward during the forward (each storage
  once, parameters excluded): the memory model's activations for a model
  whose dimensions nothing states (no HF-style `model.config`). On meta,
  attention runs the math kernel, which saves more than flash attention keeps
  on a GPU, so this is an upper bound there.

Control flow that depends on tensor values (`.item()`, `if t.sum() > 0`,
`nonzero()`) cannot run on meta tensors. That is reported as a finding at the
user's file and line (`DataDependentTrace`), not as a crash: the same code makes
ranks diverge under ZeRO-3 when the values differ between ranks.
"""

from __future__ import annotations

import difflib
import importlib.util
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from zgen.errors import ZgenError
from zgen.findings import Finding, Severity
from zgen.plan.frames import user_site_stack as _user_site_stack
from zgen.plan.frames import user_site_tb as _user_site_tb
from zgen.plan.frames import where as _where
from zgen.trace_rule import TRACE_RULE
from zgen.runtime.meta_build import build_on_meta
from zgen.schedule.grouping import ParamInfo, param_infos

from .stand_ins import Decision, DecisionHazard, StandIns
from .target import Target, parse_target

__all__ = [
    "DATA_DEPENDENT_CODE",
    "Target",
    "parse_target",
    "load_callable",
    "ParamInfo",
    "ParamRead",
    "ExecutionTrace",
    "DataDependentTrace",
    "build_meta_model",
    "vocab_size",
    "synthetic_inputs",
    "inputs_batch",
    "call_arguments",
    "loss_of",
    "step_loss",
    "describe",
    "trace_model",
    "trace_notes",
    "swap_params",
]

# The rule code for "data-dependent control flow seen while tracing" (a ZG2xx: ranks may diverge).
DATA_DEPENDENT_CODE = TRACE_RULE.code

# Reads of a parameter's metadata, not of its values: they do not need the parameter gathered.
_METADATA_OPS = frozenset(
    {"__get__", "size", "dim", "numel", "stride", "element_size", "is_contiguous", "is_floating_point",
     "is_complex", "nelement", "ndimension", "data_ptr", "__len__", "__hash__", "__format__", "__repr__"}
)

# -- loading user code -----------------------------------------------------------------------

def _import_file(path: Path, option: str) -> ModuleType:
    """Import a Python file by path; its directory and the project are importable from it."""
    name = "zgen_user_" + "".join(c if c.isalnum() else "_" for c in path.stem) + f"_{abs(hash(str(path))) % 10**8}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ZgenError(f"{option}: cannot import `{path}`")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name while it executes
    added = str(path.parent)
    sys.path.insert(0, added)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:  # the file's own line, not the import machinery's frame
        del sys.modules[name]
        where = f"{e.filename or path}:{e.lineno or 1}" + (f":{e.offset}" if e.offset else "")
        raise ZgenError(
            f"{option}: `{path}` is not valid Python: {type(e).__name__}: {e.msg} (at {where})",
            help="fix the syntax error above; zgen imports the file as `python path/to/file.py` would",
        ) from None
    except Exception as e:
        del sys.modules[name]
        raise ZgenError(
            f"{option}: importing `{path}` raised {type(e).__name__}: {e}{_where(e.__traceback__)}",
            help="fix the error above; zgen imports the file as `python path/to/file.py` would",
        ) from None
    finally:
        if added in sys.path:
            sys.path.remove(added)
    return module


def load_callable(target: Target, root: Path) -> Callable[..., Any]:
    """Import `target.path` (relative to `root`) and return its `target.function`."""
    path = Path(target.path)
    if not path.is_absolute():
        path = root / path
    if not path.is_file():
        raise ZgenError(
            f"{target.option} `{target}`: file `{target.path}` does not exist",
            help=f"paths are relative to the project root `{root}`",
        )
    module = _import_file(path.resolve(), target.option)
    obj: Any = module
    for part in target.function.split("."):
        if not hasattr(obj, part):
            names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
            close = difflib.get_close_matches(target.function, names, n=1)
            raise ZgenError(
                f"{target.option} `{target}`: `{target.path}` has no `{target.function}`",
                help=f"did you mean `{close[0]}`?" if close else "name a module-level function of that file",
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise ZgenError(f"{target.option} `{target}`: `{target.function}` is a {type(obj).__name__}, not a function")
    return obj


# -- the trace value -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class ParamRead:
    """A parameter read by an op while `stack` (outermost first) was running; `site` is user code."""

    param: str
    stack: tuple[str, ...]
    path: str
    line: int

    @property
    def module(self) -> str:
        """The innermost running module (the one whose forward performed the read)."""
        return self.stack[-1] if self.stack else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionTrace:
    """What one forward and backward of the model did, in plain data.

    `modules` lists every module by qualified name with its class (as
    `module.QualName`), in registration order. `forward_calls` is the order in which module forwards
    started (a module called twice appears twice); `backward_calls` the order
    in which their backward started. `reads` holds each distinct
    (parameter, running stack) pair once, in first-seen order.
    """

    params: tuple[ParamInfo, ...]
    modules: tuple[tuple[str, str], ...]
    forward_calls: tuple[str, ...]
    backward_calls: tuple[str, ...]
    reads: tuple[ParamRead, ...]
    unused: tuple[str, ...]  # parameters no op read in forward
    batch_size: int
    seq_len: int
    dtype: str
    vocab_size: int | None = None
    mode: str = "meta float32"  # what the trace ran on: `meta` or `fake` tensors, and the compute dtype
    decisions: tuple[str, ...] = ()  # value-dependent ops inside one module, where ranks cannot diverge
    activation_bytes: int = 0  # saved for backward by one forward of `batch_size` samples, in the traced dtype

    @property
    def total_params(self) -> int:
        return sum(p.numel for p in self.params)

    def param(self, name: str) -> ParamInfo:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def owners(self) -> dict[str, str]:
        """Map every alias of every parameter to its canonical name."""
        out = {}
        for p in self.params:
            out[p.name] = p.name
            for a in p.aliases:
                out[a] = p.name
        return out

    def external_reads(self) -> list[ParamRead]:
        """Reads of a parameter that the running module does not hold itself (none of its aliases).

        A tied weight called as a module (`self.lm_head(x)` with `lm_head.weight`
        tied to the embedding) is not external: the reading module holds it.
        """
        out = []
        for r in self.reads:
            info = self.param(r.param)
            holders = {n.rpartition(".")[0] for n in (info.name, *info.aliases)}
            if r.module not in holders:
                out.append(r)
        return out


class DataDependentTrace(Exception):
    """The model's forward or backward needed tensor values, which meta tensors do not have."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


# -- building and inputs ---------------------------------------------------------------------

def build_meta_model(factory: Callable[[], nn.Module], target: Target, dtype: torch.dtype | None = None,
                     lines: set[tuple[str, int]] | None = None) -> nn.Module:
    """Call the model factory with parameters on `meta` and real buffers; return the module (in `dtype` if given).

    The same build as the runtime's (`zgen.runtime.meta_build`), so the trace
    sees the buffers training will see. `lines` receives the model code's
    lines that ran while the factory did (`build_on_meta`).
    """
    try:
        model = build_on_meta(factory, lines=lines)
    except Exception as e:
        raise ZgenError(
            f"{target.option} `{target}`: the factory raised {type(e).__name__}: {e}{_where(e.__traceback__)}",
            help="the factory is called with no arguments, its parameters placed on the meta device; "
            "it must only build modules",
        ) from None
    if not isinstance(model, nn.Module):
        raise ZgenError(
            f"{target.option} `{target}`: the factory returned a {type(model).__name__}, not an `nn.Module`",
            help="return the model instance from the factory",
        )
    if dtype is not None:
        model = model.to(dtype)
    return model


def vocab_size(model: nn.Module) -> int | None:
    """The vocabulary of a language model: `num_embeddings` of its largest `nn.Embedding`, or None."""
    sizes = [m.num_embeddings for m in model.modules() if isinstance(m, nn.Embedding)]
    return max(sizes) if sizes else None


def synthetic_inputs(vocab: int, batch_size: int, seq_len: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Causal-LM inputs as zgen synthesizes them: `input_ids` and `labels` (the same ids)."""
    ids = torch.randint(0, vocab, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": ids}


def inputs_batch(fn: Callable[..., Any], target: Target, batch_size: int, seq_len: int,
                 generator: torch.Generator | None = None) -> tuple | dict:
    """Call the user's `inputs(batch_size, seq_len, generator)`; its micro batch (a tuple or a dict), checked.

    A function that raises or returns something else is a `ZgenError` naming the user's line.
    """
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    try:
        batch = fn(batch_size, seq_len, gen)
    except Exception as e:
        raise ZgenError(
            f"{target.option} `{target}`: calling it as fn(batch_size={batch_size}, seq_len={seq_len}, generator) "
            f"raised {type(e).__name__}: {e}{_where(e.__traceback__)}",
            help="the inputs function takes (batch_size, seq_len, generator) and returns a tuple or a dict",
        ) from None
    if isinstance(batch, (dict, tuple, list)):
        return batch
    raise ZgenError(
        f"{target.option} `{target}` returned a {type(batch).__name__}; expected a tuple of positional "
        "arguments or a dict of keyword arguments for the model's forward",
    )


def call_arguments(batch: tuple | list | dict) -> tuple[tuple, dict]:
    """A micro batch as the forward's (args, kwargs)."""
    return ((), dict(batch)) if isinstance(batch, dict) else (tuple(batch), {})


def _call_inputs(fn: Callable[..., Any], target: Target, batch_size: int, seq_len: int) -> tuple[tuple, dict]:
    return call_arguments(inputs_batch(fn, target, batch_size, seq_len))


def loss_of(out: Any) -> torch.Tensor | None:
    """The scalar loss of a forward's output: the tensor itself, or its `loss` (key or attribute)."""
    if isinstance(out, torch.Tensor):
        return out if out.numel() == 1 else None
    loss = out.get("loss") if isinstance(out, dict) else getattr(out, "loss", None)
    return loss if isinstance(loss, torch.Tensor) and loss.numel() == 1 else None


def step_loss(out: Any, loss_fn: tuple[Callable[..., Any], Target] | None, batch: tuple | dict,
              where: str) -> torch.Tensor:
    """The loss of one training step: `loss_fn(out, batch)` when given, else the forward's own; else a `ZgenError`."""
    if loss_fn is not None:
        out = loss_fn[0](out, batch)
    loss = loss_of(out)
    if loss is None and loss_fn is not None:
        raise ZgenError(f"{loss_fn[1].option} `{loss_fn[1]}` returned {describe(out)}, not a scalar loss",
                        help="return a scalar tensor: loss_fn(outputs, batch) -> loss")
    if loss is None:
        raise ZgenError(
            f"the model's forward on {where} returned {describe(out)}, not a loss",
            help="return the loss as a scalar tensor (or an object with `.loss`), pass --loss "
            "path/to/file.py:function computing it from (outputs, batch), or pass --inputs "
            "returning arguments that make the forward compute it (e.g. `labels`)",
        )
    return loss


# -- the tracer ------------------------------------------------------------------------------

class _Recorder(TorchFunctionMode):
    """Sees every torch op; records which parameters each one reads and which modules were running."""

    def __init__(self, names: dict[int, str], param_names: dict[int, str]) -> None:
        super().__init__()
        self.names = names
        self.param_names = param_names
        self.stack: list[str] = []
        self.forward_calls: list[str] = []
        self.backward_calls: list[str] = []
        self.reads: dict[tuple[str, tuple[str, ...]], tuple[str, int]] = {}
        self.in_backward = False
        self.activation_bytes = 0  # set after the forward: what autograd saved for backward

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") not in _METADATA_OPS:
            for leaf in pytree.tree_leaves((args, kwargs)):
                if isinstance(leaf, nn.Parameter):
                    name = self.param_names.get(id(leaf))
                    if name is not None:
                        key = (name, tuple(self.stack))
                        if key not in self.reads:
                            self.reads[key] = _user_site_stack(sys._getframe(1)) or ("<unknown>", 1)
        return func(*args, **kwargs)

    # module hooks
    def pre(self, module: nn.Module, args: Any) -> None:
        name = self.names.get(id(module))
        if name is None:
            return
        self.stack.append(name)
        if not self.in_backward:
            self.forward_calls.append(name)

    def post(self, module: nn.Module, args: Any, output: Any) -> None:
        name = self.names.get(id(module))
        if name is None:
            return
        if self.stack and self.stack[-1] == name:
            self.stack.pop()
        if self.in_backward or not torch.is_grad_enabled():
            return
        fired = [False]

        def on_grad(_grad: torch.Tensor) -> None:
            if not fired[0]:
                fired[0] = True
                self.backward_calls.append(name)

        for leaf in pytree.tree_leaves(output):
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                leaf.register_hook(on_grad)



def _rel(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def trace_model(
    model: nn.Module,
    *,
    root: Path,
    batch_size: int,
    seq_len: int,
    inputs: tuple[Callable[..., Any], Target] | None = None,
    dtype: torch.dtype | str | None = None,
    loss: tuple[Callable[..., Any], Target] | None = None,
) -> ExecutionTrace:
    """Run one forward and backward of a meta-device `model` and record what happened.

    `inputs` is the user's inputs function with its target (for messages);
    without it zgen synthesizes causal-LM `input_ids`/`labels` from the
    model's vocabulary. `dtype` is the compute dtype training will use (the
    config's precision, a dtype or its name): floating parameters are traced
    in it, as the runtime computes with them. `loss` is the user's
    `loss_fn(outputs, batch) -> scalar` with its target, for a forward that
    returns logits, features or a dataclass rather than a loss. Where `meta` cannot run the model (a meta
    kernel stricter than the real one, `torch.autocast` on a meta device) the
    trace is retried on fake CPU tensors, then in bf16; so is a value-dependent
    decision inside a module with submodules, which libraries that recognise
    fake tensors (transformers' `is_tracing`) skip as under `torch.compile`.
    Raises `DataDependentTrace` (carrying a ZG290 finding at the user's line)
    when tensor values can change which modules run, and `ZgenError` for
    everything else that stops the trace.
    """
    vocab = vocab_size(model)
    if inputs is not None:
        args, kwargs = _call_inputs(inputs[0], inputs[1], batch_size, seq_len)
        where = f"`{inputs[1]}`"
    else:
        if vocab is None:
            raise ZgenError(
                "cannot synthesize inputs: the model has no `nn.Embedding` to read a vocabulary size from",
                help="pass --inputs path/to/file.py:function returning one micro batch (tuple or dict)",
            )
        args, kwargs = (), synthetic_inputs(vocab, batch_size, seq_len, torch.Generator().manual_seed(0))
        where = "the synthesized `input_ids`/`labels`"

    params = param_infos(model)

    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    compute = dtype or next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    attempts = [(kind, compute) for kind in ("meta", "fake")]
    if compute != torch.bfloat16:
        attempts += [(kind, torch.bfloat16) for kind in ("meta", "fake")]
    failures: list[tuple[str, BaseException, str | None]] = []
    hazards: list[Decision] = []
    result = None
    model.train()
    for kind, dt in attempts:
        try:
            result = _run(model, kind, dt, args, kwargs, where, loss)
            break
        except DecisionHazard as e:
            # Libraries that know fake tensors (transformers' `is_tracing`) skip value-dependent fast
            # paths on them, as under torch.compile: the next attempt may get through.
            hazards.append(e.decision)
            continue
        except _Failed as f:
            e = f.error
            site = _user_site_tb(e.__traceback__)
            if _is_data_dependent(e) and site is not None:
                raise DataDependentTrace(_data_dependent_finding(e, site, root)) from None
            failures.append((f"{kind} {str(dt).removeprefix('torch.')}", e, f.op))
            if not isinstance(e, (RuntimeError, NotImplementedError)):
                break  # not a kernel that differs on meta: another attempt would fail the same way
    if result is None and hazards:
        raise DataDependentTrace(_decision_finding(hazards[0], root))
    if result is None:
        # The fake trace at the compute dtype is the closest to the run: its error is the one shown.
        shown = failures[1] if len(failures) > 1 else failures[0]
        label, e, op = shown
        also = [lbl for lbl, _, _ in failures if lbl != label]
        on = "the meta device" if label.startswith("meta") else "fake tensors"
        raise ZgenError(
            f"tracing the model on {on} raised {type(e).__name__}" + (f" in `{op}`" if op else "")
            + f": {_first_line(e)}{_where(e.__traceback__)}" + (f" (also failed: {', '.join(also)})" if also else ""),
            help="the model must run a forward and backward on meta or fake tensors; fix the error above "
            "or pass --inputs with arguments its forward accepts",
        ) from None
    rec, stand_ins = result

    read_names = {name for name, _ in rec.reads}
    reads = tuple(
        ParamRead(param=name, stack=stack, path=_rel(site[0], root), line=site[1])
        for (name, stack), site in rec.reads.items()
    )
    return ExecutionTrace(
        params=tuple(params),
        modules=tuple((n, f"{type(m).__module__}.{type(m).__qualname__}") for n, m in model.named_modules()),
        forward_calls=tuple(rec.forward_calls),
        backward_calls=tuple(rec.backward_calls),
        reads=reads,
        unused=tuple(p.name for p in params if p.name not in read_names),
        batch_size=batch_size,
        seq_len=seq_len,
        dtype=str(dt).removeprefix("torch."),
        vocab_size=vocab,
        mode=f"{kind} {str(dt).removeprefix('torch.')}",
        activation_bytes=rec.activation_bytes,
        decisions=_decision_lines(stand_ins.decisions, root),
    )


def _decision_lines(decisions: list[Decision], root: Path) -> tuple[str, ...]:
    """Each forward decision site once (a loop repeats them), with the module of its first occurrence."""
    lines: dict[tuple, str] = {}
    for d in decisions:
        if d.site is not None and not d.backward:
            where = d.stack[-1] if d.stack else ""
            lines.setdefault((d.op, d.site), f"{d.op} at {_rel(d.site[0], root)}:{d.site[1]} in `{where}`")
    return tuple(lines.values())


class _Failed(Exception):
    """One trace attempt failed with `error`; `op` is the last op that ran (the one that raised)."""

    def __init__(self, error: BaseException, op: str | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.op = op


def _run(model: nn.Module, kind: str, dtype: torch.dtype, args: tuple, kwargs: dict, where: str, loss_fn=None):
    """One forward and backward on `kind` ("meta" or "fake") tensors, parameters in `dtype`."""
    fake = None
    if kind == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake = FakeTensorMode(allow_non_fake_inputs=True)
    else:
        to_meta = lambda x: x.to("meta") if isinstance(x, torch.Tensor) else x  # noqa: E731
        args, kwargs = pytree.tree_map(to_meta, (args, kwargs))
    swapped = swap_params(model, dtype, fake)
    # Buffers are real (the constructor's values): a meta trace sees meta copies, a fake one fakes them itself.
    saved = [] if fake is not None else [
        (m, k, b) for m in model.modules() for k, b in m._buffers.items() if b is not None and not b.is_meta]
    for m, k, b in saved:
        m._buffers[k] = b.to("meta")
    names = {id(m): n for n, m in model.named_modules()}
    param_names = {id(p): n for n, p in model.named_parameters()}
    holders = {n for n, m in model.named_modules() if any(p is not None for p in m._parameters.values())}
    rec = _Recorder(names, param_names)
    kept = _SavedBytes({_storage_key(p) for p in model.parameters()})
    stand_ins = StandIns(
        stack=lambda: tuple(rec.stack),
        in_backward=lambda: rec.in_backward,
        holds_submodules=lambda name: any(h != name and (name == "" or h.startswith(name + ".")) for h in holders),
        site=_user_site_stack,
    )
    handles = [
        nn.modules.module.register_module_forward_pre_hook(rec.pre),
        nn.modules.module.register_module_forward_hook(rec.post),
    ]
    device = fake if fake is not None else torch.device("meta")
    # FakeTensorMode logs every kernel error it re-raises; the caller reports the one that matters.
    log = logging.getLogger("torch._subclasses.fake_tensor")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        with device, stand_ins:
            with rec, torch.autograd.graph.saved_tensors_hooks(kept.pack, kept.unpack):
                out = model(*args, **kwargs)
                loss = step_loss(out, loss_fn, kwargs if kwargs else args, where)
            rec.in_backward = True
            with rec:
                loss.backward()
    except (ZgenError, DecisionHazard):
        raise
    except Exception as e:
        raise _Failed(e, stand_ins.last_op) from None
    finally:
        log.setLevel(level)
        for h in handles:
            h.remove()
        for m, k, b in saved:
            m._buffers[k] = b
        for m, k, p in swapped:
            m._parameters[k] = p
    rec.activation_bytes = kept.total
    return rec, stand_ins


def _storage_key(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return id(t)


class _SavedBytes:
    """Bytes of the tensors autograd saves for backward during the forward, each storage once, parameters not."""

    def __init__(self, params: set[int]) -> None:
        self.params = params
        self.seen: set[int] = set()
        self.total = 0

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        if key not in self.params and key not in self.seen:
            self.seen.add(key)
            try:
                self.total += t.untyped_storage().nbytes()
            except (RuntimeError, NotImplementedError):
                self.total += t.numel() * t.element_size()
        return t

    @staticmethod
    def unpack(t: torch.Tensor) -> torch.Tensor:
        return t


def swap_params(model: nn.Module, dtype: torch.dtype, fake) -> list[tuple[nn.Module, str, nn.Parameter]]:
    """Put stand-ins for the parameters in place (tied ones stay tied); returns what to put back."""
    new: dict[int, nn.Parameter] = {}
    saved = []
    for m in model.modules():
        for k, p in list(m._parameters.items()):
            if p is None:
                continue
            dt = dtype if p.is_floating_point() else p.dtype
            if fake is None and p.is_meta and p.dtype == dt:
                continue
            if id(p) not in new:
                if fake is not None:
                    with fake:
                        t = torch.empty(p.shape, dtype=dt, device="cpu")
                else:
                    t = torch.empty(p.shape, dtype=dt, device="meta")
                new[id(p)] = nn.Parameter(t, requires_grad=p.requires_grad)
            saved.append((m, k, p))
            m._parameters[k] = new[id(p)]
    return saved


def trace_notes(trace: ExecutionTrace, dtype: str | None) -> list[str]:
    """What `zgen plan` says about how the trace ran: a fallback it took, value-dependent ops it let pass."""
    notes = []
    wanted = f"meta {dtype or 'float32'}"
    if trace.mode != wanted:
        notes.append(f"traced on {trace.mode} tensors (`{wanted}` could not run the model: a stricter meta kernel, "
                     "`torch.autocast` on a meta device, or a value-dependent path the library skips on fake "
                     "tensors); module order and shapes do not depend on it"
                     + ("" if trace.mode.endswith(dtype or "float32") else
                        f", but activation bytes recorded in {trace.mode.split()[-1]} may differ from a "
                        f"{dtype or 'float32'} run"))
    if trace.decisions:
        shown = "; ".join(trace.decisions[:3]) + (f" and {len(trace.decisions) - 3} more" if len(trace.decisions) > 3 else "")
        notes.append(f"value-dependent ops inside modules without submodules (every rank runs the same modules, "
                     f"not ZG290): {shown}")
    return notes


def describe(out: Any) -> str:
    """A forward's output in a few words, for messages."""
    if isinstance(out, torch.Tensor):
        return f"a tensor of shape {tuple(out.shape)}"
    return f"a `{type(out).__name__}`" + (" without a scalar `loss`" if hasattr(out, "loss") or isinstance(out, dict) else "")


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _is_data_dependent(e: BaseException) -> bool:
    """Whether an exception is torch refusing to read values of a meta tensor."""
    msg = str(e)
    return isinstance(e, (RuntimeError, NotImplementedError)) and (
        "meta tensor" in msg
        or "Meta tensor" in msg
        or "data-independent" in msg
        or ("Meta" in msg and "kernel" in msg)
    )


def _needs_values(e: BaseException) -> str:
    """The operation that needed tensor values, named stably (torch's own wording changes between releases)."""
    msg = str(e)
    m = re.search(r"for (torch\.\w+)\(\)", msg) or re.search(r"(aten::\w+)", msg) or re.search(r"(Tensor\.\w+)\(\)", msg)
    if m:
        return f"`{m.group(1)}()`" if not m.group(1).startswith("aten::") else f"`{m.group(1)}`"
    if "copy out of meta" in msg:
        return "reading the tensor's data"
    return f"`{type(e).__name__}`"


def _decision_finding(d: Decision, root: Path) -> Finding:
    """ZG290 at a value-dependent decision inside a module that may or may not run its submodules."""
    return _finding(f"`{d.op}`", d.site or ("<unknown>", 1), root)


def _data_dependent_finding(e: BaseException, site: tuple[str, int], root: Path) -> Finding:
    return _finding(_needs_values(e), site, root)


def _finding(needs: str, site: tuple[str, int], root: Path) -> Finding:
    path, line = site
    col, end = 1, 1
    try:
        text = Path(path).read_text(encoding="utf-8").splitlines()[line - 1]
        col = len(text) - len(text.lstrip()) + 1
        end = len(text.rstrip()) + 1
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    return Finding(
        code=DATA_DEPENDENT_CODE,
        message=f"control flow depends on tensor values: {needs} needs them (seen while tracing on "
        "the meta device); ranks whose data differ can run different modules",
        path=_rel(path, root),
        line=line,
        column=col,
        end_line=line,
        end_column=max(end, col + 1),
        severity=Severity.ERROR,
        help="make the module sequence independent of the data (e.g. run every expert on a possibly empty "
        "selection, or weight every expert's output by its gate)",
    )