"""ViT-MAE (transformers) pretraining with random masking. ViTMAEEmbeddings.__init__ ends with
`initialize_weights`, which takes `.data` of its built patch projection's weight and re-initialises it in place."""
import torch
from transformers import ViTMAEConfig, ViTMAEForPreTraining


def build_model():
    config = ViTMAEConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=16,
        patch_size=4, decoder_hidden_size=16, decoder_num_hidden_layers=1, decoder_num_attention_heads=2,
        decoder_intermediate_size=32, mask_ratio=0.75, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    return ViTMAEForPreTraining(config)


def inputs(batch_size, seq_len, generator):
    return {"pixel_values": torch.randn(batch_size, 3, 16, 16, generator=generator)}
