"""vit-pytorch's DeiT-style distillation: DistillWrapper passes its own `distillation_token` parameter into the
student's forward (the wrapper's forward is still running, so its parameter is gathered), the frozen teacher
ViT runs under no_grad as a module, and the student reads its own cls_token and pos_embedding in its own
forward."""
import torch
from vit_pytorch import ViT
from vit_pytorch.distill import DistillableViT, DistillWrapper


def build_model():
    teacher = ViT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=1, heads=2, mlp_dim=32, dim_head=8)
    teacher.requires_grad_(False)
    student = DistillableViT(image_size=16, patch_size=8, num_classes=5, dim=16, depth=1, heads=2, mlp_dim=32,
                             dim_head=8)
    return DistillWrapper(teacher=teacher, student=student, temperature=3.0, alpha=0.5)


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
