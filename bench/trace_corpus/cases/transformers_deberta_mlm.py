"""DeBERTa (transformers) masked LM with the non-legacy head (legacy=False): the LM head multiplies by the weight
of the word-embedding module it is handed, without calling that module."""
import torch
from transformers import DebertaConfig, DebertaForMaskedLM

VOCAB = 64


def build_model():
    config = DebertaConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, type_vocab_size=0, legacy=False,
        tie_word_embeddings=False,  # 4.48 would tie the head's dense layer (its output embedding) to the vocabulary
    )
    return DebertaForMaskedLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(4, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.full_like(ids, -100)
    labels[:, ::3] = ids[:, ::3]
    return {"input_ids": ids, "labels": labels}
