"""DBRX (transformers) mixture of experts: the expert loop skips experts that got no token and slices the
fused expert weights of its child `mlp` in its own forward."""
import torch
from transformers import DbrxConfig, DbrxForCausalLM

VOCAB = 64


def build_model():
    config = DbrxConfig(
        d_model=16, n_heads=2, n_layers=1, max_seq_len=64, vocab_size=VOCAB,
        attn_config={"kv_n_heads": 1, "rope_theta": 10000.0},
        ffn_config={"ffn_hidden_size": 16, "moe_num_experts": 8, "moe_top_k": 1},
        tie_word_embeddings=False,
    )
    return DbrxForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": ids.clone()}
