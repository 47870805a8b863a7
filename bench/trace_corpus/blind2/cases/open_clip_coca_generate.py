"""open_clip CoCa trained with its contrastive + captioning loss; the entry captions an image with
`generate(..., generation_type="top_k")`, whose sampling loop breaks as soon as every sequence has emitted
EOS, so each rank calls the model its own number of times. The wrapper initialises the built caption decoder's
text_projection (open_clip leaves it uninitialised) after the decoder was built."""
import torch
import torch.nn as nn
from open_clip.coca_model import CoCa, MultimodalCfg
from open_clip.loss import CoCaLoss
from open_clip.model import CLIPTextCfg, CLIPVisionCfg

VOCAB = 8
CONTEXT = 16
PAD, SOT, EOS = 0, 1, 2


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.coca = CoCa(
            embed_dim=16,
            multimodal_cfg=MultimodalCfg(context_length=CONTEXT, vocab_size=VOCAB, width=16, heads=2, layers=1,
                                         attn_pooler_heads=2),
            text_cfg=CLIPTextCfg(context_length=CONTEXT, vocab_size=VOCAB, width=16, heads=2, layers=1,
                                 embed_cls=True, output_tokens=True, pad_id=PAD),
            vision_cfg=CLIPVisionCfg(layers=1, width=16, head_width=8, mlp_ratio=2.0, patch_size=8, image_size=16,
                                     attentional_pool=True, attn_pooler_heads=2, output_tokens=True),
        )
        # open_clip never initialises the caption decoder's text_projection (torch.empty; the decoder's own
        # init_parameters() is never called and fails), so initialise it here
        nn.init.normal_(self.coca.text_decoder.text_projection, std=16 ** -0.5)
        self.loss = CoCaLoss(caption_loss_weight=2.0, clip_loss_weight=1.0, pad_id=PAD)

    def forward(self, images, texts):
        out = self.coca(images, texts)
        clip_loss, caption_loss = self.loss(out["image_features"], out["text_features"], out["logits"],
                                            out["labels"], out["logit_scale"])
        return clip_loss + caption_loss


def build_model():
    return Captioner()


def inputs(batch_size, seq_len, generator):
    images = torch.randn(batch_size, 3, 16, 16, generator=generator)
    texts = torch.randint(3, VOCAB, (batch_size, CONTEXT), generator=generator)
    texts[:, 0] = SOT
    return images, texts


def entry(model, batch):
    model.eval()
    with torch.no_grad():
        model.coca.generate(batch[0][:2], generation_type="top_k", top_k=4, seq_len=CONTEXT, max_seq_len=CONTEXT, min_seq_len=2,
                            sot_token_id=SOT, eos_token_id=EOS, pad_token_id=PAD)
