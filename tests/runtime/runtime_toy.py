"""A toy model, its data, explicit plans and the plain-PyTorch reference for the runtime tests.

Shapes are odd on purpose (13, 17, 11) so every flat buffer needs padding,
`gate` has a single element (smaller than any world size above 1), the
output head is tied to the embedding, and `proj` reads the embedding through
an unregistered reference (a hidden external read).

Every optimizer step trains on one global batch of `GLOBAL` sequences; a run
with world size W and accumulation A splits it into W x A equal micro
batches, so any (W, A) computes the same update as the reference, which
takes the whole global batch at once.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from zgen.schedule.plan import Plan, Unit

VOCAB, DIM, FFN, LAYERS, SEQ = 11, 13, 17, 3, 5
GLOBAL = 12  # sequences per optimizer step: divisible by 1, 2, 3, 4, 6
LR, BETAS, WD, CLIP = 2e-2, (0.9, 0.95), 0.1, 0.5


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.up = nn.Linear(DIM, FFN)
        self.down = nn.Linear(FFN, DIM, bias=False)
        self.gate = nn.Parameter(torch.full((1,), 0.7))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.gate * self.down(F.gelu(self.up(self.norm(x))))


class Proj(nn.Module):
    """Reads the embedding matrix without registering it (a ZG3xx-style external read)."""

    def __init__(self, embed: nn.Embedding) -> None:
        super().__init__()
        object.__setattr__(self, "source", embed)  # not a submodule: its parameter is not registered here
        self.mix = nn.Linear(DIM, DIM, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.source.weight
        return x + 0.1 * self.mix(F.linear(F.linear(x, w), w.t()))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.proj = Proj(self.embed)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.head.weight = self.embed.weight
        self.scale = nn.Parameter(torch.tensor([1.0, 0.0]))
        self.register_buffer("ramp", torch.linspace(-1.0, 1.0, VOCAB))

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h)
        h = self.proj(h)
        logits = self.head(self.norm(h)) * self.scale[0] + self.scale[1] * self.ramp
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


class CheckpointedNet(Net):
    """`Net` under activation checkpointing (the same arithmetic, so the same reference).

    `where="units"` recomputes each block and `proj` whole (`proj` is in the root's part of
    the default plan and reads the embedding); `where="inside"` recomputes only each
    block's `up` projection, a part of a unit. `reentrant` picks torch's implementation.
    """

    def __init__(self, where: str = "units", reentrant: bool = False) -> None:
        super().__init__()
        self.where, self.reentrant = where, reentrant
        if where == "inside":
            for block in self.blocks:
                block.__class__ = _PartlyRecomputedBlock  # same parameters and names, another forward
                block.reentrant = reentrant

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.where == "inside":
            return super().forward(ids, labels)
        h = self.embed(ids)
        for block in self.blocks:
            h = checkpoint(block, h, use_reentrant=self.reentrant)
        h = checkpoint(self.proj, h, use_reentrant=self.reentrant)
        logits = self.head(self.norm(h)) * self.scale[0] + self.scale[1] * self.ramp
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


class _PartlyRecomputedBlock(Block):
    reentrant: bool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        up = checkpoint(self.up, self.norm(x), use_reentrant=self.reentrant)
        return x + self.gate * self.down(F.gelu(up))


def init_fn(module: nn.Module) -> None:
    """Initialises every parameter (usable on a meta-built model)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.3)
        if getattr(module, "bias", None) is not None:
            nn.init.uniform_(module.bias, -0.1, 0.1)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, Block):
        nn.init.constant_(module.gate, 0.7)
    elif isinstance(module, Net):
        module.scale.data.copy_(torch.tensor([1.0, 0.0]))
        module.ramp.copy_(torch.linspace(-1.0, 1.0, VOCAB))


def make_model(seed: int = 0, model: Callable[[], Net] | None = None) -> Net:
    """The initial model every run starts from (`model`: a factory of a `Net` subclass to build instead).

    Seeded before the constructor, as `torch.manual_seed(seed); zr.initialize(Net, init_fn=init_fn)` is: the
    runtime's weights are those of `Net().apply(init_fn)` from that seed.
    """
    torch.manual_seed(seed)
    model = model() if model is not None else Net()
    model.apply(init_fn)
    return model


def global_batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + step)
    ids = torch.randint(0, VOCAB, (GLOBAL, SEQ), generator=g)
    labels = torch.randint(0, VOCAB, (GLOBAL, SEQ), generator=g)
    return ids, labels


def micro_batch(step: int, micro: int, rank: int, world: int, accum: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank `rank`'s micro batch `micro` of optimizer step `step`."""
    ids, labels = global_batch(step)
    size = GLOBAL // (world * accum)
    i = (micro * world + rank) * size
    return ids[i : i + size], labels[i : i + size]


def config(world: int, accum: int, precision: str = "fp32", persistence: int = 0, **extra) -> dict:
    """The DeepSpeed config of a run at `world` ranks and `accum` micro-steps; `extra` replaces top-level keys."""
    cfg = {
        "train_batch_size": GLOBAL,
        "train_micro_batch_size_per_gpu": GLOBAL // (world * accum),
        "gradient_accumulation_steps": accum,
        "gradient_clipping": CLIP,
        "bf16": {"enabled": precision == "bf16"},
        "optimizer": {"type": "AdamW", "params": {"lr": LR, "betas": list(BETAS), "eps": 1e-8, "weight_decay": WD}},
        "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": persistence},
    }
    cfg.update(extra)
    return cfg


# Frozen (requires_grad=False) in the frozen scenarios: part of a unit, a whole default-plan unit,
# the tied embedding that `proj` reads as an external, and a persistent parameter.
FROZEN = ("blocks.0.up.weight", "blocks.1.norm.weight", "blocks.1.norm.bias", "blocks.1.up.weight",
          "blocks.1.up.bias", "blocks.1.down.weight", "blocks.1.gate", "embed.weight", "blocks.2.gate")


def freeze(model: Net) -> Net:
    for name, p in model.named_parameters():
        if name in FROZEN:
            p.requires_grad_(False)
    return model


SGD_LR, SGD_MOMENTUM = 0.1, 0.9


def sgd(params) -> torch.optim.Optimizer:
    """The client optimizer of the SGD scenarios (momentum and weight decay)."""
    return torch.optim.SGD(params, lr=SGD_LR, momentum=SGD_MOMENTUM, weight_decay=WD)


def reference(steps: int, seed: int = 0, frozen: bool = False, optimizer=None) -> tuple[dict[str, torch.Tensor], list[float], list[float]]:
    """Plain single-process training on the global batches: final state dict, per-step losses and grad norms.

    `optimizer`: a factory over the parameters (default: the config's AdamW).
    """
    model = freeze(make_model(seed)) if frozen else make_model(seed)
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = optimizer(trained) if optimizer else torch.optim.AdamW(trained, lr=LR, betas=BETAS, eps=1e-8, weight_decay=WD)
    losses, norms = [], []
    for step in range(steps):
        loss = model(*global_batch(step))
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(trained, CLIP).item())
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, losses, norms


def explicit_plan() -> Plan:
    """A grouping unlike the default: nested units, a parameterless unit, externals, depth-2 prefetch."""
    units = (
        Unit(module="", params=("norm.weight", "norm.bias", "scale"), reshard_after_forward=False),
        Unit(module="embed", params=("embed.weight",)),
        Unit(module="blocks.0", params=("blocks.0.norm.weight", "blocks.0.norm.bias", "blocks.0.up.weight",
                                        "blocks.0.up.bias", "blocks.0.down.weight")),
        Unit(module="blocks.1", params=("blocks.1.norm.weight", "blocks.1.norm.bias", "blocks.1.down.weight")),
        Unit(module="blocks.1.up", params=("blocks.1.up.weight", "blocks.1.up.bias")),
        Unit(module="blocks.2", params=("blocks.2.norm.weight", "blocks.2.norm.bias", "blocks.2.up.weight",
                                        "blocks.2.up.bias", "blocks.2.down.weight"), reshard_after_forward=False),
        Unit(module="proj", params=("proj.mix.weight",), external=("embed.weight",)),
        Unit(module="head", params=(), external=("embed.weight",)),  # head.weight is tied to embed.weight
    )
    forward = ("", "embed", "blocks.0", "blocks.1", "blocks.1.up", "blocks.2", "proj", "head")
    backward = ("", "head", "proj", "blocks.2", "blocks.1", "blocks.1.up", "blocks.0", "embed")
    fwd_pre = (("embed", "blocks.0"), ("blocks.1",), ("blocks.1.up",), (), ("blocks.2", "proj"), (), ("head",), ())
    bwd_pre = (("head",), ("proj",), ("blocks.2", "blocks.1"), ("blocks.1.up",), ("blocks.0",), ("embed",), (), ())
    return Plan(
        units=units,
        forward_order=forward,
        backward_order=backward,
        forward_prefetch=fwd_pre,
        backward_prefetch=bwd_pre,
        persistent=tuple(f"blocks.{i}.gate" for i in range(LAYERS)),
    )


def train(engine, steps: int, world: int, rank: int, accum: int, start: int = 0) -> list[float]:
    """Run `steps` optimizer steps on `engine`; returns this rank's micro-batch losses."""
    losses = []
    for step in range(start, start + steps):
        for micro in range(accum):
            loss = engine(*micro_batch(step, micro, rank, world, accum))
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
    return losses


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict[str, float]:
    assert a.keys() == b.keys(), (sorted(a.keys() ^ b.keys()))
    return {k: (a[k].float() - b[k].float()).abs().max().item() for k in a}
