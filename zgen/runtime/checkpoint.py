"""Sharded checkpoints through torch.distributed.checkpoint, and the consolidated state dict.

A checkpoint is keyed by parameter name, not by unit, so it survives a change
of world size and of plan. Each parameter is saved as a `DTensor` split on
dim 0 (torch.chunk's rule): `model.<name>` (fp32 master), one
`optim.<name>.<key>` per element-wise optimizer state (Adam's `exp_avg` and
`exp_avg_sq`, SGD's `momentum_buffer`, ...), a replicated `optim.<name>.<key>`
per scalar state (`step`), the kind of each key (`optim_kinds`) and the
engine's counters. At world size 1 plain tensors are saved, without copies.
DCP's metadata records global shapes, so `dcp_to_torch_save` turns a
checkpoint into an ordinary state dict.

Loading reads, one unit at a time, each parameter's full tensor on the host
and keeps this rank's slice of the flat layout, so memory peaks at one unit.
"""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch import nn

from zgen.errors import ZgenError

from . import comm
from .layout import dim0_chunk
from .unit import UnitState

__all__ = ["Checkpointable", "save", "load", "full_state_dict", "save_full", "require_numpy"]

_ADAM_STATES = ("exp_avg", "exp_avg_sq")  # the per-element states of checkpoints written before "kinds"
_COUNTERS = {"global_steps": 0, "micro_steps": 0, "skipped": 0, "loss_scale": 0.0, "good_steps": 0}


@dataclass(frozen=True, slots=True)
class Checkpointable:
    """What a checkpoint reads and writes, handed over by the engine (quiesced: only the shards hold weights)."""

    rank: int
    world_size: int
    device: torch.device
    module: nn.Module
    shards: list[UnitState]  # persistent pseudo-unit first, then the units, then frozen parts
    sites: dict[str, list[tuple[nn.Module, str]]]  # canonical parameter name -> every (module, attribute) holding it
    optimizer: Any  # `state(u)` -> {key: 1-D shard or 0-dim tensor}, `load_state(u, state or None)`
    counters: Callable[[], dict]  # step counters and scaler state, plain numbers
    load_counters: Callable[[dict], None]


def require_numpy(world_size: int) -> None:
    """Stop before training when a checkpoint could not be saved: DCP needs numpy above world size 1.

    torch.distributed's object collectives, which DCP uses to agree on the save plan,
    turn tensors into bytes through numpy; without it `save_checkpoint` would fail
    only after all the training steps.
    """
    if world_size <= 1:
        return
    try:
        torch.zeros(1).numpy()
    except (RuntimeError, ImportError):
        raise ZgenError(
            "zgen.runtime at world size above 1 needs numpy (torch.distributed.checkpoint uses it to save)",
            help="pip install 'zgen[train]' (or pip install numpy)",
        ) from None


def _dist_kwargs(fn) -> dict:
    if "no_dist" in inspect.signature(fn).parameters:
        return {"no_dist": not _distributed()}
    return {}


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def _dcp():
    """torch.distributed.checkpoint, imported when a checkpoint is written or read (about 1 s of every
    training process's start otherwise, most of which never checkpoints)."""
    import torch.distributed.checkpoint as dcp

    return dcp


def _barrier() -> None:
    if _distributed():
        dist.barrier()


def _full_flat(engine: Checkpointable, u: UnitState, shard: torch.Tensor) -> torch.Tensor:
    if engine.world_size == 1:
        return shard
    shard = shard.to(engine.device)  # an offloaded shard is gathered on the training device
    out = torch.empty(u.layout.padded, dtype=shard.dtype, device=shard.device)
    comm.all_gather(out, shard.contiguous())
    return out


_MESHES: dict[tuple[str, int], Any] = {}


def _mesh(engine: Checkpointable):
    key = (engine.device.type, engine.world_size)
    if key not in _MESHES:
        from torch.distributed.device_mesh import init_device_mesh

        _MESHES[key] = init_device_mesh(engine.device.type, (engine.world_size,))
    return _MESHES[key]


def _sharded(engine: Checkpointable, value: torch.Tensor):
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


def _kinds(state: dict[str, torch.Tensor]) -> dict[str, str]:
    """Each optimizer state entry: "elementwise" (a flat shard like the master) or "scalar" (0-dim)."""
    return {k: "scalar" if v.dim() == 0 else "elementwise" for k, v in state.items()}


def save(engine: Checkpointable, path: str) -> None:
    """Write the sharded checkpoint (collective; call on a quiesced engine).

    DCP writes into `<path>.partial`; once every rank is done, rank 0 renames it to
    `path` (replacing an older checkpoint there), so a crash never leaves a directory
    at `path` that looks complete.
    """
    final = Path(path)
    partial = final.with_name(final.name + ".partial")
    if engine.rank == 0 and partial.exists():
        shutil.rmtree(partial)
    _barrier()
    sd: dict = {}
    kinds: dict[str, str] = {}
    for u in engine.shards:
        state = engine.optimizer.state(u)
        kinds.update(_kinds(state))
        flats = {"model": _full_flat(engine, u, u.read_master())}
        for k, v in state.items():
            if v.dim() != 0:
                flats[k] = _full_flat(engine, u, v)
        for slot in u.layout.slots:
            for k, flat in flats.items():
                value = flat[slot.offset : slot.end].view(slot.shape)
                key = f"model.{slot.name}" if k == "model" else f"optim.{slot.name}.{k}"
                sd[key] = _sharded(engine, value)
            for k, v in state.items():
                if v.dim() == 0:
                    sd[f"optim.{slot.name}.{k}"] = v.detach().to("cpu", copy=True)
    sd["engine"] = engine.counters()
    if kinds:
        sd["optim_kinds"] = kinds
    dcp = _dcp()
    dcp.save(sd, checkpoint_id=str(partial), **_dist_kwargs(dcp.save))
    _barrier()
    if engine.rank == 0:
        old = final.with_name(final.name + ".old")
        if old.exists():  # left by a save that died between its two renames; `final` is the newer one
            shutil.rmtree(old)
        if final.exists():
            final.rename(old)
        partial.rename(final)
        if old.exists():
            shutil.rmtree(old)
    _barrier()


def load(engine: Checkpointable, path: str) -> None:
    """Restore weights, optimizer state and counters from `path` (any world size; collective)."""
    dcp = _dcp()
    try:
        meta = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
    except (OSError, ValueError) as e:
        raise ZgenError(f"{path}: not a zgen.runtime checkpoint ({e})") from None
    kw = _dist_kwargs(dcp.load)
    head: dict = {"engine": dict(_COUNTERS)}
    kind_keys = [k.split(".", 1)[1] for k in meta if k.startswith("optim_kinds.")]
    if kind_keys:
        head["optim_kinds"] = {k: "" for k in kind_keys}
    dcp.load(head, checkpoint_id=path, **kw)
    engine.load_counters(head["engine"])
    kinds = head.get("optim_kinds") or {**{k: "elementwise" for k in _ADAM_STATES}, "step": "scalar"}
    for u in engine.shards:
        names = [s.name for s in u.layout.slots]
        missing = [n for n in names if f"model.{n}" not in meta]
        if missing:
            raise ZgenError(
                f"{path}: the checkpoint has no weights for parameter `{missing[0]}`",
                help="it was saved from a different model; check the model factory and its arguments",
            )
        present = [k for k in kinds if names and all(f"optim.{n}.{k}" in meta for n in names)]
        sd = {}
        for s in u.layout.slots:
            sd[f"model.{s.name}"] = torch.empty(s.shape, dtype=torch.float32)
            for k in present:
                shape = () if kinds[k] == "scalar" else s.shape
                sd[f"optim.{s.name}.{k}"] = torch.empty(shape, dtype=meta[f"optim.{s.name}.{k}"].properties.dtype)
        dcp.load(sd, checkpoint_id=path, **kw)

        def shard(dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(u.layout.shard, dtype=dtype, device=engine.device)

        master = shard()
        _scatter_into(u, master, {s.name: sd[f"model.{s.name}"] for s in u.layout.slots})
        u.write_master(master)
        if not present:
            engine.optimizer.load_state(u, None)
            continue
        state = {}
        for k in present:
            if kinds[k] == "scalar":
                state[k] = sd[f"optim.{names[0]}.{k}"]
            else:
                state[k] = shard(sd[f"optim.{names[0]}.{k}"].dtype)
                _scatter_into(u, state[k], {s.name: sd[f"optim.{s.name}.{k}"] for s in u.layout.slots})
        engine.optimizer.load_state(u, state)


def _scatter_into(u: UnitState, shard: torch.Tensor, values: dict[str, torch.Tensor]) -> None:
    lo, _ = u.layout.shard_range(u.rank)
    for slot, a, b in u.layout.pieces(u.rank):
        src = values[slot.name].reshape(-1)[a - slot.offset : b - slot.offset]
        shard[a - lo : b - lo].copy_(src)


def _state_dict_names(engine: Checkpointable) -> list[tuple[str, str | None, torch.Tensor | None]]:
    """(key, canonical parameter name or None, buffer or None) in `model.state_dict()` order."""
    canonical = {}
    for name, sites in engine.sites.items():
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


def full_state_dict(engine: Checkpointable) -> dict[str, torch.Tensor]:
    """Consolidated fp32 parameters and persistent buffers on rank 0 (CPU tensors); `{}` elsewhere (quiesced engine)."""
    values: dict[str, torch.Tensor] = {}
    for u in engine.shards:
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


def save_full(engine: Checkpointable, path: str) -> None:
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
