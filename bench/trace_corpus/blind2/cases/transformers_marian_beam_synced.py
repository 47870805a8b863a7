"""Marian (transformers) translation training; the entry translates with beam sampling and early stopping under
`synced_gpus=True`, so a rank whose beams are done keeps calling the model until every rank is done."""
import torch
from transformers import MarianConfig, MarianMTModel

VOCAB = 10
EOS = 2
PAD = 1


def build_model():
    config = MarianConfig(
        vocab_size=VOCAB, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        dropout=0.0, attention_dropout=0.0, pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD,
        forced_eos_token_id=EOS,
    )
    return MarianMTModel(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    labels = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def entry(model, batch):
    model.eval()
    with torch.no_grad():
        model.generate(
            input_ids=batch["input_ids"][:1, :6], attention_mask=batch["attention_mask"][:1, :6],
            num_beams=2, early_stopping=True, max_new_tokens=24, do_sample=True, synced_gpus=True,
        )
