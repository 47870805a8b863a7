"""nanoGPT: GPT.__init__ rescales every c_proj.weight of its built blocks after `self.apply(...)` and reports the
parameter count (numel of every parameter). The entry samples with GPT.generate, a fixed-length loop."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _nanogpt  # noqa: E402

VOCAB = 64


class Trainer(nn.Module):
    def __init__(self):
        super().__init__()
        model = _nanogpt.load()
        config = model.GPTConfig(block_size=32, vocab_size=VOCAB, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
        self.gpt = model.GPT(config)

    def forward(self, idx, targets):
        _, loss = self.gpt(idx, targets)
        return loss


def build_model():
    return Trainer()


def inputs(batch_size, seq_len, generator):
    data = torch.randint(0, VOCAB, (batch_size, seq_len + 1), generator=generator)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def entry(model, batch):
    model.eval()
    with torch.no_grad():
        model.gpt.generate(batch[0][:1, :4], max_new_tokens=8, temperature=1.0, top_k=10)
