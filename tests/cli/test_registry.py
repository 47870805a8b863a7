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


def test_every_config_code_is_known_before_the_config_rules_are_compiled():
    rules = all_rules()
    assert "ZC101" in rules and "ZC101" in list(rules)
    assert rules["ZC101"].code == "ZC101"  # compiles the built-in rules on first read


def test_a_python_file_with_nothing_to_parse_loads_neither_libcst_nor_the_solver(tmp_path):
    (tmp_path / "util.py").write_text("import os\n\ndef path(*parts):\n    return os.path.join(*parts)\n")
    probe = (
        "import sys\n"
        "from zgen.cli import main\n"
        "code = main(['check', 'util.py', '--no-cache'])\n"
        "print(code, 'libcst._nodes' in sys.modules, any(m.startswith('zgen.solver') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "0 False False", out.stdout + out.stderr
