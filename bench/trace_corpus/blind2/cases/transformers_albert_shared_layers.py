"""ALBERT (transformers) sequence classification: one shared layer group is called for every layer (the same
module several times per step, in the same order on every rank)."""
import torch
from transformers import AlbertConfig, AlbertForSequenceClassification

VOCAB = 64


def build_model():
    config = AlbertConfig(
        vocab_size=VOCAB, embedding_size=8, hidden_size=16, num_hidden_layers=4, num_hidden_groups=1,
        inner_group_num=1, num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, classifier_dropout_prob=0.1, num_labels=3,
    )
    return AlbertForSequenceClassification(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.randint(0, 3, (batch_size,), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
