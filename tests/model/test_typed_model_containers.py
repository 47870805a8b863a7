"""Models a holder is handed by type rather than by name: an argument annotated as a container of modules
(`models: list[nn.Module]`, `nets: dict[str, Critic]`, `objectives: Iterable[tuple[DataLoader, nn.Module]]`, taken
apart by a comprehension or `zip(*objectives)`) holds built models in those places (`holds.module_container_arguments`,
`provenance.contained`); a plain class's `@property` annotated to return a module class hands out the built model
however its body finds it (`handed.module_properties`); and a method of the model's class that hands back a walk of
its own parameters (`get_grad_params()` returning `filter(..., self.parameters())`) hands back partitioned
parameters (`provenance._Engine._model_method`). Look-alikes: a container annotated with data loaders or tensors, a
property of a module type used only for its mode and its type's name."""

from __future__ import annotations

from tests.model.package_check import Q_NETS, found_in_package

FIT = """
    from typing import Dict, Iterable
    import torch
    from torch import nn
    from torch.utils.data import DataLoader


    class FitMixin:
        def fit(self, train_objectives: Iterable[tuple[DataLoader, nn.Module]], max_grad_norm: float = 1.0):
            loaders = [dl for dl, _ in train_objectives]
            loss_models = [loss for _, loss in train_objectives]
            for i in range(len(loaders)):
                loss_model = loss_models[i]
                for x, y in loaders[i]:
                    loss_model(x, y).backward()
                    torch.nn.utils.clip_grad_norm_(loss_model.parameters(), max_grad_norm)


    def save_all(nets: Dict[str, nn.Module], path):
        torch.save({k: m.state_dict() for k, m in nets.items()}, path)


    def clip_columns(objectives: list[tuple[DataLoader, nn.Module]]):
        loaders, losses = zip(*objectives)
        for l in losses:
            torch.nn.utils.clip_grad_norm_(l.parameters(), 1.0)
"""

SAFE_FIT = """
    from typing import Iterable, List
    import torch
    from torch import nn
    from torch.utils.data import DataLoader


    def fit(train_objectives: Iterable[tuple[DataLoader, nn.Module]], names: List[str]):
        for dl, _ in train_objectives:
            for batch in dl:
                print(batch.shape)
        for n in names:
            print(n.upper())


    def grads(tensors: List[torch.Tensor]):
        torch.nn.utils.clip_grad_norm_(tensors, 1.0)
        return [t.shape for t in tensors]
"""

MODEL = """
    from typing import Iterable
    from torch import nn


    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.emb = nn.Embedding(100000, d)

        def forward(self, i):
            return self.emb(i)

        def get_grad_params(self) -> Iterable[nn.Parameter]:
            return filter(lambda p: p.requires_grad, self.parameters())

        def num_entities(self) -> int:
            return self.emb.num_embeddings
"""

MODELS_INIT = "from .base import Model\n"

CALLBACKS = """
    from __future__ import annotations
    from typing import Any
    from torch.nn.utils import clip_grad_norm_
    from .. import training
    from ..models import Model


    class Callback:
        def __init__(self):
            self._loop = None

        @property
        def loop(self) -> training.Loop:
            return self._loop

        @property
        def model(self) -> Model:
            return self.loop.model

        def register(self, loop: training.Loop) -> None:
            self._loop = loop


    class ClipCallback(Callback):
        def __init__(self, max_norm: float):
            super().__init__()
            self.max_norm = max_norm

        def pre_step(self, **kwargs: Any) -> None:
            clip_grad_norm_(parameters=self.model.get_grad_params(), max_norm=self.max_norm)


    class ModeCallback(Callback):
        def post_epoch(self, epoch: int) -> None:
            self.model.train()
            print(type(self.model).__name__, epoch, self.model.num_entities())
"""


def test_items_of_an_annotated_container_are_built_models(tmp_path):
    files = {"nets.py": Q_NETS, "fit.py": FIT}
    assert found_in_package(tmp_path, files, "fit.py", prefix="ZG1") == [("ZG107", 16), ("ZG108", 20), ("ZG107", 26)]


def test_containers_of_loaders_and_tensors_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"fit.py": SAFE_FIT}, "fit.py", prefix="ZG1") == []


def test_a_typed_property_hands_out_the_model_and_its_method_its_parameters(tmp_path):
    files = {"models/base.py": MODEL, "models/__init__.py": MODELS_INIT, "training/__init__.py": "",
             "training/callbacks.py": CALLBACKS}
    assert found_in_package(tmp_path, files, "training/callbacks.py", prefix="ZG1") == [("ZG107", 31)]


LIBRARY_MODEL = """
    import copy
    from typing import Optional
    from torch import nn
    from diffusers import UNet2DModel
    from transformers import PretrainedConfig


    class Consistency(nn.Module):
        def __init__(self, model: UNet2DModel, *, model_id: Optional[str] = None) -> None:
            super().__init__()
            self.model = model
            self.model_ema = copy.deepcopy(model)
            self.image_size = model.sample_size

        def forward(self, x):
            return self.model(x)


    class Configured(nn.Module):
        def __init__(self, model: PretrainedConfig, head: nn.Linear) -> None:
            super().__init__()
            self.config = copy.deepcopy(model)
            self.head = head

        def forward(self, x):
            return self.head(x)
"""


def test_an_argument_named_and_annotated_as_a_model_of_an_unread_library_is_a_built_model(tmp_path):
    # the config annotated on an argument named `model` is no model: its deep copy stays clean
    assert found_in_package(tmp_path, {"ema.py": LIBRARY_MODEL}, "ema.py", prefix="ZG1") == [("ZG105", 13)]
