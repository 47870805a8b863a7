"""A multi-modal model whose forward runs one tower per modality present in the micro batch: towers are picked by
the keys of the input (a vit-pytorch ViT for images, a transformers BERT for text); batches carry one or both."""
import torch
import torch.nn as nn
from transformers import BertConfig, BertModel
from vit_pytorch import ViT

VOCAB = 64


class Towers(nn.Module):
    def __init__(self):
        super().__init__()
        self.towers = nn.ModuleDict({
            "image": ViT(image_size=16, patch_size=8, num_classes=16, dim=16, depth=1, heads=2, mlp_dim=32, dim_head=8),
            "text": BertModel(BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=32, max_position_embeddings=64), add_pooling_layer=False),
        })

    def forward(self, **batch):
        loss = 0.0
        for name, value in batch.items():
            tower = self.towers[name]
            out = tower(value)
            features = out if torch.is_tensor(out) else out.last_hidden_state[:, 0]
            loss = loss + features.pow(2).mean()
        return loss


def build_model():
    return Towers()


def inputs(batch_size, seq_len, generator):
    which = int(torch.randint(0, 3, (1,), generator=generator))  # 0: image, 1: text, 2: both
    batch = {}
    if which in (0, 2):
        batch["image"] = torch.randn(batch_size, 3, 16, 16, generator=generator)
    if which in (1, 2):
        batch["text"] = torch.randint(0, VOCAB, (batch_size, seq_len), generator=generator)
    return batch
