"""Built models and layers a function reaches behind a second name: the unwrapped model chosen by a conditional
(`model.module if hasattr(model, "module") else model`), a model a registry names at the top of a script, a model a
factory hands back inside a data-parallel wrapper of a library we cannot read, models appended to a list kept on
the module, layers built into a list and walked, and parts of a built model gathered into a new container. Each was
partitioned when its constructor returned, so what the code reads, writes, saves or copies there is placeholders.
Also the partitioned parameter handed into a constructor that sizes a layer from it, told where it is handed, and
decisions on whether this rank's input holds anything at all, or on the parity of its batch size."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import TINY_NET, found, found_in_directory, found_in_package

NETWORKS = "import torch\nfrom torch import nn\n\n\n" + TINY_NET


def test_the_unwrapped_model_a_conditional_chooses_stands_for_the_built_model(tmp_path: Path) -> None:
    script = """
import torch
from networks import Net


def main(args):
    model = Net()
    model = torch.nn.DataParallel(model)
    model_to_save = (
        model.module if hasattr(model, "module") else model
    )
    torch.save(model_to_save.state_dict(), "model.bin")


def export(args, other):
    model = Net()
    either = model if args.raw else other
    torch.save(either.state_dict(), "either.bin")
"""
    # (a choice between two different values stands for neither)
    assert found_in_directory(tmp_path, {"networks.py": NETWORKS, "train.py": script}, "train.py", "ZG1") == [
        ("ZG108", 12),
    ]


def test_a_model_a_registry_names_at_the_top_of_a_script_is_built_there(tmp_path: Path) -> None:
    models = NETWORKS + "\n\nMODELS = {'net': Net}\n"
    script = """
import torch
from models import MODELS

settings = dict(lr=1e-3)
model = MODELS["net"]()
model.load_state_dict(torch.load("in.pt"))
torch.save(model.state_dict(), "out.pt")
torch.save(settings, "settings.pt")
"""
    assert found_in_directory(tmp_path, {"models.py": models, "merge.py": script}, "merge.py", "ZG1") == [
        ("ZG108", 7), ("ZG108", 8),
    ]


def test_a_factory_returning_a_librarys_data_parallel_wrapper_builds_the_model_it_wraps(tmp_path: Path) -> None:
    utils = """
from geometric_lib.nn import DataParallel
from networks import Net


def get_model(args, parallel=True):
    model_class = Net
    model = model_class()
    if parallel:
        model = DataParallel(model)
    return model


def get_batches(args):
    batches = load_batches(args)
    batches = DataParallel(batches)
    return batches
"""
    script = """
import torch
from utils import get_batches, get_model


def main(args):
    model = get_model(args)
    batches = get_batches(args)
    if args.restart:
        model.module.load_state_dict(torch.load(args.restart), strict=True)
    torch.save(batches.state_dict(), "batches.pt")
"""
    files = {"networks.py": NETWORKS, "utils.py": utils, "train.py": script}
    assert found_in_directory(tmp_path, files, "train.py", "ZG1") == [("ZG108", 10)]


def test_models_appended_to_a_list_the_module_keeps_are_its_models(tmp_path: Path) -> None:
    base = """
from torch import nn
from lib import build_backbone


class Base(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = build_backbone(cfg)
"""
    distiller = """
import torch
from pkg.base import Base
from lib import build_model


class Distiller(Base):
    def __init__(self, cfg):
        super().__init__(cfg)
        teachers = []
        teachers.append(build_model(cfg))
        self.teachers = teachers
        names = []
        names.append(cfg.name)
        self.names = names

    @torch.no_grad()
    def _momentum_update(self, m=0.999):
        for q, k in zip(self.parameters(), self.teachers[0].parameters()):
            k.data = k.data * m + q.data * (1.0 - m)

    def forward(self, x):
        self._momentum_update()
        return self.backbone(x)
"""
    assert ("ZG101", 20) in found_in_package(tmp_path, {"base.py": base, "distiller.py": distiller}, "distiller.py")


def test_layers_built_into_a_list_and_walked_are_partitioned_when_written(tmp_path: Path) -> None:
    source = """
import math
from torch import nn


def build_connector(t, s):
    layers = [nn.Conv2d(s, t, kernel_size=1, bias=False), nn.BatchNorm2d(t)]
    for m in layers:
        if isinstance(m, nn.Conv2d):
            m.weight.data.normal_(0, math.sqrt(2.0 / t))
        elif isinstance(m, nn.BatchNorm2d):
            m.weight.data.fill_(1)
    return nn.Sequential(*layers)


def build_scales(t, scales):
    sizes = [math.sqrt(t), math.log(t)]
    for s in sizes:
        scales.append(s)
    return scales
"""
    path = tmp_path / "connectors.py"
    path.write_text(source)
    assert found(path, "ZG1") == [("ZG101", 10), ("ZG101", 12)]


def test_parts_of_a_built_model_gathered_into_a_container_are_copied_as_placeholders(tmp_path: Path) -> None:
    source = """
import copy
from torch import nn
from backbones import build_backbone


class MGN(nn.Module):
    def __init__(self, blocks, config, head):
        super().__init__()
        self.blocks = blocks
        self.config = config
        self.head = head

    @classmethod
    def from_config(cls, cfg):
        all_blocks = build_backbone(cfg)
        res_conv4 = nn.Sequential(*all_blocks.layer3[1:])
        res_conv5 = all_blocks.layer4
        settings = all_blocks.config
        branch = nn.Sequential(copy.deepcopy(res_conv4), copy.deepcopy(res_conv5))
        return cls(branch, copy.deepcopy(settings), nn.Linear(4, 4))
"""
    path = tmp_path / "mgn.py"
    path.write_text(source)
    assert found(path, "ZG105") == [("ZG105", 20), ("ZG105", 20)]


def test_a_partitioned_weight_handed_into_a_constructor_that_sizes_from_it_is_told_where_handed(
    tmp_path: Path,
) -> None:
    source = """
import torch
from torch import nn


class LMPredictionHead(nn.Module):
    def __init__(self, hidden, embedding_weights):
        super().__init__()
        self.decoder = nn.Linear(embedding_weights.size(1), embedding_weights.size(0), bias=False)
        self.decoder.weight = embedding_weights


class PreTrainingHeads(nn.Module):
    def __init__(self, hidden, embedding_weights):
        super().__init__()
        self.predictions = LMPredictionHead(hidden, embedding_weights)


class TiedHead(nn.Module):
    def __init__(self, hidden, vocab, embedding_weights):
        super().__init__()
        self.decoder = nn.Linear(hidden, vocab, bias=False)
        self.decoder.weight = embedding_weights


class Model(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.cls = PreTrainingHeads(hidden, self.embeddings.weight)
        self.tied = TiedHead(hidden, vocab, self.embeddings.weight)
"""
    path = tmp_path / "bert.py"
    path.write_text(source)
    # the size reads in the head, and the call that hands the weight in; tying by assignment reads nothing
    assert found(path, "ZG102") == [("ZG102", 9), ("ZG102", 9), ("ZG102", 30)]


def test_a_decision_on_whether_this_ranks_input_holds_anything_skips_a_layer(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class EdgeConv(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.proj = nn.Linear(d, d)

    def forward(self, node_attr, edge_index, edge_attr):
        if edge_index.shape[1] == 0:
            out = torch.zeros_like(node_attr)
        else:
            out = self.fc(edge_attr)
        if edge_index.shape[1] > 4:
            out = out * 2
        return self.proj(out)


class Pairs(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.single = nn.Linear(d, d)
        self.pair = nn.Linear(2 * d, d)

    def forward(self, x):
        pooled = self.single(x)
        if pooled.size(0) % 2 == 0:
            return self.pair(pooled.view(-1, pooled.size(1) * 2))
        return pooled
"""
    path = tmp_path / "layers.py"
    path.write_text(source)
    assert found(path, "ZG2") == [("ZG203", 13), ("ZG203", 30)]


def test_a_trainer_keeps_the_model_its_base_of_another_file_builds(tmp_path: Path) -> None:
    base = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)


class SimpleTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.build_model()

    def build_model(self):
        self.model = Net()
        self.optim = torch.optim.SGD(self.model.parameters(), lr=0.1)
"""
    teacher = """
import copy
from pkg.base import SimpleTrainer


class MeanTeacher(SimpleTrainer):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.teacher = copy.deepcopy(self.model)
        self.settings = copy.deepcopy(self.cfg)
"""
    assert found_in_package(tmp_path, {"base.py": base, "teacher.py": teacher}, "teacher.py", prefix="ZG1") == [
        ("ZG105", 9),
    ]


def test_clipping_the_parameters_of_every_group_chained_clips_nothing(tmp_path: Path) -> None:
    source = """
import itertools
import torch


class Optimizer(object):
    def __init__(self, optim, max_grad_norm=0):
        self.optimizer = optim
        self.max_grad_norm = max_grad_norm

    def step(self):
        if self.max_grad_norm > 0:
            params = itertools.chain.from_iterable([group["params"] for group in self.optimizer.param_groups])
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        self.optimizer.step()

    def clip_values(self, values):
        rates = itertools.chain.from_iterable([group["lr"] for group in self.optimizer.param_groups])
        torch.nn.utils.clip_grad_norm_(values, self.max_grad_norm)
        return list(rates)
"""
    path = tmp_path / "optim.py"
    path.write_text(source)
    assert found(path, "ZG1") == [("ZG107", 14)]


def test_an_initialiser_over_lines_given_an_item_of_a_built_layers_weight_is_told_at_the_call(tmp_path: Path) -> None:
    source = """
import numpy as np
from torch import nn


class ImplicitNet(nn.Module):
    def __init__(self, dims):
        super().__init__()
        for layer in range(len(dims) - 1):
            lin = nn.Linear(dims[layer], dims[layer + 1])
            if layer == len(dims) - 2:
                nn.init.normal_(
                    lin.weight[0],
                    mean=-np.sqrt(np.pi) / np.sqrt(dims[layer]),
                    std=0.00001,
                )
            setattr(self, "lin" + str(layer), lin)
"""
    path = tmp_path / "mlp.py"
    path.write_text(source)
    assert found(path, "ZG1") == [("ZG103", 12)]


def test_a_key_missing_from_the_input_decides_a_tower_though_a_copy_of_the_input_is_filled_later(
    tmp_path: Path,
) -> None:
    source = """
import torch
from torch import nn


class Matching(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.detector = nn.Linear(d, d)
        self.matcher = nn.Linear(d, d)

    def forward(self, data):
        pred = {}
        if "keypoints0" not in data:
            pred["keypoints0"] = self.detector(data["image0"])
        data = {**data, **pred}
        for k in data:
            data[k] = torch.stack(data[k])
        return self.matcher(data["keypoints0"])


class Cached(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x, cache):
        if "proj" not in cache:
            cache["proj"] = self.proj(x)
        return cache["proj"]


class CachedByDefault(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x, cache=None):
        if cache is None:
            cache = {}
        if "proj" not in cache:
            cache["proj"] = self.proj(x)
        return cache["proj"]
"""
    path = tmp_path / "matching.py"
    path.write_text(source)
    # (a cache the call fills in place is the caller's state: no decision of this rank's data)
    assert found(path, "ZG2") == [("ZG203", 14)]


def test_an_input_with_no_rows_leaves_before_the_layer_whatever_reads_its_extents(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class FCLayer(nn.Module):
    def __init__(self, d, out_dim):
        super().__init__()
        self.linear = nn.Linear(d, out_dim)
        self.out_dim = out_dim

    def forward(self, h):
        if torch.prod(torch.as_tensor(h.shape[:-1])) == 0:
            h = torch.zeros(list(h.shape[:-1]) + [self.out_dim], device=h.device)
            return h
        return self.linear(h)


class Padded(nn.Module):
    def __init__(self, d, factor):
        super().__init__()
        self.linear = nn.Linear(d, d)
        self.factor = factor

    def forward(self, h):
        if h.size(2) % self.factor == 0:
            return self.linear(h)
        return h


class Scaled(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, d)
        self.scale = 1.0

    def forward(self, h):
        if self.scale == 0:
            h = torch.zeros_like(h)
            return h
        return self.linear(h)
"""
    path = tmp_path / "layers.py"
    path.write_text(source)
    assert found(path, "ZG2") == [("ZG204", 13)]


def test_an_optimizer_wrapper_clipping_the_parameters_its_property_gathers_from_the_groups(tmp_path: Path) -> None:
    source = """
from torch import nn


class OptimizerWrapper:
    def __init__(self, optim):
        self.optim = optim

    @property
    def parameters(self):
        params = []
        for group in self.param_groups:
            params += group["params"]
        return params

    @property
    def rates(self):
        rates = []
        for group in self.param_groups:
            rates += [group["lr"]]
        return rates

    @property
    def param_groups(self):
        return self.optim.param_groups

    def clip_grad_by_norm(self, max_norm):
        return nn.utils.clip_grad_norm_(self.parameters, max_norm)

    def clip_rates(self, max_norm):
        return nn.utils.clip_grad_norm_(self.rates, max_norm)
"""
    path = tmp_path / "optimizer.py"
    path.write_text(source)
    assert found(path, "ZG1") == [("ZG107", 28)]


def test_a_forward_walking_the_parameters_of_a_model_it_is_handed_reads_partitioned_data(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class LitEma(nn.Module):
    def __init__(self, decay=0.999):
        super().__init__()
        self.decay = decay
        self.shadow = {}

    def forward(self, model):
        with torch.no_grad():
            m_param = dict(model.named_parameters())
            for key in m_param:
                self.shadow[key].sub_((1.0 - self.decay) * (self.shadow[key] - m_param[key]))


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.scale = nn.Linear(d, d)

    def forward(self, x):
        total = sum(p.sum() for p in self.scale.parameters())
        return self.proj(x) * total
"""
    path = tmp_path / "ema.py"
    path.write_text(source)
    # the handed model's parameters are data read outside any gather (ZG1); a child's, read in the pass, ZG3's
    assert [f for f in found(path) if f[0] in ("ZG109", "ZG301")] == [("ZG109", 16), ("ZG301", 26)]


def test_a_script_two_folders_down_reads_the_helper_of_a_namespace_folder_beside_its_own(tmp_path: Path) -> None:
    ema = """
from collections import OrderedDict

import torch


@torch.no_grad()
def update_ema(ema_model, model, decay=0.9999):
    ema_params = OrderedDict(ema_model.named_parameters())
    model_params = OrderedDict(model.named_parameters())
    for name, param in model_params.items():
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)
"""
    train = """
from copy import deepcopy

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.ema import update_ema
from autoregressive.models.gpt import GPT


def main(args):
    model = GPT()
    ema = deepcopy(model)
    model = DDP(model)
    for step in range(args.steps):
        update_ema(ema, model.module)
"""
    gpt = NETWORKS.replace("class Net", "class GPT")
    for relative, source in {"app.py": "print('demo')\n", "utils/ema.py": ema, "autoregressive/models/gpt.py": gpt,
                             "autoregressive/train/train_c2i.py": train}.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    assert ("ZG109", 15) in found(tmp_path / "autoregressive" / "train" / "train_c2i.py")


def test_an_extent_asserted_to_be_a_setting_decides_alike_on_every_rank(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class Embedding(nn.Module):
    def __init__(self, continuous_dim, d):
        super().__init__()
        self.continuous_dim = continuous_dim
        self.cont_embedding_layer = nn.Embedding(continuous_dim, d)

    def forward(self, continuous_data):
        assert continuous_data.shape[1] == self.continuous_dim, "one column per continuous feature"
        embed = None
        if continuous_data.shape[1] > 0:
            idx = torch.arange(self.continuous_dim).expand(continuous_data.size(0), -1)
            embed = continuous_data.unsqueeze(2) * self.cont_embedding_layer(idx)
        return embed


def evaluate(model, validation_set):
    should_step = validation_set.size > 0
    if not should_step:
        return None
    return model(validation_set)
"""
    path = tmp_path / "embeddings.py"
    path.write_text(source)
    assert found(path, "ZG2") == []
