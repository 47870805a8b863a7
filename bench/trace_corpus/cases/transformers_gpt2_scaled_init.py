"""GPT-2 (transformers): `_init_weights`, run through `apply`, rescales `c_proj.weight` of the attention/MLP
module's child Conv1D (GPT-2's scaled residual init)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB = 64


def build_model():
    config = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=16, n_layer=2, n_head=2)
    return GPT2LMHeadModel(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": ids.clone()}
