"""speechbrain TransformerEncoder with layerdrop_prob > 0: in training each rank keeps the layers whose own
torch.rand draw beats the drop probability."""
import torch
import torch.nn as nn
from speechbrain.lobes.models.transformer.Transformer import TransformerEncoder
from speechbrain.nnet.attention import RelPosEncXL


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = TransformerEncoder(num_layers=3, nhead=2, d_ffn=32, d_model=16, dropout=0.0,
                                          layerdrop_prob=0.5, attention_type="RelPosMHAXL")
        self.rel_pos = RelPosEncXL(16)
        self.out = nn.Linear(16, 4)

    def forward(self, features, targets):
        pos = self.rel_pos(features)
        hidden, _ = self.encoder(features, pos_embs=pos)
        return nn.functional.cross_entropy(self.out(hidden).flatten(0, 1), targets.flatten())


def build_model():
    return Encoder()


def inputs(batch_size, seq_len, generator):
    features = torch.randn(batch_size, seq_len, 16, generator=generator)
    return features, torch.randint(0, 4, (batch_size, seq_len), generator=generator)
