"""Who reads the config, and what each reader writes into an `"auto"` value.

`"auto"` is not a DeepSpeed value: HF Trainer and accelerate replace it before
DeepSpeed sees the config, and `zgen emit` resolves it. Read from their sources:

* HF Trainer (`transformers/integrations/deepspeed.py`, `HfTrainerDeepSpeedConfig.
  trainer_config_process` / `trainer_config_finalize`) fills the batch sizes,
  `gradient_clipping`, the optimizer's `lr`/`betas`/`eps`/`weight_decay`, the
  warmup scheduler's four parameters, `fp16`/`bf16.enabled` and the ZeRO bucket
  sizes (from the model's `hidden_size`); it then hands the config to
  accelerate, which fills the rest of its list.
* accelerate (`utils/dataclasses.py`, `DeepSpeedPlugin.__post_init__` and
  `deepspeed_config_process`, `accelerator.py`, `_prepare_deepspeed`) fills the
  ZeRO stage, the offload devices and NVMe paths,
  `stage3_gather_16bit_weights_on_model_save`, `gradient_accumulation_steps`,
  `gradient_clipping`, `fp16`/`bf16.enabled`, the micro and global batch from
  the prepared data loader, the bucket sizes, and the optimizer's `lr` and
  `weight_decay` and the scheduler's parameters only for its `DummyOptim` /
  `DummyScheduler`; `betas` and `eps` it leaves as `"auto"`.
* raw DeepSpeed (`deepspeed.initialize` on the file) fills nothing: a pydantic
  section drops the key (`DeepSpeedConfigModel.__init__`) and uses its default;
  everything read with `dict.get` receives the string.
* zgen (`zgen plan`, `zgen emit`) resolves every key HF Trainer or accelerate
  would fill, except that its runtime is always stage 3 and offloads only
  to a device the config names (an `"auto"` device means none).
"""

from __future__ import annotations

from dataclasses import dataclass

from zgen.launch import ModelShape

__all__ = ["CONSUMERS", "Fill", "fill_for", "hf_fill", "PARAM_KEYS", "describe", "EMIT_MAX_STEPS",
           "EMIT_WARMUP_STEPS", "MODEL_FILLED"]

CONSUMERS = ("deepspeed", "hf", "accelerate", "zgen")

_NAMES = {
    "deepspeed": "`deepspeed.initialize` (raw DeepSpeed)",
    "hf": "HF Trainer",
    "accelerate": "accelerate",
    "zgen": "`zgen emit`",
}


@dataclass(frozen=True, slots=True)
class Fill:
    """How a reader fills one `"auto"` key: `source` (a phrase) and `value`, its default when known."""

    source: str
    value: object = None


_BUCKET = "from the model's `hidden_size`"
_HF: dict[str, Fill] = {
    "train_batch_size": Fill("as world size x `per_device_train_batch_size` x `gradient_accumulation_steps`"),
    "train_micro_batch_size_per_gpu": Fill("from `TrainingArguments.per_device_train_batch_size` (default 8)", 8),
    "gradient_accumulation_steps": Fill("from `TrainingArguments.gradient_accumulation_steps` (default 1)", 1),
    "gradient_clipping": Fill("from `TrainingArguments.max_grad_norm` (default 1.0)", 1.0),
    "fp16.enabled": Fill("from `TrainingArguments.fp16`", False),
    "bf16.enabled": Fill("from `TrainingArguments.bf16`", False),
    "amp.enabled": Fill("from `TrainingArguments.fp16` with apex", False),
    "optimizer.params.lr": Fill("from `TrainingArguments.learning_rate` (default 5e-5)", 5e-5),
    "optimizer.params.betas": Fill("from `TrainingArguments.adam_beta1`/`adam_beta2` (default [0.9, 0.999])",
                                   [0.9, 0.999]),
    "optimizer.params.eps": Fill("from `TrainingArguments.adam_epsilon` (default 1e-8)", 1e-8),
    "optimizer.params.weight_decay": Fill("from `TrainingArguments.weight_decay` (default 0.0)", 0.0),
    "scheduler.params.warmup_min_lr": Fill("with 0", 0.0),
    "scheduler.params.warmup_max_lr": Fill("from `TrainingArguments.learning_rate` (default 5e-5)", 5e-5),
    "scheduler.params.warmup_num_steps": Fill("from `TrainingArguments.warmup_steps` / `warmup_ratio`"),
    "scheduler.params.total_num_steps": Fill("with the number of training steps it computes"),
}
_ACCELERATE: dict[str, Fill] = {
    "zero_optimization.stage": Fill("from its `zero_stage` setting (default 2)", 2),
    "zero_optimization.offload_optimizer.device": Fill("from its offload device setting (default none)", "none"),
    "zero_optimization.offload_param.device": Fill("from its offload device setting (default none)", "none"),
    "zero_optimization.offload_optimizer.nvme_path": Fill("from its NVMe path setting"),
    "zero_optimization.offload_param.nvme_path": Fill("from its NVMe path setting"),
    "zero_optimization.stage3_gather_16bit_weights_on_model_save": Fill("from its `zero3_save_16bit_model` setting",
                                                                        False),
    "zero_optimization.reduce_bucket_size": Fill(_BUCKET + " (hidden_size x hidden_size)"),
    "zero_optimization.stage3_prefetch_bucket_size": Fill(_BUCKET + " (0.9 x hidden_size x hidden_size)"),
    "zero_optimization.stage3_param_persistence_threshold": Fill(_BUCKET + " (10 x hidden_size)"),
    "gradient_accumulation_steps": Fill("from its `gradient_accumulation_steps` (default 1)", 1),
    "gradient_clipping": Fill("from its `gradient_clipping` setting (default 1.0)", 1.0),
    "fp16.enabled": Fill("from its `mixed_precision` setting", False),
    "bf16.enabled": Fill("from its `mixed_precision` setting", False),
    "train_micro_batch_size_per_gpu": Fill("from the batch size of the data loader it prepares"),
    "train_batch_size": Fill("as micro batch x accumulation steps x processes"),
    "optimizer.params.lr": Fill("from its `DummyOptim` (a client optimizer has no `optimizer` section)"),
    "optimizer.params.weight_decay": Fill("from its `DummyOptim`"),
    "scheduler.params.warmup_min_lr": Fill("with 0 for its `DummyScheduler`", 0.0),
    "scheduler.params.warmup_max_lr": Fill("from its `DummyScheduler`'s optimizer learning rate"),
    "scheduler.params.warmup_num_steps": Fill("from its `DummyScheduler`"),
    "scheduler.params.total_num_steps": Fill("from its `DummyScheduler`"),
}

# What `zgen emit` uses for a run length the config leaves to the trainer: its `--max-steps` (the script's
# default `--steps`) and `--warmup-steps` (HF Trainer's `warmup_steps` default, 0).
EMIT_MAX_STEPS = 1000
EMIT_WARMUP_STEPS = 0

# zgen's runtime is ZeRO stage 3, and it offloads only to a device the config names, whatever accelerate's
# settings would say: "auto" is not a request to offload.
_ZGEN_OWN: dict[str, Fill] = {
    "scheduler.params.total_num_steps": Fill(f"from its `--max-steps` (default {EMIT_MAX_STEPS})",
                                             EMIT_MAX_STEPS),
    "scheduler.params.warmup_num_steps": Fill(f"from its `--warmup-steps` (default {EMIT_WARMUP_STEPS}, as "
                                              "HF Trainer's `warmup_steps`)", EMIT_WARMUP_STEPS),
    "zero_optimization.stage": Fill("as 3, the only stage zgen's runtime has", 3),
    "zero_optimization.offload_optimizer.device": Fill("as none (zgen offloads only to a device the config names)", "none"),
    "zero_optimization.offload_param.device": Fill("as none (zgen offloads only to a device the config names)", "none"),
}
_ZGEN: dict[str, Fill] = {**_ACCELERATE, **_HF, **_ZGEN_OWN}

_FILLS: dict[str, dict[str, Fill]] = {
    "deepspeed": {},
    "hf": {**_ACCELERATE, **_HF},
    "accelerate": _ACCELERATE,
    "zgen": _ZGEN,
}

# Optimizer and scheduler parameters some reader fills: the rule language knows them as keys.
PARAM_KEYS = tuple(k for k in _HF if k.startswith(("optimizer.params.", "scheduler.params.")))


def fill_for(consumer: str, key: str) -> Fill | None:
    """How `consumer` fills `"auto"` at the canonical `key`, or None when it leaves the string in place."""
    fill = _FILLS[consumer].get(key)
    if fill is None:
        return None
    if consumer == "zgen":
        how = fill.source if key in _ZGEN_OWN else f"the way HF Trainer and accelerate fill it, {fill.source}"
        return Fill(f"`zgen emit` resolves it {how}", fill.value)
    if consumer == "hf" and key not in _HF:
        return Fill(f"accelerate (under HF Trainer) fills it {fill.source}", fill.value)
    return Fill(f"{_NAMES[consumer]} fills it {fill.source}", fill.value)


def describe(consumer: str) -> str:
    """The reader's name for messages (`HF Trainer`, `` `deepspeed.initialize` (raw DeepSpeed) ``)."""
    return _NAMES[consumer]


# "auto" keys HF Trainer, accelerate and zgen fill from the model's hidden size.
MODEL_FILLED = ("zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
                "zero_optimization.stage3_param_persistence_threshold")


def hf_fill(model: ModelShape | None) -> dict[str, int]:
    """What HF Trainer and accelerate write into the `"auto"` ZeRO bucket sizes, given the model's hidden size."""
    if model is None or not model.hidden:
        return {}
    h = model.hidden
    return {
        "zero_optimization.reduce_bucket_size": h * h,
        "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * h * h),
        "zero_optimization.stage3_param_persistence_threshold": 10 * h,
    }
