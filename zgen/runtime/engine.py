"""The stage-3 engine: gathers units around their forward and backward, reduces gradients, steps.

Control flow for one micro-step (CUDA; on CPU the same calls run in order):

* forward: the root's pre-hook starts the pass. Each unit's pre-hook checks
  the plan's forward order, waits for the unit's gather (issued earlier on
  the gather stream), issues the plan's prefetches and installs the unit's
  parameter views into its modules. The post-hook puts the `Partitioned`
  stand-ins back, hooks the outputs for the backward and frees the unit
  unless the plan keeps it.
* backward: a unit's pre-backward (a grad hook on its outputs) waits for its
  gather and prefetches the next; its post-backward (`Views.backward`)
  folds the gradients into the fp32 shard on the reduce stream (a
  reduce-scatter when the world size is above 1) and frees the unit.
  From its pre-backward to the end of the backward a unit's weights stay
  installed, so activation checkpointing can recompute any part of it (or
  root code outside every unit); a reentrant checkpoint's inner backward
  delivers its gradients through those views (`Views`, partial).
* step: at the accumulation boundary the optimizer steps unit by unit, in
  forward order, on its own stream, and the next forward's first gather is
  issued straight away, so the forward of unit k can start while later
  units are still being updated. The 1/(world x accumulation) average, the
  clipping factor and the fp16 loss scale reach the optimizer kernel as one
  device-side divisor, so no pass over the gradients is spent on scaling and
  the host never waits for the norm (except for fp16 overflow checks).

Buffers that cross streams are kept alive by holding references until the
main stream has waited on the event that ends their use, never by
`record_stream`.
"""

from __future__ import annotations

import types
import weakref
from typing import Any, Callable

import torch
from torch import nn
from torch.autograd.graph import register_multi_grad_hook
from torch.utils._pytree import tree_flatten

from zgen.errors import ZgenError
from zgen.plan.schedule import Plan

from . import comm
from .config import RuntimeConfig
from .layout import FlatLayout
from .optim import build_optimizer
from .partitioned import Partitioned
from .plans import Binding, BoundUnit
from .unit import Gathered, UnitState, Views

__all__ = ["Engine"]

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class Engine:
    """A model trained with ZeRO stage 3; built by `zgen.runtime.initialize`."""

    def __init__(
        self,
        module: nn.Module,
        config: RuntimeConfig,
        plan: Plan,
        binding: Binding,
        info: comm.DistInfo,
        *,
        keep_low_precision: bool,
        split_master: bool = False,
        fill: Callable[[list[UnitState]], None],
    ) -> None:
        self.module = module
        self.config = config
        self.plan = plan
        self.rank, self.world_size, self.device = info.rank, info.world_size, info.device
        self.compute_dtype = _DTYPES[config.precision]
        self.reduce_dtype = _DTYPES[config.reduce_dtype]
        self.streams = comm.Streams(self.device)
        self.micro_steps = 0
        self.global_steps = 0
        self._binding = binding
        self._owner = binding.owner

        def state(b: BoundUnit, pinned: bool) -> UnitState:
            layout = FlatLayout.build([(n, tuple(p.shape)) for n, p in b.params], self.world_size)
            return UnitState(b, layout, self.rank, self.device, self.compute_dtype, keep_low_precision, pinned, split_master)

        companions: list[UnitState] = []

        def with_frozen(b: BoundUnit, pinned: bool) -> UnitState:
            frozen = [(n, p) for n, p in b.params if not p.requires_grad]
            b.params = [(n, p) for n, p in b.params if p.requires_grad]
            u = state(b, pinned)
            if frozen:
                label = f"{b.label} (frozen)"
                c = state(BoundUnit(label, b.module, None, frozen, [], b.reshard_after_forward), pinned)
                c.frozen, c.main, u.companion = True, u, c
                for n, _ in frozen:
                    self._owner[n] = label
                companions.append(c)
            return u

        self.units: list[UnitState] = [with_frozen(b, False) for b in binding.units]
        self.persistent: UnitState | None = None
        if binding.persistent is not None:
            self.persistent = with_frozen(binding.persistent, True)
        self._all = ([self.persistent] if self.persistent else []) + self.units + companions
        self._by_label = {u.label: u for u in self._all}
        self._by_module = {u.bound.module_name: u for u in self.units}
        self._slot_index = {n: (u, i) for u in self._all for i, n in enumerate(u.names)}

        fill(self._all)  # materialise the masters (from real weights or meta + init_fn)
        context = weakref.WeakMethod(self._context)
        self._placeholders = {n: Partitioned(n, self._owner[n], p, context) for u in self._all for n, p in u.bound.params}
        self._installed: dict[str, list[list[tuple[nn.Module, str, str]]]] = {}  # per unit, a stack of site lists
        self._bwd_views: dict[str, tuple[torch.Tensor, ...]] = {}  # per unit, for the current backward
        self._bwd_sites: list[tuple[nn.Module, str, str]] = []  # sites those views were installed at
        self._bwd_installed: set[str] = set()  # units whose sites are installed for this backward
        self._active: list[UnitState] = []
        self._reset_sites()
        for u in self._all:
            u.bound.params = [(n, None) for n, _ in u.bound.params]  # drop the last references to the unsharded weights
        self._step_order = self._optimizer_order()
        self.optimizer = build_optimizer(self._step_order, config)
        self._loss_scale = self._initial_loss_scale()
        self._good_steps = 0
        self._last_norm: torch.Tensor | None = None
        self._last_norm_event = None
        self._skipped = 0

        # forward / backward bookkeeping
        self._epoch = 0
        self._in_forward = False
        self._in_backward = False
        self._grad_on = False
        self._fwd_pos = 0
        self._bwd_pos = 0
        self._needs_finalize = False
        self._held: list[tuple[Any, tuple]] = []
        self._fwd_pre = self._prefetch_table(plan.forward_order, plan.forward_prefetch)
        self._bwd_pre = self._prefetch_table(plan.backward_order, plan.backward_prefetch)
        self._compiled: list[str] | None = None  # set by compile()
        self._hooks = []
        for u in self.units:
            mod = u.bound.module
            self._hooks.append(mod.register_forward_pre_hook(self._make_pre(u)))
            self._hooks.append(mod.register_forward_hook(self._make_post(u)))
        self._hooks.append(module.register_forward_pre_hook(self._begin_forward, prepend=True))
        self._hooks.append(module.register_forward_hook(self._end_forward))

    # ------------------------------------------------------------------ public API
    def __call__(self, *args, **kwargs):
        """Run the wrapped module's forward (same arguments, same return value)."""
        return self.module(*args, **kwargs)

    forward = __call__

    def train(self, mode: bool = True) -> Engine:
        self.module.train(mode)
        return self

    def eval(self) -> Engine:
        return self.train(False)

    def compile(self, backend: str | Callable = "inductor", **compile_kwargs: Any) -> list[str]:
        """Compile each unit's forward with `torch.compile`; returns the names of the compiled modules.

        Regional compilation, as DeepSpeed's `engine.compile()` is called: the
        engine's hooks (gathers, prefetches, gradient reduction) stay eager
        around each unit, and only the unit's own `forward` is compiled, so
        fusions (norms, rotary, activations) happen inside a unit while the
        schedule stays the plan's. A unit that contains another unit, and the
        root, stay eager: compiling them would trace the inner units' hooks.
        Units of the same class share one compiled function (and graph, unless
        dynamo specialises on something that differs between them, such as an
        int `layer_idx`; dynamo's recompile limit is raised to fit every unit).
        Compilation happens at the first forward; this call only wraps.
        """
        if self._compiled is not None:
            return self._compiled
        names = [u.bound.module_name for u in self.units]
        leaves = [
            u.bound.module for u in self.units
            if u.bound.module is not self.module
            and not any(o != u.bound.module_name and o.startswith(u.bound.module_name + ".") for o in names)
        ]
        # Dynamo specialises on a module's int attributes (a block's `layer_idx`), so same-class
        # units can each need their own graph; past its recompile limit (8) the rest would
        # silently run eager. Room for every unit, with and without gradients.
        cfg = torch._dynamo.config
        limit = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
        setattr(cfg, limit, max(getattr(cfg, limit), 2 * len(leaves) + 8))
        shared: dict[Callable, Callable] = {}  # one compiled function per forward implementation
        for mod in leaves:
            own = mod.__dict__.get("forward")
            if own is not None:  # a wrapper set on this module (a library hook): compiled as it is
                mod.forward = torch.compile(own, backend=backend, **compile_kwargs)
                continue
            fn = type(mod).forward
            if fn not in shared:
                shared[fn] = torch.compile(fn, backend=backend, **compile_kwargs)
            mod.forward = types.MethodType(shared[fn], mod)
        ids = {id(m) for m in leaves}
        self._compiled = [n for n, m in self.module.named_modules() if id(m) in ids]
        return self._compiled

    def is_accumulation_boundary(self) -> bool:
        """True when the current micro-step is the last of its accumulation window."""
        return (self.micro_steps + 1) % self.config.gradient_accumulation_steps == 0

    def backward(self, loss: Any) -> None:
        """Backpropagate `loss` (a tensor, or an output object with `.loss` / a `"loss"` key)."""
        loss = _loss_tensor(loss)
        if not loss.requires_grad:
            raise ZgenError(
                "engine.backward() got a loss that does not require grad",
                help="run the forward with gradients enabled (not under torch.no_grad())",
            )
        self._in_backward = True
        self._bwd_pos = 0
        try:
            if self.config.precision == "fp16":
                (loss.float() * self._loss_scale).backward()
            else:
                loss.backward()
        finally:
            self._in_backward = False
        self._finalize_backward()

    def step(self) -> None:
        """Count a micro-step; at the accumulation boundary, clip and apply the optimizer."""
        if not self.is_accumulation_boundary():
            self.micro_steps += 1
            return
        if self._needs_finalize and any(u.fired for u in self._all):
            self._finalize_backward()  # the caller ran loss.backward() itself
        stepped = [u for u in self._step_order if u.has_grad]
        if not stepped:
            raise ZgenError(
                "engine.step() at an accumulation boundary found no gradients",
                help="call engine.backward(loss) after each forward and before engine.step()",
            )
        s = self.streams
        s.wait(s.optim, s.record(s.main))
        with s.on(s.optim):
            divisor, skip = self._prepare_scale(stepped)
            if not skip:
                lr = self._lr_for_step(self.global_steps)
                for u in stepped:
                    self._step_unit(u, divisor, lr)
            for u in stepped:
                u.stale_grad = (u.grad, u.held_grads)
                u.grad = u.held_grads = u.norm_sq = None
                if u.update_event is None:
                    u.update_event = s.record(s.optim)
        if skip:
            self._skipped += 1
        else:
            self.global_steps += 1
        self.micro_steps += 1
        # The next forward's first gathers start now, each behind its own unit's update.
        for u in [self.persistent] + [self._by_module[m] for m in self.plan.forward_order[:1]]:
            if u is not None and not u.static and u.state is Gathered.FREE:
                self._issue_gather(u)

    def get_lr(self) -> list[float]:
        """The learning rate the next optimizer step will use (one entry, as DeepSpeed's list)."""
        return [self._lr_for_step(self.global_steps)]

    @property
    def last_grad_norm(self) -> float | None:
        """Global gradient norm (before clipping) of the last optimizer step; None before the first."""
        if self._last_norm is None:
            return None
        if self._last_norm_event is not None:
            self._last_norm_event.synchronize()
        return float(self._last_norm)

    @property
    def skipped_steps(self) -> int:
        """fp16 steps skipped because the gradients overflowed."""
        return self._skipped

    @property
    def loss_scale(self) -> float:
        return float(self._loss_scale)

    def save_checkpoint(self, path: str) -> None:
        """Write a sharded checkpoint (torch.distributed.checkpoint) to directory `path`; collective."""
        from .checkpoint import save

        save(self, path)

    def load_checkpoint(self, path: str) -> None:
        """Resume from `save_checkpoint`'s directory, written at any world size; collective."""
        from .checkpoint import load

        load(self, path)

    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """Consolidated fp32 weights (and persistent buffers) by name on rank 0, `{}` elsewhere; collective."""
        from .checkpoint import full_state_dict

        return full_state_dict(self)

    def save_full_state_dict(self, path: str) -> None:
        """Write `full_state_dict()` on rank 0: safetensors for a `.safetensors` path, else torch.save."""
        from .checkpoint import save_full

        save_full(self, path)

    # ------------------------------------------------------------------ optimizer
    def _optimizer_order(self) -> list[UnitState]:
        order, seen = [], set()
        if self.persistent is not None:
            order.append(self.persistent)
            seen.add(self.persistent.label)
        for m in self.plan.forward_order:
            u = self._by_module[m]
            if u.label not in seen:
                order.append(u)
                seen.add(u.label)
        order += [u for u in self.units if u.label not in seen]
        return order

    def _lr_for_step(self, step: int) -> float:
        # DeepSpeed steps its scheduler after the optimizer, so step k runs with the scheduler at k - 1.
        sched = self.config.scheduler
        return self.config.lr if sched is None else sched.lr(step - 1, self.config.lr)

    def _initial_loss_scale(self) -> float:
        ls = self.config.loss_scale
        if self.config.precision != "fp16":
            return 1.0
        return ls.static if ls.static > 0 else float(2**ls.initial_scale_power)

    def _prepare_scale(self, stepped: list[UnitState]) -> tuple[torch.Tensor, bool]:
        """The divisor folding averaging, clipping and loss scale into the update; and whether to skip (fp16 overflow)."""
        s = self.streams
        norms = [u.norm_sq for u in stepped if u.norm_sq is not None]
        total = torch.stack(norms).sum() if norms else torch.zeros((), device=self.device)
        if self.world_size > 1:
            comm.all_reduce_sum(total)
        denom = float(self.world_size * self.config.gradient_accumulation_steps) * self._loss_scale
        norm = total.sqrt() / denom
        self._last_norm = norm
        self._last_norm_event = s.record(s.optim)
        divisor = torch.full((), denom, dtype=torch.float32, device=self.device)
        if self.config.gradient_clipping > 0:
            coef = torch.clamp(self.config.gradient_clipping / (norm + 1e-6), max=1.0)
            divisor = divisor / coef
        if self.config.precision != "fp16":
            return divisor, False
        overflow = not bool(torch.isfinite(total))  # fp16 only: a host sync, as DeepSpeed does
        ls = self.config.loss_scale
        if ls.static > 0:
            return divisor, overflow
        if overflow:
            self._loss_scale = max(self._loss_scale / 2, ls.min_scale)
            self._good_steps = 0
        else:
            self._good_steps += 1
            if self._good_steps % ls.window == 0:
                self._loss_scale *= 2
        return divisor, overflow

    def _step_unit(self, u: UnitState, divisor: torch.Tensor, lr: float) -> None:
        self.optimizer.step_unit(u, u.grad if u.grad is not None else u.held_grads, divisor, lr)
        u.refresh_low_precision()
        if u.pinned and not u.static:
            u.state = Gathered.FREE  # contents are last step's weights; storage stays
        u.update_event = self.streams.record(self.streams.optim)

    # ------------------------------------------------------------------ gathering
    def _issue_gather(self, u: UnitState) -> None:
        if u.companion is not None and not u.companion.static and u.companion.state is Gathered.FREE:
            self._issue_gather(u.companion)
        s = self.streams
        with s.on(s.main):
            u.allocate()
        ready = s.record(s.main)
        with s.on(s.gather):
            s.wait(s.gather, ready)
            s.wait(s.gather, u.update_event)
            if self.world_size > 1:
                comm.all_gather(u.write_target, u.gather_input)
            else:
                u.cast_into_full()
            u.gather_event = s.record(s.gather)
        u.state = Gathered.PENDING

    def _ensure_ready(self, u: UnitState) -> None:
        if u.companion is not None:
            self._ensure_ready(u.companion)
        s = self.streams
        if u.static:
            if u.update_event is not None:
                s.wait(s.main, u.update_event)
                u.update_event, u.stale_grad = None, None
            return
        if u.state is Gathered.FREE:
            self._issue_gather(u)
        if u.state is Gathered.PENDING:
            s.wait(s.main, u.gather_event)
            u.state = Gathered.READY
            # The gather waited for this unit's optimizer update, so the main stream is now past it.
            u.update_event, u.stale_grad = None, None

    def _free(self, u: UnitState) -> None:
        if u.companion is not None:
            self._free(u.companion)
        if u.static or u.pinned or u.state is Gathered.FREE:
            return
        if u.state is Gathered.PENDING:
            self.streams.wait(self.streams.main, u.gather_event)
        u.release()

    def _prefetch(self, modules: tuple[str, ...]) -> None:
        for m in modules:
            u = self._by_module[m]
            if u.state is Gathered.FREE:
                self._issue_gather(u)

    @staticmethod
    def _prefetch_table(order: tuple[str, ...], given: tuple[tuple[str, ...], ...]) -> list[tuple[str, ...]]:
        if given:
            return list(given)
        return [(order[i + 1],) if i + 1 < len(order) and order[i + 1] != order[i] else () for i in range(len(order))]

    def _owners(self, u: UnitState) -> list[UnitState]:
        """The other units whose parameters `u` reads (a frozen parameter's unit, not its companion)."""
        out: list[UnitState] = []
        for n in u.bound.external:
            o = self._by_label[self._owner[n]]
            o = o.main or o
            if o is not u and o not in out:
                out.append(o)
        return out

    @staticmethod
    def _with_companions(states: list[UnitState]) -> list[UnitState]:
        return [x for s in states for x in ([s] if s.companion is None else [s, s.companion])]

    # ------------------------------------------------------------------ views
    def _views_for(self, u: UnitState) -> tuple[torch.Tensor, ...]:
        if u.views_epoch != self._epoch:
            u.views_epoch, u.fired, u.views = self._epoch, False, None
        if u.views is None:
            # A recomputation in backward (activation checkpointing) gets a fresh node: with
            # reentrant checkpointing its gradients arrive through it and are folded like any other.
            u.views = self._new_views(u, torch.is_grad_enabled())
        return u.views

    def _new_views(self, u: UnitState, grad: bool, partial: bool = False) -> tuple[torch.Tensor, ...]:
        """`u`'s per-parameter views: through a `Views` node when gradients are wanted (never for frozen ones)."""
        if not u.layout.slots:
            return ()
        if grad and not u.frozen:
            return Views.apply(self, u, u.anchor, partial)
        return u.make_views()

    def _fill_sites(self, u: UnitState, views: dict[str, tuple[torch.Tensor, ...]]) -> list[tuple[nn.Module, str, str]]:
        """Put the views (by unit label) at `u`'s sites that hold a placeholder; returns the sites filled."""
        done = []
        for mod, attr, name in u.bound.sites:
            if isinstance(mod._parameters[attr], Partitioned):
                owner, i = self._slot_index[name]
                mod._parameters[attr] = views[owner.label][i]
                done.append((mod, attr, name))
        return done

    def _restore(self, sites: list[tuple[nn.Module, str, str]]) -> None:
        for mod, attr, name in sites:
            mod._parameters[attr] = self._placeholders[name]

    def _install(self, u: UnitState) -> None:
        views = {o.label: self._views_for(o) for o in self._with_companions([u] + self._owners(u))}
        self._installed.setdefault(u.label, []).append(self._fill_sites(u, views))

    def _uninstall(self, u: UnitState) -> None:
        stack = self._installed.get(u.label)
        if stack:
            self._restore(stack.pop())

    def _reset_sites(self) -> None:
        for name, sites in self._binding.sites.items():
            for mod, attr in sites:
                mod._parameters[attr] = self._placeholders[name]
        self._installed.clear()
        self._bwd_sites.clear()
        self._bwd_views.clear()
        self._bwd_installed.clear()
        self._active.clear()
        for u in self._all:
            u.active = 0

    def _context(self) -> str:
        if self._active:
            return f"inside the forward of unit `{self._active[-1].label}`"
        if self._in_backward:
            return "during the backward pass"
        return "outside the engine's forward"

    # ------------------------------------------------------------------ hooks
    def _begin_forward(self, module, args) -> None:
        if self._in_backward:
            return
        self.streams.capture_main()
        if self._active or any(self._installed.values()) or self._bwd_sites:
            self._reset_sites()  # a previous forward or backward raised half-way
        self._epoch += 1
        self._in_forward = True
        self._fwd_pos = 0
        self._grad_on = torch.is_grad_enabled()
        if self.persistent is not None:
            self._ensure_ready(self.persistent)
            self._install(self.persistent)

    def _end_forward(self, module, args, output) -> None:
        if self._in_backward:
            return
        self._in_forward = False
        order = self.plan.forward_order
        if self._fwd_pos < len(order):
            raise ZgenError(
                f"the forward ran {self._fwd_pos} of the plan's {len(order)} units; the plan expected "
                f"`{order[self._fwd_pos] or '<root>'}` next",
                help="the model skipped a unit the plan schedules; regenerate the plan with `zgen plan`",
            )
        if self.persistent is not None:
            self._uninstall(self.persistent)
        for u in self._all:
            u.views = None  # autograd holds what backward needs; a recomputation makes new views
        s = self.streams
        for u in self._all:
            if u.update_event is not None and (u.static or u.state is Gathered.FREE):
                s.wait(s.main, u.update_event)  # a unit this forward did not gather: still release last step's grad
                u.update_event, u.stale_grad = None, None
        if not self._grad_on:
            for u in self.units:
                self._free(u)
        else:
            self._needs_finalize = True
            if self.persistent is not None:  # for recomputation in backward (root code outside every unit)
                _on_first_grad(output, lambda: self._install_backward(self.persistent))

    def _make_pre(self, u: UnitState):
        def hook(module, args):
            self._pre_forward(u)

        return hook

    def _make_post(self, u: UnitState):
        def hook(module, args, output):
            self._post_forward(u, output)

        return hook

    def _pre_forward(self, u: UnitState) -> None:
        if self._in_backward:  # recomputation (activation checkpointing): same views, no schedule
            self._ensure_ready(u)
            for o in self._owners(u):
                self._ensure_ready(o)
            # A unit recomputed whole (its forward ran under a checkpoint): fresh views, i.e. a
            # fresh node whose gradients, under a reentrant checkpoint, are this unit's backward.
            for x in self._with_companions([u] + self._owners(u)):
                x.views = None
            self._install_backward(self.persistent)
            self._install(u)
            self._active.append(u)
            return
        if not self._in_forward:
            raise ZgenError(
                f"module `{u.label}` was called outside the engine's forward",
                help="call the engine (or the whole model), not one of its units",
            )
        order = self.plan.forward_order
        pos = self._fwd_pos
        expected = order[pos] if pos < len(order) else None
        if u.bound.module_name != expected:
            what = f"`{expected or '<root>'}`" if expected is not None else "no further unit"
            raise ZgenError(
                f"the forward ran unit `{u.label}` where the plan expects {what} "
                f"(position {pos + 1} of {len(order)} in forward_order)",
                help="the model's execution order differs from the plan; regenerate it with `zgen plan`",
            )
        self._fwd_pos += 1
        u.active += 1
        self._ensure_ready(u)
        for o in self._owners(u):
            self._ensure_ready(o)
        self._prefetch(self._fwd_pre[pos])
        self._install(u)
        self._active.append(u)

    def _post_forward(self, u: UnitState, output) -> None:
        self._active.pop()
        self._uninstall(u)
        if self._in_backward:
            return
        u.active -= 1
        if self._grad_on:
            _on_first_grad(output, lambda u=u: self._pre_backward(u))
        if u.bound.reshard_after_forward and u.active == 0:
            self._free(u)
        for o in self._owners(u):
            if o.active == 0 and o.bound.reshard_after_forward:
                self._free(o)

    def _pre_backward(self, u: UnitState) -> None:
        order = self.plan.backward_order
        pos = None
        if self._bwd_pos < len(order) and order[self._bwd_pos] == u.bound.module_name:
            pos = self._bwd_pos
        elif u.state is not Gathered.READY:
            nxt = [i for i in range(self._bwd_pos, len(order)) if order[i] == u.bound.module_name]
            pos = nxt[0] if nxt else None
        if pos is not None:
            self._bwd_pos = pos + 1
        self._ensure_ready(u)
        for o in self._owners(u):
            self._ensure_ready(o)
        if pos is not None:
            self._prefetch(self._bwd_pre[pos])
        self._install_backward(self.persistent)
        self._install_backward(u)

    def _install_backward(self, u: UnitState | None) -> None:
        """Put `u`'s weights (and its externals) in place for the rest of the backward.

        Nothing reads them in a plain backward; activation checkpointing does, when it
        recomputes part of a unit, or code of the root outside every unit. The views are
        made with gradients enabled (partial nodes, see `Views`) so that a reentrant
        checkpoint's inner backward reaches the shards. Sites already holding a view keep it.
        """
        if u is None or u.label in self._bwd_installed:
            return
        self._bwd_installed.add(u.label)
        for owner in self._with_companions([u] + self._owners(u)):
            if owner.label not in self._bwd_views:
                with torch.enable_grad():
                    self._bwd_views[owner.label] = self._new_views(owner, True, partial=True)
        self._bwd_sites.extend(self._fill_sites(u, self._bwd_views))

    def _uninstall_backward(self) -> None:
        self._restore(self._bwd_sites)
        self._bwd_sites.clear()
        self._bwd_views.clear()
        self._bwd_installed.clear()

    def _fold_partial(self, u: UnitState, grads: tuple) -> None:
        """Gradients a reentrant checkpoint's inner backward delivered for part of `u`: fold, keep gathered."""
        if all(g is None for g in grads):
            return
        self._fold_after_held(u, grads, self.is_accumulation_boundary())

    def _fold_after_held(self, u: UnitState, grads: tuple, boundary: bool) -> None:
        """Fold `grads`, first folding gradients held for the optimizer (a second backward through `u`)."""
        if u.held_grads is not None:
            earlier, u.held_grads = u.held_grads, None
            self._fold_grads(u, earlier, boundary)
        self._fold_grads(u, grads, boundary)

    def _post_backward(self, u: UnitState, grads: tuple) -> None:
        """Fold one unit's parameter gradients into its fp32 shard (reduce-scattered across ranks)."""
        boundary = self.is_accumulation_boundary()
        if self._can_hold(u, grads, boundary):
            self._hold_grads(u, grads)
            return
        self._fold_after_held(u, grads, boundary)
        u.fired = True
        if not u.pinned:
            self._free(u)

    def _fold_grads(self, u: UnitState, grads: tuple, boundary: bool) -> None:
        s = self.streams
        layout = u.layout
        first = u.grad is None
        with s.on(s.main):
            if first:
                u.grad = torch.empty(layout.shard, dtype=torch.float32, device=self.device)
        ready = s.record(s.main)
        with s.on(s.reduce):
            s.wait(s.reduce, ready)
            if self.world_size == 1:
                _fold(u.grad_layout_views(u.grad), u.gap_views(u.grad), grads, first)
                if first and boundary:  # the fp32 shard holds exactly these values: read the smaller copies
                    u.norm_sq = _sq_norm([g for g in grads if g is not None], self.device)
            else:
                buf = torch.empty(layout.padded, dtype=self.reduce_dtype, device=self.device)
                _fold(u.grad_layout_views(buf), u.gap_views(buf), grads, True)
                if first and self.reduce_dtype == torch.float32:
                    comm.reduce_scatter(u.grad, buf)
                else:
                    part = torch.empty(layout.shard, dtype=self.reduce_dtype, device=self.device)
                    comm.reduce_scatter(part, buf)
                    u.grad.copy_(part) if first else u.grad.add_(part)
            if boundary and not (first and self.world_size == 1):
                u.norm_sq = torch.linalg.vector_norm(u.grad).square()
            done = s.record(s.reduce)
        # Keep the autograd gradients alive until the main stream has waited for their reader.
        self._release_held(keep_last=True)
        self._held.append((done, grads))

    def _can_hold(self, u: UnitState, grads: tuple, boundary: bool) -> bool:
        """World size 1, split master, one micro-step per update: the optimizer reads autograd's gradients."""
        return (
            u.split and self.world_size == 1 and boundary and u.grad is None and u.held_grads is None
            and self.config.gradient_accumulation_steps == 1 and all(g is not None for g in grads)
        )

    def _hold_grads(self, u: UnitState, grads: tuple) -> None:
        s = self.streams
        ready = s.record(s.main)
        with s.on(s.reduce):
            s.wait(s.reduce, ready)
            u.norm_sq = _sq_norm(list(grads), self.device)
            done = s.record(s.reduce)
        u.held_grads = grads  # alive until the step has read them (then kept as stale_grad)
        u.fired = True
        self._release_held(keep_last=True)
        self._held.append((done, ()))
        if not u.pinned:
            self._free(u)

    def _release_held(self, keep_last: bool) -> None:
        keep = self._held[-1:] if keep_last else []
        for ev, _ in self._held[: len(self._held) - len(keep)]:
            self.streams.wait(self.streams.main, ev)
        self._held = keep

    def _finalize_backward(self) -> None:
        """After loss.backward(): reduce units whose backward never ran (zero gradients), release buffers."""
        self._needs_finalize = False
        pending = [u for u in self._all if u.views_epoch == self._epoch and not u.fired and u.layout.slots and not u.frozen]
        if self._grad_on:
            rank_of = {m: i for i, m in enumerate(self.plan.backward_order)}
            pending.sort(key=lambda u: rank_of.get(u.bound.module_name, -1))
            for u in pending:
                self._post_backward(u, (None,) * len(u.layout.slots))
        self._release_held(keep_last=False)
        self._uninstall_backward()
        for u in self.units:
            self._free(u)


def _on_first_grad(output: Any, fn: Callable[[], None]) -> None:
    """Call `fn` when the backward first reaches any tensor of `output` (a structure, or an object with `.loss`)."""
    tensors = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    if not tensors and isinstance(getattr(output, "loss", None), torch.Tensor) and output.loss.requires_grad:
        tensors = [output.loss]
    if tensors:
        register_multi_grad_hook(tensors, lambda _grads: fn(), mode="any")


def _fold(dst: list[torch.Tensor], gaps: list[torch.Tensor], grads: tuple, first: bool) -> None:
    """dst[i] (+)= grads[i]; when `first`, also zero what has no gradient so the buffer is fully written."""
    have = [(d, g) for d, g in zip(dst, grads) if g is not None]
    if have:
        ds, gs = zip(*have)
        if first:
            torch._foreach_copy_(list(ds), list(gs))
        else:
            torch._foreach_add_(list(ds), list(gs))
    if first:
        zero = [d for d, g in zip(dst, grads) if g is None] + gaps
        if zero:
            torch._foreach_zero_(zero)


def _sq_norm(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Sum of squares of all elements, accumulated in fp32."""
    if not tensors:
        return torch.zeros((), device=device)
    return torch.stack(torch._foreach_norm(tensors, 2, dtype=torch.float32)).square().sum()


def _loss_tensor(loss: Any) -> torch.Tensor:
    if isinstance(loss, torch.Tensor):
        return loss
    if isinstance(loss, dict) and isinstance(loss.get("loss"), torch.Tensor):
        return loss["loss"]
    if isinstance(getattr(loss, "loss", None), torch.Tensor):
        return loss.loss
    raise ZgenError(
        f"engine.backward() needs the loss tensor (or an output with `.loss`), not {type(loss).__name__}",
    )

