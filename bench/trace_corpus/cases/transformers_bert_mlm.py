"""Clean: BERT (transformers) masked LM; the decoder's weight is tied by reference to the word embeddings and the
decoder is called as a module; `_init_weights` writes only the visited module's own parameters."""
import torch
from transformers import BertConfig, BertForMaskedLM

VOCAB = 64


def build_model():
    config = BertConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64,
    )
    return BertForMaskedLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(4, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.full_like(ids, -100)
    labels[:, ::3] = ids[:, ::3]
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
