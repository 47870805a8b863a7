"""Code from continual-learning, detection and diffusion libraries the checker misread: a loss handed to a model's
constructor taken for a submodule, a setting of a model read as the model's data, a replay buffer deep-copied as a
model, a registry's pixel decoder run by parts, a weight's storage initialised through a local, a model handed in
to the constructor walked for its parameters, a checkpointer loading into the model it was built over, and a
submodule run through a gradient-checkpointing helper of another file under an optional input."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found, found_in_package, write_package

# A continual learner: the backbone and the criterion are handed to the constructor by the caller.
LEARNER = """
import numpy as np
import torch.nn as nn


class Learner(nn.Module):
    def __init__(self, backbone, loss, args):
        super().__init__()
        self.net = backbone
        self.loss = loss
        self.args = args

    def fit_buffer(self, loader):
        for x, y in loader:
            do_mix = np.random.rand(1) < 0.5
            if do_mix:
                out = self.net(x)
                loss = 0.5 * self.loss(out, y) + 0.5 * self.loss(out, y.flip(0))
            else:
                out = self.net(x)
                loss = self.loss(out, y)
            loss.backward()
"""


def test_a_criterion_handed_to_the_constructor_runs_no_submodule(tmp_path: Path) -> None:
    # both branches of the random draw run `self.net` once; only the criterion runs twice on one side
    assert found_in_package(tmp_path, {"learner.py": LEARNER}, "learner.py", prefix="ZG2") == []


def test_a_module_handed_to_the_constructor_under_another_name_still_counts(tmp_path: Path) -> None:
    source = LEARNER.replace("self.loss = loss", "self.proj = head").replace("self.loss(", "self.proj(")
    source = source.replace("def __init__(self, backbone, loss, args)", "def __init__(self, backbone, head, args)")
    assert ("ZG202", 16) in found_in_package(tmp_path, {"learner.py": source}, "learner.py", prefix="ZG2")


def test_the_parameters_of_a_handed_in_backbone_are_partitioned_in_init(tmp_path: Path) -> None:
    source = LEARNER.replace(
        "        self.args = args\n",
        "        self.args = args\n        self.grad_dims = [p.data.numel() for p in self.parameters()]\n",
    )
    assert ("ZG102", 12) in found_in_package(tmp_path, {"learner.py": source}, "learner.py", prefix="ZG1")


TRAIN = """
import copy

import numpy as np


def train(model, eval_dataset, args, loader):
    epoch, best, best_state = 0, None, None
    while True:
        for x, y in loader:
            model.observe(x, y)
        epoch += 1
        if epoch >= model.args.n_epochs:
            break
        accs = eval_dataset.evaluate(model)
        metric = np.mean(accs)
        if best is not None and metric < best:
            model.load_state_dict(best_state)
            break
        best, best_state = metric, copy.deepcopy(model.state_dict())
        if args.eval_epochs and epoch % args.eval_epochs == 0 and epoch < model.args.n_epochs:
            eval_dataset.evaluate(model)
"""


def test_a_setting_of_a_model_loaded_with_a_ranks_best_state_is_still_a_setting(tmp_path: Path) -> None:
    findings = found_in_package(tmp_path, {"train.py": TRAIN}, "train.py", prefix="ZG2")
    assert any(line == 17 for _code, line in findings)  # the early stop on this rank's own metric
    assert not any(line == 21 for _code, line in findings)  # `epoch < model.args.n_epochs`: the same everywhere


def test_a_replay_buffer_of_a_handed_model_deep_copied_is_no_model_copy(tmp_path: Path) -> None:
    source = """
    import copy

    import torch


    def save_checkpoint(model, path):
        state = {"model": 1}
        state["buffer"] = copy.deepcopy(model.buffer)
        state["head"] = copy.deepcopy(model.head)
        torch.save(state, path)
    """
    findings = found(write_package(tmp_path, {"ckpt.py": source}) / "ckpt.py", "ZG105")
    assert ("ZG105", 9) not in findings
    assert ("ZG105", 10) in findings


HEAD = """
import torch.nn as nn

from .registry import build_pixel_decoder


class SegHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.pixel_decoder = build_pixel_decoder(cfg)
        self.predictor = nn.Linear(256, 256)

    def forward(self, features):
        mask_features, multi_scale = self.pixel_decoder.forward_features(features)
        return self.predictor(mask_features)
"""
REGISTRY = """
REGISTRY = {}


def build_pixel_decoder(cfg):
    return REGISTRY[cfg.name](cfg)
"""
DECODER = """
import torch
import torch.nn as nn


class PixelDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_proj = nn.Conv2d(256, 256, 1)
        self.mask_features = nn.Conv2d(256, 256, 3)

    def forward_features(self, features):
        x = self.input_proj(features)
        return self.mask_features(x), [x]
"""


def test_a_registry_decoder_run_by_parts_whose_package_classes_own_no_parameter_is_left_alone(tmp_path: Path) -> None:
    files = {"head.py": HEAD, "registry.py": REGISTRY, "decoder.py": DECODER}
    assert found_in_package(tmp_path, files, "head.py", prefix="ZG303") == []


def test_a_registry_decoder_run_by_parts_whose_class_owns_a_parameter_is_reported(tmp_path: Path) -> None:
    decoder = DECODER.replace(
        "        self.mask_features = nn.Conv2d(256, 256, 3)\n",
        "        self.mask_features = nn.Conv2d(256, 256, 3)\n"
        "        self.level_embed = nn.Parameter(torch.zeros(4, 256))\n",
    )
    files = {"head.py": HEAD, "registry.py": REGISTRY, "decoder.py": decoder}
    assert ("ZG303", 14) in found_in_package(tmp_path, files, "head.py", prefix="ZG303")


def test_a_childs_weight_storage_initialised_through_a_local_view(tmp_path: Path) -> None:
    source = """
    import torch.nn as nn
    from torch.nn.init import trunc_normal_


    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Conv2d(3, 64, 4, 4)


    class Net(nn.Module):
        def __init__(self, n, parallel):
            super().__init__()
            self.embeds = nn.ModuleList([Embed() for _ in range(n)])
            self.weights = nn.ParameterList()
            if parallel:
                for i in range(len(self.weights)):
                    w = self.weights[i].data
                    trunc_normal_(w, std=0.02)
            else:
                for i in range(len(self.embeds)):
                    w = self.embeds[i].proj.weight.data
                    trunc_normal_(w.view([w.shape[0], -1]), std=0.02)
    """
    assert ("ZG103", 24) in found(write_package(tmp_path, {"net.py": source}) / "net.py", "ZG103")


def test_a_checkpointer_built_over_a_model_built_above_loads_into_its_placeholders(tmp_path: Path) -> None:
    source = """
    from detectron2.checkpoint import DetectionCheckpointer

    from .nets import Net


    def main(cfg):
        model = Net()
        DetectionCheckpointer(model, save_dir=cfg.out).resume_or_load(cfg.weights, resume=False)
        return model
    """
    nets = """
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(512, 512)

        def forward(self, x):
            return self.fc(x)
    """
    assert ("ZG108", 9) in found_in_package(tmp_path, {"main.py": source, "nets.py": nets}, "main.py", prefix="ZG108")


def test_a_tower_run_through_a_checkpointing_helper_of_another_file_only_when_an_input_is_given(tmp_path: Path) -> None:
    helpers = """
    from torch.utils.checkpoint import checkpoint


    def auto_grad_checkpoint(module, *args, **kwargs):
        if getattr(module, "grad_checkpointing", False):
            return checkpoint(module, *args, **kwargs)
        return module(*args, **kwargs)
    """
    model = """
    import torch.nn as nn

    from .utils import auto_grad_checkpoint


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attn = nn.Linear(d, d)
            self.mlp = nn.Linear(d, d)

        def forward(self, x):
            return self.mlp(self.attn(x))


    class ControlNet(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
            self.controlnet = nn.ModuleList([Block(d) for _ in range(n)])

        def forward(self, x, c=None):
            if c is not None:
                for i in range(len(self.controlnet)):
                    c = auto_grad_checkpoint(self.controlnet[i], c + x)
            for block in self.blocks:
                x = auto_grad_checkpoint(block, x)
            return x
    """
    files = {"utils.py": helpers, "model.py": model}
    assert ("ZG205", 24) in found_in_package(tmp_path, files, "model.py", prefix="ZG205")


def test_a_layer_run_once_per_sample_split_off_by_torch_under_another_name(tmp_path: Path) -> None:
    source = """
    import torch as th
    import torch.nn as nn


    class Conv3dStack(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv3d_layer = nn.Conv3d(64, 64, 3)

        def forward(self, x):
            pieces = [self.conv3d_layer(mini_batch) for mini_batch in th.split(x, 1)]
            return th.cat(pieces)
    """
    findings = found(write_package(tmp_path, {"stack.py": source}) / "stack.py", "ZG2")
    assert [line for _code, line in findings] == [12]  # as many pieces as this rank's batch has samples


def test_an_early_return_when_no_sample_of_the_batch_holds_a_box_skips_the_embedding(tmp_path: Path) -> None:
    source = """
    import torch


    def denoising_group(targets, num_classes, class_embed, num_denoising=100):
        num_gts = [len(t["labels"]) for t in targets]
        max_gt_num = max(num_gts)
        if max_gt_num == 0:
            return None
        query = torch.full([len(num_gts), max_gt_num], num_classes)
        return class_embed(query)


    def dummy_group(targets, num_classes, class_embed, num_denoising=100):
        num_gts = [len(t["labels"]) for t in targets]
        max_gt_num = max(max(num_gts), 1)
        query = torch.full([len(num_gts), max_gt_num], num_classes)
        return class_embed(query)
    """
    findings = found(write_package(tmp_path, {"denoising.py": source}) / "denoising.py", "ZG2")
    assert findings == [("ZG204", 8)]  # the second pads with one dummy query: every rank runs the embedding


def test_a_trainer_handed_its_model_by_keyword_saves_the_state_of_a_built_model(tmp_path: Path) -> None:
    source = """
    import torch


    class SimCLR(object):
        def __init__(self, *args, **kwargs):
            self.args = kwargs["args"]
            self.model = kwargs["model"].to(self.args.device)
            self.optimizer = kwargs["optimizer"]

        def train(self, loader):
            for x in loader:
                self.optimizer.zero_grad()
                self.model(x).mean().backward()
                self.optimizer.step()
            torch.save({"state_dict": self.model.state_dict(), "opt": self.optimizer.state_dict()}, "ckpt.pt")
    """
    findings = found(write_package(tmp_path, {"simclr.py": source}) / "simclr.py", "ZG1")
    assert ("ZG108", 16) in findings
    assert len(findings) == 1  # the optimizer's state is no model's


AGENT = """
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(512, 512)

    def forward(self, x):
        return self.net(x)


class Agent:
    def __init__(self, env, device=None):
        self.env = env
        self.policy = Policy().to(device)
"""


def test_the_model_an_agent_built_in_this_function_holds_is_built_here(tmp_path: Path) -> None:
    script = """
    import torch as th

    from .agent import Agent


    def train(env, loader, out):
        agent = Agent(env)
        policy = agent.policy
        params = policy.parameters()
        optimizer = th.optim.Adam(params, lr=1e-4)
        for x in loader:
            policy(x).mean().backward()
            th.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
        th.save(policy.state_dict(), out)
    """
    findings = found_in_package(tmp_path, {"agent.py": AGENT, "train.py": script}, "train.py", prefix="ZG1")
    assert ("ZG108", 16) in findings  # the state of the model the agent built
    assert not any(code == "ZG107" for code, _line in findings)  # the optimizer spent the generator: nothing clipped


def test_a_module_of_the_program_built_around_a_handed_model_holds_its_parameters(tmp_path: Path) -> None:
    agents = """
    import torch.nn as nn


    class TemporalAgent(nn.Module):
        def __init__(self, agent):
            super().__init__()
            self.agent = agent

        def forward(self, workspace, n_steps):
            for t in range(n_steps):
                self.agent(workspace, t=t)
    """
    script = """
    import torch

    from .agents import TemporalAgent


    def run_ppo(action_agent, workspace, cfg):
        tppo_agent = TemporalAgent(action_agent).to(cfg.device)
        optimizer = torch.optim.Adam(tppo_agent.parameters(), lr=cfg.lr)
        tppo_agent(workspace, n_steps=cfg.n_steps)
        loss = workspace["loss"].mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tppo_agent.parameters(), cfg.clip_grad)
        optimizer.step()
    """
    findings = found_in_package(tmp_path, {"agents.py": agents, "ppo.py": script}, "ppo.py", prefix="ZG107")
    assert findings == [("ZG107", 13)]


def test_a_model_of_a_class_that_inherits_its_constructor_from_another_file_is_built(tmp_path: Path) -> None:
    utils = """
    import torch.nn as nn


    class SimpleSegmentationModel(nn.Module):
        def __init__(self, backbone, classifier):
            super().__init__()
            self.backbone = backbone
            self.classifier = classifier

        def forward(self, x):
            return self.classifier(self.backbone(x))
    """
    deeplab = """
    from .utils import SimpleSegmentationModel


    class DeepLabV3(SimpleSegmentationModel):
        pass
    """
    script = """
    import torch

    from . import deeplab


    def main(opts):
        model = deeplab.__dict__[opts.model](backbone=None, classifier=None)
        torch.save({"model_state": model.state_dict()}, opts.out)
    """
    files = {"utils.py": utils, "deeplab.py": deeplab, "main.py": script}
    assert ("ZG108", 9) in found_in_package(tmp_path, files, "main.py", prefix="ZG108")


def test_the_networks_a_pix2pix_style_model_looks_up_by_name_are_models(tmp_path: Path) -> None:
    source = """
    import os

    import torch


    class BaseModel:
        def __init__(self, opt):
            self.opt = opt
            self.model_names = []

        def save_networks(self, epoch):
            for name in self.model_names:
                net = getattr(self, "net" + name)
                torch.save(net.module.cpu().state_dict(), os.path.join(self.opt.dir, f"{epoch}_{name}.pth"))

        def save_options(self):
            for name in self.model_names:
                option = getattr(self, "opt_" + name)
                torch.save(option.state_dict(), name)
    """
    findings = found(write_package(tmp_path, {"base_model.py": source}) / "base_model.py", "ZG108")
    assert findings == [("ZG108", 15)]  # `opt_` names settings, not a network
