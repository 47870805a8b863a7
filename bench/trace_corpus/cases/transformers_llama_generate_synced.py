"""Clean: a tiny Llama; the entry samples with `generate(..., synced_gpus=True)`, so a rank that reached EOS keeps
calling the model until every rank is done."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB = 8
EOS = 2


def build_model():
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=128, bos_token_id=0, eos_token_id=EOS, pad_token_id=1,
    )
    return LlamaForCausalLM(config)


def inputs(batch_size, seq_len, generator):
    ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def entry(model, batch):
    model.eval()
    with torch.no_grad():
        model.generate(
            input_ids=batch["input_ids"][:1, :4], attention_mask=batch["attention_mask"][:1, :4],
            do_sample=True, max_new_tokens=24, eos_token_id=EOS, pad_token_id=1, synced_gpus=True,
        )
