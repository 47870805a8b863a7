"""PhiMoE (transformers) causal-LM training: in training mode the SparseMixer router samples experts (Gumbel
noise, per rank), and the expert loop `continue`s past every expert that got no token."""
import torch
from transformers import PhimoeConfig, PhimoeForCausalLM

VOCAB = 64


def build_model():
    config = PhimoeConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64, num_local_experts=32, num_experts_per_tok=2,
        router_jitter_noise=0.01, input_jitter_noise=0.0, attention_dropout=0.0,
    )
    return PhimoeForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
