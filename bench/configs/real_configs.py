"""zgen against DeepSpeed's parser on real configs and realistic edits of them, at world sizes 1, 8 and 64.

    python bench/configs/real_configs.py [--root /work/corpus-src/configs] [-v]

The configs are the ones `manifest.tsv` lists (repository, commit, path and
the program that reads each one there: `hf`, `accelerate` or `deepspeed`),
copied under `--root` as `<owner>+<repo>/<path>`. Each config, unchanged and
with seeded realistic edits (a typo, a stage change, inconsistent batch sizes,
both precisions on, NVMe offload without a path, a `compile` section,
`"auto"` where the reader fills nothing, ...), is

* parsed by DeepSpeed 0.19.8's `DeepSpeedConfig` as its reader hands it over:
  HF Trainer and accelerate first replace the `"auto"` values they fill
  (batch sizes consistent with the world size, their defaults elsewhere);
* checked by zgen with `consumer` set to that reader.

A DeepSpeed rejection that zgen does not report as an error is a miss; a zgen
error on a config DeepSpeed's parser accepts is listed for review (some are
failures DeepSpeed raises only when the engine starts, such as a removed
optimizer or a client optimizer with offload; `-v` prints them all).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORLDS = (1, 8, 64)
SEED = 11


def load_manifest(root: Path) -> list[tuple[str, str, Path]]:
    """(repo, reader, file) for every manifest line whose file is present under `root`."""
    out = []
    for line in (HERE / "manifest.tsv").read_text().splitlines()[1:]:
        repo, _commit, path, consumer = line.split("\t")
        f = root / repo.replace("/", "+") / path
        if f.is_file():
            out.append((repo, consumer, f))
    return out


def _filled(cfg: dict, consumer: str, world: int) -> dict:
    """`cfg` as HF Trainer/accelerate pass it to DeepSpeed: the `"auto"` values they fill replaced."""
    from zgen.config.autofill import fill_for

    cfg = copy.deepcopy(cfg)
    if consumer == "deepspeed":
        return cfg
    stand_ins = {"train_micro_batch_size_per_gpu": 4, "scheduler.params.total_num_steps": 1000,
                 "scheduler.params.warmup_num_steps": 10, "optimizer.params.lr": 1e-4, "optimizer.params.weight_decay": 0.0,
                 "scheduler.params.warmup_max_lr": 1e-4, "zero_optimization.reduce_bucket_size": 4096 * 4096,
                 "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * 4096 * 4096),
                 "zero_optimization.stage3_param_persistence_threshold": 10 * 4096,
                 "zero_optimization.offload_optimizer.nvme_path": "none", "zero_optimization.offload_param.nvme_path": "none"}

    def walk(node: dict, prefix: str) -> None:
        for k, v in list(node.items()):
            key = prefix + k
            if isinstance(v, dict):
                walk(v, key + ".")
            elif v == "auto" and (fill := fill_for(consumer, key)) is not None and key != "train_batch_size":
                node[k] = stand_ins.get(key, fill.value)

    walk(cfg, "")
    if cfg.get("train_batch_size") == "auto":
        micro = cfg.get("train_micro_batch_size_per_gpu", 1)
        gas = cfg.get("gradient_accumulation_steps", 1)
        if isinstance(micro, int) and isinstance(gas, int):
            cfg["train_batch_size"] = micro * gas * world
    return cfg


def mutations(cfg: dict, rng: random.Random) -> list[tuple[str, dict]]:
    """A few realistic edits of `cfg`, each one change a user makes by hand."""
    out = []

    def edit(name: str, fn) -> None:
        c = copy.deepcopy(cfg)
        fn(c)
        out.append((name, c))

    zero = cfg.get("zero_optimization") if isinstance(cfg.get("zero_optimization"), dict) else None
    if zero:
        key = rng.choice(sorted(zero))
        edit(f"typo zero_optimization.{key}", lambda c: c["zero_optimization"].__setitem__(key[:-1],
                                                                                          c["zero_optimization"].pop(key)))
        edit("stage 3 with parameter offload", lambda c: c["zero_optimization"].update(
            stage=3, offload_param={"device": "cpu", "pin_memory": True}))
        edit("stage 2 with parameter offload", lambda c: c["zero_optimization"].update(
            stage=2, offload_param={"device": "cpu"}))
        edit("nvme optimizer offload, no path", lambda c: c["zero_optimization"].update(
            stage=3, offload_optimizer={"device": "nvme"}))
        edit("stage \"auto\"", lambda c: c["zero_optimization"].update(stage="auto"))
    edit("both precisions on", lambda c: c.update(fp16={"enabled": True}, bf16={"enabled": True}))
    edit("explicit global batch 96 / micro 4 / accumulation 2",
         lambda c: c.update(train_batch_size=96, train_micro_batch_size_per_gpu=4, gradient_accumulation_steps=2))
    edit("global batch only", lambda c: (c.pop("train_micro_batch_size_per_gpu", None),
                                         c.pop("gradient_accumulation_steps", None), c.update(train_batch_size=64)))
    edit("compile with unknown keys", lambda c: c.update(compile={"disable": False, "backend": "inductor"}))
    edit("gradient_clipping \"auto\"", lambda c: c.update(gradient_clipping="auto"))
    edit("batch sizes \"auto\"", lambda c: c.update(train_batch_size="auto", train_micro_batch_size_per_gpu="auto"))
    edit("_comment key", lambda c: c.update(_comment="tuned for 8xA100"))
    edit("fp16 dynamic scaling window 0", lambda c: c.update(fp16={"enabled": True, "loss_scale": 0,
                                                                   "loss_scale_window": 0}))
    return rng.sample(out, k=min(5, len(out)))


def deepspeed_parser():
    """`parse(cfg, world) -> exception or None` with DeepSpeed's own config class (CPU, no process group)."""
    from deepspeed import comm as dist
    from deepspeed.runtime.config import DeepSpeedConfig

    logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL)
    world = {"n": 1}
    dist.get_rank = lambda *a, **k: 0
    dist.get_world_size = lambda *a, **k: world["n"]

    def parse(cfg: dict, n: int):
        world["n"] = n
        try:
            DeepSpeedConfig(copy.deepcopy(cfg))
        except Exception as e:  # any exception while parsing is a rejection
            return e
        return None

    return parse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=Path("/work/corpus-src/configs"))
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)

    from zgen.config import check_config
    from zgen.launch import LaunchFacts

    parse = deepspeed_parser()
    rng = random.Random(SEED)
    items = load_manifest(args.root)
    cases = rejected = 0
    missed, flagged = [], []
    for repo, consumer, f in items:
        text = f.read_text()
        try:
            original = json.loads(text)
        except json.JSONDecodeError:
            original = None
        variants = [("as written", original, text)]
        if isinstance(original, dict):
            variants += [(name, cfg, json.dumps(cfg, indent=2)) for name, cfg in mutations(original, rng)]
        for world in WORLDS:
            for name, cfg, body in variants:
                cases += 1
                error = parse(_filled(cfg, consumer, world), world) if isinstance(cfg, dict) else "not JSON"
                report = check_config(str(f), body.encode(), LaunchFacts(world_size=world, consumer=consumer))
                errors = [x for x in report.findings if x.severity.value == "error"]
                where = f"{repo}/{f.name} [{consumer}, world {world}, {name}]"
                if error is not None:
                    rejected += 1
                    if not errors:
                        missed.append(f"{where}: {type(error).__name__}: {str(error)[:160]}")
                elif errors:
                    flagged.append(f"{where}: " + "; ".join(f"{x.code} {x.message[:140]}" for x in errors))
    print(f"{len(items)} configs from {len({r for r, _, _ in items})} repositories, {cases} cases "
          f"(world sizes {', '.join(map(str, WORLDS))}); DeepSpeed's parser rejects {rejected}")
    print(f"missed rejections: {len(missed)}")
    for m in missed:
        print("  MISS", m)
    print(f"zgen errors where the parser accepts: {len(flagged)}")
    for m in flagged if args.verbose else flagged[:20]:
        print("  ERR ", m)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
