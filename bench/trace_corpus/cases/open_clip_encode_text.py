"""open_clip CLIP trained with the contrastive loss; the entry embeds prompts with `model.encode_text` for
zero-shot evaluation, outside the model's forward. Building the text tower initialises its built children."""
import torch
import torch.nn as nn
from open_clip.loss import ClipLoss
from open_clip.model import CLIP, CLIPTextCfg, CLIPVisionCfg

VOCAB = 64
CONTEXT = 16


class Contrastive(nn.Module):
    def __init__(self):
        super().__init__()
        self.clip = CLIP(
            embed_dim=16,
            vision_cfg=CLIPVisionCfg(layers=1, width=16, head_width=8, mlp_ratio=2.0, patch_size=8, image_size=16),
            text_cfg=CLIPTextCfg(context_length=CONTEXT, vocab_size=VOCAB, width=16, heads=2, layers=1),
        )
        self.loss = ClipLoss()

    def forward(self, images, texts):
        image_features, text_features, logit_scale = self.clip(images, texts)
        return self.loss(image_features, text_features, logit_scale)


def build_model():
    return Contrastive()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 16, 16, generator=generator)
    texts = torch.randint(1, VOCAB, (batch_size, CONTEXT), generator=generator)
    return images, texts


def entry(model, batch):
    model.eval()
    with torch.no_grad():
        model.clip.encode_text(batch[1], normalize=True)
