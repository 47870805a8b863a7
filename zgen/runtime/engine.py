"""The stage-3 engine: the hooks that drive each unit's gathers, frees and gradient folding, and the step.

The work is split the way FSDP2 splits it: a `group.UnitGroup` per unit does
the gathers, frees and gradient folding (unshard / reshard / post-backward)
on its `unit.UnitState` shards, through the unit's `sharding` object (one
rank, flat, parameter offload or hpZ, chosen once in `initialize`);
`step.Stepper` runs the optimizer step (`scaler.StepScaler`: loss scale,
clipping, learning rate; `optim`: the update of each shard); `comm` holds
the stateless collectives and streams; `TrainingState` says which phase of
the step the hooks are in. The engine is the hooks: it decides *when*, by
the plan's order and prefetches, and installs the views into the modules.
Checkpoints (`checkpoint`) read and write what the engine hands them
(`checkpoint.Checkpointable`: the shards, the parameters' sites, the
optimizer and the counters).

Control flow for one micro-step (CUDA; on CPU the same calls run in order):

* forward: the root's pre-hook starts the pass. Each unit's pre-hook checks
  the plan's forward order, waits for the unit's gather (issued earlier on
  the gather stream), issues the plan's prefetches and installs the unit's
  parameter views into its modules. The post-hook puts the `Partitioned`
  stand-ins back, hooks the outputs for the backward and frees the unit
  unless the plan keeps it.
* backward: a unit's pre-backward (a grad hook on its outputs) waits for its
  gather and prefetches the next; its post-backward (`group.Views.backward`)
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
  Under optimizer offload without clipping and fp16, each unit's host update
  has already started in the last micro-step's backward, right after its
  gradient fold (`step.Stepper.start_early`); the step updates the rest and
  has the host run what is still queued in the next forward's order.

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
from zgen.schedule.plan import Plan
from zgen.zero_policy import optimizer_on_device

from . import checkpoint, comm, head_loss
from .config import RuntimeConfig
from .group import Gathered, GroupContext, UnitGroup
from .layout import FlatLayout
from .optim import OptimizerFactory
from .partitioned import Partitioned
from .plans import Binding, BoundUnit
from .recompute import Recomputed, recompute_module
from .scaler import StepScaler
from .sharding import Strategy
from .step import Stepper, step_order
from .training_state import TrainingState
from .unit import UnitState

__all__ = ["Engine"]

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

Site = tuple[nn.Module, str, str]  # (module, attribute, canonical parameter name)


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
        sharding: Strategy,
        keep_low_precision: bool,
        split_master: bool = False,
        fill: Callable[[list[UnitState]], None],
        optimizer: OptimizerFactory | None = None,
    ) -> None:
        checkpoint.require_numpy(info.world_size)
        self.module = module
        self.config = config
        self.plan = plan
        self.rank, self.world_size, self.device = info.rank, info.world_size, info.device
        self.compute_dtype = DTYPES[config.precision]
        self.streams = comm.Streams(self.device)
        self.sharding = sharding
        self._ctx = GroupContext(self.streams, self.device, config.gradient_accumulation_steps)
        self._binding = binding
        self._owner = binding.owner

        on_device = _optimizer_on_device(binding, plan.forward_order, config)

        def group(b: BoundUnit, pinned: bool, frozen: bool = False) -> UnitGroup:
            layout = FlatLayout.build([(n, tuple(p.shape)) for n, p in b.params], self.world_size)
            offload = config.offload_optimizer and b.label not in on_device
            # A unit whose optimizer stays on the GPU under partial offload keeps its compute-dtype copy whole
            # (as offloaded units do), so nothing but the optimizer's state moves between the two kinds.
            keep = keep_low_precision or (config.offload_optimizer and not offload)
            shards = UnitState(b, layout, self.rank, self.device, self.compute_dtype, keep, pinned,
                               split_master, offload, config.pin_memory, config.offload_param)
            return UnitGroup(shards, self._ctx, sharding.unit(shards), frozen)

        companions: list[UnitGroup] = []

        def with_frozen(b: BoundUnit, pinned: bool) -> UnitGroup:
            frozen = [(n, p) for n, p in b.params if not p.requires_grad]
            b.params = [(n, p) for n, p in b.params if p.requires_grad]
            g = group(b, pinned)
            if frozen:
                label = f"{b.label} (frozen)"
                c = group(BoundUnit(label, b.module, None, frozen, [], b.reshard_after_forward), pinned, frozen=True)
                c.main, g.companion = g, c
                for n, _ in frozen:
                    self._owner[n] = label
                companions.append(c)
            return g

        self.units: list[UnitGroup] = [with_frozen(b, False) for b in binding.units]
        self.persistent: UnitGroup | None = None
        if binding.persistent is not None:
            self.persistent = with_frozen(binding.persistent, True)
        self._all = ([self.persistent] if self.persistent else []) + self.units + companions
        self._by_label = {g.label: g for g in self._all}
        self._by_module = {g.bound.module_name: g for g in self.units}
        self._slot_index = {n: (g, i) for g in self._all for i, n in enumerate(g.shards.names)}

        sharding.finish([g.shards for g in self._all], self.device, self.compute_dtype)
        fill([g.shards for g in self._all])  # materialise the masters (from real weights or meta + init_fn)
        context = weakref.WeakMethod(self._context)
        self._placeholders = {n: Partitioned(n, self._owner[n], p, context) for g in self._all for n, p in g.bound.params}
        self._installed: dict[str, list[list[Site]]] = {}  # per unit, a stack of site lists
        self._bwd_views: dict[str, tuple[torch.Tensor, ...]] = {}  # per unit, for the current backward
        self._bwd_sites: list[Site] = []  # sites those views were installed at
        self._bwd_installed: set[str] = set()  # units whose sites are installed for this backward
        self._active: list[UnitGroup] = []  # units whose forward is running, innermost last
        self._reset_sites()
        for g in self._all:
            g.bound.params = [(n, None) for n, _ in g.bound.params]  # drop the last references to the unsharded weights
        self._stepper = Stepper(step_order(self.persistent, self.units, plan.forward_order), config,
                                self.world_size, self.device, self._ctx, optimizer)

        self.training_state = TrainingState.IDLE
        self._epoch = 0  # forwards so far
        self._grad_epoch = 0  # the last forward that ran with gradients
        self._finalized_epoch = 0  # the last forward whose backward was finalised
        self._fwd_pos = 0
        self._bwd_pos = 0
        self._fwd_pre = self._prefetch_table(plan.forward_order, plan.forward_prefetch)
        self._bwd_pre = self._prefetch_table(plan.backward_order, plan.backward_prefetch)
        self._compiled: list[str] | None = None  # set by compile()
        self._hooks = []
        for g in self.units:
            mod = g.bound.module
            self._hooks.append(mod.register_forward_pre_hook(self._make_pre(g)))
            self._hooks.append(mod.register_forward_hook(self._make_post(g)))
        self._hooks.append(module.register_forward_pre_hook(self._begin_forward, prepend=True))
        self._hooks.append(module.register_forward_hook(self._end_forward))
        # The plan's memory choices, applied to the module instances (the model's code is unchanged).
        for g in self.units:
            if g.bound.recompute:
                recompute_module(g.bound.module)
        self.head_loss: head_loss.HeadLoss | None = None
        if plan.head_loss is not None:
            self.head_loss = head_loss.install(module.get_submodule(plan.head_loss))

    # ------------------------------------------------------------------ public API
    def __call__(self, *args, **kwargs):
        """Run the wrapped module's forward (same arguments, same return value)."""
        return self.module(*args, **kwargs)

    forward = __call__

    def train(self, mode: bool = True) -> Engine:
        """Set the module's training mode (as `nn.Module.train`)."""
        self.module.train(mode)
        return self

    def eval(self) -> Engine:
        """Set the module to evaluation mode."""
        return self.train(False)

    def compile(self, backend: str | Callable = "inductor", *, root: bool = True, **compile_kwargs: Any) -> list[str]:
        """Compile each unit's forward, and the root's own code, with `torch.compile`; returns the modules compiled.

        Regional compilation, as DeepSpeed's `engine.compile()` is called: the
        engine's hooks (gathers, prefetches, gradient reduction) stay eager
        around each unit, and only the unit's own `forward` is compiled, so
        fusions (norms, rotary, activations) happen inside a unit while the
        schedule stays the plan's. A unit that contains another unit stays
        eager. Units of the same class share one compiled function (and
        graph, unless dynamo specialises on something that differs between
        them, such as an int `layer_idx`; dynamo's recompile limit is raised
        to fit every unit).

        With `root` (the default) the root module's `forward` is compiled too:
        every call into a unit is a graph break (the engine's unit hooks are
        opaque to dynamo, see `_opaque`), so what gets compiled is the code
        around the units — typically the embedding, the final norm, the output
        head and the loss. That is where a causal LM spends its memory
        bandwidth: inductor fuses the fp32 upcast of the logits into the
        cross-entropy and its backward, so the fp32 logits, their log-softmax
        and its gradient (3 x 4 bytes x tokens x vocabulary) are never
        materialised. The root's name in the returned list is "".
        A unit the plan recomputes keeps its checkpoint eager around the compiled
        forward. With the plan's `head_loss` the root is not compiled: the fused
        projection and loss (`zgen.runtime.head_loss`) already do what compiling
        it would do for the loss, and its logits stand-in must stay out of dynamo.
        Compilation happens at the first forward; this call only wraps.
        """
        if self._compiled is not None:
            return self._compiled
        names = [g.bound.module_name for g in self.units]
        leaves = [
            g.bound.module for g in self.units
            if g.bound.module is not self.module
            and not any(o != g.bound.module_name and o.startswith(g.bound.module_name + ".") for o in names)
        ]
        # Dynamo specialises on a module's int attributes (a block's `layer_idx`), so same-class
        # units can each need their own graph; past its recompile limit (8) the rest would
        # silently run eager. Room for every unit, with and without gradients; the root's
        # resume functions (one per unit call it breaks at) need as many again.
        cfg = torch._dynamo.config
        limit = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
        setattr(cfg, limit, max(getattr(cfg, limit), 4 * len(self.units) + 8))
        shared: dict[Callable, Callable] = {}  # one compiled function per forward implementation
        targets = leaves + ([self.module] if root and self.head_loss is None else [])
        targets = [m for m in targets if not isinstance(m.__dict__.get("forward"), head_loss.HeadLoss)]

        def compiled(mod: nn.Module, own: Callable | None) -> Callable:
            if own is not None and getattr(own, "__func__", None) is not type(mod).forward:
                return torch.compile(own, backend=backend, **compile_kwargs)  # a wrapper of its own (a library hook)
            fn = type(mod).forward
            if fn not in shared:
                shared[fn] = torch.compile(fn, backend=backend, **compile_kwargs)
            return types.MethodType(shared[fn], mod)

        for mod in targets:
            own = mod.__dict__.get("forward")
            if isinstance(own, Recomputed):  # the checkpoint stays eager around the compiled forward
                own.inner = compiled(mod, own.inner)
            else:
                mod.forward = compiled(mod, own)
        ids = {id(m) for m in targets}
        self._compiled = [n for n, m in self.module.named_modules() if id(m) in ids]
        return self._compiled

    @property
    def micro_steps(self) -> int:
        """Micro-steps (`engine.step()` calls) so far."""
        return self._ctx.micro_steps

    @micro_steps.setter
    def micro_steps(self, value: int) -> None:
        self._ctx.micro_steps = value

    def is_accumulation_boundary(self) -> bool:
        """True when the current micro-step is the last of its accumulation window."""
        return self._ctx.is_boundary()

    def backward(self, loss: Any) -> None:
        """Backpropagate `loss` (a tensor, or an output object with `.loss` / a `"loss"` key)."""
        loss = _loss_tensor(loss)
        if not loss.requires_grad:
            raise ZgenError(
                "engine.backward() got a loss that does not require grad",
                help="run the forward with gradients enabled (not under torch.no_grad())",
            )
        self.training_state = TrainingState.BACKWARD
        self._bwd_pos = 0
        try:
            self._stepper.scaler.scale_loss(loss).backward()
        finally:
            self.training_state = TrainingState.IDLE
        self._finalize_backward()

    def step(self) -> None:
        """Count a micro-step; at the accumulation boundary, clip and apply the optimizer (`step.Stepper`)."""
        if not self.is_accumulation_boundary():
            self.micro_steps += 1
            return
        if self._grad_epoch > self._finalized_epoch and any(g.fired for g in self._all):
            self._finalize_backward()  # the caller ran loss.backward() itself
        self._stepper.step()
        self.micro_steps += 1
        # The next forward's first gathers start now, each behind its own unit's update.
        for g in [self.persistent] + [self._by_module[m] for m in self.plan.forward_order[:1]]:
            if g is not None and not g.static:
                g.prefetch()

    @property
    def optimizer(self):
        """The optimizer over the units' shards (`zgen.runtime.optim`, wrapped for optimizer offload)."""
        return self._stepper.optimizer

    @property
    def scaler(self) -> StepScaler:
        """Loss scale, clipping and learning rate."""
        return self._stepper.scaler

    @property
    def global_steps(self) -> int:
        """Optimizer steps taken (skipped fp16 steps not counted)."""
        return self._stepper.global_steps

    def get_lr(self) -> list[float]:
        """The learning rate the next optimizer step will use (one entry, as DeepSpeed's list)."""
        return self._stepper.lr()

    @property
    def last_grad_norm(self) -> float | None:
        """Global gradient norm (before clipping) of the last optimizer step; None before the first."""
        return self.scaler.last_norm

    @property
    def skipped_steps(self) -> int:
        """fp16 steps skipped because the gradients overflowed."""
        return self.scaler.skipped

    @property
    def loss_scale(self) -> float:
        """The current fp16 loss scale (1.0 without fp16)."""
        return float(self.scaler.loss_scale)

    # ------------------------------------------------------------------ checkpointing
    def save_checkpoint(self, path: str) -> None:
        """Write a sharded checkpoint (torch.distributed.checkpoint) to directory `path`; collective.

        The directory appears complete or not at all: it is written beside `path` and
        renamed into place once every rank has finished.
        """
        self.quiesce()
        checkpoint.save(self._checkpointable(), path)

    def load_checkpoint(self, path: str) -> None:
        """Resume from `save_checkpoint`'s directory, written at any world size; collective."""
        self.quiesce()
        checkpoint.load(self._checkpointable(), path)
        for g in self._all:
            g.invalidate()

    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """Consolidated fp32 weights (and persistent buffers) by name on rank 0, `{}` elsewhere; collective."""
        self.quiesce()
        return checkpoint.full_state_dict(self._checkpointable())

    def save_full_state_dict(self, path: str) -> None:
        """Write `full_state_dict()` on rank 0: safetensors for a `.safetensors` path, else torch.save."""
        self.quiesce()
        checkpoint.save_full(self._checkpointable(), path)

    def quiesce(self) -> None:
        """Finish all queued work and free every gathered unit, so that only the shards remain."""
        self._stepper.synchronize()
        self.streams.synchronize()
        for g in self._all:
            g.quiesce()

    def _checkpointable(self) -> checkpoint.Checkpointable:
        """What a checkpoint reads and writes: every unit's shards (persistent first, then the units, then
        frozen parts), where each parameter sits in the module, the optimizer and the counters."""
        return checkpoint.Checkpointable(
            rank=self.rank, world_size=self.world_size, device=self.device, module=self.module,
            shards=[g.shards for g in self._all], sites=self._binding.sites, optimizer=self.optimizer,
            counters=self._stepper.counters, load_counters=self._stepper.load_counters,
        )

    # ------------------------------------------------------------------ plan helpers
    def _prefetch(self, modules: tuple[str, ...]) -> None:
        for m in modules:
            self._by_module[m].prefetch()

    @staticmethod
    def _prefetch_table(order: tuple[str, ...], given: tuple[tuple[str, ...], ...]) -> list[tuple[str, ...]]:
        if given:
            return list(given)
        return [(order[i + 1],) if i + 1 < len(order) and order[i + 1] != order[i] else () for i in range(len(order))]

    def _owners(self, g: UnitGroup) -> list[UnitGroup]:
        """The other units whose parameters `g` reads (a frozen parameter's unit, not its companion)."""
        out: list[UnitGroup] = []
        for n in g.bound.external:
            o = self._by_label[self._owner[n]]
            o = o.main or o
            if o is not g and o not in out:
                out.append(o)
        return out

    def _ready(self, g: UnitGroup) -> None:
        """`g` and the units it reads, gathered and usable on the main stream."""
        g.wait_unsharded()
        for o in self._owners(g):
            o.wait_unsharded()

    @staticmethod
    def _with_companions(groups: list[UnitGroup]) -> list[UnitGroup]:
        return [x for g in groups for x in ([g] if g.companion is None else [g, g.companion])]

    # ------------------------------------------------------------------ installing views
    def _fill_sites(self, g: UnitGroup, views: dict[str, tuple[torch.Tensor, ...]]) -> list[Site]:
        """Put the views (by unit label) at `g`'s sites that hold a placeholder; returns the sites filled."""
        done = []
        for mod, attr, name in g.bound.sites:
            if isinstance(mod._parameters[attr], Partitioned):
                owner, i = self._slot_index[name]
                mod._parameters[attr] = views[owner.label][i]
                done.append((mod, attr, name))
        return done

    def _restore(self, sites: list[Site]) -> None:
        for mod, attr, name in sites:
            mod._parameters[attr] = self._placeholders[name]

    def _install(self, g: UnitGroup) -> None:
        grad = torch.is_grad_enabled()
        views = {o.label: o.views_for(self._epoch, grad) for o in self._with_companions([g] + self._owners(g))}
        self._installed.setdefault(g.label, []).append(self._fill_sites(g, views))

    def _uninstall(self, g: UnitGroup) -> None:
        stack = self._installed.get(g.label)
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
        for g in self._all:
            g.active = 0

    def _context(self) -> str:
        if self._active:
            return f"inside the forward of unit `{self._active[-1].label}`"
        if self.training_state is TrainingState.BACKWARD:
            return "during the backward pass"
        return "outside the engine's forward"

    # ------------------------------------------------------------------ hooks
    def _begin_forward(self, module, args) -> None:
        if self.training_state is TrainingState.BACKWARD:
            return
        self.streams.capture_main()
        if self._active or any(self._installed.values()) or self._bwd_sites:
            self._reset_sites()  # a previous forward or backward raised half-way
        self._epoch += 1
        grad = torch.is_grad_enabled()
        self.training_state = TrainingState.FORWARD if grad else TrainingState.FORWARD_NO_GRAD
        if grad:
            self._grad_epoch = self._epoch
        self._fwd_pos = 0
        if self.persistent is not None:
            self._ready(self.persistent)
            self._install(self.persistent)

    def _end_forward(self, module, args, output) -> None:
        if self.training_state is TrainingState.BACKWARD:
            return
        order = self.plan.forward_order
        grad = self.training_state is TrainingState.FORWARD
        self.training_state = TrainingState.PRE_BACKWARD if grad else TrainingState.IDLE
        if self._fwd_pos < len(order):
            raise ZgenError(
                f"the forward ran {self._fwd_pos} of the plan's {len(order)} units; the plan expected "
                f"`{order[self._fwd_pos] or '<root>'}` next",
                help="the model skipped a unit the plan schedules; regenerate the plan with `zgen plan`",
            )
        if self.persistent is not None:
            self._uninstall(self.persistent)
        for g in self._all:
            g.views = None  # autograd holds what backward needs; a recomputation makes new views
            g.settle_update()  # a unit this forward did not gather: still release last step's grad
        if not grad:
            for g in self.units:
                g.reshard()
        elif self.persistent is not None:  # for recomputation in backward (root code outside every unit)
            _on_first_grad(output, lambda: self._install_backward(self.persistent))

    def _make_pre(self, g: UnitGroup):
        def hook(module, args):
            self._pre_forward(g)

        return _opaque(hook)

    def _make_post(self, g: UnitGroup):
        def hook(module, args, output):
            self._post_forward(g, output)

        return _opaque(hook)

    def _pre_forward(self, g: UnitGroup) -> None:
        state = self.training_state
        if state is TrainingState.BACKWARD:  # recomputation (activation checkpointing): same views, no schedule
            self._ready(g)
            # A unit recomputed whole (its forward ran under a checkpoint): fresh views, i.e. a
            # fresh node whose gradients, under a reentrant checkpoint, are this unit's backward.
            for x in self._with_companions([g] + self._owners(g)):
                x.views = None
            self._install_backward(self.persistent)
            self._install(g)
            self._active.append(g)
            return
        if state is not TrainingState.FORWARD and state is not TrainingState.FORWARD_NO_GRAD:
            raise ZgenError(
                f"module `{g.label}` was called outside the engine's forward",
                help="call the engine (or the whole model), not one of its units",
            )
        order = self.plan.forward_order
        pos = self._fwd_pos
        expected = order[pos] if pos < len(order) else None
        if g.bound.module_name != expected:
            what = f"`{expected or '<root>'}`" if expected is not None else "no further unit"
            raise ZgenError(
                f"the forward ran unit `{g.label}` where the plan expects {what} "
                f"(position {pos + 1} of {len(order)} in forward_order)",
                help="the model's execution order differs from the plan; regenerate it with `zgen plan`",
            )
        self._fwd_pos += 1
        g.active += 1
        self._ready(g)
        self._prefetch(self._fwd_pre[pos])
        self._install(g)
        self._active.append(g)

    def _post_forward(self, g: UnitGroup, output) -> None:
        self._active.pop()
        self._uninstall(g)
        state = self.training_state
        if state is TrainingState.BACKWARD:
            return
        g.active -= 1
        grad = state is TrainingState.FORWARD
        if grad:
            _on_first_grad(output, lambda g=g: self._pre_backward(g))
        if g.bound.reshard_after_forward and g.active == 0:
            g.reshard(keep_secondary=grad)
        for o in self._owners(g):
            if o.active == 0 and o.bound.reshard_after_forward:
                o.reshard(keep_secondary=grad)

    def _pre_backward(self, g: UnitGroup) -> None:
        order = self.plan.backward_order
        pos = None
        if self._bwd_pos < len(order) and order[self._bwd_pos] == g.bound.module_name:
            pos = self._bwd_pos
        elif g.state is not Gathered.READY:
            nxt = [i for i in range(self._bwd_pos, len(order)) if order[i] == g.bound.module_name]
            pos = nxt[0] if nxt else None
        if pos is not None:
            self._bwd_pos = pos + 1
        self._ready(g)
        if pos is not None:
            self._prefetch(self._bwd_pre[pos])
        self._install_backward(self.persistent)
        self._install_backward(g)

    def _install_backward(self, g: UnitGroup | None) -> None:
        """Put `g`'s weights (and its externals) in place for the rest of the backward.

        Nothing reads them in a plain backward; activation checkpointing does, when it
        recomputes part of a unit, or code of the root outside every unit. The views are
        made with gradients enabled (partial nodes, see `group.Views`) so that a reentrant
        checkpoint's inner backward reaches the shards. Sites already holding a view keep it.
        """
        if g is None or g.label in self._bwd_installed:
            return
        self._bwd_installed.add(g.label)
        for owner in self._with_companions([g] + self._owners(g)):
            if owner.label not in self._bwd_views:
                with torch.enable_grad():
                    self._bwd_views[owner.label] = owner.new_views(True, partial=True)
        self._bwd_sites.extend(self._fill_sites(g, self._bwd_views))

    def _uninstall_backward(self) -> None:
        self._restore(self._bwd_sites)
        self._bwd_sites.clear()
        self._bwd_views.clear()
        self._bwd_installed.clear()

    def _finalize_backward(self) -> None:
        """After loss.backward(): reduce units whose backward never ran (zero gradients), release buffers."""
        self._finalized_epoch = self._epoch
        if self._grad_epoch == self._epoch:
            pending = [g for g in self._all if g.views_epoch == self._epoch and not g.fired and g.trainable]
            rank_of = {m: i for i, m in enumerate(self.plan.backward_order)}
            pending.sort(key=lambda g: rank_of.get(g.bound.module_name, -1))
            for g in pending:
                g.post_backward((None,) * len(g.layout.slots))
        self._ctx.release_held(keep_last=False)
        self._uninstall_backward()
        for g in self.units:
            g.reshard()
        if self.training_state is TrainingState.PRE_BACKWARD:
            self.training_state = TrainingState.IDLE


def _optimizer_on_device(binding: Binding, forward_order: list[str], config: RuntimeConfig) -> frozenset[str]:
    """Labels of the units whose optimizer stays on the GPU under `offload_optimizer.ratio` < 1 (see zero_policy)."""
    if not config.offload_optimizer or config.offload_ratio >= 1.0:
        return frozenset()
    units = step_order(binding.persistent, binding.units, forward_order, module=lambda b: b.module_name)
    return optimizer_on_device([(b.label, sum(p.numel() for _, p in b.params if p.requires_grad)) for b in units],
                               config.offload_ratio)


def _opaque(hook: Callable) -> Callable:
    """`hook`, run eagerly whenever dynamo meets it (a compiled root calling a unit).

    The unit hooks wait on streams, install views and mutate the engine's
    schedule; traced into a root's graph they would be replayed as guards and
    side effects. Disabled, dynamo breaks the root's graph at the unit's call
    and runs the call (hooks and the unit's own compiled forward) as it runs
    in eager mode.
    """
    return torch.compiler.disable(hook, recursive=True)


def _on_first_grad(output: Any, fn: Callable[[], None]) -> None:
    """Call `fn` when the backward first reaches any tensor of `output` (a structure, or an object with `.loss`)."""
    tensors = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    if not tensors and isinstance(getattr(output, "loss", None), torch.Tensor) and output.loss.requires_grad:
        tensors = [output.loss]
    if tensors:
        register_multi_grad_hook(tensors, lambda _grads: fn(), mode="any")


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
