"""MobileBERT (transformers) masked-LM training: the prediction head multiplies by its children's weights
(`decoder.weight`, tied to the word embeddings, and `dense.weight`) without calling them. The entry grows the
vocabulary with `resize_token_embeddings`, as after adding tokens to a tokenizer."""
import torch
from transformers import MobileBertConfig, MobileBertForMaskedLM

VOCAB = 64


def build_model():
    config = MobileBertConfig(
        vocab_size=VOCAB, hidden_size=32, embedding_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, intra_bottleneck_size=16, true_hidden_size=16, num_feedforward_networks=1,
        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    return MobileBertForMaskedLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    labels = ids.clone()
    labels[:, ::2] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def entry(model, batch):
    model.resize_token_embeddings(VOCAB + 8)
