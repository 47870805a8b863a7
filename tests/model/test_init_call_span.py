"""A write by an initialiser handed the parameter first (`nn.init.kaiming_normal_(` with `m.weight,` on the next
line) is reported at that call: the statement that writes starts there (`zg103._writing_call`). Look-alikes: the
same multi-line call on the module's own new parameter; a helper handed the child stays reported at the child."""

from __future__ import annotations

from tests.model.package_check import found_in_package

NET = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.conv = nn.Conv2d(d, d, 3)
            self.w = nn.Parameter(torch.empty(d, d))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(
                        m.weight,
                        mode="fan_out",
                    )
            nn.init.kaiming_normal_(
                self.w,
                mode="fan_out",
            )

        def forward(self, x):
            return self.conv(x) @ self.w
"""


def test_multi_line_initialiser_reported_where_the_call_starts(tmp_path):
    assert found_in_package(tmp_path, {"net.py": NET}, "net.py", prefix="ZG1") == [("ZG103", 13)]
