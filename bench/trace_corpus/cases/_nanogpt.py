"""Imports nanoGPT's model.py from the checkout named by $ZGEN_NANOGPT (karpathy/nanoGPT at 3adf61e154c3)."""
import importlib.util
import os
import sys


def load():
    root = os.environ.get("ZGEN_NANOGPT")
    if not root or not os.path.isfile(os.path.join(root, "model.py")):
        raise SystemExit("set ZGEN_NANOGPT to a karpathy/nanoGPT checkout (commit 3adf61e154c3) holding model.py")
    if "nanogpt_model" not in sys.modules:
        spec = importlib.util.spec_from_file_location("nanogpt_model", os.path.join(root, "model.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["nanogpt_model"] = module
        spec.loader.exec_module(module)
    return sys.modules["nanogpt_model"]
