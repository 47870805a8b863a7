"""Facts about the launch that a config alone does not say: world size, GPUs, model size.

`LaunchFacts` flows from the CLI (flags and `[tool.zgen]`) into the config
solver and the memory model; `ModelShape` comes from the static model index
(literal shapes) or from a trace, and feeds the activation estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ModelShape", "LaunchFacts", "DEFAULT_DEEPSPEED_VERSION"]

# The DeepSpeed release whose schema and defaults zgen assumes unless told otherwise.
DEFAULT_DEEPSPEED_VERSION = "0.19.8"


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
