"""Built models a script or a trainer reaches by roads other than a plain `model = Net()`: a trainer's dict filled
key by key, a builder a package module hands out by name, a class imported under a nested `if` of the main block,
a part of the model reached through its wrapper; and layers initialised through an initialiser made on the spot or
built from a class chosen by a setting. Each is partitioned once its constructor returns, so its state or its
parameters are placeholders where the code reads or writes them."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import TINY_NET, found, found_in_directory

NETWORKS = "import torch\nfrom torch import nn\n\n\n" + TINY_NET


def test_a_trainers_dict_of_models_filled_key_by_key_holds_built_models(tmp_path: Path) -> None:
    trainer = """
import torch
import networks


class Trainer:
    def __init__(self, opt):
        self.models = {}
        self.models["encoder"] = networks.Net()
        self.models["depth"] = networks.Net()
        self.settings = {}
        self.settings["lr"] = opt.lr

    def save_model(self):
        for name, model in self.models.items():
            torch.save(model.state_dict(), name)

    def load_model(self, names):
        for n in names:
            self.models[n].load_state_dict(torch.load(n))

    def save_settings(self):
        torch.save(self.settings, "settings.pt")
"""
    assert found_in_directory(tmp_path, {"networks.py": NETWORKS, "trainer.py": trainer}, "trainer.py", "ZG") == [
        ("ZG108", 16), ("ZG108", 20),
    ]


def test_a_builder_a_package_module_hands_out_by_name_builds_the_model(tmp_path: Path) -> None:
    main = """
import argparse
import torch
import torch.nn as nn
import networks
from train import train

if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    constructor = "build_%s" % args.model
    model = getattr(networks, constructor)(args.dim).cuda()
    model = nn.DataParallel(model).cuda()
    if args.input is not None:
        model.load_state_dict(torch.load(args.input))
    loader = getattr(torch.utils.data, "DataLoader")(args.data)
    train(model, loader)
"""
    files = {
        "networks.py": NETWORKS + "\n\ndef build_net(dim):\n    return Net()\n",
        "train.py": "def train(model, loader):\n    pass\n",
        "main.py": main,
    }
    assert found_in_directory(tmp_path, files, "main.py", "ZG") == [("ZG108", 14)]


def test_a_model_class_imported_under_a_nested_if_of_the_main_block(tmp_path: Path) -> None:
    train = """
import argparse
import torch

if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    if args.arch == "small":
        from small import Net
    else:
        from large import Net
    generator = Net().to("cuda")
    generator.load_state_dict(torch.load(args.ckpt)["g"])
"""
    files = {"small.py": NETWORKS, "large.py": NETWORKS, "train.py": train}
    assert found_in_directory(tmp_path, files, "train.py", "ZG") == [("ZG108", 12)]


def test_a_part_of_a_wrapped_model_loaded_in_the_main_block(tmp_path: Path) -> None:
    main = """
import torch
from torch import nn
import networks


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = networks.Net()

    def forward(self, x):
        return self.model(x)


if __name__ == "__main__":
    pair = Pair()
    pair = nn.DataParallel(pair)
    checkpoint = torch.load("best.pt")
    pair.module.model.load_state_dict(checkpoint["state_dict"])
    torch.save(pair.module.model.state_dict(), "last.pt")
    optimizer = torch.optim.Adam(pair.parameters())
    pair.optimizer = optimizer
    pair.optimizer.load_state_dict(checkpoint["optimizer"])
"""
    assert found_in_directory(tmp_path, {"networks.py": NETWORKS, "main.py": main}, "main.py", "ZG108") == [
        ("ZG108", 20), ("ZG108", 21),
    ]


def test_a_load_state_dict_override_handing_on_to_torchs_loads_all_the_same(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    def load_state_dict(self, state_dict, *args, **kwargs):
        for k in list(state_dict.keys()):
            if k.startswith("matcher."):
                state_dict[k.replace("matcher.", "", 1)] = state_dict.pop(k)
        return super().load_state_dict(state_dict, *args, **kwargs)


class Lit(nn.Module):
    def __init__(self, ckpt=None):
        super().__init__()
        self.matcher = Matcher()
        if ckpt:
            self.matcher.load_state_dict(torch.load(ckpt)["state_dict"])

    def forward(self, x):
        return self.matcher(x)
"""
    path = tmp_path / "model.py"
    path.write_text(source)
    assert found(path, "ZG") == [("ZG103", 26)]


def test_an_initialiser_made_and_called_on_the_spot_initialises_a_built_layer(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


def get_initializer(name):
    return {"xavier": nn.init.xavier_uniform_, "normal": nn.init.normal_}[name]


def make_linear(d_in, d_out, initializer="xavier"):
    linear = nn.Linear(d_in, d_out)
    get_initializer(initializer)(linear.weight)
    shape = get_initializer(initializer)(linear.weight).shape
    return linear


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = make_linear(4, 2)

    def forward(self, x):
        return self.out(x)
"""
    path = tmp_path / "model.py"
    path.write_text(source)
    assert found(path, "ZG103") == [("ZG103", 12)]


def test_a_layer_built_from_a_class_a_setting_chooses_is_partitioned_when_built(tmp_path: Path) -> None:
    source = """
import torch
from torch import nn


class TransposedLinear(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in))

    def forward(self, x):
        return x @ self.weight.t()


def linear_layer(d_in, d_out, transposed=False):
    linear_cls = TransposedLinear if transposed else nn.Linear
    linear = linear_cls(d_in, d_out)
    nn.init.zeros_(linear.weight)
    return linear


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = linear_layer(4, 4)

    def forward(self, x):
        return self.proj(x)
"""
    path = tmp_path / "model.py"
    path.write_text(source)
    assert found(path, "ZG103") == [("ZG103", 18)]
