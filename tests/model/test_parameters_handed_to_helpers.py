"""A parameter of a built model handed to a function of the program that computes with its values.

A conversion pass handed a trained model quantizes each linear weight with a class method of the file
(`Int8Weight.from_float(module.weight)`) or with a helper of another file that hands the weight on to another
(`group_qparams(child.weight, 4)` calling `choose_qparams(w, ...)`): each reads the partitioned placeholder (ZG109,
at the argument). A helper that reads only the weight's shape and dtype reads no values.
"""

from __future__ import annotations

from package_check import found_in_package

UTILS = """
import torch


def choose_qparams(w, n_bit):
    scale = w.abs().amax(-1) / (2 ** (n_bit - 1) - 1)
    return scale, torch.zeros_like(scale)


def group_qparams(w, n_bit=4):
    return choose_qparams(w, n_bit)


def describe(w, n_bit=4):
    return tuple(w.shape), w.dtype, n_bit
"""

CONVERT = """
import torch
from torch import nn

from .utils import {helper}


class Int8Weight(torch.Tensor):
    @classmethod
    def from_float(cls, tensor):
        scale = tensor.abs().amax(1) / 127
        return (tensor / scale[:, None]).round(), scale


def quantize_module(module: nn.Module):
    return Int8Weight.from_float(module.weight)


def convert(model: nn.Module):
    for name, child in model.named_children():
        if isinstance(child, nn.Linear):
            found = {helper}(child.weight, 4)
"""


def _found(tmp_path, helper: str) -> list[tuple[str, int]]:
    files = {"utils.py": UTILS, "convert.py": CONVERT.format(helper=helper)}
    return found_in_package(tmp_path, files, "convert.py", prefix="ZG1")


def test_weights_handed_to_helpers_that_compute_with_them(tmp_path):
    assert _found(tmp_path, "group_qparams") == [("ZG109", 16), ("ZG109", 22)]


def test_a_helper_reading_only_the_shape_reads_no_values(tmp_path):
    assert _found(tmp_path, "describe") == [("ZG109", 16)]  # (the class method's read stays)
