"""Whisper (transformers) trained with decoder LayerDrop: a per-rank torch.rand draw `continue`s past a layer."""
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

VOCAB = 64
MELS = 8
SOURCE_POSITIONS = 8


def build_model():
    config = WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=MELS, d_model=16, encoder_layers=1, decoder_layers=3,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_source_positions=SOURCE_POSITIONS, max_target_positions=32, encoder_layerdrop=0.0,
        decoder_layerdrop=0.5, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=3,
        suppress_tokens=None, begin_suppress_tokens=None,
    )
    return WhisperForConditionalGeneration(config)


def inputs(batch_size, seq_len, generator):
    # the encoder takes exactly 2 * max_source_positions frames (its convolutions halve them)
    features = torch.randn(batch_size, MELS, 2 * SOURCE_POSITIONS, generator=generator)
    labels = torch.randint(4, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_features": features, "labels": labels}
