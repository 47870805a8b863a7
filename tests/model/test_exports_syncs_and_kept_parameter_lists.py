"""Code around a built model that the checker read past before: an evaluation a rank gate runs through a wrapper's
`.module`, an export that traces the model, a layer factory building its layer in one of two branches, hand-written
data-parallel helpers syncing a model's parameters, a loader walking a model a classmethod built, a weight replaced
by a fresh `nn.Parameter`, a trainer keeping a list of the parameters of the model it was handed for another method
to perturb, and `save_pretrained` of a model built in the same function. Also what is none of these: a tensor merged
from a list of outputs, a mention of a function in a docstring, and clipping a list of parameters (ZG107 alone)."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_directory, write_package, found

MODELS = """
import torch.nn as nn


class Synth(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(512, 512)

    def forward(self, x):
        return self.enc(x)

    def infer(self, x):
        return self.enc(x)
"""


def _check(tmp_path: Path, source: str, prefix: str) -> list[tuple[str, int]]:
    return found_in_directory(tmp_path, {"models.py": MODELS, "train.py": source}, "train.py", prefix)


def test_an_evaluation_run_through_the_wrapped_model_only_on_rank_zero_diverges(tmp_path: Path) -> None:
    script = """
import torch
from models import Synth


def evaluate(generator, loader):
    for x in loader:
        break
    return generator.module.infer(x)


def summarize(generator, loader):
    return generator.module.state_dict()


def train(rank, net_g, loader):
    for x in loader:
        net_g(x).sum().backward()
        if rank == 0:
            evaluate(net_g, loader)
        if rank == 0:
            summarize(net_g, loader)


def run(rank):
    net_g = torch.nn.parallel.DistributedDataParallel(Synth())
    train(rank, net_g, [])
"""
    assert _check(tmp_path, script, "ZG2") == [("ZG201", 19)]


def test_an_export_that_traces_the_model_on_rank_zero_diverges(tmp_path: Path) -> None:
    script = """
import torch


def run_eval(args, model, loader):
    for batch in loader:
        if args.rank < 1:
            model.export_onnx("m.onnx", (batch,))
        if args.rank < 1:
            model.save_config("m.json")
        out = model(batch)


def export(args, model, loader):
    for batch in loader:
        if args.rank == 0:
            torch.onnx.export(model, (batch,), "m.onnx")
        out = model(batch)
"""
    assert _check(tmp_path, script, "ZG2") == [("ZG201", 7), ("ZG201", 16)]


def test_a_tensor_merged_from_a_list_of_outputs_is_no_model(tmp_path: Path) -> None:
    utils = """
import torch


def join_chunks(chunks):
    return torch.cat([m.cpu() for m in chunks])
"""
    script = """
import numpy as np
from utils import join_chunks


def run_predict(args, model, loader):
    predicts = []
    for batch in loader:
        predicts.append(model(batch))
    predicts = join_chunks(predicts)
    if args.rank <= 0:
        np.savetxt("f", predicts.detach().cpu().numpy())
"""
    files = {"models.py": MODELS, "utils.py": utils, "predict.py": script}
    assert found_in_directory(tmp_path, files, "predict.py", "ZG2") == []


def test_a_layer_factory_building_its_layer_in_either_branch_writes_a_placeholder(tmp_path: Path) -> None:
    source = """
import torch as th
import torch.nn as nn


class LinearF16(nn.Linear):
    pass


def NormedLinear(*args, scale=1.0, dtype=th.float32, **kwargs):
    if dtype == th.float32:
        out = nn.Linear(*args, **kwargs)
    elif dtype == th.float16:
        out = LinearF16(*args, **kwargs)
    else:
        raise ValueError(dtype)
    out.weight.data *= scale / out.weight.norm(dim=1, p=2, keepdim=True)
    return out


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.pi = NormedLinear(d, 4, scale=0.1)
"""
    path = write_package(tmp_path, {"heads.py": source}) / "heads.py"
    assert found(path, "ZG101") == [("ZG101", 17)]


def test_hand_written_parameter_syncs_read_placeholders(tmp_path: Path) -> None:
    source = """
import torch.distributed as dist


def sync_params(params, src_rank=0):
    datas = [p.data for p in params]
    for d in datas:
        dist.broadcast(d, src=src_rank)


def log_params(params, writer):
    for p in params:
        writer.add_histogram("p", p.data)
"""
    path = write_package(tmp_path, {"mpi_util.py": source}) / "mpi_util.py"
    # (`params` of a function not named for syncing may be anything: a dict of settings, a list of tensors)
    assert found(path, "ZG1") == [("ZG109", 6), ("ZG109", 8)]


def test_a_recursive_loader_handed_the_model_a_classmethod_built_loads_placeholders(tmp_path: Path) -> None:
    source = """
import torch.nn as nn


class PreTrained(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(512, 512)

    @classmethod
    def from_pretrained(cls, config, state_dict):
        model = cls(config)
        errors = []

        def load(module, prefix=""):
            module._load_from_state_dict(state_dict, prefix, {}, True, [], [], errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(model, prefix="")
        return model
"""
    path = write_package(tmp_path, {"modeling.py": source}) / "modeling.py"
    assert found(path, "ZG1") == [("ZG108", 21)]


def test_a_helper_mentioned_in_a_docstring_is_still_judged_at_its_calls(tmp_path: Path) -> None:
    source = """
import struct
import torch


def serialize_fp32(file, tensor):
    d = tensor.detach().cpu().view(-1).to(torch.float32).numpy()
    file.write(struct.pack(f"{len(d)}f", *d))


def legacy_export(model, filepath):
    out_file = open(filepath, "wb")
    serialize_fp32(out_file, model.tok_embeddings.weight)


def version1_export(model, filepath):
    \"\"\"The same as legacy_export, but with a header.\"\"\"
    out_file = open(filepath, "wb")  # (legacy_export, without one)
    print("as in (legacy_export)")
    out_file.write(b"head")


def model_export(model, filepath, version):
    if version == 0:
        legacy_export(model, filepath)
    else:
        version1_export(model, filepath)
"""
    path = write_package(tmp_path, {"export.py": source}) / "export.py"
    assert ("ZG109", 13) in found(path, "ZG1")
    # (a string naming it, as `getattr` would, is a use: the helper may then be handed on anywhere)
    quoted = source.replace('print("as in (legacy_export)")', 'print(globals()["legacy_export"])')
    path.write_text(quoted)
    assert ("ZG109", 13) not in found(path, "ZG1")


def test_a_weight_replaced_by_a_fresh_parameter_after_the_build_is_lost(tmp_path: Path) -> None:
    script = """
import torch
from torch import nn
from models import Synth


def load_meta_model(path):
    state_dict = torch.load(path)
    model = Synth()
    model.enc.weight = nn.Parameter(state_dict["enc.weight"])
    probe = Synth()
    probe.enc.weight = probe.enc.weight
    return model
"""
    assert _check(tmp_path, script, "ZG1") == [("ZG101", 10)]


def test_a_trainer_perturbing_the_parameters_it_kept_of_the_model_it_was_handed(tmp_path: Path) -> None:
    source = """
import torch
from transformers import Trainer


class ZOTrainer(Trainer):
    def perturb(self, scaling_factor=1):
        for name, param in self.to_optim:
            param.data = param.data + scaling_factor * torch.randn_like(param)

    def zo_step(self, model, inputs):
        self.to_optim = []
        for name, param in model.named_parameters():
            if param.requires_grad:
                self.to_optim.append((name, param))
        self.scales = [("s", torch.ones(4))]
        self.perturb()
        return model(**inputs)

    def rescale(self):
        for name, scale in self.scales:
            scale.data.mul_(2)
"""
    path = write_package(tmp_path, {"trainer.py": source}) / "trainer.py"
    assert found(path, "ZG1") == [("ZG101", 9), ("ZG109", 9), ("ZG102", 9)]


def test_clipping_a_list_of_parameters_is_told_once(tmp_path: Path) -> None:
    source = """
import torch


def train_step(model, parameters, x):
    model(x).sum().backward()
    torch.nn.utils.clip_grad_norm_([p for p in parameters], 1.0)
"""
    path = write_package(tmp_path, {"step.py": source}) / "step.py"
    assert found(path, "ZG1") == [("ZG107", 7)]


def test_save_pretrained_of_a_model_built_in_the_same_function_saves_placeholders(tmp_path: Path) -> None:
    script = """
import torch
from transformers import AutoModelForCausalLM


def get_llm(name):
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.float16)
    model.seqlen = model.config.max_position_embeddings
    return model


def main(args):
    model = get_llm(args.model)
    model.save_pretrained(args.save_model)
    gathered = get_llm(args.model)
    gathered.save_pretrained(args.out, state_dict=torch.load(args.full))
"""
    assert _check(tmp_path, script, "ZG1") == [("ZG108", 14)]


def test_a_classmethod_constructor_that_builds_then_loads_is_told_where_it_is_called(tmp_path: Path) -> None:
    modeling = """
import torch.nn as nn


class PreTrained(nn.Module):
    @classmethod
    def from_pretrained(cls, config, state_dict):
        model = cls(config)

        def load(module, prefix=""):
            module._load_from_state_dict(state_dict, prefix, {}, True, [], [], [])
            for name, child in module._modules.items():
                load(child, prefix + name + ".")

        load(model)
        return model

    @classmethod
    def from_config(cls, config):
        return cls(config)


class Bert(PreTrained):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(512, 512)

    def forward(self, x):
        return self.fc(x)
"""
    entry = """
import torch
from .modeling import Bert


class Encoder(torch.nn.Module):
    def __init__(self, config, weights):
        super().__init__()
        self.model = Bert.from_pretrained(config, weights)
        self.other = Bert.from_config(config)

    def forward(self, x):
        return self.model(x) + self.other(x)
"""
    package = write_package(tmp_path, {"modeling.py": modeling, "entry.py": entry})
    assert found(package / "entry.py", "ZG108") == [("ZG108", 9)]
