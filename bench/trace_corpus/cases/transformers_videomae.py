"""VideoMAE (transformers) video classifier: the (SDPA) self-attention feeds its key/value/query children's
weights to F.linear instead of calling those Linears (to use its own separate biases)."""
import torch
from transformers import VideoMAEConfig, VideoMAEForVideoClassification


def build_model():
    config = VideoMAEConfig(
        image_size=16, patch_size=8, num_channels=3, num_frames=2, tubelet_size=2, hidden_size=16,
        num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_labels=3,
    )
    return VideoMAEForVideoClassification(config)


def inputs(batch_size, seq_len, generator):
    video = torch.randn(batch_size, 2, 3, 16, 16, generator=generator)
    labels = torch.randint(0, 3, (batch_size,), generator=generator)
    return {"pixel_values": video, "labels": labels}
