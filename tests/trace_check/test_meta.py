"""Large models run on `meta` tensors (or fake ones where meta cannot run them): the same hazards, found
without values; a decision on values gets a stand-in and is tried both ways."""

from __future__ import annotations

from trace_helpers import EXPERTS, line_of

MODEL = EXPERTS + '''

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.moe = Experts()
        self.probe = nn.Linear(8, 8)
        self.head = nn.Linear(8, 32)

    def forward(self, input_ids, labels):
        with torch.autocast("cpu", dtype=torch.bfloat16):  # no autocast on meta: fake tensors run it
            x = self.moe(self.embed(input_ids))
        if dist.get_rank() == dist.get_world_size() - 1:  # last
            x = self.probe(x)
        logits = F.linear(x.float(), self.embed.weight)  # tied
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


def test_rank_data_and_external_hazards_without_values(trace):
    found, result = trace(MODEL, real=False, world=8)
    assert not result.real
    assert found == [("ZG201", line_of(MODEL, "# last")), ("ZG203", line_of(MODEL, "# hit")),
                     ("ZG301", line_of(MODEL, "# tied"))]
