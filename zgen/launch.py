"""Facts about the launch that a config alone does not say: world size, GPUs, model size.

`LaunchFacts` flows from the CLI (flags and `[tool.zgen]`) into the config
solver and the memory model; `ModelShape` comes from the static model index
(literal shapes) or from a trace, and feeds the activation estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ModelShape", "LaunchFacts", "DEFAULT_DEEPSPEED_VERSION", "CONFIG_FIELDS", "config_field"]

# The DeepSpeed release whose schema and defaults zgen assumes unless told otherwise.
DEFAULT_DEEPSPEED_VERSION = "0.19.8"

# Where a model's config states each dimension: attribute names in the order they are tried (transformers,
# GPT-2 and nanoGPT, Megatron- and llama-style configs). The static count (`zgen.model.shape`, on the config
# class's defaults) and `zgen plan` (on the built model's `config`) read the same names.
CONFIG_FIELDS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "hidden": ("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "hidden_dim"),
    "heads": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "kv_heads": ("num_key_value_heads", "n_kv_heads", "num_kv_heads"),
    "ffn": ("intermediate_size", "ffn_dim", "d_ff", "ffn_hidden_size", "n_inner"),
    "vocab": ("vocab_size", "n_vocab"),
    "seq_len": ("max_position_embeddings", "n_positions", "block_size", "max_seq_len"),
}


def config_field(lookup: Callable[[str], object], dimension: str) -> tuple[str, int] | None:
    """The first name of `dimension` in `CONFIG_FIELDS` for which `lookup(name)` is a positive int, with that int."""
    for name in CONFIG_FIELDS[dimension]:
        value = lookup(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return name, value
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelShape:
    """What the memory model needs to know about a transformer-like model.

    `params` is the total parameter count (tied parameters counted once). The
    dimensions are optional; without them only model states are estimated.
    `source` says where the numbers came from (for messages), e.g.
    `examples/llama/model.py:12 (LlamaConfig defaults)` or `--params`.
    """

    params: int
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn: int | None = None
    vocab: int | None = None
    seq_len: int | None = None
    largest_layer_params: int | None = None
    # Saved for backward per sample at `seq_len`, measured by the trace; used when `hidden` is unknown.
    traced_activation_bytes: int | None = None
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchFacts:
    """Launch facts given on the command line or in `[tool.zgen]`; None means unknown.

    With `world_size` None, the solver reports for which world sizes (up to a
    bound) the config is valid instead of assuming one.
    """

    world_size: int | None = None
    gpus_per_node: int | None = None
    gpu_mem_bytes: int | None = None
    model: ModelShape | None = None
    deepspeed_version: str = DEFAULT_DEEPSPEED_VERSION
    # Who reads the config (`deepspeed`, `hf`, `accelerate`, `zgen`; None: infer) and why that one was chosen.
    consumer: str | None = None
    consumer_reason: str = ""
