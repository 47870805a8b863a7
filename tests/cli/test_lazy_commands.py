"""`zgen check` loads only the check command: the other commands' modules stay unimported."""

from __future__ import annotations

import subprocess
import sys

from zgen.cli import COMMANDS, build_parser

_MODEL = "import torch.nn as nn\n\nclass M(nn.Module):\n    def forward(self, x):\n        return x\n"


def test_check_imports_no_other_command(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(_MODEL)
    code = (
        "import sys\nfrom zgen.cli import main\n"
        f"code = main(['check', '--no-cache', {str(model)!r}])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith('zgen.commands.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "0 ['zgen.commands.check']"


def test_one_command_parses_as_all():
    argv = ["check", "--select", "ZG2", "--no-cache", "--output-format", "json", "a.py", "b.py"]
    assert vars(build_parser("check").parse_args(argv)) == vars(build_parser().parse_args(argv))
    for name in COMMANDS:
        assert vars(build_parser(name).parse_args([name])) == vars(build_parser().parse_args([name]))
