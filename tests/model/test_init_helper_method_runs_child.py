"""In `__init__`, a method of the module handed a child built before (`self._calc_input_size(shape, self.cnn)`)
that runs it on a probe input, also as a container of its layers (`nn.Sequential(*cnn_layers)(x)`), runs a
forward on partitioned parameters (ZG110, `zg110._handed_to_runner`, `effects._run_effects`). Look-alikes: a
helper method handed the child that reads its settings only; the same helper called from forward."""

from __future__ import annotations

from tests.model.package_check import found_in_package

NET = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self, shape, n):
            super().__init__()
            self.cnn = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU())
            size = self._calc_input_size(shape, self.cnn)
            channels = self._channels(self.cnn)
            self.out = nn.Linear(size + channels, n)

        def _calc_input_size(self, input_shape, cnn_layers=None):
            if cnn_layers is None:
                return input_shape[0]
            return nn.Sequential(*cnn_layers)(torch.rand(1, *input_shape)).flatten(1).size(1)

        def _channels(self, cnn):
            return cnn[0].out_channels

        def _features(self, x, cnn):
            return cnn(x).flatten(1)

        def forward(self, x):
            return self.out(self._features(x, self.cnn))
"""


def test_helper_method_handed_a_built_child_runs_it_in_init(tmp_path):
    assert found_in_package(tmp_path, {"net.py": NET}, "net.py", prefix="ZG1") == [("ZG110", 10)]
