"""Gathering every rank's features for a loss over the global batch, with gradients.

A contrastive loss (CLIP's) compares each sample with every other sample of
the batch; under data parallelism each rank holds only its own slice, so the
loss function gathers the other ranks' features first:

```python
from zgen.runtime.gather import all_gather_with_grad

def clip_loss(outputs, batch):
    image = all_gather_with_grad(F.normalize(outputs.image_embeds, dim=-1))  # (world x micro batch, dim)
    text = all_gather_with_grad(F.normalize(outputs.text_embeds, dim=-1))
    logits = outputs.logit_scale.exp() * text @ image.t()
    target = torch.arange(len(text), device=text.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2
```

Every rank then computes the same loss over the global batch. The gather's
backward sums the gradient of each rank's slice over the ranks (a
reduce-scatter), and the engine averages gradients over the ranks, so the
update equals plain training on the whole batch. Outside a process group
(world size 1, or while `zgen plan` traces the model) it returns its input.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = ["all_gather_with_grad"]


def all_gather_with_grad(tensor: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """Every rank's `tensor`, concatenated along `dim` in rank order; gradients flow back to each rank's slice."""
    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return tensor
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(tensor.contiguous()), dim=dim)
