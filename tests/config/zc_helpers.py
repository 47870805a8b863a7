"""Small helpers shared by the config tests."""

from __future__ import annotations

from zgen.config import check_config
from zgen.launch import LaunchFacts, ModelShape
from zgen.settings import parse_size


def facts(**kw) -> LaunchFacts:
    """LaunchFacts from example-style keys: world_size, gpus_per_node, gpu_mem ("80GiB"), params ("1.2B"), deepspeed."""
    model = None
    if "params" in kw:
        params = kw["params"]
        model = ModelShape(params=parse_size(params) if isinstance(params, str) else params,
                           **{k: kw[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len")
                              if k in kw})
    gpu_mem = kw.get("gpu_mem")
    return LaunchFacts(
        world_size=kw.get("world_size"),
        gpus_per_node=kw.get("gpus_per_node"),
        gpu_mem_bytes=parse_size(gpu_mem) if isinstance(gpu_mem, str) else gpu_mem,
        model=model,
        deepspeed_version=kw.get("deepspeed", "0.19.8"),
        consumer=kw.get("consumer"),
    )


def check(text: str | bytes, rule_files=(), path: str = "ds_config.json", **kw):
    data = text.encode() if isinstance(text, str) else text
    return check_config(path, data, facts(**kw), rule_files)


def codes(report) -> list[str]:
    return [f.code for f in report.findings]
