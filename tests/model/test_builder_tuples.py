"""`self.model, self.tokenizer = load_model(path)`: a model builder's element named as modules are is a held model.

A serving worker (FastChat's `ModelWorker`) keeps what a project function named as a model builder returns, unpacked.
Whatever that function's branches seem to return, the element named as a model is one of no class we can tell, so
the worker's methods run it: a loop over chunks of this rank's request calling a helper that runs `self.model`
(`for i in range(0, input_ids.size(1), self.context_len)`) is ZG204. The tokenizer beside it is no model.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

LOADER = """
def load_model(path, device="cpu"):
    if path.endswith(".bin"):
        model, tokenizer = None, None
        return model, tokenizer
    model = None
    tokenizer = path
    return model, tokenizer
"""

WORKER = """
import torch

from .loader import load_model


class Worker:
    def __init__(self, path, context_len):
        self.model, self.tokenizer = load_model(path)
        self.context_len = context_len

    def _embed_chunk(self, input_ids):
        return self.model(input_ids)[0].mean(1)

    @torch.inference_mode()
    def get_embeddings(self, params):
        input_ids = self.tokenizer(params["input"])
        chunks = []
        for i in range(0, input_ids.size(1), self.context_len):
            chunks.append(self._embed_chunk(input_ids[:, i : i + self.context_len]))
        return torch.stack(chunks).mean(0)
"""


def test_a_loop_over_this_ranks_request_running_the_loaded_model(tmp_path):
    found = found_in_package(tmp_path, {"loader.py": LOADER, "worker.py": WORKER}, "worker.py", prefix="ZG2")
    assert found == [("ZG204", 19)]
