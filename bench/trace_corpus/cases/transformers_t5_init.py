"""T5 (transformers): `_init_weights`, run through `apply`, writes the weights of each attention module's q/k/v/o
children, each feed-forward's wi/wo children, and (at the root) the shared embedding child."""
import torch
from transformers import T5Config, T5ForConditionalGeneration

VOCAB = 64


def build_model():
    config = T5Config(
        vocab_size=VOCAB, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2,
        relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )
    return T5ForConditionalGeneration(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(2, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.randint(2, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "labels": labels}
