"""Clean: classifier-free guidance training (denoising-diffusion-pytorch): the class condition is dropped per
sample with torch.where against a learned null embedding; no module is skipped."""
import torch
from denoising_diffusion_pytorch.classifier_free_guidance import GaussianDiffusion, Unet

CLASSES = 4


def build_model():
    unet = Unet(dim=8, num_classes=CLASSES, cond_drop_prob=0.5, dim_mults=(1, 2), channels=3, attn_dim_head=8,
                attn_heads=2)
    return GaussianDiffusion(unet, image_size=8, timesteps=10)


def inputs(batch_size, seq_len, generator):
    images = torch.rand(batch_size, 3, 8, 8, generator=generator)
    return {"img": images, "classes": torch.randint(0, CLASSES, (batch_size,), generator=generator)}
