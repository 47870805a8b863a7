"""Classifier-free guidance (denoising-diffusion-pytorch); the entry samples with a guidance scale:
Unet.forward_with_cond_scale calls `self.forward(...)` directly (no hooks), and the unconditional pass reads the
Unet's own null_classes_emb."""
import torch
from denoising_diffusion_pytorch.classifier_free_guidance import GaussianDiffusion, Unet

CLASSES = 4


def build_model():
    unet = Unet(dim=8, num_classes=CLASSES, cond_drop_prob=0.5, dim_mults=(1, 2), channels=3, attn_dim_head=8,
                attn_heads=2)
    return GaussianDiffusion(unet, image_size=8, timesteps=4)


def inputs(batch_size, seq_len, generator):
    images = torch.rand(batch_size, 3, 8, 8, generator=generator)
    return {"img": images, "classes": torch.randint(0, CLASSES, (batch_size,), generator=generator)}


def entry(model, batch):
    model.eval()
    model.sample(classes=batch["classes"][:1], cond_scale=3.0)
