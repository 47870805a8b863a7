"""A `torch._foreach_*` operation handed a collection of a module's parameters computes with every tensor of each
list, and an in-place one (`_foreach_mul_`) writes every tensor of its first list: in a module's method run on the
built model (`params.py: _Finder._foreach_lists`) and in code a built model is handed to (`provenance`), those are
partitioned placeholders. Look-alikes: foreach operations on plain tensors or gradients, and inside a gather."""

from __future__ import annotations

from tests.model.package_check import found_in_package

AGENT = """
    import copy
    import torch
    from torch import nn


    class Agent(nn.Module):
        def __init__(self, d, tau):
            super().__init__()
            self.qf = nn.Linear(d, 1)
            self.qf_target = nn.Linear(d, 1)
            self.tau = tau

        def forward(self, x):
            return self.qf(x)

        @torch.no_grad()
        def target_ema(self):
            targets = list(self.qf_target.parameters())
            updates = torch._foreach_mul(list(self.qf.parameters()), self.tau)
            torch._foreach_mul_(targets, 1 - self.tau)
            torch._foreach_add_(targets, updates)
"""

SOFT_UPDATE = """
    import torch
    from torch import nn


    @torch.no_grad()
    def soft_update(target: nn.Module, source: nn.Module, tau: float):
        tgt = list(target.parameters())
        src = list(source.parameters())
        torch._foreach_lerp_(tgt, src, tau)
"""

SAFE = """
    import deepspeed
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.enc = nn.Linear(d, d)
            self.tgt = nn.Linear(d, d)
            self.stats = [torch.zeros(d), torch.zeros(d)]

        def forward(self, x):
            return self.enc(x)

        @torch.no_grad()
        def decay_stats(self, factor):
            torch._foreach_mul_(self.stats, factor)
            grads = [p.grad for p in self.parameters() if p.grad is not None]
            return torch._foreach_norm(grads)

        @torch.no_grad()
        def ema(self, tau):
            with deepspeed.zero.GatheredParameters(list(self.parameters()), modifier_rank=0):
                torch._foreach_lerp_(list(self.tgt.parameters()), list(self.enc.parameters()), tau)
"""


def test_module_method_foreach_on_parameter_lists(tmp_path):
    found = found_in_package(tmp_path, {"agent.py": AGENT}, "agent.py", prefix="ZG1")
    assert ("ZG109", 20) in found  # the operand `list(self.qf.parameters())`
    assert ("ZG101", 21) in found and ("ZG101", 22) in found  # the in-place targets


def test_handed_model_foreach_operand_read(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": SOFT_UPDATE}, "utils.py", prefix="ZG1")
    assert ("ZG109", 10) in found  # `src`, read by the lerp
    assert ("ZG101", 10) in found  # `tgt`, written


def test_plain_tensors_grads_and_gathered_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"net.py": SAFE}, "net.py", prefix="ZG1") == []
