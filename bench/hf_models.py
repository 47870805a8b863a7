"""zgen.runtime on transformers' own model code: tiny configs, equal to plain AdamW on the same batches.

Needs `transformers` (not a zgen dependency). CPU, gloo:

    python bench/hf_models.py llama gpt2 qwen3_moe
    torchrun --nproc_per_node 2 bench/hf_models.py llama gpt2 qwen3_moe

For each model: plain single-process AdamW on the global batch as the reference, then the engine
with the default plan eager, with transformers' gradient checkpointing (reentrant), compiled
(dynamo, `aot_eager`), and both. Prints the largest |difference| of any weight after 3 steps.
Dropout is off so that the runs are comparable element by element.
"""

from __future__ import annotations

import sys

import torch

import zgen.runtime as zr

STEPS, LR, GLOBAL, SEQ, VOCAB = 3, 1e-2, 4, 16, 128
ADAMW = {"lr": LR, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}
CONFIGS = {
    "llama": dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True),
    "gpt2": dict(vocab_size=VOCAB, n_embd=32, n_layer=3, n_head=4, n_positions=64,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
    "qwen3_moe": dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, num_experts=4,
                      num_experts_per_tok=2, max_position_embeddings=64),
}


def make(kind: str):
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(kind, **CONFIGS[kind])
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg).float()


def batch(step: int, world: int, rank: int) -> torch.Tensor:
    ids = torch.randint(0, VOCAB, (GLOBAL, SEQ), generator=torch.Generator().manual_seed(step))
    n = GLOBAL // world
    return ids[rank * n : (rank + 1) * n]


def plain(kind: str) -> dict[str, torch.Tensor]:
    model = make(kind)
    opt = torch.optim.AdamW(model.parameters(), **{**ADAMW, "betas": tuple(ADAMW["betas"])})
    for step in range(STEPS):
        ids = batch(step, 1, 0)
        model(input_ids=ids, labels=ids).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def zgen(kind: str, variant: str, world: int, rank: int) -> dict[str, torch.Tensor]:
    model = make(kind)
    if "checkpointing" in variant:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.train()
    cfg = {"train_batch_size": GLOBAL, "train_micro_batch_size_per_gpu": GLOBAL // world, "gradient_clipping": 1.0,
           "optimizer": {"type": "AdamW", "params": ADAMW},
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}
    engine = zr.initialize(model, cfg)
    if "compiled" in variant:
        torch._dynamo.reset()
        engine.compile(backend="aot_eager")
    for step in range(STEPS):
        ids = batch(step, world, rank)
        engine.backward(engine(input_ids=ids, labels=ids))  # a ModelOutput: the engine takes its .loss
        engine.step()
    return engine.full_state_dict()


def main(kinds: list[str]) -> int:
    job = zr.init_distributed(device="cpu")
    for kind in kinds:
        ref = plain(kind)
        for variant in ("eager", "checkpointing", "compiled", "checkpointing+compiled"):
            full = zgen(kind, variant, job.world_size, job.rank)
            if job.rank == 0:
                worst = max((full[k].float() - ref[k].float()).abs().max().item() for k in ref)
                print(f"world {job.world_size}  {kind:<10} {variant:<24} max |zgen - plain| {worst:.2e}", flush=True)
    zr.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or list(CONFIGS)))
