"""LayoutLMv3 (transformers) token classification on text + boxes: the encoder builds its relative position
biases by indexing the weights of its child Linear layers (`rel_pos_bias`, `rel_pos_x_bias`, `rel_pos_y_bias`)
instead of calling them."""
import torch
from transformers import LayoutLMv3Config, LayoutLMv3ForTokenClassification

VOCAB = 64


def build_model():
    config = LayoutLMv3Config(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, max_2d_position_embeddings=128, coordinate_size=3, shape_size=2,
        rel_pos_bins=8, max_rel_pos=16, rel_2d_pos_bins=8, max_rel_2d_pos=32, visual_embed=False,
        has_relative_attention_bias=True, has_spatial_attention_bias=True, num_labels=3,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=1,
    )
    return LayoutLMv3ForTokenClassification(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    x0 = torch.randint(0, 60, (batch_size, seq_len, 1), generator=generator)
    y0 = torch.randint(0, 60, (batch_size, seq_len, 1), generator=generator)
    bbox = torch.cat([x0, y0, x0 + 10, y0 + 10], dim=-1)
    labels = torch.randint(0, 3, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "bbox": bbox, "attention_mask": torch.ones_like(ids), "labels": labels}
