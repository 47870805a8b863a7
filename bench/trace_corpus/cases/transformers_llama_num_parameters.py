"""A tiny Llama; the entry logs the parameter count with `model.num_parameters()` (numel of every parameter)."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB = 64


def build_model():
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64,
    )
    return LlamaForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": ids.clone()}


def entry(model, batch):
    print(f"{model.num_parameters() / 1e3:.1f}K parameters")
