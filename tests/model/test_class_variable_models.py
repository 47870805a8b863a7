"""A model built from a class a registry hands back, used as a module, is a built model.

`algorithm_class = algorithms.get_algorithm_class(name)` then `algorithm = algorithm_class(shape, hparams)`: no file
tells the class, and `algorithm` is not named as modules are. Moved to a device and given or asked its state
(`algorithm.load_state_dict(d)`, `algorithm.to(device)`), or asked a method only modules have, it is a module:
under `zero.Init` it was partitioned when built, so loading into it or saving its state sees placeholders (ZG108),
in a function and in a script's module-level code alike. A class variable's product that is never used as a module
(an optimizer loading its own state, with no device) stays clean.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

FUNCTION = """
from . import algorithms


def main(args, algorithm_dict):
    algorithm_class = algorithms.get_algorithm_class(args.algorithm)
    algorithm = algorithm_class(args.input_shape, args.num_classes)
    if algorithm_dict is not None:
        algorithm.load_state_dict(algorithm_dict)
    algorithm.to("cuda")
    return algorithm.predict(args.x)
"""

SCRIPT = """
import torch

from . import algorithms

if __name__ == "__main__":
    algorithm_class = algorithms.get_algorithm_class("ERM")
    algorithm = algorithm_class((3, 28, 28), 10)
    algorithm.to("cuda")
    torch.save({"model_dict": algorithm.state_dict()}, "model.pkl")
"""

OPTIMIZER = """
from . import algorithms


def resume(args, state, params):
    optimizer_class = algorithms.get_optimizer_class(args.optimizer)
    optimizer = optimizer_class(params, lr=args.lr)
    optimizer.load_state_dict(state)
    return optimizer
"""

ALGORITHMS = """
def get_algorithm_class(name):
    return globals()[name]


def get_optimizer_class(name):
    return globals()[name]
"""


def _zg1(tmp_path, source):
    return found_in_package(tmp_path, {"algorithms.py": ALGORITHMS, "train.py": source}, "train.py", prefix="ZG1")


def test_loading_into_a_registry_built_algorithm_is_found(tmp_path):
    assert _zg1(tmp_path, FUNCTION) == [("ZG108", 9)]


def test_a_script_saving_a_registry_built_algorithms_state_is_found(tmp_path):
    assert _zg1(tmp_path, SCRIPT) == [("ZG108", 10)]


def test_an_optimizer_built_from_a_class_variable_stays_clean(tmp_path):
    assert _zg1(tmp_path, OPTIMIZER) == []
