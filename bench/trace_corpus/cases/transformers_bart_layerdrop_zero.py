"""Clean: BART trained with LayerDrop probabilities of 0; the per-layer torch.rand draw never skips a layer."""
import torch
from transformers import BartConfig, BartForConditionalGeneration

VOCAB = 64


def build_model():
    config = BartConfig(
        vocab_size=VOCAB, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        encoder_layerdrop=0.0, decoder_layerdrop=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2,
    )
    return BartForConditionalGeneration(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": labels}
