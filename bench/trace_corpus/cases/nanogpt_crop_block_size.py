"""nanoGPT: as nanogpt_train, and the entry shrinks the context with GPT.crop_block_size (as train.py does when
block_size is smaller than the checkpoint's), slicing the position embedding's weight into a new Parameter."""
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
        config = model.GPTConfig(block_size=32, vocab_size=VOCAB, n_layer=1, n_head=2, n_embd=16, dropout=0.0)
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
    model.gpt.crop_block_size(16)
