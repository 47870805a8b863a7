"""What fills an `"auto"` value, and with what.

HF Trainer (`transformers/integrations/deepspeed.py`, `HfTrainerDeepSpeedConfig`)
writes the ZeRO bucket sizes from the model's `hidden_size` once the model is
known; the other `"auto"` keys it fills from `TrainingArguments` (see the
`auto` and `hf_default` fields of the schema keys).
"""

from __future__ import annotations

from zgen.launch import ModelShape

__all__ = ["hf_fill"]


def hf_fill(model: ModelShape | None) -> dict[str, int]:
    """What HF Trainer writes into the `"auto"` ZeRO bucket sizes, given the model's hidden size."""
    if model is None or not model.hidden:
        return {}
    h = model.hidden
    return {
        "zero_optimization.reduce_bucket_size": h * h,
        "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * h * h),
        "zero_optimization.stage3_param_persistence_threshold": 10 * h,
    }
