"""Granite-MoE (transformers) causal-LM training: the router turns its token counts into a Python list
(`.tolist()`) that sizes the split of the tokens; the fused expert modules are each called once per layer and
loop over every expert inside their own forward, so the module calls do not depend on the data."""
import torch
from transformers import GraniteMoeConfig, GraniteMoeForCausalLM

VOCAB = 64


def build_model():
    config = GraniteMoeConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64, num_local_experts=4, num_experts_per_tok=1,
        output_router_logits=True, router_aux_loss_coef=0.01,
    )
    return GraniteMoeForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
