"""One rank of a multi-process runtime test, launched the way torchrun launches (env://, gloo).

Usage: RANK=r WORLD_SIZE=w MASTER_ADDR=... MASTER_PORT=... python runtime_worker.py OUT_DIR [LOAD_CKPT]

Runs every scenario in one process group and has rank 0 write the results to
OUT_DIR/w{world}.pt; the test module compares them with the plain reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.distributed as dist

import runtime_toy as T
import zgen.runtime as zr

STEPS = 3
ACCUM = 2


def run(plan=None, precision="fp32", persistence=0, steps=STEPS, model=None, compiled=False, **kw):
    job = zr.init_distributed(device="cpu")
    engine = zr.initialize(model or T.make_model(), T.config(job.world_size, ACCUM, precision, persistence), plan=plan, **kw)
    if compiled:  # dynamo + AOT autograd around the engine's gathers and frees (no C++ compiler needed)
        torch._dynamo.reset()
        engine.compile(backend="aot_eager")
    losses = T.train(engine, steps, job.world_size, job.rank, ACCUM)
    return engine, losses


def fsdp2_bf16(world: int, rank: int) -> dict[str, torch.Tensor]:
    """The same training under FSDP2 (bf16 parameters, fp32 reduction): the bf16 oracle."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = T.make_model()
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=mp)
    fully_shard(model, mp_policy=mp, reshard_after_forward=False)
    opt = torch.optim.AdamW(model.parameters(), lr=T.LR, betas=T.BETAS, eps=1e-8, weight_decay=T.WD)
    for step in range(STEPS):
        for micro in range(ACCUM):
            (model(*T.micro_batch(step, micro, rank, world, ACCUM)) / ACCUM).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), T.CLIP)
        opt.step()
        opt.zero_grad()
    return {k: v.full_tensor().detach().clone() if hasattr(v, "full_tensor") else v for k, v in model.state_dict().items()}


def main() -> None:
    out = Path(sys.argv[1])
    load_from = sys.argv[2] if len(sys.argv) > 2 else None
    job = zr.init_distributed(device="cpu")
    world, rank = job.world_size, job.rank
    res: dict = {"world": world}

    for name, kwargs in {
        "default": {},
        "explicit": {"plan": T.explicit_plan()},
        "persistent": {"persistence": 20},
        "meta": {"model": T.Net, "init_fn": T.init_fn},
        "bf16": {"precision": "bf16", "split_master": False},
        "split": {"precision": "bf16"},  # the bf16 default
        "compiled": {"compiled": True},
        "compiled_explicit": {"compiled": True, "plan": T.explicit_plan()},
        "recompute_inside": {"model": T.make_model(model=T.CheckpointedNet("inside", reentrant=True))},
        "recompute_units": {"model": T.make_model(model=T.CheckpointedNet("units")), "plan": T.explicit_plan()},
        "frozen": {"model": T.freeze(T.make_model()), "persistence": 20},
        "frozen_explicit": {"model": T.freeze(T.make_model()), "plan": T.explicit_plan()},
    }.items():
        if name == "meta":
            torch.manual_seed(0)  # make_model's seed: the meta path must draw the same numbers
        engine, losses = run(**kwargs)
        full = engine.full_state_dict()
        if rank != 0:
            assert full == {}, "full_state_dict must be empty off rank 0"
        res[name] = {"state": full, "losses": losses, "grad_norm": engine.last_grad_norm}
    res["fsdp2_bf16"] = {"state": fsdp2_bf16(world, rank)}

    ckpt = out / f"ckpt_w{world}"
    engine, _ = run(steps=2)
    engine.save_checkpoint(str(ckpt))
    T.train(engine, 2, world, rank, ACCUM, start=2)
    res["continued"] = {"state": engine.full_state_dict(), "steps": engine.global_steps}
    engine, _ = run(precision="bf16", steps=1)  # split master: the checkpoint still holds fp32 values
    engine.save_checkpoint(str(out / f"split_w{world}"))
    res["split_saved"] = {"state": engine.full_state_dict()}
    if load_from:
        engine = zr.initialize(T.Net, T.config(world, ACCUM), init_fn=T.init_fn)
        engine.load_checkpoint(str(Path(load_from).parent / "split_w2"))
        res["split_loaded"] = {"state": engine.full_state_dict()}
        engine = zr.initialize(T.Net, T.config(world, ACCUM), init_fn=T.init_fn)
        engine.load_checkpoint(load_from)
        steps_at_load = engine.global_steps
        T.train(engine, 2, world, rank, ACCUM, start=2)
        res["resumed"] = {"state": engine.full_state_dict(), "steps_at_load": steps_at_load, "steps": engine.global_steps}

    if rank == 0:
        torch.save(res, out / f"w{world}.pt")
    dist.barrier()
    (out / f"done_w{world}_r{rank}").write_text("ok")  # every scenario ran and every assert held on this rank
    zr.shutdown()


if __name__ == "__main__":
    main()
