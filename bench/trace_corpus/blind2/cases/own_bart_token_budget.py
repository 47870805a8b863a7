"""Our trainer around a BART encoder-decoder (transformers) splits each micro batch into chunks by a token
budget counted from the attention mask (dynamic batching of padded text), so the number of forward passes per
step depends on each rank's data."""
import math

import torch
import torch.nn as nn
from transformers import BartConfig, BartForConditionalGeneration

VOCAB = 64
TOKEN_BUDGET = 12


class BudgetedBart(nn.Module):
    def __init__(self):
        super().__init__()
        self.bart = BartForConditionalGeneration(BartConfig(
            vocab_size=VOCAB, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
            dropout=0.0, pad_token_id=0, bos_token_id=2, eos_token_id=1, decoder_start_token_id=1))

    def forward(self, input_ids, attention_mask, labels):
        tokens = int(attention_mask.sum().item())
        chunks = max(1, math.ceil(tokens / TOKEN_BUDGET))
        total = 0.0
        for ids, mask, target in zip(input_ids.chunk(chunks), attention_mask.chunk(chunks), labels.chunk(chunks)):
            total = total + self.bart(input_ids=ids, attention_mask=mask, labels=target).loss
        return total / chunks


def build_model():
    return BudgetedBart()


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(2, VOCAB, (batch_size, seq_len), generator=generator)
    lengths = torch.randint(1, seq_len + 1, (batch_size, 1), generator=generator)
    mask = (torch.arange(seq_len)[None, :] < lengths).long()
    return {"input_ids": ids * mask, "attention_mask": mask, "labels": torch.randint(2, VOCAB, (batch_size, 4), generator=generator)}
