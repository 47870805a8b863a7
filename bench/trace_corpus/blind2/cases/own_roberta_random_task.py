"""Our multi-task trainer around a RoBERTa encoder (transformers): each step samples one task with Python's
`random` and calls that task's head from a ModuleDict, so two ranks call different heads."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import RobertaConfig, RobertaModel

VOCAB = 64
TASKS = {"sentiment": 2, "topic": 5, "nli": 3}


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = RobertaModel(RobertaConfig(
            vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=64, pad_token_id=1), add_pooling_layer=False)
        self.heads = nn.ModuleDict({name: nn.Linear(16, n) for name, n in TASKS.items()})

    def forward(self, input_ids, labels):
        pooled = self.encoder(input_ids).last_hidden_state[:, 0]
        task = random.choice(list(self.heads))
        logits = self.heads[task](pooled)
        return F.cross_entropy(logits, labels % TASKS[task])


def build_model():
    return MultiTask()


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    return ids, torch.randint(0, 30, (batch_size,), generator=generator)
