"""Our training wrapper around an OPT causal LM (transformers) adds an L2 penalty on the input embeddings,
reading `get_input_embeddings().weight` in the wrapper's forward after the embedding module has run and been
released."""
import torch
import torch.nn as nn
from transformers import OPTConfig, OPTForCausalLM

VOCAB = 64


class PenalisedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = OPTForCausalLM(OPTConfig(
            vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, ffn_dim=32, num_attention_heads=2,
            max_position_embeddings=64, word_embed_proj_dim=16, dropout=0.0, pad_token_id=1,
        ))
        self.weight_decay = 1e-4

    def forward(self, input_ids, labels):
        loss = self.lm(input_ids=input_ids, labels=labels).loss
        return loss + self.weight_decay * self.lm.get_input_embeddings().weight.pow(2).sum()


def build_model():
    return PenalisedLM()


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(2, VOCAB, (batch_size, seq_len), generator=generator)
    return ids, ids.clone()
