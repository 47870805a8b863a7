"""Clean: a tiny Llama causal LM with tied input/output embeddings (tied by reference, used through lm_head as a module)."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB = 64


def build_model():
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
