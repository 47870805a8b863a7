"""The six transformers families `zgen plan`/`emit` handle (as tests/plan/test_init_models.py builds them), as
runnable trace cases: `FAMILY()` builds the model, `FAMILY_inputs(batch_size, seq_len, generator)` its micro batch.
Our own code around transformers 4.48.3; used by ../crosscheck.py only."""
import torch
import transformers

VOCAB = 97


def bert():
    cfg = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=48, max_position_embeddings=32)
    return transformers.BertForMaskedLM(cfg)


def t5():
    cfg = transformers.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=2,
                                num_heads=2, decoder_start_token_id=0)
    return transformers.T5ForConditionalGeneration(cfg)


def bart():
    cfg = transformers.BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=48,
                                  decoder_ffn_dim=48, max_position_embeddings=32)
    return transformers.BartForConditionalGeneration(cfg)


def mixtral():
    cfg = transformers.MixtralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                     num_experts_per_tok=2, max_position_embeddings=32)
    return transformers.MixtralForCausalLM(cfg)


def vit():
    cfg = transformers.ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=48, num_labels=5)
    return transformers.ViTForImageClassification(cfg)


def clip():
    text = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
                max_position_embeddings=32, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    vision = dict(image_size=16, patch_size=4, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=2)
    return transformers.CLIPModel(transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))


def _ids(batch_size, seq_len, generator):
    return torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)


def text_inputs(batch_size, seq_len, generator):
    ids = _ids(batch_size, seq_len, generator)
    return {"input_ids": ids, "labels": ids.clone()}


def vit_inputs(batch_size, seq_len, generator):
    return {"pixel_values": torch.randn(batch_size, 3, 16, 16, generator=generator),
            "labels": torch.randint(0, 5, (batch_size,), generator=generator)}


def clip_inputs(batch_size, seq_len, generator):
    return {"input_ids": _ids(batch_size, seq_len, generator),
            "pixel_values": torch.randn(batch_size, 3, 16, 16, generator=generator), "return_loss": True}
