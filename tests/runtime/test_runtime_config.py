"""The runtime's reading of DeepSpeed-style configs, and the flat layout arithmetic."""

from __future__ import annotations

import json

import pytest
import torch

from zgen.config.resolved import OptimizerSpec, ResolvedConfig, SchedulerSpec, ZeroSpec
from zgen.errors import ZgenError
from zgen.runtime.config import RuntimeConfig, SchedulerConfig
from zgen.runtime.layout import ALIGN, FlatLayout, dim0_chunk

BASE = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
    "zero_optimization": {"stage": 3},
}


def test_seed_example_config(repo):
    cfg = RuntimeConfig.load(repo / "examples/llama/ds_config.json", world_size=8)
    assert (cfg.precision, cfg.micro_batch_size, cfg.gradient_accumulation_steps, cfg.train_batch_size) == ("bf16", 1, 2, 16)
    assert cfg.gradient_clipping == 1.0 and cfg.optimizer == "adamw" and cfg.betas == (0.9, 0.95)
    assert cfg.persistence_threshold == 100_000 and cfg.reduce_dtype == "fp32"


def test_resolved_config_is_accepted():
    resolved = ResolvedConfig(
        train_batch_size=32, train_micro_batch_size_per_gpu=2, gradient_accumulation_steps=4, world_size=4,
        gradient_clipping=1.0, precision="bf16", zero=ZeroSpec(stage=3), optimizer=OptimizerSpec(lr=1e-4),
        scheduler=SchedulerSpec(type="WarmupLR", params=(("warmup_num_steps", 10.0),)),
    )
    cfg = RuntimeConfig.load(resolved, world_size=4)
    assert cfg.gradient_accumulation_steps == 4 and cfg.lr == 1e-4 and cfg.scheduler.warmup_num_steps == 10


def test_batch_sizes_follow_deepspeed_rules():
    assert RuntimeConfig.load({**BASE, "gradient_accumulation_steps": None}, 4).gradient_accumulation_steps == 1
    only_total = {k: v for k, v in BASE.items() if not k.startswith(("train_", "gradient_acc"))} | {"train_batch_size": 24}
    cfg = RuntimeConfig.load(only_total | {"gradient_accumulation_steps": 3}, 4)
    assert (cfg.micro_batch_size, cfg.gradient_accumulation_steps) == (2, 3)


def test_path_and_adam_modes(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({**BASE, "optimizer": {"type": "Adam", "params": {"adam_w_mode": False}}}))
    assert RuntimeConfig.load(path, 1).optimizer == "adam"
    assert RuntimeConfig.load({**BASE, "optimizer": {"type": "Adam"}}, 1).optimizer == "adamw"  # DeepSpeed's default


@pytest.mark.parametrize(
    "change, message",
    [
        ({"zero_optimization": {"stage": 2}}, r"`zero_optimization\.stage` is 2; zgen\.runtime implements stage 3 only"),
        ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}}},
         r"`zero_optimization\.offload_optimizer\.device` nvme is not supported"),
        ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin": True}}},
         r"`zero_optimization\.offload_optimizer\.pin` is not an optimizer offload setting"),
        ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 1.5}}},
         r"`zero_optimization\.offload_optimizer\.ratio` must be between 0 and 1"),
        ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5},
                                "offload_param": {"device": "cpu"}}},
         r"`zero_optimization\.offload_optimizer\.ratio` 0\.5 keeps part of the optimizer on the GPU"),
        ({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}},
         r"`zero_optimization\.offload_param\.device` nvme is not supported"),
        ({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}},
         r"`zero_optimization\.offload_param\.device` cpu needs the optimizer in host memory too"),
        ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "gpu"}}},
         r"`zero_optimization\.offload_param\.device` must be cpu or none"),
        ({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket": 5}}, r"`zero_optimization\.stage3_prefetch_bucket` is not"),
        ({"optimizer": {"type": "Lamb", "params": {}}}, r"`optimizer\.type` 'Lamb' is not supported"),
        ({"optimizer": {"type": "AdamW", "params": {"amsgrad": True}}}, r"`optimizer\.params\.amsgrad`"),
        ({"train_batch_size": 10}, r"`train_batch_size` \(10\) != `train_micro_batch_size_per_gpu` \(2\) x "
                                   r"`gradient_accumulation_steps` \(4\) x world_size \(2\) = 16"),
        ({"gradient_accumulation_steps": "auto"}, r'`gradient_accumulation_steps` is "auto"'),
        ({"bf16": {"enabled": True}, "fp16": {"enabled": True}}, r"`bf16\.enabled` and `fp16\.enabled` are both true"),
        ({"scheduler": {"type": "OneCycle", "params": {}}}, r"`scheduler\.type` 'OneCycle' is not supported"),
        ({"scheduler": {"type": "WarmupDecayLR", "params": {}}}, r"`scheduler\.params\.total_num_steps` is required"),
        ({"communication_data_type": "int8"}, r"`communication_data_type` must be one of"),
        ({"amp": {"enabled": True}}, r"`amp\.enabled`"),
        ({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 4}},
         r"`zero_optimization\.zero_hpz_partition_size` \(4\) must divide the world size \(2\)"),
        ({"zero_optimization": {"stage": 3, "mics_shard_size": 2}}, r"`zero_optimization\.mics_shard_size` asks for MiCS"),
    ],
)
def test_unsupported_config_names_the_key(change, message):
    with pytest.raises(ZgenError, match=message):
        RuntimeConfig.load({**BASE, **change}, world_size=2)


def test_optimizers_beyond_adam_and_offload_settings():
    def load(**change):
        return RuntimeConfig.load({**BASE, **change}, 2)

    assert load(optimizer={"type": "Lion", "params": {"lr": 1e-4}}).optimizer == "lion"
    sgd = load(optimizer={"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}})
    assert sgd.optimizer == "torch:SGD" and sgd.optimizer_params == {"lr": 0.1, "momentum": 0.9} and sgd.lr == 0.1
    assert load(optimizer={"type": "Adagrad", "params": {}}).optimizer == "torch:Adagrad"
    assert load(optimizer={"type": "NoSuchOptim", "params": {}}).optimizer == "torch:NoSuchOptim"  # checked when built
    off = load(zero_optimization={"stage": 3, "offload_optimizer": {"device": "cpu"}})
    assert off.offload_optimizer and off.pin_memory  # DeepSpeed pins by default
    assert not load(zero_optimization={"stage": 3, "offload_optimizer": {"device": "none"}}).offload_optimizer
    assert load(zero_optimization={"stage": 3, "zero_hpz_partition_size": 2}).hpz_partition_size == 2
    both = load(zero_optimization={"stage": 3, "offload_optimizer": {"device": "cpu"},
                                   "offload_param": {"device": "cpu", "pin_memory": True, "buffer_count": 4}})
    assert both.offload_param and both.offload_optimizer
    assert not off.offload_param and off.offload_ratio == 1.0
    part = load(zero_optimization={"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}})
    assert part.offload_optimizer and part.offload_ratio == 0.3
    assert not load(zero_optimization={"stage": 3, "offload_param": {"device": "none"}}).offload_param
    client = {k: v for k, v in BASE.items() if k != "optimizer"}
    assert RuntimeConfig.load(client, 2, client_optimizer=True).optimizer == "client"
    with pytest.raises(ZgenError, match=r"has an `optimizer` block and initialize\(\) was given an optimizer"):
        RuntimeConfig.load(BASE, 2, client_optimizer=True)


def test_unreadable_config_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"optimizer": }')
    with pytest.raises(ZgenError, match=r"bad\.json:1:\d+: the config is not valid JSON"):
        RuntimeConfig.load(bad, 1)


@pytest.mark.parametrize(
    "kind, params",
    [
        ("WarmupLR", {"warmup_min_lr": 1e-5, "warmup_max_lr": 1e-3, "warmup_num_steps": 7}),
        ("WarmupLR", {"warmup_num_steps": 5, "warmup_type": "linear"}),
        ("WarmupDecayLR", {"total_num_steps": 20, "warmup_max_lr": 2e-3, "warmup_num_steps": 5}),
        ("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 4, "warmup_min_ratio": 0.1}),
    ],
)
def test_schedules_match_deepspeed(kind, params):
    lr_schedules = pytest.importorskip("deepspeed.runtime.lr_schedules")
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=5e-4)
    theirs = getattr(lr_schedules, kind)(opt, **params)
    cfg = RuntimeConfig.load({**BASE, "scheduler": {"type": kind, "params": params}}, 1).scheduler
    ours = []
    for it in range(25):
        theirs.step()
        ours.append(cfg.lr(it, 5e-4))
        assert ours[-1] == pytest.approx(opt.param_groups[0]["lr"], rel=1e-12, abs=1e-15), it


def test_scheduler_before_first_step():
    assert SchedulerConfig(type="WarmupLR", warmup_min_lr=0.1).lr(-1, 1.0) == 0.1


# -- layout ---------------------------------------------------------------------------------

@pytest.mark.parametrize("world", [1, 2, 3, 8])
def test_layout_covers_every_element_once(world):
    shapes = [("a", (13, 17)), ("b", (1,)), ("c", ()), ("d", (7, 3, 2))]
    layout = FlatLayout.build(shapes, world)
    assert layout.padded % (world * ALIGN) == 0 and layout.shard * world == layout.padded
    assert all(s.offset % ALIGN == 0 for s in layout.slots)
    covered = torch.zeros(layout.padded, dtype=torch.int64)
    for rank in range(world):
        for slot, a, b in layout.pieces(rank):
            lo, hi = layout.shard_range(rank)
            assert lo <= a < b <= hi and slot.offset <= a and b <= slot.end
            covered[a:b] += 1
    for a, b in layout.gaps():
        covered[a:b] += 1
    assert bool((covered == 1).all())


@pytest.mark.parametrize("rows, world", [(0, 2), (1, 3), (5, 3), (4, 3), (12, 8), (7, 1)])
def test_dim0_chunk_matches_torch_chunk(rows, world):
    chunks = torch.arange(rows).chunk(world) if rows else ()
    for rank in range(world):
        lo, hi = dim0_chunk(rows, world, rank)
        expected = chunks[rank].tolist() if rank < len(chunks) else []
        assert list(range(lo, hi)) == expected
