"""A litgpt LoRA GPT (LoRA on the attention output projection); the entry merges the adapters into the base
weights with litgpt.lora.merge_lora_weights, as litgpt does before saving or serving."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from litgpt.lora import GPT, Config, mark_only_lora_as_trainable, merge_lora_weights

VOCAB = 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        config = Config(
            block_size=32, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=1, n_head=2, n_embd=16,
            n_query_groups=2, intermediate_size=32, mlp_class_name="LLaMAMLP", norm_class_name="RMSNorm",
            bias=False, rotary_percentage=1.0, parallel_residual=False,
            lora_r=4, lora_alpha=8, lora_dropout=0.0, lora_query=False, lora_key=False, lora_value=False,
            lora_projection=True, lora_mlp=False, lora_head=False,
        )
        self.gpt = GPT(config)
        mark_only_lora_as_trainable(self.gpt)

    def forward(self, idx, targets):
        logits = self.gpt(idx)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build_model():
    return LM()


def inputs(batch_size, seq_len, generator):
    data = torch.randint(0, VOCAB, (batch_size, seq_len + 1), generator=generator)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def entry(model, batch):
    merge_lora_weights(model.gpt)
