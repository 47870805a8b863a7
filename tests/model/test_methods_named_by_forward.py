"""Methods a forward names as values and then runs (`model_func = {"TransE": self.TransE}` ...
`model_func[self.model_name](h, r, t)`) run inside that forward, where the module's own parameters are gathered:
reading them there is no read outside any forward. The same method run by a trainer on the built model is."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

KGE = '''
import torch
from torch import nn


class KGEModel(nn.Module):
    def __init__(self, model_name, nentity, dim, gamma):
        super().__init__()
        self.model_name = model_name
        self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
        self.entity_embedding = nn.Parameter(torch.zeros(nentity, dim))

    def forward(self, head, relation, tail):
        model_func = {"TransE": self.TransE, "DistMult": self.DistMult}
        return model_func[self.model_name](head, relation, tail)

    def TransE(self, head, relation, tail):
        return self.gamma.item() - torch.norm(head + relation - tail, p=1, dim=2)

    def DistMult(self, head, relation, tail):
        return (head * relation * tail).sum(dim=2)

    def margin(self):
        return self.gamma.item()
'''


def test_a_method_forward_picks_from_a_mapping_of_its_methods_runs_in_forward(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(KGE)
    assert found(path, "ZG") == [("ZG109", 24), ("ZG303", 24)]
