#!/usr/bin/env bash
# Issue 4's world-size-1 comparison on one GPU, one process per system, in one device call:
#
#     DEADLINE=560 bash bench/w1_compare.sh     # device call with carry [".whl"]; results under $OUT
#
# One process per system so that a host-bound system (DeepSpeed) is not slowed by what an earlier system
# left behind (allocator state, inductor's compile workers). Stages run in priority order and stop starting
# after DEADLINE seconds: the GPU checks, DeepSpeed both ways, FSDP2, zgen, their compiled variants, the
# emitted script (which compiles on CUDA), then plain PyTorch.
set -u
source "$(dirname "$0")/lib.sh"
install_wheels
export TORCH_CUDA_ARCH_LIST=9.0  # DeepSpeed 0.19.8's op builder cannot parse torch's "9.0a" (FusedAdam)
RES=$OUT/w1_compare.jsonl
bench() { stage "$1" python3 bench/runtime_bench.py --steps 12 --warmup 3 --out "$RES" "${@:2}"; }

bench 90 --check --systems none
for s in deepspeed deepspeed-asis fsdp2 zgen zgen-compile fsdp2-compile; do
    bench 150 --systems "$s"
done
stage 120 python3 bench/train_gen_llama.py --steps 16 --device cuda --checkpoint-every 0 --log-jsonl "$OUT/script.jsonl"
for s in plain plain-compile; do
    bench 120 --systems "$s"
done
python3 bench/runtime_bench.py --summarize "$RES"
echo "all done at ${SECONDS}s"
