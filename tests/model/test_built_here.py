"""Models a script builds itself, and the embedding a transformers getter hands out (issue 20, ZG1 probes).

* `netG = Generator(); netG.apply(weights_init)` in a training function: under `zero.Init` the model was partitioned
  when its constructor returned and `apply` gathers only inside that context (ZG103). Look-alike: a factory that
  builds, initialises and returns the model (it runs where its caller builds, judged there).
* `self.model.save_pretrained(path)` in a module's `save` method saves its pretrained child's state dict, placeholders
  under ZeRO-3 (ZG108); the tokenizer it keeps beside it is no module.
* `emb = model.get_input_embeddings(); emb.weight.data` in a function handed a model whose class it cannot read:
  transformers' getter hands back the embedding layer, whose weight is partitioned (ZG109).
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

DCGAN = """
import torch
from torch import nn


def weights_init(m):
    if isinstance(m, nn.Conv2d):
        nn.init.normal_(m.weight.data, 0.0, 0.02)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Tanh())

    def forward(self, z):
        return self.main(z)


def make_generator():
    net = Generator()
    net.apply(weights_init)
    return net


def main(noise, lr):
    netG = Generator()
    netG.apply(weights_init)
    optimizer = torch.optim.Adam(netG.parameters(), lr=lr)
    for z in noise:
        netG(z).mean().backward()
        optimizer.step()
"""


def test_apply_on_a_model_the_script_built_writes_placeholders(tmp_path):
    found = found_in_package(tmp_path, {"dcgan.py": DCGAN}, "dcgan.py", prefix="ZG103")
    assert found == [("ZG103", 28)]


EMBEDDINGS = """
import torch
from torch import nn


def add_tokens(model: nn.Module, new_vectors):
    emb = model.get_input_embeddings()
    new = torch.cat([emb.weight.data, new_vectors], 0)
    model.set_input_embeddings(nn.Embedding.from_pretrained(new, freeze=False))


def vocabulary(model: nn.Module):
    return model.config.vocab_size
"""


def test_the_embedding_a_getter_hands_out_is_partitioned(tmp_path):
    found = found_in_package(tmp_path, {"tokens.py": EMBEDDINGS}, "tokens.py", prefix="ZG1")
    assert ("ZG109", 8) in found
    assert not any(line == 13 for _code, line in found)


PRETRAINED = """
import torch
from transformers import AutoModel, AutoTokenizer


class Base(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        self.model = AutoModel.from_pretrained(name)
        self.tokenizer = AutoTokenizer.from_pretrained(name)
        self.linear = torch.nn.Linear(768, 128)

    def forward(self, ids):
        return self.linear(self.model(ids)[0])

    def save(self, path):
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
"""


def test_a_pretrained_child_saved_by_the_module_writes_placeholders(tmp_path):
    found = found_in_package(tmp_path, {"base.py": PRETRAINED}, "base.py", prefix="ZG108")
    assert found == [("ZG108", 17)]
