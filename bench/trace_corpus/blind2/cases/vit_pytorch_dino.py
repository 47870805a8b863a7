"""vit-pytorch's DINO self-distillation around a ViT. Dino.__init__ runs its own forward on a mock image (to
create the lazy projector and the teacher), and that first forward deep-copies the student into the teacher;
the entry updates the teacher by EMA (`update_moving_average`) after the optimizer step, as its README does."""
import torch
from vit_pytorch import ViT
from vit_pytorch.dino import Dino


def build_model():
    vit = ViT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=1, heads=2, mlp_dim=32, dim_head=8)
    return Dino(vit, image_size=16, hidden_layer="to_latent", projection_hidden_size=16, projection_layers=2,
                num_classes_K=32)


def inputs(batch_size, seq_len, generator):
    return (torch.rand(batch_size, 3, 16, 16, generator=generator),)


def entry(model, batch):
    model.update_moving_average()
