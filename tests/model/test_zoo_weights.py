"""A model zoo's builder asked for pretrained weights where the model is built.

pix2pixHD's perceptual loss builds `models.vgg19(pretrained=True)` in a module's `__init__`; Deformable DETR's
backbone `getattr(torchvision.models, name)(pretrained=is_main_process())`. torchvision (and timm) construct the
model and then `load_state_dict` the downloaded weights into it: under `deepspeed.zero.Init` the constructor has
already partitioned it, so the load copies into placeholders. Asked for no weights, the builder loads nothing.
"""

from __future__ import annotations

from zgen.model import check_source

PERCEPTUAL = """
import timm
import torchvision
from torch import nn
from torchvision import models
from torchvision.models import ResNet50_Weights, resnet50


class Perceptual(nn.Module):
    def __init__(self, arch, name, pretrained):
        super().__init__()
        self.vgg = models.vgg19(pretrained=True).features
        self.res = resnet50(weights=ResNet50_Weights.DEFAULT)
        self.alex = models.__dict__[arch](weights="AlexNet_Weights.IMAGENET1K_V1" if pretrained else None)
        self.back = getattr(torchvision.models, name)(pretrained=pretrained)
        self.vit = timm.create_model("vit_base_patch16_224", pretrained=pretrained)
        self.plain = models.vgg19(pretrained=False)
        self.none = resnet50(weights=None)
        self.named_none = models.__dict__[arch](weights="AlexNet_Weights.NONE")
        self.bare = torchvision.models.resnet18()
        self.scratch = timm.create_model("vit_base_patch16_224", pretrained=False)

    def forward(self, x):
        return self.vgg(x)


def build(num_classes):
    model = torchvision.models.resnet50(pretrained=True)
    model.fc = nn.Linear(2048, num_classes)
    return model
"""


def test_pretrained_zoo_builds_are_loads_into_partitioned_models():
    found = [(f.code, f.line) for f in check_source("perceptual.py", PERCEPTUAL) if f.code == "ZG108"]
    assert found == [("ZG108", 12), ("ZG108", 13), ("ZG108", 14), ("ZG108", 15), ("ZG108", 16), ("ZG108", 28)]


def test_the_message_says_what_is_loaded():
    (first, *_rest) = [f for f in check_source("perceptual.py", PERCEPTUAL) if f.code == "ZG108"]
    assert "pretrained weights" in first.message and "zero.Init" in first.message


TORCHVISION_OWN = """
from torchvision.models._api import Weights
from torchvision.models._utils import handle_legacy_interface


@handle_legacy_interface(weights=("pretrained", Weights.IMAGENET1K_V1))
def resnet18(*, weights=None, progress=True):
    return None
"""


def test_a_decorator_of_the_zoos_own_builders_loads_nothing():
    assert [f.code for f in check_source("torchvision/models/resnet.py", TORCHVISION_OWN)] == []
