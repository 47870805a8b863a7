"""DeepSpeed's defaults: one table, per release, read by the config checker, the resolver and the runtime.

The values were read from DeepSpeed 0.19.8's sources (`runtime/constants.py`,
the pydantic models in `runtime/zero/config.py`, `runtime/zero/offload_config.py`,
`runtime/precision_config.py`, `monitor/config.py`, `comm/config.py`, ...,
`runtime/lr_schedules.py` for the schedulers and `ops/adam/fused_adam.py` for
the optimizer parameters). A key DeepSpeed derives (the batch sizes,
`overlap_comm`) or leaves unset has no entry. The few defaults that changed
between releases are in `_CHANGED`, so `defaults(version)` answers for any
release zgen knows.

This module is part of the base layer: the runtime imports it, so it imports
nothing beyond the standard library and `zgen.launch`.
"""

from __future__ import annotations

from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

from zgen.launch import DEFAULT_DEEPSPEED_VERSION

__all__ = ["Version", "LATEST", "OLDEST", "defaults", "default", "scheduler_defaults"]

Version = tuple[int, int, int]

# The release the table is written for, and the oldest one `_CHANGED` reaches back to.
LATEST: Version = tuple(int(p) for p in DEFAULT_DEEPSPEED_VERSION.split("."))  # type: ignore[assignment]
OLDEST: Version = (0, 10, 0)

_TABLE: dict[str, object] = {
    # top level
    "gradient_clipping": 1.0,
    "wall_clock_breakdown": False,
    "memory_breakdown": False,
    "dump_state": False,
    "disable_allgather": False,
    "disable_python_gc": False,
    "prescale_gradients": False,
    "gradient_predivide_factor": 1.0,
    "gradient_allreduce_op": "mean",
    "seq_parallel_communication_data_type": "fp32",
    "sequence_parallel_size": 1,
    "managed_gradient_accumulation": True,
    "zero_allow_untested_optimizer": False,
    "zero_force_ds_cpu_optimizer": True,
    "dataloader_drop_last": False,
    "use_data_before_expert_parallelism": False,
    "sparse_gradients": False,
    # zero_optimization
    "zero_optimization.stage": 0,
    "zero_optimization.contiguous_gradients": True,
    "zero_optimization.reduce_scatter": True,
    "zero_optimization.use_multi_rank_bucket_allreduce": True,
    "zero_optimization.allgather_partitions": True,
    "zero_optimization.compute_grad_norm": True,
    "zero_optimization.load_from_fp32_weights": True,
    "zero_optimization.elastic_checkpoint": False,
    "zero_optimization.ignore_unused_parameters": True,
    "zero_optimization.legacy_stage1": False,
    "zero_optimization.round_robin_gradients": False,
    "zero_optimization.parameter_alignment": False,
    "zero_optimization.zero_quantized_weights": False,
    "zero_optimization.zero_quantized_nontrainable_weights": False,
    "zero_optimization.zero_quantized_gradients": False,
    "zero_optimization.memory_efficient_linear": True,
    "zero_optimization.pipeline_loading_checkpoint": False,
    "zero_optimization.override_module_apply": True,
    "zero_optimization.log_trace_cache_warnings": False,
    "zero_optimization.enable_sanity_checks": False,
    "zero_optimization.save_muon_momentum_buffer_in_memory": False,
    "zero_optimization.reduce_bucket_size": 500_000_000,
    "zero_optimization.allgather_bucket_size": 500_000_000,
    "zero_optimization.sub_group_size": 1_000_000_000,
    "zero_optimization.stage3_prefetch_bucket_size": 50_000_000,
    "zero_optimization.stage3_param_persistence_threshold": 100_000,
    "zero_optimization.stage3_model_persistence_threshold": 9_223_372_036_854_775_807,
    "zero_optimization.stage3_max_live_parameters": 1_000_000_000,
    "zero_optimization.stage3_max_reuse_distance": 1_000_000_000,
    "zero_optimization.stage3_gather_16bit_weights_on_model_save": False,
    "zero_optimization.stage3_module_granularity_threshold": 0,
    "zero_optimization.stage3_use_all_reduce_for_fetch_params": False,
    "zero_optimization.stage3_allgather_sequential": False,
    "zero_optimization.zero_hpz_partition_size": 1,
    "zero_optimization.stage3_gather_fp16_weights_on_model_save": False,
    "zero_optimization.mics_shard_size": -1,
    "zero_optimization.mics_hierarchical_params_gather": False,
    # zero_optimization.offload_param
    "zero_optimization.offload_param.device": "none",
    "zero_optimization.offload_param.pin_memory": True,
    "zero_optimization.offload_param.buffer_count": 5,
    "zero_optimization.offload_param.buffer_size": 100_000_000,
    "zero_optimization.offload_param.max_in_cpu": 1_000_000_000,
    # zero_optimization.offload_optimizer
    "zero_optimization.offload_optimizer.device": "none",
    "zero_optimization.offload_optimizer.pin_memory": True,
    "zero_optimization.offload_optimizer.buffer_count": 4,
    "zero_optimization.offload_optimizer.ratio": 1.0,
    "zero_optimization.offload_optimizer.cpuadam_cores_perc": 0.8,
    "zero_optimization.offload_optimizer.pipeline_read": False,
    "zero_optimization.offload_optimizer.pipeline_write": False,
    "zero_optimization.offload_optimizer.fast_init": False,
    "zero_optimization.offload_optimizer.super_offload": False,
    # zero_optimization.zenflow
    "zero_optimization.zenflow.topk_ratio": 0.1,
    "zero_optimization.zenflow.select_strategy": "auto",
    "zero_optimization.zenflow.select_interval": "auto",
    "zero_optimization.zenflow.update_interval": "auto",
    "zero_optimization.zenflow.overlap_step": False,
    "zero_optimization.zenflow.offload": False,
    "zero_optimization.zenflow.auto_ratio": 0.99,
    "zero_optimization.zenflow.full_warm_up_rounds": 0,
    "zero_optimization.zenflow.pt_reserved_cores_perc": 0.5,
    # fp16
    "fp16.enabled": False,
    "fp16.auto_cast": False,
    "fp16.loss_scale": 0.0,
    "fp16.initial_scale_power": 16,
    "fp16.loss_scale_window": 1000,
    "fp16.hysteresis": 2,
    "fp16.consecutive_hysteresis": False,
    "fp16.min_loss_scale": 1,
    "fp16.fp16_master_weights_and_grads": False,
    # bf16
    "bf16.enabled": False,
    "bf16.immediate_grad_update": False,
    "bf16.check_grad_overflow": True,
    "bf16.bf16_master_weights_and_grads": False,
    "bf16.bf16_optimizer_states": False,
    # optimizer
    "optimizer.legacy_fusion": False,
    # aio
    "aio.block_size": 1_048_576,
    "aio.queue_depth": 8,
    "aio.intra_op_parallelism": 1,
    "aio.single_submit": False,
    "aio.overlap_events": True,
    "aio.use_gds": False,
    # activation_checkpointing
    "activation_checkpointing.partition_activations": False,
    "activation_checkpointing.contiguous_memory_optimization": False,
    "activation_checkpointing.synchronize_checkpoint_boundary": False,
    "activation_checkpointing.profile": False,
    "activation_checkpointing.cpu_checkpointing": False,
    # flops_profiler
    "flops_profiler.enabled": False,
    "flops_profiler.recompute_fwd_factor": 0.0,
    "flops_profiler.profile_step": 1,
    "flops_profiler.module_depth": -1,
    "flops_profiler.top_modules": 1,
    "flops_profiler.detailed": True,
    # pipeline
    "pipeline.stages": "auto",
    "pipeline.partition": "best",
    "pipeline.seed_layers": False,
    "pipeline.activation_checkpoint_interval": 0,
    "pipeline.pipe_partitioned": True,
    "pipeline.grad_partitioned": True,
    # data_types
    "data_types.keep_in_fp32_modules": "auto",
    # checkpoint
    "checkpoint.tag_validation": "Warn",
    "checkpoint.load_universal": False,
    "checkpoint.use_node_local_storage": False,
    # torch_autocast
    "torch_autocast.enabled": False,
    # comms_logger
    "comms_logger.enabled": False,
    "comms_logger.prof_all": True,
    "comms_logger.verbose": False,
    "comms_logger.debug": False,
    # hybrid_engine
    "hybrid_engine.enabled": False,
    "hybrid_engine.max_out_tokens": 512,
    "hybrid_engine.inference_tp_size": 1,
    "hybrid_engine.release_inference_cache": False,
    "hybrid_engine.pin_parameters": True,
    "hybrid_engine.tp_gather_partition_size": 8,
    "hybrid_engine.enable_cuda_graph": False,
    # tensorboard
    "tensorboard.enabled": False,
    "tensorboard.output_path": "",
    "tensorboard.job_name": "DeepSpeedJobName",
    # csv_monitor
    "csv_monitor.enabled": False,
    "csv_monitor.output_path": "",
    "csv_monitor.job_name": "DeepSpeedJobName",
    # wandb
    "wandb.enabled": False,
    "wandb.project": "deepspeed",
    # comet
    "comet.enabled": False,
    "comet.samples_log_interval": 100,
    # amp
    "amp.enabled": False,
    "amp.opt_level": "O1",

    # optimizer parameters (DeepSpeed's Adam/AdamW, `FusedAdam`)
    "optimizer.params.lr": 1e-3,
    "optimizer.params.betas": (0.9, 0.999),
    "optimizer.params.eps": 1e-8,
    "optimizer.params.weight_decay": 0.0,
}

# Defaults that changed: key -> (first release with the table's value, the value before it).
_CHANGED: dict[str, tuple[Version, object]] = {
    "gradient_clipping": ((0, 19, 3), 0.0),
    "zero_optimization.offload_param.pin_memory": ((0, 19, 5), False),
    "zero_optimization.offload_optimizer.pin_memory": ((0, 19, 5), False),
}

# The parameters of DeepSpeed's warmup schedulers (`runtime/lr_schedules.py`); they differ per class.
_SCHEDULERS: dict[str, dict[str, object]] = {
    "WarmupLR": {"warmup_min_lr": 0.0, "warmup_max_lr": None, "warmup_num_steps": 1000, "warmup_type": "log"},
    "WarmupDecayLR": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.001, "warmup_num_steps": 1000, "warmup_type": "log"},
    "WarmupCosineLR": {"warmup_min_ratio": 0.0, "warmup_num_steps": 1000, "cos_min_ratio": 0.0001,
                       "warmup_type": "log"},
}


@lru_cache(maxsize=8)
def defaults(version: Version = LATEST) -> Mapping[str, object]:
    """Every default DeepSpeed `version` uses, by dotted key (`zero_optimization.stage`)."""
    table = dict(_TABLE)
    for key, (since, before) in _CHANGED.items():
        if version < since:
            table[key] = before
    return MappingProxyType(table)


def default(key: str, version: Version = LATEST) -> object:
    """DeepSpeed `version`'s default for the dotted `key`; None when DeepSpeed derives it or has none."""
    return defaults(version).get(key)


def scheduler_defaults(scheduler: str) -> Mapping[str, object]:
    """The default parameters of DeepSpeed's scheduler class `scheduler` (empty for one it does not define here)."""
    return MappingProxyType(_SCHEDULERS.get(scheduler, {}))
