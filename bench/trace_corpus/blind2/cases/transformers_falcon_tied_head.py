"""Falcon (transformers) causal-LM training with the LM head tied to the word embeddings (the same Parameter,
called through the lm_head module); multi-query attention with rotary embeddings and a parallel MLP; init writes
only each visited module's own weights."""
import torch
from transformers import FalconConfig, FalconForCausalLM

VOCAB = 64


def build_model():
    config = FalconConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, multi_query=True,
        parallel_attn=True, bias=False, alibi=False, max_position_embeddings=64, tie_word_embeddings=True,
        hidden_dropout=0.0, attention_dropout=0.0, bos_token_id=0, eos_token_id=2,
    )
    return FalconForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
