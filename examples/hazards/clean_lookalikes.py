"""Safe patterns that look like ZeRO-3 hazards; `zgen check` must stay silent here.

Each class shows one look-alike: branches on `self.training` or the config,
optional inputs (`labels is not None`), dropout and drop-path randomness
that masks outputs but runs every module, a fused expert parameter sliced
by a data-dependent loop, metadata reads, a module's own parameters and
buffers, tied weights used by calling the module, the rank used only for
arithmetic and logging, and sites guarded per site by `GatheredParameters`,
`register_external_parameter` and `synced_gpus`.
"""

import deepspeed
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))  # own parameter, used in own forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class DropPathBlock(nn.Module):
    def __init__(self, dim: int, drop_path: float) -> None:
        super().__init__()
        self.norm = RMSNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)
        self.drop_path = drop_path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.drop(self.fc(self.norm(x)))
        if self.training and self.drop_path > 0:  # randomness masks the output; fc always runs
            keep = (torch.rand(x.shape[0], 1, 1, device=x.device) >= self.drop_path).to(x.dtype)
            y = y * keep / (1 - self.drop_path)
        return x + y


class FusedExperts(nn.Module):
    def __init__(self, n_experts: int, dim: int) -> None:
        super().__init__()
        self.num_experts = n_experts
        self.gate_up = nn.Parameter(torch.empty(n_experts, 2 * dim, dim))
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor, top_k_index: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        hit = torch.bincount(top_k_index.flatten(), minlength=self.num_experts).nonzero()
        for expert_idx in hit:  # data-dependent loop over slices of one fused parameter
            rows = torch.where(top_k_index == expert_idx)[0]
            if rows.numel() == 0:
                continue
            gate, up = F.linear(x[rows], self.gate_up[expert_idx]).chunk(2, dim=-1)
            out[rows] += self.act(gate) * up
        return out


class TiedLM(nn.Module):
    def __init__(self, vocab: int, dim: int, depth: int, tie: bool = True) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([DropPathBlock(dim, 0.1) for _ in range(depth)])
        self.experts = FusedExperts(4, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("pos_scale", torch.ones(dim), persistent=False)
        self.apply(self._init)  # deepspeed.zero.Init gathers parameters for Module.apply
        if tie:
            self.lm_head.weight = self.embed.weight  # tied; lm_head is called as a module
        self.depth = depth

    def _init(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, ids, labels=None, top_k_index=None, output_hidden_states=False, synced_gpus=False):
        h = self.embed(ids) * self.pos_scale  # a buffer is never partitioned
        if h.dtype != self.lm_head.weight.dtype:  # metadata reads are fine
            h = h.to(self.lm_head.weight.dtype)
        states = []
        for block in self.blocks:
            skip = self.training and torch.rand([]) < 0.1
            if not skip or synced_gpus:  # under ZeRO-3 every rank runs every block
                h = block(h)
            if output_hidden_states:  # config-driven: the same on every rank
                states.append(h)
        if top_k_index is not None:  # an optional input: the caller's convention
            h = h + self.experts(h, top_k_index)
        logits = self.lm_head(h)
        if labels is None:
            return logits
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        if dist.is_initialized() and dist.get_rank() == 0:  # the rank only gates logging
            print(f"loss {loss.item():.3f}")
        return loss


class RegisteredExternal(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, dim)
        deepspeed.zero.register_external_parameter(self, self.embed.weight)
        with deepspeed.zero.GatheredParameters(self.out.weight, modifier_rank=0):
            nn.init.zeros_(self.out.weight)  # initialised while gathered

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.linear(self.out(self.embed(ids)), self.embed.weight)


def shard_offsets(batch: int) -> torch.Tensor:
    """The rank used for arithmetic only."""
    return batch * dist.get_rank() + torch.arange(batch)
