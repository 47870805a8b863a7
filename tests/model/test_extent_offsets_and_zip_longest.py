"""An extent of the input unpacked with a star (`b, n, out, device = *x.shape, x.clone(), x.device`) is an extent like
one unpacked alone, and tested after moving a setting by it (`(seq_len - n) <= 0`, `n + k > max_len`) it is still
this rank's input's length: an exit on it skips the model on ranks with long prompts (`taint._starred_shape`,
`taint._offset_extent`, ZG204). A loop over `zip_longest` of a split of the input runs as often as the longest of
them (`counts._ALONG`). Look-alikes: such a test that raises or picks a branch, unpacking with no test, a
`zip_longest` of the module's own layers."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


DECODE = """
    from torch import nn


    class Wrapper(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.model = nn.Linear(d, d)


    def decode(net: Wrapper, prompt, seq_len):
        model = net.model
        batch, prompt_seq_len, out, device = *prompt.shape, prompt.clone(), prompt.device
        if (seq_len - prompt_seq_len) <= 0:
            return prompt
        for _ in range(seq_len):
            out = model(out)
        return out
"""


def test_an_exit_on_a_starred_extent_moved_by_a_setting_skips_the_model():
    assert found(DECODE) == [("ZG204", 14)]


def test_a_starred_extent_tested_to_raise_or_to_pick_a_branch_is_no_exit():
    assert found("""
        from torch import nn


        class Dec(nn.Module):
            def __init__(self, d, max_len):
                super().__init__()
                self.proj = nn.Linear(d, d)
                self.out = nn.Linear(d, d)
                self.max_len = max_len

            def forward(self, x):
                b, n, device = *x.shape, x.device
                if n + 1 > self.max_len:
                    raise ValueError("too long")
                if (self.max_len - n) < 4:
                    x = x[:, -4:]
                return self.out(self.proj(x))
    """) == []


ZIPPED = """
    from itertools import zip_longest
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ff = nn.Linear(d, 4 * d)

        def forward(self, x, mask=None):
            return self.ff(x)


    class Segments(nn.Module):
        def __init__(self, d, seq_len):
            super().__init__()
            self.transformer = Block(d)
            self.seq_len = seq_len

        def forward(self, x, mask=None):
            segments = x.split(self.seq_len, dim=-1)
            mask_segments = (None,)
            if mask is not None:
                mask_segments = mask.split(self.seq_len, dim=-1)
            outs = []
            for step, (segment, mask_segment) in enumerate(zip_longest(segments, mask_segments)):
                outs.append(self.transformer(segment, mask=mask_segment))
            return torch.cat(outs, dim=-1)


    class Stack(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.layers = nn.ModuleList([Block(d) for _ in range(n)])
            self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(n)])

        def forward(self, x):
            for layer, norm in zip_longest(self.layers, self.norms):
                x = norm(layer(x))
            return x
"""


def test_a_loop_over_zip_longest_of_the_input_segments_runs_as_often_as_the_input_is_long():
    assert found(ZIPPED) == [("ZG204", 28)]
