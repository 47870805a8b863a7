"""ZG1xx: parameters touched where ZeRO-3 has them partitioned.

A small encoder and its training script with five mistakes that only show
under ZeRO-3 (`zgen check examples/hazards/zg1_param_access.py`):

* `__init__` initialises and measures a submodule after building it
  (ZG103, ZG102); `deepspeed.zero.Init` partitioned it already;
* `forward` clamps a submodule's weight in place (ZG101) and builds a
  projection lazily (ZG106);
* the script counts, clips and saves parameters of the wrapped model the
  way one would without ZeRO-3 (ZG102, ZG107, ZG108).
"""

import deepspeed
import torch
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab: int, dim: int, n_out: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        nn.init.normal_(self.embed.weight, std=0.02)  # ZG103: the embedding is partitioned by now
        self.proj = nn.Linear(self.embed.weight.shape[1], dim)  # ZG102: shape is torch.Size([0])
        self.head = None
        self.n_out = n_out

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.proj.weight.data.clamp_(-1.0, 1.0)  # ZG101: writes a copy ZeRO-3 throws away
        h = F.gelu(self.proj(self.embed(ids)))
        if self.head is None:
            self.head = nn.Linear(h.shape[-1], self.n_out)  # ZG106: a parameter nobody partitions
        return self.head(h)


def train(config: dict, loader) -> None:
    model = Encoder(vocab=1000, dim=64, n_out=10)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    print(sum(p.numel() for p in engine.module.parameters()))  # ZG102: counts 0 per parameter
    for ids, labels in loader:
        loss = F.cross_entropy(engine(ids), labels)
        engine.backward(loss)
        torch.nn.utils.clip_grad_norm_(engine.module.parameters(), 1.0)  # ZG107: clips nothing
        engine.step()
    torch.save(engine.module.state_dict(), "encoder.pt")  # ZG108: saves empty placeholders
