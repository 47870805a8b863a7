"""DeepSpeed's config key schema, keyed by DeepSpeed version.

The defaults live in `zgen.deepspeed_defaults` (one table the runtime reads too);
this module adds kinds, ranges and aliases (`zgen.config.autofill` says what fills
an `"auto"`). Facts here
were read from DeepSpeed 0.19.8's sources (`runtime/config.py`,
`runtime/constants.py`, `runtime/zero/config.py`, `runtime/zero/offload_config.py`,
`runtime/precision_config.py`, `runtime/swap_tensor/aio_config.py`,
`runtime/activation_checkpointing/config.py`, `profiling/config.py`,
`monitor/config.py`, `comm/config.py`, `compile/config.py`) and from the
release history for the few behaviours that changed:

* pydantic v2 (DeepSpeed 0.15.0): an int field rejects a float with a
  fractional part (`5.5`); earlier releases truncated it silently.
* 0.19.8 rejects removed features (`amp`, `nebula`, MiCS, ...) with an error.

The strict sections zgen does not spell out by hand (`compile`, `tensor_parallel`,
`timers.throughput`, `weight_quantization`) are built from
`zgen.config.deepspeed_models`, which `bench/configs/derive_models.py` generates
from DeepSpeed's own pydantic models; a test keeps the hand-written strict
sections equal to those models.

A *strict* section is a pydantic model with `extra="forbid"`: an unknown key
is an error, and DeepSpeed drops an `"auto"` value there (the default is used).
A *lenient* section is read with `dict.get`: an unknown key is silently
ignored, and `"auto"` reaches the code as the literal string. An *opaque*
section is one zgen does not model (its content is not checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Mapping

from zgen.deepspeed_defaults import OLDEST, Version, defaults
from zgen.config.deepspeed_models import MODELS
from zgen.config.deepspeed_models import VERSION as MODELS_VERSION
from zgen.errors import ZgenError

__all__ = ["Key", "Section", "schema_for", "parse_version", "OLDEST_VERSION", "Version"]

OLDEST_VERSION: Version = OLDEST
PYDANTIC_V2: Version = (0, 15, 0)
REMOVALS: Version = (0, 19, 8)

_REMOVED_ISSUE = "https://github.com/deepspeedai/DeepSpeed/issues/8489"


@dataclass(frozen=True, slots=True)
class Key:
    """One config key.

    `kind` is int, float, bool, str, enum, path, list, dict or any. `default`
    is DeepSpeed's default for the version the schema was built for (None when
    DeepSpeed derives the value, e.g. the batch sizes). `aliases` are other
    spellings DeepSpeed accepts for the same field (pydantic name vs alias);
    giving two of them is an error. What fills an `"auto"` value depends on
    who reads the config: see `zgen.config.autofill`.
    """

    name: str
    kind: str
    default: object = None
    aliases: tuple[str, ...] = ()
    choices: tuple = ()
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    nullable: bool = False
    deprecated: str = ""
    replaced_by: str = ""
    removed: str = ""
    doc: str = ""
    fix_cost: int = 1
    no_bool: bool = False  # a validator rejects true/false although pydantic would read them as 1/0


@dataclass(frozen=True, slots=True)
class Section:
    """A config block: `mode` is strict, lenient or opaque (see the module docstring)."""

    name: str
    mode: str
    keys: tuple[Key, ...] = ()
    sections: tuple[Section, ...] = ()
    deprecated: str = ""
    replaced_by: str = ""
    removed: str = ""
    nullable: bool = False
    bool_form: bool = False  # `zero_optimization: true` (deprecated) is accepted
    doc: str = ""
    key_index: dict = field(default_factory=dict, compare=False, repr=False)
    section_index: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for k in self.keys:
            for name in (k.name, *k.aliases):
                self.key_index[name] = k
        for s in self.sections:
            self.section_index[s.name] = s

    def names(self) -> list[str]:
        """Every spelling this section accepts, for did-you-mean suggestions."""
        return [n for k in self.keys for n in (k.name, *k.aliases) if not k.removed] + [
            s.name for s in self.sections if not s.removed
        ]


def parse_version(text: str) -> Version:
    """`0.19.8`, `0.19`, `v0.19.8+cu121` -> (0, 19, 8); ZgenError for anything else."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[.+-].*)?", text.strip())
    if not m:
        raise ZgenError(
            f"`{text}` is not a DeepSpeed version",
            help="give a release number such as 0.19.8 (`--deepspeed-version`)",
        )
    version = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    if version < OLDEST_VERSION:
        raise ZgenError(
            f"DeepSpeed {text} is older than the oldest release zgen knows ({'.'.join(map(str, OLDEST_VERSION))})",
            help="check against a newer DeepSpeed release with `--deepspeed-version`",
        )
    return version


def _k(name: str, kind: str, **kw) -> Key:
    # The default is filled in from `zgen.deepspeed_defaults` once the tree is built (`_with_defaults`).
    return Key(name, kind, **kw)


def _bools(*names: str) -> tuple[Key, ...]:
    return tuple(_k(n, "bool") for n in names)


def _zero(v: Version) -> Section:
    removed_here = v >= REMOVALS

    def offload_common() -> tuple[Key, ...]:
        return (
            _k("device", "enum", choices=("none", "cpu", "nvme"), fix_cost=2),
            _k("nvme_path", "path", nullable=True),
            _k("pin_memory", "bool"),
        )

    offload_param = Section(
        "offload_param",
        "strict",
        keys=offload_common()
        + (
            _k("buffer_count", "int", ge=0),
            _k("buffer_size", "int", ge=0),
            _k("max_in_cpu", "int", ge=0),
        ),
        nullable=True,
        doc="parameter offload to CPU or NVMe (ZeRO stage 3 only)",
    )
    offload_optimizer = Section(
        "offload_optimizer",
        "strict",
        keys=offload_common()
        + (
            _k("buffer_count", "int", ge=0),
            _k("ratio", "float", ge=0.0, le=1.0),
            _k("cpuadam_cores_perc", "float", ge=0.0, le=1.0),
        )
        + _bools("pipeline_read", "pipeline_write", "fast_init", "super_offload"),
        nullable=True,
        doc="optimizer state offload to CPU or NVMe",
    )
    zenflow = Section(
        "zenflow",
        "strict",
        keys=(
            _k("topk_ratio", "float", gt=0.0),
            _k("select_strategy", "str"),
            _k("select_interval", "any"),
            _k("update_interval", "any"),
            _k("overlap_step", "bool"),
            _k("offload", "bool"),
            _k("auto_ratio", "float", ge=0.0, le=1.0),
            _k("full_warm_up_rounds", "int"),
            _k("pt_reserved_cores_perc", "float", ge=0.0, le=1.0),
            _k("steps_per_epoch", "int", nullable=True),
        ),
        nullable=True,
    )
    leaf_module = Section(
        "leaf_module",
        "strict",
        keys=(_k("classes", "list"), _k("names", "list"), _k("name_suffixes", "list")),
    )
    removed_msg = {
        "mics_shard_size": "MiCS ZeRO-3 sharding was removed",
        "mics_hierarchical_params_gather": "MiCS ZeRO-3 sharding was removed",
        "zeropp_loco_param": "LoCo-Zero++ was removed; drop the key to keep plain ZeRO++ quantized gradients",
    }
    keys = [
        _k("stage", "enum", choices=(0, 1, 2, 3), fix_cost=2, doc="ZeRO stage: 0 off, 1 optimizer states, 2 +gradients, 3 +parameters"),
        *_bools(
            "contiguous_gradients",
            "reduce_scatter",
            "use_multi_rank_bucket_allreduce",
            "allgather_partitions",
            "compute_grad_norm",
            "load_from_fp32_weights",
            "elastic_checkpoint",
            "ignore_unused_parameters",
            "legacy_stage1",
            "round_robin_gradients",
            "parameter_alignment",
            "zero_quantized_weights",
            "zero_quantized_nontrainable_weights",
            "zero_quantized_gradients",
            "memory_efficient_linear",
            "pipeline_loading_checkpoint",
            "override_module_apply",
            "log_trace_cache_warnings",
            "enable_sanity_checks",
            "save_muon_momentum_buffer_in_memory",
        ),
        # None means "true in stage 3, false below" (DeepSpeed decides after reading the stage).
        _k("overlap_comm", "bool", nullable=True),
        _k("reduce_bucket_size", "int", gt=0),
        _k("allgather_bucket_size", "int", ge=0),
        _k("sub_group_size", "int", ge=0),
        _k("stage3_prefetch_bucket_size", "int", ge=0, aliases=("prefetch_bucket_size",)),
        _k("stage3_param_persistence_threshold", "int", ge=0, aliases=("param_persistence_threshold",)),
        _k("stage3_model_persistence_threshold", "int", ge=0, aliases=("model_persistence_threshold",)),
        _k("stage3_max_live_parameters", "int", ge=0, aliases=("max_live_parameters",)),
        _k("stage3_max_reuse_distance", "int", ge=0, aliases=("max_reuse_distance",)),
        _k("stage3_gather_16bit_weights_on_model_save", "bool", aliases=("gather_16bit_weights_on_model_save",)),
        _k("stage3_module_granularity_threshold", "int", aliases=("module_granularity_threshold",)),
        _k("stage3_use_all_reduce_for_fetch_params", "bool", aliases=("use_all_reduce_for_fetch_params",)),
        _k("stage3_allgather_sequential", "bool", aliases=("allgather_sequential",)),
        _k("zero_hpz_partition_size", "int", ge=0),
        _k("cpu_offload", "bool", nullable=True, deprecated="use `offload_optimizer: {\"device\": \"cpu\"}`",
           replaced_by="zero_optimization.offload_optimizer"),
        _k("cpu_offload_param", "bool", nullable=True, deprecated="use `offload_param: {\"device\": \"cpu\"}`",
           replaced_by="zero_optimization.offload_param"),
        _k("cpu_offload_use_pin_memory", "bool", nullable=True,
           deprecated="use `pin_memory` inside `offload_param` or `offload_optimizer`"),
        _k("stage3_gather_fp16_weights_on_model_save", "bool",
           deprecated="use `stage3_gather_16bit_weights_on_model_save`",
           replaced_by="zero_optimization.stage3_gather_16bit_weights_on_model_save"),
        _k("mics_shard_size", "int", removed=removed_msg["mics_shard_size"] if removed_here else ""),
        _k("mics_hierarchical_params_gather", "bool",
           removed=removed_msg["mics_hierarchical_params_gather"] if removed_here else ""),
        _k("zeropp_loco_param", "dict", nullable=True,
           removed=removed_msg["zeropp_loco_param"] if removed_here else ""),
    ]
    return Section(
        "zero_optimization",
        "strict",
        keys=tuple(keys),
        sections=(offload_param, offload_optimizer, zenflow, leaf_module),
        bool_form=True,
        doc="ZeRO settings",
    )


def _precision(v: Version) -> tuple[Section, ...]:
    fp16 = Section(
        "fp16",
        "strict",
        keys=(
            _k("enabled", "bool", fix_cost=2),
            _k("auto_cast", "bool"),
            _k("loss_scale", "float", no_bool=True),
            _k("initial_scale_power", "int"),
            _k("loss_scale_window", "int", no_bool=True),
            _k("hysteresis", "int"),
            _k("consecutive_hysteresis", "bool"),
            _k("min_loss_scale", "int", no_bool=True),
            _k("fp16_master_weights_and_grads", "bool"),
        ),
    )
    bf16_keys = (
        _k("enabled", "bool", fix_cost=2),
        _k("immediate_grad_update", "bool"),
        _k("check_grad_overflow", "bool"),
        _k("bf16_master_weights_and_grads", "bool"),
        _k("bf16_optimizer_states", "bool"),
    )
    # DeepSpeed reads `bf16` with `.get(..., None)` and falls back to `bfloat16`, so `null` is accepted.
    bf16 = Section("bf16", "strict", keys=bf16_keys, nullable=True)
    bfloat16 = Section("bfloat16", "strict", keys=bf16_keys, deprecated="rename the section to `bf16`", replaced_by="bf16")
    return fp16, bf16, bfloat16


def _lenient_sections(v: Version) -> tuple[Section, ...]:
    optimizer = Section(
        "optimizer",
        "lenient",
        keys=(_k("type", "str", nullable=True), _k("params", "dict", nullable=True),
              _k("legacy_fusion", "bool")),
        doc="optimizer DeepSpeed builds (params are checked per optimizer type)",
    )
    scheduler = Section(
        "scheduler",
        "lenient",
        keys=(_k("type", "str", nullable=True), _k("params", "dict", nullable=True)),
    )
    aio = Section(
        "aio",
        "lenient",
        keys=(
            _k("block_size", "int"),
            _k("queue_depth", "int"),
            _k("intra_op_parallelism", "int"),
            _k("single_submit", "bool"),
            _k("overlap_events", "bool"),
            _k("use_gds", "bool"),
        ),
        nullable=True,
    )
    activation_checkpointing = Section(
        "activation_checkpointing",
        "lenient",
        keys=(
            _k("partition_activations", "bool"),
            _k("number_checkpoints", "int", nullable=True),
            _k("contiguous_memory_optimization", "bool"),
            _k("synchronize_checkpoint_boundary", "bool"),
            _k("profile", "bool"),
            _k("cpu_checkpointing", "bool"),
        ),
    )
    flops_profiler = Section(
        "flops_profiler",
        "lenient",
        keys=(
            _k("enabled", "bool"),
            _k("recompute_fwd_factor", "float"),
            _k("profile_step", "int"),
            _k("module_depth", "int"),
            _k("top_modules", "int"),
            _k("detailed", "bool"),
            _k("output_file", "str", nullable=True),
        ),
    )
    pipeline = Section(
        "pipeline",
        "lenient",
        keys=(
            _k("stages", "any"),
            _k("partition", "any"),
            _k("seed_layers", "bool"),
            _k("activation_checkpoint_interval", "int"),
            _k("pipe_partitioned", "bool"),
            _k("grad_partitioned", "bool"),
        ),
    )
    data_types = Section(
        "data_types",
        "lenient",
        keys=(
            _k("grad_accum_dtype", "enum", nullable=True, choices=("fp32", "fp16", "bf16")),
            _k("param_dtype", "str", nullable=True),
            _k("buffer_dtype", "any", nullable=True),
            _k("keep_in_fp32_modules", "any"),
        ),
    )
    checkpoint = Section(
        "checkpoint",
        "lenient",
        keys=(
            _k("tag_validation", "str"),
            _k("load_universal", "bool"),
            _k("use_node_local_storage", "bool"),
            _k("parallel_write", "any"),
            _k("writer", "any", nullable=True),
        ),
    )
    torch_autocast = Section(
        "torch_autocast",
        "lenient",
        keys=(_k("enabled", "bool"), _k("dtype", "str", nullable=True),
              _k("lower_precision_safe_modules", "list", nullable=True)),
    )
    monitors = tuple(
        Section(name, "strict", keys=(_k("enabled", "bool"),) + extra)
        for name, extra in (
            ("tensorboard", (_k("output_path", "str"), _k("job_name", "str"))),
            ("csv_monitor", (_k("output_path", "str"), _k("job_name", "str"))),
            ("wandb", (_k("group", "str", nullable=True), _k("team", "str", nullable=True),
                       _k("project", "str"))),
            ("comet", (_k("samples_log_interval", "int"),) + tuple(
                _k(n, "str", nullable=True)
                for n in ("project", "workspace", "api_key", "experiment_name", "experiment_key", "mode"))
             + (_k("online", "bool", nullable=True),)),
        )
    )
    comms_logger = Section(
        "comms_logger",
        "strict",
        keys=(_k("enabled", "bool"), _k("prof_all", "bool"), _k("prof_ops", "list"),
              _k("verbose", "bool"), _k("debug", "bool")),
    )
    hybrid_engine = Section(
        "hybrid_engine",
        "strict",
        keys=(
            _k("enabled", "bool"),
            _k("max_out_tokens", "int", gt=0),
            _k("inference_tp_size", "int"),
            _k("release_inference_cache", "bool"),
            _k("pin_parameters", "bool"),
            _k("tp_gather_partition_size", "int"),
            _k("enable_cuda_graph", "bool"),
        ),
    )
    # DeepSpeed reads these with `dict.get` and accepts any content.
    opaque = tuple(Section(name, "opaque") for name in ("autotuning", "data_efficiency", "datastates_ckpt",
                                                         "expert_parallel"))
    return (optimizer, scheduler, aio, activation_checkpointing, flops_profiler, pipeline, data_types, checkpoint,
            torch_autocast, comms_logger, hybrid_engine, *monitors, *opaque, *_derived_sections(v))


# Strict sections zgen's hand-written schema does not spell out: taken from the generated model data.
_DERIVED = ("compile", "tensor_parallel", "timers.throughput", "weight_quantization")


def _derived_sections(v: Version) -> tuple[Section, ...]:
    """`compile`, `tensor_parallel`, `timers`, ...: strict as DeepSpeed's pydantic models (from the release the
    data was generated for on); opaque before it, where zgen does not know their models."""
    known = v >= parse_version(MODELS_VERSION)
    out = []
    for path in _DERIVED:
        top, _, sub = path.partition(".")
        if not known:
            out.append(Section(top, "opaque"))
        elif sub:
            out.append(Section(top, "lenient", sections=(_model_section(sub, MODELS[path]["fields"]),)))
        else:
            out.append(_model_section(top, MODELS[path]["fields"]))
    return tuple(out)


def _model_section(name: str, fields: dict, nullable: bool = False) -> Section:
    keys, subs = [], []
    for field_name, f in sorted(fields.items()):
        if f["kind"] == "model":
            subs.extend(_model_section(n, f["fields"], f["nullable"]) for n in (field_name, *f["aliases"]))
            continue
        bounds = f.get("bounds", {})
        choices = tuple(f.get("choices", ()))
        kind = "enum" if choices else f["kind"]
        keys.append(_k(field_name, kind, default=f["default"], aliases=tuple(f["aliases"]), choices=choices,
                       nullable=f["nullable"], ge=bounds.get("ge"), gt=bounds.get("gt"), le=bounds.get("le")))
    return Section(name, "strict", keys=tuple(keys), sections=tuple(subs), nullable=nullable)


_REMOVED_TOP = {
    "nebula": "Nebula checkpointing was removed",
    "compression_training": "the DeepSpeed compression library was removed",
    "amp": "NVIDIA Apex AMP support was removed; use `bf16`, `fp16` or `torch_autocast`",
    "quantize_training": "Mixture-of-Quantization (`quantize_training`) was removed",
    "sparse_gradients": "sparse gradient compression of dense embeddings was removed",
    "eigenvalue": "eigenvalue-based MoQ was removed",
    "sparse_attention": "DeepSpeed Sparse Attention was removed",
    "elasticity": "elastic training was removed; set the batch sizes directly",
    "graph_harvesting": "graph harvesting was removed",
    "curriculum_learning": "top-level `curriculum_learning` was removed; use "
    "`data_efficiency.data_sampling.curriculum_learning`",
    "progressive_layer_drop": "Progressive Layer Dropping was removed",
}


def _top(v: Version) -> Section:
    removed_here = v >= REMOVALS
    keys = (
        _k("train_batch_size", "int", nullable=True, fix_cost=3),
        _k("train_micro_batch_size_per_gpu", "int", nullable=True, fix_cost=2),
        _k("gradient_accumulation_steps", "int", nullable=True, fix_cost=1),
        _k("gradient_clipping", "float"),
        _k("steps_per_print", "int", nullable=True),
        _k("wall_clock_breakdown", "bool"),
        _k("memory_breakdown", "bool"),
        _k("dump_state", "bool"),
        _k("disable_allgather", "bool"),
        _k("disable_python_gc", "any"),
        _k("prescale_gradients", "bool"),
        _k("gradient_predivide_factor", "float"),
        _k("gradient_allreduce_op", "str"),
        _k("communication_data_type", "str", nullable=True),
        _k("seq_parallel_communication_data_type", "str"),
        _k("sequence_parallel_size", "int"),
        _k("managed_gradient_accumulation", "bool"),
        _k("zero_allow_untested_optimizer", "bool"),
        _k("zero_force_ds_cpu_optimizer", "bool"),
        _k("dataloader_drop_last", "bool"),
        _k("vocabulary_size", "int", nullable=True),
        _k("use_data_before_expert_parallelism", "bool"),
        _k("log_level", "any", nullable=True),
        _k("sparse_attention", "any", removed=_REMOVED_TOP["sparse_attention"] if removed_here else ""),
        _k("sparse_gradients", "bool", removed=_REMOVED_TOP["sparse_gradients"] if removed_here else ""),
    )
    removed_sections = tuple(
        Section(name, "opaque", removed=_REMOVED_TOP[name] if removed_here else "")
        for name in _REMOVED_TOP
        if name not in ("sparse_attention", "sparse_gradients", "amp")
    )
    amp = Section(
        "amp",
        "lenient",
        keys=(_k("enabled", "bool"),
              _k("opt_level", "any")),
        removed=_REMOVED_TOP["amp"] if removed_here else "",
    )
    sections = (_zero(v), *_precision(v), *_lenient_sections(v), amp, *removed_sections)
    return Section("", "lenient", keys=keys, sections=sections)


@lru_cache(maxsize=8)
def schema_for(version: Version) -> Section:
    """The top-level section (and everything under it) as DeepSpeed `version` reads it."""
    return _with_defaults(_top(version), "", defaults(version))


def _with_defaults(section: Section, path: str, table: Mapping[str, object]) -> Section:
    """`section` with each key's default taken from `table` (a replaced section reads its replacement's)."""
    path = section.replaced_by or path
    # A key the table does not list keeps what it was built with (the derived sections carry their models' defaults).
    keys = tuple(replace(k, default=table.get(f"{path}.{k.name}" if path else k.name, k.default)) for k in section.keys)
    subs = tuple(_with_defaults(s, f"{path}.{s.name}" if path else s.name, table) for s in section.sections)
    return replace(section, keys=keys, sections=subs, key_index={}, section_index={})


# Parameters each optimizer DeepSpeed builds from the config accepts (DeepSpeed
# passes `optimizer.params` as keyword arguments; anything else is a TypeError
# when the engine starts). Keys are DeepSpeed's lower-cased optimizer names.
_ADAM = ("lr", "bias_correction", "betas", "eps", "weight_decay", "amsgrad", "set_grad_none", "adam_w_mode",
         "torch_adam", "fp32_optimizer_states", "foreach", "maximize", "capturable", "differentiable", "fused",
         "decoupled_weight_decay")
OPTIMIZER_PARAMS: dict[str, tuple[str, ...]] = {
    "adam": _ADAM,
    "adamw": _ADAM,
    "lamb": ("lr", "bias_correction", "betas", "eps", "eps_inside_sqrt", "weight_decay", "max_grad_norm",
             "max_coeff", "min_coeff", "amsgrad"),
    "lion": ("lr", "betas", "weight_decay", "set_grad_none"),
}
# DeepSpeed's own optimizer names (matched case-insensitively) and the torch.optim classes it falls back to.
DEEPSPEED_OPTIMIZERS = ("adagrad", "adam", "adamw", "lamb", "muadam", "muadamw", "musgd", "lion", "muon")
# The 1-bit optimizers, removed in 0.19.8 (DeepSpeed issue #8489).
REMOVED_OPTIMIZERS = ("onebitadam", "zerooneadam", "onebitlamb")
TORCH_OPTIMIZERS = ("ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam",
                    "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam")
# Scheduler parameters (positional ones without a default are required).
SCHEDULER_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "LRRangeTest": ((), ("lr_range_test_min_lr", "lr_range_test_step_size", "lr_range_test_step_rate",
                         "lr_range_test_staircase", "last_batch_iteration")),
    "OneCycle": (("cycle_min_lr", "cycle_max_lr"),
                 ("decay_lr_rate", "cycle_first_step_size", "cycle_second_step_size", "cycle_first_stair_count",
                  "cycle_second_stair_count", "decay_step_size", "cycle_momentum", "cycle_min_mom", "cycle_max_mom",
                  "decay_mom_rate", "last_batch_iteration")),
    "WarmupLR": ((), ("warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration")),
    "WarmupDecayLR": (("total_num_steps",), ("warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type",
                                             "last_batch_iteration")),
    "WarmupCosineLR": (("total_num_steps",), ("warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type",
                                              "last_batch_iteration")),
}
TORCH_SCHEDULERS = ("ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
                    "ExponentialLR", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR",
                    "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR")
