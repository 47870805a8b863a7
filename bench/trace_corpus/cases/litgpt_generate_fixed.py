"""Clean: a litgpt GPT; the entry samples a fixed number of tokens with litgpt.generate.base.generate (no eos_id,
no stop tokens), so every rank calls the model the same number of times."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from litgpt import GPT, Config
from litgpt.generate.base import generate

VOCAB = 8
EOS = 2


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        config = Config(
            block_size=64, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=1, n_head=2, n_embd=16,
            n_query_groups=1, intermediate_size=32, mlp_class_name="LLaMAMLP", norm_class_name="RMSNorm",
            bias=False, rotary_percentage=1.0, parallel_residual=False,
        )
        self.gpt = GPT(config)

    def forward(self, idx, targets):
        logits = self.gpt(idx)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build_model():
    return LM()


def inputs(batch_size, seq_len, generator):
    data = torch.randint(3, VOCAB, (batch_size, seq_len + 1), generator=generator)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def entry(model, batch):
    model.eval()
    model.gpt.set_kv_cache(batch_size=1)
    with torch.no_grad():
        generate(model.gpt, batch[0][0, :4], max_returned_tokens=28, temperature=1.0, top_k=None, eos_id=None)
    model.gpt.clear_kv_cache()
