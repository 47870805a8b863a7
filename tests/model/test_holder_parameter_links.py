"""An object that holds a built model (an optimizer wrapper, an agent, a logger of modules, an encoder reading a
trained model) and touches its parameters outside any forward, however it got them: the parameters of an
optimizer's groups gathered through `tuple(...)`, an argument a helper clips, a getter handing back the modules
it keeps (`get_torch_modules()`) whose gradients are logged, a getter of the model handing back a nested child
(`return self.embedding_layer.cat_embeddings`, through a property), a property of the model handing back one of
its parameters (`return self.ar_net[0].weight`), an element of a dict of modules the object keeps
(`module = self.checkpoint_modules.get(name)`) loaded into."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

OPTIM_WRAPPERS = """
import torch


class Clipping:
    def __init__(self, optim, max_norm):
        self.optim = optim
        self.max_norm = max_norm

    def step(self):
        parameters = tuple(p for group in self.optim.param_groups for p in group["params"])
        torch.nn.utils.clip_grad_norm_(parameters, self.max_norm)
        self.optim.step()


class ValueClipping:
    def __init__(self, optim):
        self.optim = optim

    def step(self):
        params = list(p for g in self.optim.param_groups for p in g["params"])
        torch.nn.utils.clip_grad_value_(params, 1.0)
        self.optim.step()


class Clipper:
    def __init__(self, clip_args):
        self.clip_args = clip_args

    @staticmethod
    def _clip(params, clip_norm=None):
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
"""

# Look-alikes: the clipping handed to the engine's own method, a group's learning rate set, a plain tensor clamped.
OPTIM_SAFE = """
import torch


class Scheduled:
    def __init__(self, optim, engine):
        self.optim = optim
        self.engine = engine

    def step(self, lr):
        for group in self.optim.param_groups:
            group["lr"] = lr
        self.engine.clip_grad_norm_(1.0)
        self.optim.step()

    @staticmethod
    def _bound(values, limit):
        return torch.clamp(values, -limit, limit)
"""

GRADIENT_LOGGER = """
import dataclasses

from torch import nn


@dataclasses.dataclass(frozen=True)
class Modules:
    def get_torch_modules(self) -> dict[str, nn.Module]:
        found: dict[str, nn.Module] = {}
        for key, value in dataclasses.asdict(self).items():
            if isinstance(value, nn.Module):
                found[key] = value
        return found

    def get_gradients(self):
        for module_name, module in self.get_torch_modules().items():
            for name, parameter in module.named_parameters():
                if parameter.requires_grad and parameter.grad is not None:
                    yield f"{module_name}.{name}", parameter.grad.cpu().detach().numpy()

    def gradient_norms(self):
        return [p.grad.norm().item() for m in self.get_torch_modules().values() for p in m.parameters()]
"""

# Look-alikes: only whether gradients exist, and their shapes, are read.
GRADIENT_SAFE = """
import dataclasses

from torch import nn


@dataclasses.dataclass(frozen=True)
class Modules:
    def get_torch_modules(self) -> dict[str, nn.Module]:
        return {k: v for k, v in dataclasses.asdict(self).items() if isinstance(v, nn.Module)}

    def missing_gradients(self):
        for name, module in self.get_torch_modules().items():
            for pname, parameter in module.named_parameters():
                if parameter.requires_grad and parameter.grad is None:
                    yield f"{name}.{pname}"
"""

NETS = """
from torch import nn


class Base(nn.Module):
    def __init__(self, sizes, d):
        super().__init__()
        self.backbone = Backbone(sizes, d)
        self.ar_net = nn.Sequential(nn.Linear(d, 512), nn.Linear(512, 512))

    @property
    def embedding_layer(self):
        return self.backbone.embedding_layer

    def extract_embedding(self):
        if len(self.backbone.sizes) > 0:
            return self.embedding_layer.cat_embeddings
        raise ValueError("no categorical columns")

    @property
    def ar_weights(self):
        return self.ar_net[0].weight

    @property
    def n_lags(self):
        return self.ar_net[0].in_features

    def forward(self, x):
        return self.ar_net(x)


class Backbone(nn.Module):
    def __init__(self, sizes, d):
        super().__init__()
        self.sizes = sizes
        self.embedding_layer = Embeddings(sizes, d)


class Embeddings(nn.Module):
    def __init__(self, sizes, d):
        super().__init__()
        self.cat_embeddings = nn.ModuleList([nn.Embedding(n, d) for n in sizes])
"""

READERS = """
import logging


class EmbeddingTransformer:
    def __init__(self, trained):
        self.cols = trained.cols
        self._mapping = {}
        self._extract(trained.model)

    def _extract(self, model):
        try:
            layers = model.extract_embedding()
        except ValueError:
            logging.error("no embeddings")
            layers = None
        if layers is not None:
            for i, col in enumerate(self.cols):
                embedding = layers[i]
                self._mapping[col] = embedding.weight[0, :].detach().cpu().numpy()


class Forecaster:
    def __init__(self, model):
        self.model = model

    def _eval_ar(self, pos):
        weights = self.model.ar_weights.detach().numpy()
        return weights[pos - 1, :]
"""

# Look-alikes: a property handing back a size, and a getter's modules only counted.
READERS_SAFE = """
class Forecaster:
    def __init__(self, model):
        self.model = model

    def lags(self):
        return self.model.n_lags

    def _count(self, model):
        try:
            layers = model.extract_embedding()
        except ValueError:
            layers = None
        return 0 if layers is None else len(layers)
"""

AGENT = """
import torch


class Agent:
    def __init__(self, models):
        self.models = models
        self.checkpoint_modules = {}

    def load(self, path):
        modules = torch.load(path)
        for name, data in modules.items():
            module = self.checkpoint_modules.get(name, None)
            if module is not None and hasattr(module, "load_state_dict"):
                module.load_state_dict(data)
"""

# Look-alike: a setting looked up in the same kind of dict, not a module.
AGENT_SAFE = """
import torch


class Agent:
    def __init__(self, cfg):
        self.cfg = cfg
        self.schedules = {}

    def load(self, path):
        saved = torch.load(path)
        for name, data in saved.items():
            schedule = self.schedules.get(name, None)
            if schedule is not None:
                schedule.load_state_dict(data)
"""


def test_optimizer_wrappers_clipping_their_groups_or_an_argument_are_found(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"optim.py": OPTIM_WRAPPERS}, "optim.py", prefix="ZG1") == [
        ("ZG107", 12), ("ZG107", 22), ("ZG107", 33)]


def test_engine_clipping_learning_rates_and_clamps_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"optim.py": OPTIM_SAFE}, "optim.py", prefix="ZG1") == []


def test_gradients_of_modules_a_getter_hands_back_are_found(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"modules.py": GRADIENT_LOGGER}, "modules.py", prefix="ZG1") == [
        ("ZG109", 20), ("ZG109", 23)]


def test_gradients_only_tested_for_none_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"modules.py": GRADIENT_SAFE}, "modules.py", prefix="ZG1") == []


def test_weights_through_a_getter_or_a_property_of_the_model_are_found(tmp_path: Path) -> None:
    found = found_in_package(tmp_path, {"nets.py": NETS, "readers.py": READERS}, "readers.py", prefix="ZG1")
    assert found == [("ZG109", 20), ("ZG109", 28)]


def test_a_size_property_and_counted_getters_stay_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"nets.py": NETS, "readers.py": READERS_SAFE}, "readers.py", prefix="ZG1") == []


def test_a_module_taken_from_a_kept_dict_and_loaded_is_found(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"agent.py": AGENT}, "agent.py", prefix="ZG1") == [("ZG108", 15)]


def test_a_setting_taken_from_a_kept_dict_stays_clean(tmp_path: Path) -> None:
    assert found_in_package(tmp_path, {"agent.py": AGENT_SAFE}, "agent.py", prefix="ZG1") == []
