"""A held model's method that its module class leaves abstract (`@abstractmethod def score(self, batch)` of a
`Model(nn.Module, ABC)`), called directly or through a method of the class that calls it on `self`, runs the
subclass's layers (`instances.abstract_module_method`, `script.method_runs`, `runs.class_method_runs`); a model
handed by keyword into a function's `**kwargs` and handed on whole (`_evaluate_batch(batch, **kwargs)`) reaches the
function that runs it (`runs._hands_on`). Look-alikes: an abstract method answering a number, one whose name says
it keeps the model; `**kwargs` handed to a function that only reports the model."""

from __future__ import annotations

from tests.model.package_check import found_in_package

MODELS = """
    from abc import ABC, abstractmethod
    import torch
    from torch import nn


    class Model(nn.Module, ABC):
        @abstractmethod
        def score(self, batch: torch.Tensor) -> torch.Tensor:
            \"\"\"Score a batch.\"\"\"

        @abstractmethod
        def score_t(self, batch: torch.Tensor) -> torch.Tensor:
            \"\"\"Score tails.\"\"\"

        def predict(self, batch):
            return self.score_t(batch).sigmoid()

        @abstractmethod
        def num_entities(self) -> int:
            \"\"\"How many entities.\"\"\"

        @abstractmethod
        def save_pretrained(self, path):
            \"\"\"Save.\"\"\"
"""

LOOP = """
    import torch
    from .models import Model


    class Loop:
        def __init__(self, model: Model):
            self.model = model

        def _step(self, batch):
            loss = self.model.score(batch).mean()
            loss.backward()
            return loss.item()

        def fit(self, batches):
            for batch in batches:
                try:
                    self._step(batch)
                except torch.cuda.OutOfMemoryError:
                    torch.cuda.empty_cache()
"""

SCRIPT = """
    from .models import Model


    def run(model: Model, x, rank):
        if rank == 0:
            return model.score(x)
        return None


    def tails(model: Model, x, rank):
        if rank == 0:
            return model.predict(x)
        return None


    def show(model: Model, rank):
        if rank == 0:
            print(model.num_entities())


    def store(model: Model, rank, path):
        if rank == 0:
            model.save_pretrained(path)
"""


def test_an_abstract_scoring_method_of_the_held_model_runs_the_subclass_layers(tmp_path):
    files = {"models.py": MODELS, "loop.py": LOOP, "script.py": SCRIPT}
    assert ("ZG204", 19) in found_in_package(tmp_path, files, "loop.py", prefix="ZG2")
    found = found_in_package(tmp_path, files, "script.py", prefix="ZG2")
    assert ("ZG201", 6) in found


def test_an_abstract_method_answering_a_number_or_keeping_the_model_runs_nothing(tmp_path):
    files = {"models.py": MODELS, "loop.py": LOOP, "script.py": SCRIPT}
    # (`run` and `tails`, lines 6 and 12, are the hazards; `show` and `store` below them are not)
    assert not [f for f in found_in_package(tmp_path, files, "script.py", prefix="ZG2") if f[1] > 14]


EVAL = """
    import torch


    def _evaluate_batch(batch, model, target):
        return model(batch)[:, target]


    def evaluate(*, evaluator, batches, targets, **kwargs):
        out = []
        for batch in batches:
            for target in targets:
                out.append(_evaluate_batch(batch=batch, target=target, **kwargs))
        return out


    def _line(step, **kwargs):
        print(step, type(kwargs.get("model")).__name__)


    def report(*, step, **kwargs):
        _line(step, **kwargs)


    class Evaluator:
        def _on_device(self, model, batches, device):
            model = model.to(device)
            return evaluate(evaluator=self, batches=batches, targets=[0, 1], model=model)

        def evaluate(self, model, batches, device):
            try:
                result = self._on_device(model=model, batches=batches, device=device)
            except MemoryError:
                result = self._on_device(model=model, batches=batches, device=torch.device("cpu"))
            return result


    class Logger:
        def _emit(self, model, step):
            report(step=step, model=model)

        def log(self, model, step):
            try:
                self._emit(model=model, step=step)
            except MemoryError:
                pass
"""


def test_a_model_handed_on_through_kwargs_runs_where_the_last_function_calls_it(tmp_path):
    found = found_in_package(tmp_path, {"evaluator.py": EVAL}, "evaluator.py", prefix="ZG2")
    assert found == [("ZG204", 33)]  # the Logger's `_emit` only reports the model: no finding at its handler
