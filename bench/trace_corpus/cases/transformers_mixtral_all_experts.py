"""Clean: Mixtral (transformers) sparse MoE; its expert loop calls every expert, also with zero tokens."""
import torch
from transformers import MixtralConfig, MixtralForCausalLM

VOCAB = 64


def build_model():
    config = MixtralConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, num_local_experts=8, num_experts_per_tok=1, max_position_embeddings=64,
        output_router_logits=True,
    )
    return MixtralForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": ids.clone()}
