"""Static and class methods called through their class (blind5 avalanche synaptic_intelligence.py:282).

The fact: `Plugin.allowed_parameters(model, excluded)` runs a `@staticmethod` (or, with its class as `cls`, a
`@classmethod`) of a class of the file: a function of the file reached through the class, whose return value is
read with the arguments of the call, as a module-level function's is. Before, such a call was a function "we can
read" whose return was never summarised, so the parameters it hands back were lost.

Safe look-alikes: the names alone, a flag set on each parameter.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model.package_check import found_in_package

SOURCE = textwrap.dedent("""
    import torch
    from torch.nn import Module


    class Plugin:
        def __init__(self):
            self.old = {}

        @staticmethod
        def penalty(model, old, device):
            params = Plugin.allowed(model, set())
            loss = 0
            for name, param in params:
                weights = param.to(device).flatten()
                loss = loss + torch.dot(old[name].data.to(device), weights)
            return loss

        @staticmethod
        def snapshot(model, old):
            params = Plugin.trainable(model)
            for name, param in params:
                old[name] = param.detach().clone()

        @staticmethod
        def allowed(model: Module, excluded):
            result = []
            for name, param in model.named_parameters():
                if param.requires_grad and name not in excluded:
                    result.append((name, param))
            return result

        @classmethod
        def trainable(cls, model: Module):
            return [(n, p) for n, p in cls.allowed(model, set())]

        @staticmethod
        def names(model):
            params = Plugin.allowed(model, set())
            return [name for name, _ in params]

        @staticmethod
        def freeze(model):
            params = Plugin.allowed(model, set())
            for name, param in params:
                param.requires_grad = False
""")



def _line(needle: str) -> int:
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if needle in text)


def test_parameters_a_static_method_hands_back_are_followed(tmp_path: Path) -> None:
    # (in a package, where the class's own module resolves the call as a function of a file it can read)
    got = set(found_in_package(tmp_path, {"plugin.py": SOURCE}, "plugin.py", prefix="ZG1"))
    assert ("ZG109", _line("weights = param.to(device)")) in got
    assert ("ZG109", _line("old[name] = param.detach()")) in got


def test_names_and_flags_stay_clean(tmp_path: Path) -> None:
    got = {line for _, line in found_in_package(tmp_path, {"plugin.py": SOURCE}, "plugin.py", prefix="ZG1")}
    assert not got & {_line("return [name for name"), _line("param.requires_grad = False")}
