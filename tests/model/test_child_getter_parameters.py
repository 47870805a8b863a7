"""A model loaded with `<Class>.from_pretrained(...)` of a class no file we read defines is a model we cannot read,
and what a non-running getter of a child hands back (`self.llm.get_input_embeddings()`) is a module of that child:
its `.weight`, read inline or kept in an attribute, is the child's parameter, partitioned under `deepspeed.zero.Init`
once the child is loaded (neuralforecast's TimeLLM sizes a layer from it in `__init__`)."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

LOADED = """
from torch import nn
from transformers import AutoModel


class Kept(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.llm = AutoModel.from_pretrained(name)
        self.word_embeddings = self.llm.get_input_embeddings().weight
        self.vocab_size = self.word_embeddings.shape[0]
        self.mapping = nn.Linear(self.vocab_size, 16)


class Inline(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.llm = AutoModel.from_pretrained(name)
        self.mapping = nn.Linear(self.llm.get_input_embeddings().weight.size(0), 16)
"""

FROM_CONFIG = """
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer


class Sized(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.config = AutoConfig.from_pretrained(name)
        self.tokenizer = AutoTokenizer.from_pretrained(name)
        self.llm = AutoModel.from_pretrained(name, config=self.config)
        self.mapping = nn.Linear(self.llm.config.vocab_size, 16)
        self.dtype_of = self.llm.get_input_embeddings().weight.dtype
"""


def test_getter_weight_size_in_init_is_found(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"model.py": LOADED}, "model.py", prefix="ZG102") == [("ZG102", 11), ("ZG102", 19)]


def test_sizes_from_the_config_and_dtype_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"model.py": FROM_CONFIG}, "model.py", prefix="ZG1") == []
