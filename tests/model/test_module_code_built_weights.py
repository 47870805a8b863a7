"""A script's module-level code that builds a model and reaches its weights by path or by a walk (`model =
SNLIClassifier(config)` ... `model.embed.weight.data.copy_(vectors)`; `model: nn.Module = GPT(...).cuda()` ...
`for m in model.modules(): m.weight.data = m.weight.data.bfloat16()`): under `zero.Init` the model was partitioned
when its constructor returned, as one a function builds (`handed._module_code_built`; ZG101). Look-alikes: a model
loaded whole by `torch.load` and written, weights read only for their dtype."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.embed = nn.Embedding(n, 512)
        self.out = nn.Linear(512, n)

    def forward(self, x):
        return self.out(self.embed(x))


"""


def found(script: str) -> list[tuple[str, int]]:
    source = NET + textwrap.dedent(script)
    return [(f.code, f.line) for f in check_source("train.py", source) if f.code.startswith("ZG1")]


def test_a_weight_written_by_path_in_module_code_after_the_model_was_built():
    assert found("""
        args = parse()
        if args.resume:
            model = torch.load(args.resume)
        else:
            model = Net(args.n)
            if args.vectors:
                model.embed.weight.data.copy_(load_vectors())
    """) == [("ZG101", 23)]


def test_an_annotated_model_walked_and_cast_in_module_code():
    assert found("""
        model: nn.Module = Net(1000).cuda()
        for m in model.modules():
            if isinstance(m, (nn.Embedding, nn.Linear)):
                m.weight.data = m.weight.data.bfloat16()
    """) == [("ZG101", 20)]


def test_a_loaded_model_and_dtype_reads_are_alike():
    assert found("""
        args = parse()
        model = torch.load(args.path)
        model.embed.weight.data.copy_(load_vectors())
        built = Net(1000)
        for m in built.modules():
            if isinstance(m, nn.Linear):
                print(m.weight.dtype)
    """) == []


def test_an_annotation_naming_a_plain_class_builds_no_model():
    source = """
        import torch.distributed as dist
        from hydra.utils import instantiate


        class MetricAggregator:
            def __init__(self):
                self.values = {}

            def compute(self):
                return dict(self.values)


        def train(cfg):
            aggregator: MetricAggregator = instantiate(cfg.aggregator)
            model: nn.Module = instantiate(cfg.model)
            if dist.get_rank() == 0:
                aggregator.compute()
                model(0)
    """
    found_here = check_source("train.py", NET + textwrap.dedent(source))
    assert [(f.code, f.line) for f in found_here] == [("ZG201", 32)]
    assert "`model`" in found_here[0].message and "aggregator" not in found_here[0].message
