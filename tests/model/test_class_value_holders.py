"""An object that builds its model from a class it was handed (issue 20: training classes that are not modules).

RL algorithms and trainers are often handed a class, not an instance (`policy_class`, `self.policy_class =
self.aliases[name]`), and build the model later (`self.policy = self.policy_class(obs_space, lr)`), in
`__init__`, a set-up method, or a subclass of the same file. An attribute named as a model and set that way holds
a model whose class zgen cannot read: saving its `state_dict()` outside the engine is ZG108, in the class that
builds it and in a base class whose methods run on that subclass. A factory or a config kept under such a call
(`self.schedule = self.schedule_class(...)`, not named as a model) holds nothing.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _zg1(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("algo.py", textwrap.dedent(source)) if f.code.startswith("ZG1")]


def test_a_model_built_from_a_handed_class_in_init():
    assert _zg1("""
        import torch

        class Algo:
            def __init__(self, policy_class, lr=1e-3):
                self.policy = policy_class(lr)

            def save(self, path):
                torch.save(self.policy.state_dict(), path)
    """) == [("ZG108", 9)]


def test_a_model_built_from_a_kept_class_in_a_set_up_method():
    assert _zg1("""
        import torch

        class Algo:
            def __init__(self, policy_class, lr=1e-3):
                self.policy_class = policy_class
                self.policy = None
                self.lr = lr

            def setup(self):
                self.policy = self.policy_class(self.lr)

            def save(self, path):
                torch.save(self.policy.state_dict(), path)
    """) == [("ZG108", 14)]


def test_a_base_method_sees_the_model_a_subclass_of_the_file_builds():
    assert _zg1("""
        import torch

        class BaseAlgorithm:
            def __init__(self, policy_class):
                self.policy_class = policy_class
                self.policy = None

            def save(self, path):
                torch.save(self.policy.state_dict(), path)

        class OffPolicy(BaseAlgorithm):
            def _setup_model(self):
                self.policy = self.policy_class(3)
    """) == [("ZG108", 10)]


def test_an_object_built_from_a_class_and_not_named_as_a_model_holds_none():
    assert _zg1("""
        import torch

        class Algo:
            def __init__(self, schedule_class, buffer_cls):
                self.schedule = schedule_class(10)
                self.replay = buffer_cls(1000)

            def save(self, path):
                torch.save({"s": self.schedule.state_dict(), "r": self.replay.state_dict()}, path)
    """) == []


def test_a_sibling_class_does_not_lend_its_model_to_another():
    assert _zg1("""
        import torch

        class Logger:
            def __init__(self):
                self.policy = None

            def save(self, path):
                torch.save(self.policy.state_dict(), path)

        class Algo:
            def __init__(self, policy_class):
                self.policy = policy_class(3)
    """) == []
