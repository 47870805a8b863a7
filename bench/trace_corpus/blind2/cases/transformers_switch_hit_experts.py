"""Switch Transformers (transformers): the sparse MLP loops only over the experts that received a token, and its
router casts its child classifier before calling it. Building it runs `_init_weights`, which writes the router
and expert weights of the built sparse MLP."""
import torch
from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

VOCAB = 64


def build_model():
    config = SwitchTransformersConfig(
        vocab_size=VOCAB, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=2,
        num_experts=8, expert_capacity=64, encoder_sparse_step=1, decoder_sparse_step=1,
        router_jitter_noise=0.0, dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
    )
    return SwitchTransformersForConditionalGeneration(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(2, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.randint(2, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
