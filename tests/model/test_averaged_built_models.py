"""A library's weight average built over a model the same function built (`model, out = configure(cfg)` ...
`ExponentialMovingAverage(model.parameters(), decay=d)`, `EMA(model)`, `AveragedModel(model)`) clones the model's
parameters as its shadow: under `zero.Init` they are partitioned placeholders once the constructor returned, so the
average starts from empty tensors (ZG105, `loaded.built_then_copied`). Look-alikes: an average of plain tensors, a
function that builds a model and averages nothing."""

from __future__ import annotations

from tests.model.package_check import found_in_package

NETS = """
    from torch import nn


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, 4096)

        def forward(self, x):
            return self.fc(x)


    def configure(cfg):
        model = Net(cfg.d)
        return model, {"d": cfg.d}
"""

RUN = """
    import torch
    from torch_ema import ExponentialMovingAverage
    from torch.optim.swa_utils import AveragedModel
    from .nets import Net, configure


    def run(args):
        model, out = configure(args)
        ema = None
        if args.ema:
            ema = ExponentialMovingAverage(model.parameters(), decay=args.decay)
        return ema


    def swa(args):
        net = Net(args.d)
        return AveragedModel(net)
"""

SAFE = """
    import torch
    from torch_ema import ExponentialMovingAverage
    from .nets import Net


    def tensors(args):
        net = Net(args.d)
        weights = [torch.zeros(3, requires_grad=True)]
        ema = ExponentialMovingAverage(weights, decay=0.9)
        return net, ema


    def no_average(args):
        ema_cfg = {"decay": 0.99}
        net = Net(args.d)
        return net, ema_cfg
"""


def test_average_of_a_model_built_here_is_a_copy(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "run.py": RUN}, "run.py", prefix="ZG105")
    assert ("ZG105", 12) in found  # `ExponentialMovingAverage(model.parameters(), ...)` of `configure`'s model
    assert ("ZG105", 18) in found  # `AveragedModel(net)`


def test_average_of_plain_tensors_is_clean(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "safe.py": SAFE}, "safe.py", prefix="ZG1") == []
