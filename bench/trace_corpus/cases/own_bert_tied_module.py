"""Clean: a transformers BERT encoder with a hand-written LM head whose Linear weight is tied by reference to the
word embeddings and called as a module (its hooks gather the shared weight)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import BertConfig, BertModel

VOCAB = 64


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = BertModel(BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=32, max_position_embeddings=64),
                                  add_pooling_layer=False)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, VOCAB, bias=False)
        self.head.weight = self.backbone.embeddings.word_embeddings.weight

    def forward(self, input_ids, labels):
        logits = self.head(self.norm(self.backbone(input_ids).last_hidden_state))
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


def build_model():
    return TiedLM()


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return ids, ids.clone()
