"""One rank of a multi-process runtime test, launched the way torchrun launches (env://, gloo).

Usage: RANK=r WORLD_SIZE=w MASTER_ADDR=... MASTER_PORT=... python runtime_worker.py OUT_DIR SUITE [LOAD_DIR]

SUITE is `main` (every scenario but the compiled ones, the checkpoints, and with
LOAD_DIR the resumes from the checkpoints another world size wrote there),
`compiled` (dynamo's scenarios, slow) or `hpz` (world size 4, hierarchical
partitioning in groups of 2, slow). All scenarios of a suite share one
process group; rank 0 writes the results to OUT_DIR/<suite>_w{world}.pt and the
test module compares them with the plain references.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

import runtime_toy as T
import zgen.runtime as zr

STEPS = 3
ACCUM = 2


def job_config(world: int, precision: str = "fp32", persistence: int = 0, offload: bool | str = False,
               client: bool = False, hpz: int = 1, accum: int = ACCUM, ratio: float = 1.0) -> dict:
    """The job's DeepSpeed config; `offload` True puts the optimizer in host memory (`ratio` of it), "param" the
    parameters too."""
    cfg = T.config(world, accum, precision, persistence)
    if offload:
        cfg["zero_optimization"]["offload_optimizer"] = {"device": "cpu", "pin_memory": True, "ratio": ratio}
    if offload == "param":
        cfg["zero_optimization"]["offload_param"] = {"device": "cpu", "pin_memory": True}
    if hpz > 1:
        cfg["zero_optimization"]["zero_hpz_partition_size"] = hpz
    if client:
        del cfg["optimizer"]
    return cfg


def run(plan=None, precision="fp32", persistence=0, steps=STEPS, model=None, compiled=False, offload=False,
        hpz=1, accum=ACCUM, clip=True, early=True, ratio=1.0, **kw):
    """`clip` False turns gradient clipping off; `early` False keeps offloaded updates for `engine.step()`."""
    job = zr.init_distributed(device="cpu")
    hpz = job.world_size if hpz == "world" else hpz
    cfg = job_config(job.world_size, precision, persistence, offload, "optimizer" in kw, hpz, accum, ratio)
    if not clip:
        cfg["gradient_clipping"] = 0.0
    engine = zr.initialize(model or T.make_model(), cfg, plan=plan, **kw)
    engine.early_starts = 0
    start = engine._stepper.start_early

    def counted(g):
        engine.early_starts += 1
        start(g)

    engine._stepper.start_early = counted
    if not early:
        engine._stepper._early_ok = False
    if compiled:  # dynamo + AOT autograd around the engine's gathers and frees (no C++ compiler needed)
        torch._dynamo.reset()
        engine.compile(backend="aot_eager")
    losses = T.train(engine, steps, job.world_size, job.rank, accum)
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


MAIN = {
    "default": {},
    "explicit": {"plan": T.explicit_plan()},
    "persistent": {"persistence": 20},
    "meta": {"model": T.Net, "init_fn": T.init_fn},
    "bf16": {"precision": "bf16", "split_master": False},
    "split": {"precision": "bf16"},  # the bf16 default
    "recompute_inside": {"model": T.make_model(model=lambda: T.CheckpointedNet("inside", reentrant=True))},
    "recompute_units": {"model": T.make_model(model=lambda: T.CheckpointedNet("units")), "plan": T.explicit_plan()},
    "frozen": {"model": T.freeze(T.make_model()), "persistence": 20},
    "frozen_explicit": {"model": T.freeze(T.make_model()), "plan": T.explicit_plan()},
    "offload": {"offload": True},
    "offload_explicit": {"offload": True, "plan": T.explicit_plan(), "persistence": 20},
    "offload_bf16": {"offload": True, "precision": "bf16"},
    "offload_param": {"offload": "param"},
    "offload_param_explicit": {"offload": "param", "plan": T.explicit_plan(), "persistence": 20,
                               "model": T.freeze(T.make_model())},
    "offload_param_bf16": {"offload": "param", "precision": "bf16"},
    # Without clipping offloaded updates start in backward (`early`), or wait for the step: the same bits.
    "offload_early": {"offload": True, "clip": False},
    "offload_waiting": {"offload": True, "clip": False, "early": False},
    # Partial offload: the first units' optimizer on the device, the rest on the host; the same update.
    "offload_partial": {"offload": True, "ratio": 0.6},
    "offload_partial_early": {"offload": True, "ratio": 0.6, "clip": False},
    "offload_param_early": {"offload": "param", "clip": False, "accum": 1, "plan": T.explicit_plan()},
    "offload_param_waiting": {"offload": "param", "clip": False, "accum": 1, "plan": T.explicit_plan(), "early": False},
    "sgd": {"optimizer": T.sgd},
    "sgd_offload": {"optimizer": T.sgd, "offload": True, "plan": T.explicit_plan()},
    # the plan's memory choices: every other block recomputed; the head and the loss fused (LMNet's loss)
    "recompute_plan": {"plan": T.planned(zr.default_plan(T.make_model(), T.config(1, 2)), ("blocks.0", "blocks.2"))},
    "head_loss": {"model": T.make_model(model=T.LMNet),
                  "plan": T.planned(zr.default_plan(T.make_model(), T.config(1, 2)), ("blocks.1",), head_loss="head")},
    "hpz": {"hpz": "world"},  # secondary partitions over the whole world: the data path, not the saving
    "hpz_explicit": {"hpz": "world", "plan": T.explicit_plan(), "model": T.freeze(T.make_model())},
}
HPZ = {  # world size 4 (accumulation 3): secondary partitions in two groups of 2 (two "nodes")
    "hpz": {"hpz": 2, "accum": 3},
    "hpz_explicit": {"hpz": 2, "accum": 3, "plan": T.explicit_plan()},
    "hpz_recompute": {"hpz": 2, "accum": 3, "model": T.make_model(model=lambda: T.CheckpointedNet("inside", reentrant=True))},
}
COMPILED = {
    "compiled": {"compiled": True},
    "compiled_explicit": {"compiled": True, "plan": T.explicit_plan()},
}
# Checkpointed runs: saved after 2 steps, continued in the same process and (LOAD_DIR) at another world size.
RESUMABLE = {
    "adamw": {},
    "offload": {"offload": True},
    "offload_param": {"offload": "param"},
    "sgd": {"optimizer": T.sgd},
}


def scenarios(res: dict, table: dict, world: int, rank: int) -> None:
    for name, kwargs in table.items():
        if name == "meta":
            torch.manual_seed(0)  # make_model's seed: the meta path must draw the same numbers
        t0 = time.perf_counter()
        engine, losses = run(**kwargs)
        full = engine.full_state_dict()
        if rank != 0:
            assert full == {}, "full_state_dict must be empty off rank 0"
        res[name] = {"state": full, "losses": losses, "grad_norm": engine.last_grad_norm,
                     "early_starts": engine.early_starts,
                     "on_device": [g.label for g in engine._stepper.order if not g.shards.offload],
                     "offloaded": [g.label for g in engine._stepper.order if g.shards.offload]}
        print(f"{name}: {time.perf_counter() - t0:.2f}s", flush=True)


def checkpoints(res: dict, out: Path, world: int, rank: int, load_from: Path | None) -> None:
    for name, kwargs in RESUMABLE.items():
        engine, _ = run(steps=2, **kwargs)
        engine.save_checkpoint(str(out / f"ckpt_{name}_w{world}"))
        T.train(engine, 2, world, rank, ACCUM, start=2)
        res[f"continued_{name}"] = {"state": engine.full_state_dict(), "steps": engine.global_steps}
        if load_from is not None:
            cfg = job_config(world, offload=kwargs.get("offload", False), client="optimizer" in kwargs)
            extra = {"optimizer": kwargs["optimizer"]} if "optimizer" in kwargs else {}
            engine = zr.initialize(T.Net, cfg, init_fn=T.init_fn, **extra)
            engine.load_checkpoint(str(load_from / f"ckpt_{name}_w2"))
            steps_at_load = engine.global_steps
            T.train(engine, 2, world, rank, ACCUM, start=2)
            res[f"resumed_{name}"] = {"state": engine.full_state_dict(), "steps_at_load": steps_at_load,
                                      "steps": engine.global_steps}
    engine, _ = run(precision="bf16", steps=1)  # split master: the checkpoint still holds fp32 values
    engine.save_checkpoint(str(out / f"split_w{world}"))
    res["split_saved"] = {"state": engine.full_state_dict()}
    if load_from is not None:
        engine = zr.initialize(T.Net, T.config(world, ACCUM), init_fn=T.init_fn)
        engine.load_checkpoint(str(load_from / "split_w2"))
        res["split_loaded"] = {"state": engine.full_state_dict()}


def main() -> None:
    out, suite = Path(sys.argv[1]), sys.argv[2]
    load_from = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    job = zr.init_distributed(device="cpu")
    world, rank = job.world_size, job.rank
    res: dict = {"world": world}
    if suite == "compiled":
        scenarios(res, COMPILED, world, rank)
    elif suite == "hpz":
        scenarios(res, HPZ, world, rank)
    else:
        scenarios(res, MAIN, world, rank)
        res["fsdp2_bf16"] = {"state": fsdp2_bf16(world, rank)}
        checkpoints(res, out, world, rank, load_from)
    if rank == 0:
        torch.save(res, out / f"{suite}_w{world}.pt")
    dist.barrier()
    (out / f"done_{suite}_w{world}_r{rank}").write_text("ok")  # every scenario ran and every assert held on this rank
    zr.shutdown()


if __name__ == "__main__":
    main()
