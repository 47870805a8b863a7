"""A module-level function of the file that `forward` hands the module itself (`cl_forward(self, self.bert, ...,
mlm_input_ids=mlm_input_ids)`) runs as part of forward: a test there on an optional input the forward passed on
decides which submodules run, as the same test in forward would."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

CONTRASTIVE = '''
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 4 * d)

    def forward(self, ids):
        return self.proj(ids)


def cl_forward(cls, encoder, input_ids, mlm_input_ids=None, image=None):
    out = encoder(input_ids)
    if mlm_input_ids is not None:
        out = out + encoder(mlm_input_ids)
    if image is not None:
        out = out + cls.vision(image)
    return cls.head(out)


def plain_forward(cls, encoder, input_ids, mlm_input_ids=None):
    return cls.head(encoder(input_ids))


class ForCL(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.bert = Encoder(d)
        self.vision = Encoder(d)
        self.head = nn.Linear(4 * d, d)

    def forward(self, input_ids, mlm_input_ids=None, image=None, sent_emb=False):
        if sent_emb:
            return plain_forward(self, self.bert, input_ids, mlm_input_ids=mlm_input_ids)
        return cl_forward(self, self.bert, input_ids, mlm_input_ids=mlm_input_ids, image=image)
'''


def test_a_test_in_a_function_forward_hands_itself_decides_what_runs(tmp_path: Path) -> None:
    path = tmp_path / "models.py"
    path.write_text(CONTRASTIVE)
    # (a second sequence of ids through the encoder, and the vision tower on an image given or not; the function
    # that only passes the ids on decides nothing)
    assert found(path, "ZG205") == [("ZG205", 16), ("ZG205", 18)]


def test_the_same_function_called_without_the_module_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "models.py"
    path.write_text(CONTRASTIVE.replace("cl_forward(self, self.bert,", "cl_forward(None, self.bert,"))
    assert found(path, "ZG205") == []
