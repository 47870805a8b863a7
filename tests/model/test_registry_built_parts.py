"""Model parts a registry builds, on a base class no file we read defines.

A detector deriving from a library's base (`forward` is the base's) that has `forward_train` and builds its backbone
and heads with the library's builders (`self.rpn_head = build_head(cfg)`) is a module all the same. A method of such a
head (`self.rpn_head.simple_test_rpn(x)`) runs it, and when an optional input stands in for its result (`if proposals
is None: proposal_list = self.rpn_head.simple_test_rpn(x)` / `else: proposal_list = proposals`), a rank given
proposals skips the head's gathers (ZG205). A helper the registry did not build (a tokenizer handed in) runs nothing.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


HAZARD = """
from mmdet.models import BaseDetector

from ..builder import build_backbone, build_head


class TwoStage(BaseDetector):
    def __init__(self, backbone, rpn_head, roi_head):
        super().__init__()
        self.backbone = build_backbone(backbone)
        self.rpn_head = build_head(rpn_head)
        self.roi_head = build_head(roi_head)

    def forward_train(self, img, img_metas, gt_bboxes):
        x = self.backbone(img)
        losses, proposal_list = self.rpn_head.forward_train(x, img_metas, gt_bboxes)
        return losses

    def simple_test(self, img, img_metas, proposals=None):
        x = self.backbone(img)
        if proposals is None:
            proposal_list = self.rpn_head.simple_test_rpn(x, img_metas)
        else:
            proposal_list = proposals
        return self.roi_head.simple_test(x, proposal_list, img_metas)
"""


def test_a_registry_built_head_skipped_when_proposals_are_given():
    assert _found(HAZARD) == [("ZG205", 21)]


LOOK_ALIKE = """
from mmdet.models import BaseDetector

from ..builder import build_backbone, build_head


class Captioner(BaseDetector):
    def __init__(self, backbone, head, tokenizer):
        super().__init__()
        self.backbone = build_backbone(backbone)
        self.head = build_head(head)
        self.tokenizer = tokenizer

    def forward_train(self, img, text):
        return self.head(self.backbone(img), text)

    def simple_test(self, img, text=None, tokens=None):
        if tokens is None:
            ids = self.tokenizer.encode(text)
        else:
            ids = tokens
        return self.head(self.backbone(img), ids)
"""


def test_a_handed_in_tokenizer_standing_in_for_an_input_runs_nothing():
    assert _found(LOOK_ALIKE) == []
