"""zgen.runtime accepts every plan the planner draws for the example models and trains one step with it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from zgen.config.resolved import ZeroSpec
from zgen.plan.planner import build_plan
from zgen.plan.trace import build_meta_model, load_callable, parse_target, trace_model

REPO = Path(__file__).resolve().parents[2]
CONFIG = {
    "train_batch_size": 2,
    "train_micro_batch_size_per_gpu": 1,
    "gradient_accumulation_steps": 2,
    "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100},
}


@pytest.mark.parametrize("example", ["tied", "encdec", "moe", "child_weight"])
def test_runtime_trains_with_the_plan(example):
    import zgen.runtime as zr

    t = parse_target(f"examples/models/{example}.py:build_model", "--model")
    factory = load_callable(t, REPO)
    meta = build_meta_model(factory, t)
    plan = build_plan(meta, trace_model(meta, root=REPO, batch_size=1, seq_len=8),
                      ZeroSpec(stage=3, param_persistence_threshold=100, max_reuse_distance=0))
    torch.manual_seed(0)
    module = factory.__globals__
    engine = zr.initialize(model=factory, config=CONFIG, plan=plan, device="cpu", init_fn=module.get("init_weights"))
    assert engine.plan == plan
    ids = torch.randint(0, 64, (1, 8))
    losses = []
    for _ in range(2):
        loss = engine(input_ids=ids, labels=ids)
        engine.backward(loss)
        engine.step()
        losses.append(float(loss.detach()))
    assert all(torch.isfinite(torch.tensor(losses)))
    assert engine.last_grad_norm is not None and engine.last_grad_norm > 0
