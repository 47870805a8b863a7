"""zgen against DeepSpeed's own config parser: every config DeepSpeed rejects, zgen must report as an error.

Configs are seeded mutations of valid ones (types, ranges, typos, aliases,
deprecated and removed keys, batch arithmetic at random world sizes, text-level
damage). DeepSpeed 0.19.8's `DeepSpeedConfig` parses each one on the CPU with
`deepspeed.comm` patched to report the world size; any exception it raises is a
rejection. The reverse direction (zgen reports errors DeepSpeed only finds when
the engine starts, e.g. an untested ZeRO optimizer) is expected and not asserted.

Two readers are covered: HF Trainer (the keys it and accelerate fill with
`"auto"` never reach DeepSpeed, so those configs are skipped) and raw
`deepspeed.initialize` (every `"auto"` reaches the parser as written). The fast
run checks 300 configs per reader; the slow one 2000.
"""

from __future__ import annotations

import copy
import json
import logging
import random
import re

import pytest

from zgen.config import check_config
from zgen.config.autofill import fill_for
from zgen.launch import LaunchFacts

deepspeed = pytest.importorskip("deepspeed", reason="the differential test needs DeepSpeed's config parser")

# N_FAST configs per reader in the contributor's loop, N_SLOW more (other seeds) in CI: together they cover
# every mutation kind the generator has many times over; a larger sweep belongs in bench/config_speed.py.
N_FAST = 300
N_SLOW = 400
SEED = 20261129

BASES = [
    {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
     "steps_per_print": 1, "bf16": {"enabled": True},
     "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
     "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": 5e7,
                           "stage3_prefetch_bucket_size": 5e7, "stage3_param_persistence_threshold": 1e5,
                           "stage3_max_live_parameters": 1e9, "stage3_max_reuse_distance": 1e9, "sub_group_size": 1e9},
     "wall_clock_breakdown": True},
    {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": True, "loss_scale": 0,
     "loss_scale_window": 1000, "initial_scale_power": 16, "hysteresis": 2, "min_loss_scale": 1},
     "zero_optimization": {"stage": 2, "allgather_bucket_size": 2e8, "reduce_bucket_size": 2e8, "overlap_comm": True,
                           "offload_optimizer": {"device": "cpu", "pin_memory": True}},
     "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 1e-3, "warmup_num_steps": 100}}},
    {"train_batch_size": 32, "gradient_accumulation_steps": 2,
     "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "ratio": 1.0}},
     "activation_checkpointing": {"partition_activations": True, "cpu_checkpointing": False}, "aio": {"block_size": 1048576}},
    {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
     "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu", "ratio": 0.5},
                           "zero_hpz_partition_size": 2, "stage3_gather_16bit_weights_on_model_save": True}},
]

_VALUES = [0, 1, 2, 3, 4, -1, 7, 8, 16, 0.5, 1.5, 2.0, 5e7, 2.5e8, 1e12, 1e300, True, False, None, "auto", "3", "cpu",
           "nvme", "none", "CPU", "gpu", "yes", "off", "x", "", [], {}, [1, 2], {"a": 1}, 2**70, "sum", "mean", "1_000",
           "AdamW", "adam", "SGD", "Lamb", "WarmupLR", "WarmupDecayLR", "OneCycle", "Warn", "fail", "bf16", "float16",
           "fp32", "1e3", 1e-8, -0.5]


def _typo(key: str, rng: random.Random) -> str:
    i = rng.randrange(len(key))
    ops = [key[:i] + key[i + 1:], key[:i] + key[i] + key[i:], key[:i] + "_" + key[i:],
           key.replace("optimization", "optimisation"), key + "s"]
    return rng.choice(ops) or "x"


def _paths(cfg: dict, prefix=()):
    for k, v in cfg.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))


def _get(cfg, path):
    for p in path[:-1]:
        cfg = cfg[p]
    return cfg


KNOWN = {
    (): ["train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping",
         "gradient_allreduce_op", "communication_data_type", "zero_allow_untested_optimizer", "amp", "pipeline",
         "data_types", "checkpoint", "steps_per_print"],
    ("zero_optimization",): ["stage", "overlap_comm", "reduce_bucket_size", "allgather_bucket_size", "sub_group_size",
                             "stage3_prefetch_bucket_size", "prefetch_bucket_size", "stage3_max_live_parameters",
                             "zero_hpz_partition_size", "cpu_offload", "cpu_offload_param", "compute_grad_norm",
                             "mics_shard_size", "offload_param", "offload_optimizer", "elastic_checkpoint",
                             "stage3_gather_fp16_weights_on_model_save", "gather_16bit_weights_on_model_save"],
    ("fp16",): ["enabled", "loss_scale", "loss_scale_window", "min_loss_scale", "initial_scale_power", "hysteresis",
                "fp16_master_weights_and_grads", "auto_cast"],
    ("bf16",): ["enabled", "bf16_master_weights_and_grads", "bf16_optimizer_states", "check_grad_overflow"],
    ("optimizer",): ["type", "params", "legacy_fusion"],
    ("scheduler",): ["type", "params"],
    ("data_types",): ["param_dtype", "grad_accum_dtype"],
    ("checkpoint",): ["tag_validation", "load_universal"],
    ("zero_optimization", "offload_optimizer"): ["device", "ratio", "nvme_path", "pin_memory", "buffer_count",
                                                 "cpuadam_cores_perc", "super_offload"],
    ("zero_optimization", "offload_param"): ["device", "nvme_path", "pin_memory", "buffer_size", "max_in_cpu"],
}


def mutate(cfg: dict, rng: random.Random) -> dict:
    cfg = copy.deepcopy(cfg)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        paths = list(_paths(cfg))
        if op < 0.3 and paths:  # change a value
            path = rng.choice(paths)
            _get(cfg, path)[path[-1]] = copy.deepcopy(rng.choice(_VALUES))
        elif op < 0.45 and paths:  # delete a key
            path = rng.choice(paths)
            del _get(cfg, path)[path[-1]]
        elif op < 0.6 and paths:  # misspell a key
            path = rng.choice(paths)
            parent = _get(cfg, path)
            parent[_typo(path[-1], rng)] = parent.pop(path[-1])
        elif op < 0.85:  # set a known key to a plausible or implausible value
            section = rng.choice(list(KNOWN))
            parent = cfg
            for p in section:
                if not isinstance(parent.get(p), dict):
                    parent[p] = {}
                parent = parent[p]
            key = rng.choice(KNOWN[section])
            if key in ("offload_param", "offload_optimizer"):
                parent[key] = {"device": rng.choice(["cpu", "nvme", "none", "gpu", "auto"]),
                               rng.choice(["ratio", "pin_memory", "nvme_path", "buffer_count", "device_"]):
                                   rng.choice([0.3, 1.0, 1.5, True, "/nvme", 4, -1])}
            else:
                parent[key] = copy.deepcopy(rng.choice(_VALUES))
        else:  # batch arithmetic
            for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
                if rng.random() < 0.5:
                    cfg[key] = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 0])
                else:
                    cfg.pop(key, None)
    return cfg


def _text(cfg: dict, rng: random.Random) -> str:
    text = json.dumps(cfg, indent=1)
    r = rng.random()
    if r < 0.04:  # duplicate a key
        lines = text.splitlines()
        i = rng.randrange(1, len(lines) - 1)
        if ":" in lines[i] and not lines[i].rstrip().endswith(("{", "[")):
            lines.insert(i, lines[i].rstrip().rstrip(",") + ",")
        text = "\n".join(lines)
    elif r < 0.07:  # damage
        i = rng.randrange(len(text))
        text = text[:i] + text[i + 1:]
    elif r < 0.12:  # hjson comments, which DeepSpeed accepts
        text = "// generated\n" + text.replace("\n", "  # note\n", 1)
    elif r < 0.16:  # hjson: unquoted keys, no commas at line ends
        text = re.sub(r'^(\s*)"([A-Za-z_0-9]+)":', r"\1\2:", text, flags=re.M).replace(",\n", "\n")
    return text


@pytest.fixture(scope="module")
def deepspeed_parse():
    from deepspeed import comm as dist
    from deepspeed.runtime.config import DeepSpeedConfig

    logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL)
    saved = dist.get_rank, dist.get_world_size
    world = {"n": 1}
    dist.get_rank = lambda *a, **k: 0
    dist.get_world_size = lambda *a, **k: world["n"]

    def parse(path: str, n: int) -> Exception | None:
        world["n"] = n
        try:
            DeepSpeedConfig(path)
        except Exception as e:  # any exception while parsing is a rejection
            return e
        return None

    yield parse
    dist.get_rank, dist.get_world_size = saved


def _hf_auto(cfg: dict) -> bool:
    """Whether HF Trainer (or accelerate under it) fills an `"auto"` in `cfg` before DeepSpeed parses it."""
    def walk(node, prefix):
        for k, v in node.items():
            key = f"{prefix}{k}"
            if v == "auto" and fill_for("hf", key) is not None:
                return True
            if isinstance(v, dict) and walk(v, key + "."):
                return True
        return False

    return walk(cfg, "")


def _run(deepspeed_parse, tmp_path, consumer: str, n: int) -> None:
    rng = random.Random(SEED + n + len(consumer))
    missed = []
    rejected = checked = 0
    for i in range(n):
        cfg = mutate(rng.choice(BASES), rng)
        text = _text(cfg, rng)
        world = rng.choice([1, 2, 3, 4, 6, 8, 12, 16])
        if consumer == "hf" and _hf_auto(cfg):
            continue  # HF Trainer fills these before DeepSpeed parses the config (zgen solves them instead)
        checked += 1
        path = tmp_path / f"c{i % 7}.json"
        path.write_text(text)
        error = deepspeed_parse(str(path), world)
        report = check_config(str(path), text.encode(), LaunchFacts(world_size=world, consumer=consumer))
        zgen_error = any(f.severity.value == "error" for f in report.findings)
        if error is not None:
            rejected += 1
            if not zgen_error:
                missed.append((world, text, f"{type(error).__name__}: {str(error)[:200]}"))
    assert rejected > checked // 4, "the generator should produce plenty of configs DeepSpeed rejects"
    assert not missed, "\n\n".join(f"world {w}: {e}\n{t}" for w, t, e in missed[:5]) + f"\n({len(missed)} missed)"


@pytest.mark.parametrize("consumer", ["hf", "deepspeed"])
def test_zgen_reports_every_config_deepspeed_rejects(deepspeed_parse, tmp_path, consumer):
    _run(deepspeed_parse, tmp_path, consumer, N_FAST)


@pytest.mark.slow
@pytest.mark.parametrize("consumer", ["hf", "deepspeed"])
def test_zgen_reports_every_config_deepspeed_rejects_long(deepspeed_parse, tmp_path, consumer):
    _run(deepspeed_parse, tmp_path, consumer, N_SLOW)
