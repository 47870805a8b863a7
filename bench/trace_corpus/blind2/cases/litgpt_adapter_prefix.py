"""litgpt's LLaMA-Adapter GPT fine-tuned with only the adapter trainable: the adapter attention builds its
prompt prefix from `self.adapter_wte.weight` (a child Embedding it never calls) inside its own forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from litgpt.adapter import GPT, Config, mark_only_adapter_as_trainable

VOCAB = 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        config = Config(
            block_size=32, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=2, n_head=2, n_embd=16,
            n_query_groups=2, intermediate_size=32, mlp_class_name="LLaMAMLP", norm_class_name="RMSNorm",
            bias=False, rotary_percentage=1.0, parallel_residual=False, adapter_prompt_length=4,
            adapter_start_layer=1,
        )
        self.gpt = GPT(config)
        mark_only_adapter_as_trainable(self.gpt)

    def forward(self, idx, targets):
        logits = self.gpt(idx)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build_model():
    return LM()


def inputs(batch_size, seq_len, generator):
    data = torch.randint(0, VOCAB, (batch_size, seq_len + 1), generator=generator)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()
