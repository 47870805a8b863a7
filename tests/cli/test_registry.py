"""The rule registry: every code known without importing libcst, documentation loaded on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zgen.registry import all_rules

REPO = Path(__file__).resolve().parents[2]


def test_model_codes_from_file_names_are_the_codes_the_rules_define():
    rules = all_rules()
    codes = list(rules)
    assert "ZG101" in codes and "ZG201" in codes and "ZG301" in codes and "ZC101" in codes
    assert codes == sorted(codes)
    docs = {code: rules[code] for code in codes}  # loads the model rules; raises if a file misnames its rule
    assert all(info.code == code for code, info in docs.items())
    assert len(rules) == len(docs)


def test_a_config_check_imports_neither_libcst_nor_torch(tmp_path):
    probe = (
        "import sys\n"
        "from zgen.cli import main\n"
        f"code = main(['check', {str(REPO / 'examples/llama/ds_config.json')!r}, '--no-cache', '--world-size', '8'])\n"
        "print(code, 'libcst' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "0 False False", out.stdout + out.stderr
