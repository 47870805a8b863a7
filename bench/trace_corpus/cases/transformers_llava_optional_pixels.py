"""LLaVA (transformers) trained on a mixed stream: some micro batches are text only. The vision tower and the
projector run only when the call carries `pixel_values`."""
import torch
from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

VOCAB = 64
IMAGE_TOKEN = 63
IMAGE_TOKENS = 4  # (16 / 8) ** 2 patches; the CLS feature is dropped ("default" strategy)


def build_model():
    vision = CLIPVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, image_size=16,
        patch_size=8, projection_dim=16,
    )
    text = LlamaConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64,
    )
    config = LlavaConfig(
        vision_config=vision, text_config=text, image_token_index=IMAGE_TOKEN, vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    return LlavaForConditionalGeneration(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(0, IMAGE_TOKEN, (batch_size, seq_len), generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
    with_image = bool(torch.randint(0, 2, (1,), generator=generator).item())
    if with_image:  # an image-text micro batch; otherwise text only
        ids[:, 1:1 + IMAGE_TOKENS] = IMAGE_TOKEN
        batch["labels"][:, 1:1 + IMAGE_TOKENS] = -100
        batch["pixel_values"] = torch.randn(batch_size, 3, 16, 16, generator=generator)
    return batch
