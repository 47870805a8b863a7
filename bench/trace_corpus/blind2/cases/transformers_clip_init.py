"""CLIP (transformers) contrastive training. Building it runs `_init_weights` through `apply`: on the embeddings,
attention, MLP and the model itself it writes the weights of their built children. The entry embeds images with
`get_image_features`, which only calls submodules."""
import torch
from transformers import CLIPConfig, CLIPModel

VOCAB = 64


def build_model():
    config = CLIPConfig(
        text_config={"vocab_size": VOCAB, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 16, "projection_dim": 8,
                     "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 16, "patch_size": 8, "projection_dim": 8},
        projection_dim=8,
    )
    return CLIPModel(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    ids[:, -1] = 2
    pixels = torch.randn(batch_size, 3, 16, 16, generator=generator)
    return {"input_ids": ids, "pixel_values": pixels, "return_loss": True}


def entry(model, batch):
    model.eval()
    with torch.no_grad():
        model.get_image_features(pixel_values=batch["pixel_values"])
