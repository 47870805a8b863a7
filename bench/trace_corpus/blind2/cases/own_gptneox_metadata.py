"""A GPT-NeoX causal LM (transformers, untied `embed_out`) whose input embeddings our build step freezes; the
entry logs what a training script prints: the model's dtype and device, the names of the trainable parameters
and how many parameter tensors are frozen. Only metadata is read (no values, no sizes)."""
import torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

VOCAB = 64


def build_model():
    config = GPTNeoXConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, rotary_pct=0.5, tie_word_embeddings=False, use_parallel_residual=True,
    )
    model = GPTNeoXForCausalLM(config)
    model.get_input_embeddings().requires_grad_(False)
    return model


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def entry(model, batch):
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    frozen = sum(1 for p in model.parameters() if not p.requires_grad)
    return f"{model.dtype} on {model.device}: {len(trainable)} trainable tensors, {frozen} frozen"
