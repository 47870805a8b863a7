"""Sharded checkpoints through torch.distributed.checkpoint, and the consolidated state dict.

A checkpoint is keyed by parameter name, not by unit, so it survives a change
of world size and of plan. Each parameter is saved as a `DTensor` split on
dim 0 (torch.chunk's rule): `model.<name>` (fp32 master), `optim.<name>.exp_avg`,
`optim.<name>.exp_avg_sq` and a replicated `optim.<name>.step`, plus the
engine's counters. At world size 1 plain tensors are saved, without copies.
DCP's metadata records global shapes, so `dcp_to_torch_save` turns a
checkpoint into an ordinary state dict.

Loading reads, one unit at a time, each parameter's full tensor on the host
and keeps this rank's slice of the flat layout, so memory peaks at one unit.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from zgen.errors import ZgenError

from . import comm
from .layout import dim0_chunk
from .unit import Gathered, UnitState

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["save", "load", "full_state_dict", "save_full"]

_STATES = ("exp_avg", "exp_avg_sq")
_COUNTERS = ("global_steps", "micro_steps", "skipped")


def _dist_kwargs(fn) -> dict:
    if "no_dist" in inspect.signature(fn).parameters:
        return {"no_dist": not (dist.is_available() and dist.is_initialized())}
    return {}


def _quiesce(engine: Engine) -> None:
    """Finish all queued work and drop gathered units so only shards remain."""
    engine.streams.synchronize()
    for u in engine._all:
        u.update_event, u.stale_grad = None, None
        if u.state is Gathered.PENDING:
            u.state = Gathered.READY
        engine._free(u)


def _full_flat(engine: Engine, u: UnitState, shard: torch.Tensor) -> torch.Tensor:
    if engine.world_size == 1:
        return shard
    out = torch.empty(u.layout.padded, dtype=shard.dtype, device=shard.device)
    comm.all_gather(out, shard.contiguous())
    return out


def _mesh(engine: Engine):
    mesh = getattr(engine, "_mesh", None)
    if mesh is None:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh(engine.device.type, (engine.world_size,))
        engine._mesh = mesh
    return mesh


def _sharded(engine: Engine, value: torch.Tensor):
    """This rank's dim-0 chunk of a full parameter, as a DTensor (plain tensor at world size 1)."""
    if engine.world_size == 1:
        return value
    if value.dim() == 0:
        return value.clone()
    from torch.distributed.tensor import DTensor, Shard

    lo, hi = dim0_chunk(value.shape[0], engine.world_size, engine.rank)
    local = value[lo:hi].clone()
    return DTensor.from_local(
        local, _mesh(engine), [Shard(0)], run_check=False, shape=value.shape, stride=value.stride()
    )


def save(engine: Engine, path: str) -> None:
    """Write the sharded checkpoint (collective)."""
    _quiesce(engine)
    sd: dict = {}
    for u in engine._all:
        state = engine.optimizer.state(u)
        flats = {"model": _full_flat(engine, u, u.read_master())}
        for k in _STATES:
            if k in state:
                flats[k] = _full_flat(engine, u, state[k])
        for slot in u.layout.slots:
            for k, flat in flats.items():
                value = flat[slot.offset : slot.end].view(slot.shape)
                key = f"model.{slot.name}" if k == "model" else f"optim.{slot.name}.{k}"
                sd[key] = _sharded(engine, value)
            if "step" in state:
                sd[f"optim.{slot.name}.step"] = state["step"].detach().to("cpu", copy=True)
    sd["engine"] = {
        "global_steps": engine.global_steps,
        "micro_steps": engine.micro_steps,
        "skipped": engine._skipped,
        "loss_scale": float(engine._loss_scale),
        "good_steps": engine._good_steps,
    }
    dcp.save(sd, checkpoint_id=path, **_dist_kwargs(dcp.save))


def load(engine: Engine, path: str) -> None:
    """Restore weights, optimizer state and counters from `path` (any world size; collective)."""
    _quiesce(engine)
    try:
        meta = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
    except (OSError, ValueError) as e:
        raise ZgenError(f"{path}: not a zgen.runtime checkpoint ({e})") from None
    kw = _dist_kwargs(dcp.load)
    counters = {"engine": {"global_steps": 0, "micro_steps": 0, "skipped": 0, "loss_scale": 0.0, "good_steps": 0}}
    dcp.load(counters, checkpoint_id=path, **kw)
    c = counters["engine"]
    engine.global_steps, engine.micro_steps, engine._skipped = c["global_steps"], c["micro_steps"], c["skipped"]
    engine._loss_scale, engine._good_steps = c["loss_scale"], c["good_steps"]
    for u in engine._all:
        names = [s.name for s in u.layout.slots]
        missing = [n for n in names if f"model.{n}" not in meta]
        if missing:
            raise ZgenError(
                f"{path}: the checkpoint has no weights for parameter `{missing[0]}`",
                help="it was saved from a different model; check the model factory and its arguments",
            )
        with_state = all(f"optim.{n}.exp_avg" in meta for n in names) and bool(names)
        sd = {}
        for s in u.layout.slots:
            sd[f"model.{s.name}"] = torch.empty(s.shape, dtype=torch.float32)
            if with_state:
                for k in _STATES:
                    sd[f"optim.{s.name}.{k}"] = torch.empty(s.shape, dtype=torch.float32)
                sd[f"optim.{s.name}.step"] = torch.zeros(())
        dcp.load(sd, checkpoint_id=path, **kw)
        def shard() -> torch.Tensor:
            return torch.zeros(u.layout.shard, dtype=torch.float32, device=engine.device)

        master = shard()
        _scatter_into(u, master, {s.name: sd[f"model.{s.name}"] for s in u.layout.slots})
        u.write_master(master)
        if with_state:
            moments = []
            for k in _STATES:
                moments.append(shard())
                _scatter_into(u, moments[-1], {s.name: sd[f"optim.{s.name}.{k}"] for s in u.layout.slots})
            engine.optimizer.set_state(u, *moments, float(sd[f"optim.{names[0]}.step"]))
        else:
            engine.optimizer.set_state(u, None, None, 0.0)
        if u.pinned:
            u.state = Gathered.FREE


def _scatter_into(u: UnitState, shard: torch.Tensor, values: dict[str, torch.Tensor]) -> None:
    lo, _ = u.layout.shard_range(u.rank)
    for slot, a, b in u.layout.pieces(u.rank):
        src = values[slot.name].reshape(-1)[a - slot.offset : b - slot.offset]
        shard[a - lo : b - lo].copy_(src)


def _state_dict_names(engine: Engine) -> list[tuple[str, str | None, torch.Tensor | None]]:
    """(key, canonical parameter name or None, buffer or None) in `model.state_dict()` order."""
    canonical = {}
    for name, sites in engine._binding.sites.items():
        for mod, attr in sites:
            canonical[(id(mod), attr)] = name
    out = []
    for prefix, mod in engine.module.named_modules(remove_duplicate=False):
        pre = f"{prefix}." if prefix else ""
        for attr, p in mod._parameters.items():
            if p is not None:
                out.append((pre + attr, canonical[(id(mod), attr)], None))
        for attr, b in mod._buffers.items():
            if b is not None and attr not in mod._non_persistent_buffers_set:
                out.append((pre + attr, None, b))
    return out


def full_state_dict(engine: Engine) -> dict[str, torch.Tensor]:
    """Consolidated fp32 parameters and persistent buffers on rank 0 (CPU tensors); `{}` elsewhere."""
    _quiesce(engine)
    values: dict[str, torch.Tensor] = {}
    for u in engine._all:
        flat = _full_flat(engine, u, u.read_master())
        if engine.rank == 0:
            for s in u.layout.slots:
                values[s.name] = flat[s.offset : s.end].view(s.shape).to("cpu", copy=True)
        del flat
    if engine.rank != 0:
        return {}
    return {
        key: values[name] if name is not None else buf.detach().to("cpu", copy=True)
        for key, name, buf in _state_dict_names(engine)
    }


def save_full(engine: Engine, path: str) -> None:
    """`full_state_dict()` written by rank 0 (safetensors for `*.safetensors`, else torch.save); collective."""
    sd = full_state_dict(engine)
    if engine.rank != 0:
        return
    if str(path).endswith(".safetensors"):
        try:
            from safetensors.torch import save_file
        except ImportError:
            raise ZgenError("saving `.safetensors` needs the safetensors package", help="pip install safetensors, or use a .pt path") from None
        seen: set[int] = set()
        unique = {}
        for k, v in sd.items():  # safetensors refuses tied tensors that share memory
            unique[k] = v.clone() if id(v) in seen else v
            seen.add(id(v))
        save_file(unique, str(path))
    else:
        torch.save(sd, path)
