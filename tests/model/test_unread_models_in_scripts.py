"""Models research scripts hold without naming their class: built by `eval` of a setting, loaded by a hub's
`from_pretrained`, handed on as `model_without_ddp` or `model_ema`, or reached as a part of the model
(`model.lm_head`); a length a method hands back inside a tuple; the cross-attention a decoder layer runs only when it
is given what to attend to. Each is read as the plainer spelling of the same hazard is."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import TINY_NET, found, found_in_package

BUILT_BY_EVAL = '''
import torch
from torch.nn.parallel import DistributedDataParallel

from models import *  # noqa: F401,F403  (what the setting names)


def train(args):
    model = eval(args.model)
    model.to(args.device)
    model_without_ddp = model
    ckpt = torch.load(args.pretrained)
    model.load_state_dict(ckpt["model"], strict=False)
    model = DistributedDataParallel(model, device_ids=[args.gpu])
    optimizer = torch.optim.AdamW(model_without_ddp.parameters())
    optimizer.load_state_dict(ckpt["optimizer"])
    save_final_model(args, model_without_ddp)


def save_final_model(args, model_without_ddp):
    torch.save({"model": model_without_ddp.cpu().state_dict()}, args.out)


def update_model_ema(model, model_ema, alpha):
    params = model.state_dict()
    for name, param in model_ema.state_dict().items():
        param.copy_(param * (1.0 - alpha) + params[name] * alpha)
'''


def test_a_model_built_from_a_setting_by_eval_and_its_unwrapped_names(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(BUILT_BY_EVAL)
    codes = found(path, "ZG1")
    assert ("ZG108", 13) in codes  # the load into the model `eval` built, before the wrapper rebinds the name
    assert ("ZG108", 21) in codes  # `model_without_ddp.cpu().state_dict()`: a model handed on by that name
    assert ("ZG101", 27) in codes  # the EMA's state tensors written one by one
    assert not any(line == 16 for _code, line in codes)  # the optimizer's own state: no model's


PARTS = '''
import torch
from torch import nn

from .nets import Net


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = Net()
        self.optimizer_state = {}

    def forward(self, x):
        return self.lm_head(x)


def main(path):
    model = Holder()
    teacher = Holder()
    model.lm_head.load_state_dict(teacher.lm_head.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.optimizer = opt
    torch.save(model.optimizer.state_dict(), path)
'''


def test_the_state_of_a_part_of_a_model_the_function_built(tmp_path: Path) -> None:
    nets = "from torch import nn\n\n\n" + TINY_NET
    codes = found_in_package(tmp_path, {"nets.py": nets, "main.py": PARTS}, "main.py", prefix="ZG108")
    assert codes.count(("ZG108", 21)) == 2  # loaded into `model.lm_head`, read from `teacher.lm_head`
    assert ("ZG108", 24) not in codes  # the optimizer a model object keeps: its own state


EVAL_HELPER = '''
def run_test_eval(evaluator, model, loaders):
    model.eval()
    for name, loader in loaders:
        predictor = EvaluationPredictor(model.module.module, grid_size=5)
        evaluator.evaluate_sequence(model=predictor, test_dataloader=loader)
    model.train()


class EvaluationPredictor:
    def __init__(self, model, grid_size):
        self.model = model
'''

LITE = '''
import torch
from torch import nn

from .utils import run_test_eval


''' + TINY_NET + '''

def train(args, evaluator, loaders):
    model = Net()
    if torch.distributed.get_rank() == 0 and args.validate_at_start:
        run_test_eval(evaluator, model, loaders)
    for x in args.loader:
        model(x).sum().backward()
'''


def test_a_rank_gated_evaluation_helper_that_wraps_the_unwrapped_model(tmp_path: Path) -> None:
    codes = found_in_package(tmp_path, {"utils.py": EVAL_HELPER, "train.py": LITE}, "train.py", prefix="ZG2")
    assert ("ZG201", 19) in codes


DECODER = '''
import random

import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, d, max_length):
        super().__init__()
        self.cell = nn.LSTM(d, d, batch_first=True)
        self.out = nn.Linear(d, d)
        self.max_length = max_length

    def validate_args(self, targets, encoder_outputs):
        batch_size = encoder_outputs.size(0)
        if targets is None:
            max_length = self.max_length
        else:
            max_length = targets.size(1) - 1
        return targets, batch_size, max_length

    def forward_step(self, x, state):
        h, state = self.cell(x, state)
        return self.out(h), state

    def forward(self, targets, encoder_outputs):
        targets, batch_size, max_length = self.validate_args(targets, encoder_outputs)
        x, state, outs = encoder_outputs[:, :1], None, []
        for _ in range(max_length):
            x, state = self.forward_step(x, state)
            outs.append(x)
        for _ in range(self.max_length):
            x, state = self.forward_step(x, state)
        return torch.cat(outs, 1)
'''


def test_a_length_a_method_hands_back_in_its_tuple_counts_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "decoder.py"
    path.write_text(DECODER)
    codes = found(path, "ZG2")
    assert ("ZG204", 30) in codes
    assert not any(line == 33 for _code, line in codes)  # the configured length: the same on every rank


CROSS = '''
from torch import nn


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)

    def forward(self, hidden_states, key_value_states=None):
        source = hidden_states if key_value_states is None else key_value_states
        k, v = self.kv(source).chunk(2, dim=-1)
        return (self.q(hidden_states) @ k.transpose(-1, -2)).softmax(-1) @ v


class DecoderLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.self_attn = Attention(d)
        self.encoder_attn = Attention(d)
        self.norm = nn.LayerNorm(d)

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None):
        hidden_states = self.self_attn(hidden_states)
        if encoder_hidden_states is not None:
            hidden_states = self.encoder_attn(hidden_states, key_value_states=encoder_hidden_states)
        if attention_mask is not None:
            hidden_states = hidden_states * attention_mask
        return self.norm(hidden_states)
'''


MODED = CROSS.replace(
    "encoder_hidden_states=None, attention_mask=None):", "encoder_hidden_states=None, attention_mask=None, mode=None):"
).replace(
    "if encoder_hidden_states is not None:",
    'if mode in ["multimodal", "fusion"]:\n            assert encoder_hidden_states is not None, "cross-attention needs it"',
)


def test_cross_attention_run_only_when_given_what_to_attend_to(tmp_path: Path) -> None:
    path = tmp_path / "layer.py"
    path.write_text(CROSS)
    assert found(path, "ZG2") == [("ZG205", 26)]  # (the mask scales values: no block is skipped)
    path.write_text(MODED)
    assert found(path, "ZG2") == []  # which mode the calling model names, the same on every rank
    path.write_text(MODED.replace('if mode in ["multimodal", "fusion"]:', 'if mode is not None and mode != "":'))
    assert found(path, "ZG2") == [("ZG205", 26)]  # an empty text is no input: a test of its presence


HUB_TOOL = '''
from hub import AutoModel, AutoTokenizer


class Encoder:
    def __init__(self, path):
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path)

    def encode(self, sentences, batch_size=64):
        out = []
        total = len(sentences) // batch_size + (1 if len(sentences) % batch_size else 0)
        for i in range(total):
            inputs = self.tokenizer(sentences[i * batch_size:(i + 1) * batch_size])
            out.append(self.model(**inputs))
        for i in range(batch_size):
            self.tokenizer(sentences[i])
        return out
'''


def test_a_plain_object_holding_a_hub_model_loops_over_its_inputs(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_text(HUB_TOOL)
    codes = found(path, "ZG2")
    assert ("ZG204", 13) in codes
    assert not any(line == 16 for _code, line in codes)  # the tokenizer runs no model


REBOUND = '''
import torch.distributed as dist


def main(args, model, ds, loader):
    is_main = dist.get_rank() == 0
    labels = []
    if is_main and len(labels) > 0:
        labels = build(labels)
    labels = load_all(args.path)
    ds = concat(ds, labels)
    steps = len(ds) // args.bs
    flags = []
    if is_main:
        flags = build(flags)
    if args.other:
        flags = load_all(args.path)
    every = len(flags) + 1
    for step, batch in enumerate(loader):
        model(batch).backward()
        if step % steps == 0:
            model.save_checkpoint(args.out)
        if step % every == 0:
            model.save_checkpoint(args.out)
'''


def test_a_value_rebound_on_every_rank_no_longer_holds_what_the_main_process_built(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(REBOUND)
    codes = found(path, "ZG2")
    assert ("ZG201", 21) not in codes  # `labels` rebound, before `steps` is computed, to what every rank loads
    assert ("ZG201", 23) in codes  # `flags` rebound only under another test: the main process's may remain


SELECT = '''
def define_model(opt):
    kind = opt["model"]
    if kind == "plain":
        from .model_plain import ModelPlain as M
    else:
        from .model_gan import ModelGAN as M
    m = M(opt)
    return m
'''

PLAIN = '''
from torch import nn


class ModelPlain:
    def __init__(self, opt):
        self.netG = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))

    def feed_data(self, data):
        self.L = data

    def test(self):
        self.E = self.netG(self.L)
'''

GAN = PLAIN.replace("ModelPlain", "ModelGAN")

TRAIN = '''
import random

import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from .select_model import define_model


def main(opt, train_set, test_loader):
    seed = opt["seed"]
    if seed is None:
        seed = random.randint(1, 10000)
    sampler = DistributedSampler(train_set, drop_last=True, seed=seed)
    loader = DataLoader(train_set, batch_size=4, sampler=sampler)
    model = define_model(opt)
    rank = dist.get_rank()
    for epoch in range(10):
        sampler.set_epoch(epoch + seed)
        for data in loader:
            model.feed_data(data)
            model.test()
        if rank == 0:
            for data in test_loader:
                model.feed_data(data)
                model.test()
'''


def test_a_plain_model_a_factory_of_another_file_imports_in_its_branches(tmp_path: Path) -> None:
    files = {"select_model.py": SELECT, "model_plain.py": PLAIN, "model_gan.py": GAN, "train.py": TRAIN}
    codes = found_in_package(tmp_path, files, "train.py", prefix="ZG2")
    assert codes == [("ZG201", 23)]  # rank 0 alone tests; the seed orders the sampler's draws, not how many


TRAINER = '''
from contextlib import suppress

import torch


class Trainer:
    def __init__(self, args, model, wrap):
        self.args = args
        self.model = model
        self.wrapped_model = wrap(model) if args.ddp else None

    def _get_model(self):
        if self.wrapped_model is None:
            return self.model
        return self.wrapped_model

    def train_step(self, batch):
        outputs, loss = self._get_model().train_step(batch)
        loss.backward()

    def test_run(self):
        self.model.eval()
        model = self._get_model()
        with suppress(NotImplementedError):
            model.test_run(self)

    def fit(self, loader):
        for epoch in range(10):
            for batch in loader:
                self.train_step(batch)
            if self.args.rank <= 0:
                self.test_run()
            if self.args.lora_rank > 0:
                self.test_run()
            if self.args.rank == -1:
                self.test_run()
'''


def test_a_trainer_test_run_on_the_first_rank_through_a_getter_of_either_held_model(tmp_path: Path) -> None:
    path = tmp_path / "trainer.py"
    path.write_text(TRAINER)
    # (`lora_rank`: a setting, compared with 0 all the same; `rank == -1`: whether the run is distributed at all)
    assert found(path, "ZG2") == [("ZG201", 32)]
