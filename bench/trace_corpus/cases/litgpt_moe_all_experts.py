"""Clean: a litgpt GPT with LLaMAMoE feed-forwards; the expert loop calls every expert (with possibly zero tokens)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from litgpt import GPT, Config

VOCAB = 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        config = Config(
            block_size=32, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=1, n_head=2, n_embd=16,
            n_query_groups=1, intermediate_size=16, mlp_class_name="LLaMAMoE", n_expert=8, n_expert_per_token=1,
            norm_class_name="RMSNorm", bias=False, rotary_percentage=1.0, parallel_residual=False,
        )
        self.gpt = GPT(config)

    def forward(self, idx, targets):
        logits = self.gpt(idx)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build_model():
    return LM()


def inputs(batch_size, seq_len, generator):
    data = torch.randint(0, VOCAB, (batch_size, seq_len + 1), generator=generator)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()
