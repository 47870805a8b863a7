"""A litgpt GPT; the entry saves a checkpoint with `model.state_dict()` and restores it with `load_state_dict`,
as a hand-written loop does (no ZeRO-3 consolidation or gather)."""
import io

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
            n_query_groups=2, intermediate_size=32, mlp_class_name="GptNeoxMLP", norm_class_name="LayerNorm",
            bias=True, rotary_percentage=0.25, parallel_residual=True,
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


def entry(model, batch):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    model.load_state_dict(torch.load(buffer))
