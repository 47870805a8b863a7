"""The one prefetch rule (`zgen.schedule.prefetch`), on hand-made plans, and its use by the runtime's default plan."""

from __future__ import annotations

import pytest

from zgen.schedule.prefetch import prefetch_lists
from zgen.schedule.plan import Plan, Unit


def chain(sizes: dict[str, int], keep_root: bool = True) -> tuple[Plan, dict[str, int]]:
    """The root, then blocks b0, b1, ... in order; the root stays gathered (as in the default plan)."""
    blocks = [m for m in sizes if m]
    units = tuple(Unit(module=m, params=(f"{m or 'root'}.w",), reshard_after_forward=not (keep_root and m == ""))
                  for m in ["", *blocks])
    plan = Plan(units=units, forward_order=("", *blocks), backward_order=("", *reversed(blocks)))
    return plan, sizes


@pytest.mark.parametrize(
    "bucket, max_live, forward",
    [
        (10, 10**9, [("b0", "b1"), ("b2",), (), ()]),  # the unit that fills the bucket is still issued
        (5, 10**9, [("b0",), ("b1",), ("b2",), ()]),  # a unit larger than the bucket goes alone
        (0, 10**9, [(), (), (), ()]),  # bucket 0: off
        (10**9, 4 + 6, [("b0",), (), (), ()]),  # max live minus what is live (root 4, then b0 6) leaves no room
    ],
)
def test_bucket_and_max_live(bucket, max_live, forward):
    plan, numel = chain({"": 4, "b0": 6, "b1": 6, "b2": 6})
    fwd, bwd = prefetch_lists(plan, numel, bucket, max_live)
    assert [tuple(x) for x in fwd] == forward
    assert len(bwd) == len(plan.backward_order)


def test_units_already_gathered_are_not_issued_again():
    plan, numel = chain({"": 4, "b0": 6, "b1": 6})
    fwd, bwd = prefetch_lists(plan, numel, 10**9, 10**9)
    assert fwd == (("b0", "b1"), (), ())
    assert bwd == (("b1", "b0"), (), ())  # the root was kept; the blocks were freed after their forward


def test_the_runtime_default_plan_follows_the_same_rule():
    import torch
    from torch import nn

    import zgen.runtime as zr

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(4, 4)  # 16 elements
            self.blocks = nn.ModuleList(nn.Linear(4, 4, bias=False) for _ in range(3))  # 16 each

        def forward(self, x):
            return self.embed(x).sum()

    config = {"train_batch_size": 1, "optimizer": {"type": "AdamW", "params": {}},
              "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0,
                                    "stage3_prefetch_bucket_size": 20}}
    with torch.device("meta"):
        plan = zr.default_plan(Net(), config)
    numel = {u.module: 16 for u in plan.units}
    fwd, _ = prefetch_lists(plan, numel, 20, 10**9)
    assert plan.forward_prefetch == fwd == (("blocks.0", "blocks.1"), ("blocks.2",), (), ())
