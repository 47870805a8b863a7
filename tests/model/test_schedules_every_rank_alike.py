"""Training loops whose schedules are every rank's alike: one stops when its learning-rate schedule answers None
(computed from the step count, the dataset's length and a setting); another evaluates every `len(loader)` steps of
data loaded through a settings object that also carries this rank's device."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_directory

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))
"""

LOOP = NET + """

def get_lr(step, dataset_size, base_lr=0.003):
    if step >= dataset_size // 10:
        return None
    return base_lr


def train(args, train_set, loader):
    model = Net()
    optim = torch.optim.SGD(model.parameters(), lr=args.base_lr)
    step = 0
    for x, y in loader:
        lr = get_lr(step, len(train_set), args.base_lr)
        if lr is None:
            break
        for group in optim.param_groups:
            group["lr"] = lr
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        step += 1
"""


def test_a_schedule_of_the_step_count_answering_none_ends_every_rank_alike(tmp_path: Path) -> None:
    assert found_in_directory(tmp_path, {"train.py": LOOP}, "train.py", "ZG204") == []


def test_a_hook_handed_the_batch_answering_none_still_ends_this_ranks_loop(tmp_path: Path) -> None:
    hooked = LOOP.replace("lr = get_lr(step, len(train_set), args.base_lr)", "lr = get_lr(step, len(x), args.base_lr)")
    assert [code for code, _ in found_in_directory(tmp_path, {"train.py": hooked}, "train.py", "ZG204")] == ["ZG204"]


DEVICE_FIELD = "\nfrom torch.utils.data import DataLoader, DistributedSampler, RandomSampler" + NET + """

def load_examples(args, filename):
    return torch.load(filename)[: args.data_num]


def evaluate(args, model, data):
    return sum(model(x.to(args.device)).sum().item() for x in data)


def main(args):
    if args.local_rank == -1 or args.no_cuda:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        torch.cuda.set_device(args.local_rank)
        device = torch.device("cuda", args.local_rank)
        torch.distributed.init_process_group(backend="nccl")
    args.device = device
    model = Net().to(args.device)
    train_data = load_examples(args, args.train_filename)
    sampler = RandomSampler(train_data) if args.local_rank == -1 else DistributedSampler(train_data)
    loader = DataLoader(train_data, sampler=sampler, batch_size=args.batch_size)
    save_steps = max(len(loader), 1)
    for step, x in enumerate(loader):
        model(x.to(args.device)).sum().backward()
        if (step + 1) % save_steps == 0:
            evaluate(args, model, load_examples(args, args.dev_filename))
"""


def test_the_device_a_run_settings_object_carries_decides_no_evaluation(tmp_path: Path) -> None:
    # `args.device` holds this rank's device; the data `load_examples(args, ...)` reads is every rank's alike
    assert found_in_directory(tmp_path, {"train.py": DEVICE_FIELD}, "train.py", "ZG2") == []


def test_a_rank_the_settings_object_carries_still_decides(tmp_path: Path) -> None:
    # how many examples this rank loads is its own: the loop over them, and the evaluation it times, follow the rank
    ranked = DEVICE_FIELD.replace(
        "    args.device = device\n", "    args.device = device\n    args.data_num = 100 * (args.local_rank + 1)\n")
    assert {code for code, _ in found_in_directory(tmp_path, {"train.py": ranked}, "train.py", "ZG2")} == {"ZG201"}
