"""Our evaluation entry for a DistilBERT classifier (transformers), sharded like DistributedSampler: the list
of 3 validation batches is padded by wrapping around to a multiple of the world size, so every rank runs the
same number of forward passes (ceil(3 / world))."""
import math

import torch
import torch.distributed as dist
from transformers import DistilBertConfig, DistilBertForSequenceClassification

VOCAB = 64
EVAL_BATCHES = 3


def build_model():
    config = DistilBertConfig(vocab_size=VOCAB, dim=16, n_layers=1, n_heads=2, hidden_dim=32,
                              max_position_embeddings=64, num_labels=3)
    return DistilBertForSequenceClassification(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "labels": torch.randint(0, 3, (batch_size,), generator=generator)}


def entry(model, batch):
    rank, world = dist.get_rank(), dist.get_world_size()
    eval_batches = [batch["input_ids"].roll(i, dims=1) for i in range(EVAL_BATCHES)]
    per_rank = math.ceil(len(eval_batches) / world)
    model.eval()
    correct = 0
    with torch.no_grad():
        for step in range(per_rank):
            index = (rank + step * world) % len(eval_batches)
            logits = model(input_ids=eval_batches[index]).logits
            correct += int((logits.argmax(-1) == batch["labels"]).sum())
    model.train()
    return correct
