"""The model index: which classes are modules, what `__init__` registers, what forward reaches."""

from __future__ import annotations

import textwrap

from zgen.model.program.index import ModelIndex
from zgen.model.program.members import ACTIVATION, Kind, facts_of, has_params, member_param
from zgen.model.program.skeleton import build_skeleton


def index_of(code: str) -> ModelIndex:
    source = textwrap.dedent(code)
    return ModelIndex("m.py", source, build_skeleton(source))


def test_module_classes_through_bases_and_aliases():
    index = index_of(
        """
        import torch.nn as tnn
        from torch.nn import Module
        from transformers import PreTrainedModel
        from ..llama.modeling_llama import LlamaAttention
        from ...modeling_outputs import ModelOutput

        class A(tnn.Module): ...
        class B(A): ...
        class C(B): ...
        class D(Module): ...
        class E(PreTrainedModel): ...
        class F(LlamaAttention): ...
        class G(tnn.ModuleList): ...
        class Out(ModelOutput): ...
        class Config: ...
        class Mixin(Config): ...
        """
    )
    modules = {c.name for c in index.module_classes()}
    assert modules == {"A", "B", "C", "D", "E", "F", "G"}
    assert index.classes["G"].container_kind == "ModuleList"


def test_members_children_params_buffers_and_containers():
    index = index_of(
        """
        import torch
        from torch import nn

        ACT2FN = {}

        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.fc = nn.Linear(d, d)

        class Net(nn.Module):
            def __init__(self, config, embed_tokens=None):
                super().__init__()
                self.config = config
                self.embed_tokens = embed_tokens
                self.scale = nn.Parameter(torch.ones(4))
                self.register_buffer("inv_freq", torch.ones(4), persistent=False)
                self.register_parameter("bias", nn.Parameter(torch.zeros(4)))
                self.blocks = nn.ModuleList([Block(4) for _ in range(3)])
                layers = []
                for _ in range(2):
                    layers.append(nn.Linear(4, 4))
                self.extra = nn.ModuleList(layers)
                self.act = ACT2FN["gelu"]
                self.norm = nn.LayerNorm(4) if config.norm else nn.Identity()
                self.lm_head = nn.Linear(4, 10, bias=False)
                self.lm_head.weight = self.embed_tokens.weight
        """
    )
    facts = facts_of(index.classes["Net"])
    kinds = {name: m.kind for name, m in facts.members.items()}
    assert kinds["config"] == Kind.UNKNOWN and kinds["embed_tokens"] == Kind.UNKNOWN
    assert kinds["scale"] == kinds["bias"] == Kind.PARAM
    assert kinds["inv_freq"] == Kind.BUFFER
    assert facts.members["blocks"].kind == Kind.CONTAINER and facts.members["blocks"].classes == ("Block",)
    assert facts.members["extra"].classes == ("torch.nn.Linear",)
    assert facts.members["act"].classes == (ACTIVATION,)
    assert facts.members["norm"].classes == ("torch.nn.LayerNorm", "torch.nn.Identity")
    assert facts.ties == (("lm_head.weight", "embed_tokens.weight"),)
    assert has_params(index, "Block") is True
    assert member_param(index, "Block", "fc") is False and member_param(index, "torch.nn.Linear", "bias")


def test_module_dict_subclass_elements_and_inherited_members():
    index = index_of(
        """
        from torch import nn

        class Expert(nn.Module):
            def __init__(self):
                super().__init__()
                self.wi = nn.Linear(4, 8)

        class Experts(nn.ModuleDict):
            def __init__(self, n):
                super().__init__()
                for i in range(n):
                    self[f"expert_{i}"] = Expert()

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.shared = nn.Linear(4, 4)

        class Child(Base):
            def __init__(self):
                super().__init__()
                self.own = nn.Linear(4, 4)
        """
    )
    assert facts_of(index.classes["Experts"]).elements == ("Expert",)
    assert set(facts_of(index.classes["Child"]).members) == {"shared", "own"}


def test_forward_reaches_helpers_through_self_and_super():
    index = index_of(
        """
        from torch import nn

        class Base(nn.Module):
            def _project(self, x):
                return x

        class Net(Base):
            def forward(self, x):
                return self._mix(x)

            def _mix(self, x):
                return super()._project(self._scale(x))

            def _scale(self, x):
                return x

            def unused(self, x):
                return x
        """
    )
    reached = {m.name for m in index.classes["Net"].forward_methods}
    assert reached == {"forward", "_mix", "_scale", "_project"}


def test_methods_are_parsed_only_when_a_rule_asks():
    index = index_of(
        """
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)
        """
    )
    assert not index._snippets
    method = index.classes["Net"].method("forward")
    assert method.node is not None and method.snippet.span(method.node)[0] == 9
    assert len(index._snippets) == 1
