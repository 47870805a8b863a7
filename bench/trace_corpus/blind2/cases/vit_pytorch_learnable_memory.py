"""vit-pytorch's learnable-memory adapter fine-tuning a frozen ViT: Adapter.__init__ sizes itself from the built
ViT's cls_token and pos_embedding, and Adapter.forward calls the ViT's non-forward method `img_to_tokens`
(which reads the ViT's own cls_token and pos_embedding) before running its transformer child."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from vit_pytorch.learnable_memory_vit import ViT, Adapter


class Finetune(nn.Module):
    def __init__(self):
        super().__init__()
        vit = ViT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=1, heads=2, mlp_dim=32, dim_head=8)
        self.adapter = Adapter(vit=vit, num_memories_per_layer=4, num_classes=3)

    def forward(self, images, labels):
        return F.cross_entropy(self.adapter(images), labels)


def build_model():
    return Finetune()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 3, (batch_size,), generator=generator)
