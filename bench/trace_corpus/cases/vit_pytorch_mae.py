"""vit-pytorch MAE around a ViT built first: MAE.__init__ sizes itself from the built encoder's weights, and
MAE.forward adds the encoder's own pos_embedding without the encoder running."""
import torch
from vit_pytorch import ViT
from vit_pytorch.mae import MAE


def build_model():
    encoder = ViT(image_size=16, patch_size=8, num_classes=10, dim=16, depth=1, heads=2, mlp_dim=32, dim_head=8)
    return MAE(encoder=encoder, masking_ratio=0.5, decoder_dim=16, decoder_depth=1, decoder_heads=2,
               decoder_dim_head=8)


def inputs(batch_size, seq_len, generator):
    return (torch.randn(batch_size, 3, 16, 16, generator=generator),)
