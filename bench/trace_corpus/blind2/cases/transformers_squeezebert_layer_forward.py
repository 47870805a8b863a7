"""SqueezeBERT (transformers) sequence classification. Its encoder calls `layer.forward(...)` directly, skipping
the layer's hooks; the layer owns no parameter itself (its attention, convolutions and norms are its children,
called as modules), so nothing is left ungathered."""
import torch
from transformers import SqueezeBertConfig, SqueezeBertForSequenceClassification

VOCAB = 64


def build_model():
    config = SqueezeBertConfig(
        vocab_size=VOCAB, hidden_size=16, embedding_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, q_groups=2, k_groups=2, v_groups=2,
        post_attention_groups=1, intermediate_groups=2, output_groups=2, num_labels=3,
    )
    return SqueezeBertForSequenceClassification(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.randint(0, 3, (batch_size,), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
