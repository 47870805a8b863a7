"""litgpt LoRA GPT fine-tuned with LoRA on the query and value slices of the fused QKV projection, the MLP and
the LM head (only LoRA trainable): LoRAQKVLinear pads its LoRA output with an index buffer built from its
child linear's sizes and device (metadata), and every LoRA layer multiplies by its own lora_A/lora_B in its
own forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from litgpt.lora import GPT, Config, mark_only_lora_as_trainable

VOCAB = 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        config = Config(
            block_size=32, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=1, n_head=4, n_embd=16,
            n_query_groups=2, intermediate_size=32, mlp_class_name="LLaMAMLP", norm_class_name="RMSNorm",
            bias=False, rotary_percentage=1.0, parallel_residual=False,
            lora_r=4, lora_alpha=8, lora_dropout=0.1, lora_query=True, lora_key=False, lora_value=True,
            lora_projection=False, lora_mlp=True, lora_head=True,
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
