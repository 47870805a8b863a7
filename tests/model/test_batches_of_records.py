"""A module's forward handed the samples of its batch as a list of records (`batched_input`, each a dict read by
key) and running a layer once per record: as many calls as this rank's batch holds samples. A list of feature maps
walked beside the model's own layers, which no key reads, is the model's structure."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

PROMPTED = '''
import torch
from torch import nn


class Prompted(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.image_encoder = nn.Linear(d, 4 * d)
        self.prompt_encoder = nn.Linear(4 * d, 4 * d)

    def forward(self, batched_input, features):
        images = self.image_encoder(torch.stack([x["image"] for x in batched_input]))
        outputs = []
        for record, embedding in zip(batched_input, images):
            boxes = record.get("boxes", None)
            outputs.append(self.prompt_encoder(embedding) if boxes is None else embedding)
        for feature in features:
            outputs.append(self.prompt_encoder(feature))
        return outputs
'''


def test_a_layer_run_once_per_record_of_the_batch_runs_as_often_as_the_batch_is_long(tmp_path: Path) -> None:
    path = tmp_path / "prompted.py"
    path.write_text(PROMPTED)
    assert found(path, "ZG204") == [("ZG204", 15)]
