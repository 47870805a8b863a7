"""`encode_text` on a CLIP model a class keeps runs CLIP's text tower without CLIP's forward hook (ZG303).

OpenAI's and OpenCLIP's `CLIP.encode_text` add CLIP's own `positional_embedding` and project with its own
`text_projection`; only CLIP's forward hook gathers those. A class that loads CLIP (`clip.load(name)`,
`open_clip.create_model_and_transforms(name)`, bound to an attribute directly, by index, unpacked, or through a
local) or keeps one handed in under a name that says so (`self.clip_model`) and calls `encode_text` on it reads them
unfetched. Look-alikes: a class that also runs CLIP's forward in the same method, and a CLIP class of the project
whose own `encode_text` the ordinary analysis reads.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

ADAPTER = """
import open_clip
import torch.nn as nn


class OpenClipAdapter(nn.Module):
    def __init__(self, name, pretrained):
        super().__init__()
        clip, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=pretrained)
        self.clip = clip

    def embed_texts(self, ids):
        return self.clip.encode_text(ids)

    def forward(self, ids, images):
        image_embeds = self.clip(images, ids)
        return self.clip.encode_text(ids), image_embeds
"""

LOADED = """
import clip
import torch.nn as nn


class Embedder(nn.Module):
    def __init__(self, version):
        super().__init__()
        self.model = clip.load(version, device="cpu")[0]

    def forward(self, text):
        return self.model.encode_text(clip.tokenize(text))


class Wrapper(nn.Module):
    def __init__(self, clip_model: nn.Module):
        super().__init__()
        self.clip_model = clip_model

    def forward(self, x):
        return self.clip_model.encode_text(x)
"""

OWN = """
import torch
import torch.nn as nn


class CLIP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.positional_embedding = nn.Parameter(torch.zeros(77, d))
        self.text_projection = nn.Parameter(torch.zeros(d, d))

    def encode_text(self, x):
        return (x + self.positional_embedding) @ self.text_projection

    def forward(self, x):
        return self.encode_text(x)


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.clip = CLIP(d)

    def forward(self, x):
        return self.clip(x)
"""


def _zg3(tmp_path, source):
    return found_in_package(tmp_path, {"m.py": source}, "m.py", prefix="ZG3")


def test_a_loaded_open_clip_text_tower_outside_its_forward_is_found(tmp_path):
    assert _zg3(tmp_path, ADAPTER) == [("ZG303", 13)]


def test_clip_load_by_index_and_a_handed_clip_model_are_found(tmp_path):
    assert _zg3(tmp_path, LOADED) == [("ZG303", 12), ("ZG303", 21)]


def test_a_clip_class_of_the_project_run_by_its_forward_stays_clean(tmp_path):
    assert _zg3(tmp_path, OWN) == []
