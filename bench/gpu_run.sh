#!/usr/bin/env bash
# The GPU measurements for issues 5 and 6 in one device call, from the repository root:
#
#     bash bench/gpu_run.sh            # results and log.txt under $OUT (default /tmp/zgen_out)
#
# Issue 5 (GPU 0 alone): the emitted bench/train_gen_llama.py against runtime_bench's zgen figure with the
# same plan, micro batch 1 and accumulation 2. Issue 6 (all GPUs): bench/multi_gpu.py per system under
# torchrun. Needs DeepSpeed's wheels in .whl/ (../shared/scripts/gpu-wheels.sh .whl --with-deepspeed).
# Every stage has a time limit and the whole run stops starting stages after DEADLINE seconds.
# SMOKE=1 bash bench/gpu_run.sh: the same stages on the CPU (tiny model, gloo, 2 ranks, no emitted script).
set -u
source "$(dirname "$0")/lib.sh"

if [[ ${SMOKE:-0} == 1 ]]; then
    N=2; DEV=(--device cpu); TINY=(--tiny --seq 64); SEARCH=(--max-micro-batch 3 --loss-steps 6)
    PLAN1=$OUT/tiny_w1.json; PLANN=$OUT/tiny_w2.json
    for w in 1 2; do  # the planner's plans for the tiny model (the GPU run uses the committed bench/plans/)
        zgen plan --model examples/llama/model.py:build_tiny_model --config examples/llama/ds_config.json \
            --seq-len 64 --world-size $w --json > "$OUT/tiny_w$w.json" || exit 1
    done
else
    install_wheels
    N=$(nvidia-smi -L | wc -l); DEV=(); TINY=(); SEARCH=()
    PLAN1=bench/plans/llama1b_w1_seq8192.json; PLANN=bench/plans/llama1b_w${N}_seq8192.json
    nvidia-smi topo -m
fi
python3 -c "import torch, deepspeed; print('torch', torch.__version__, 'gpus', torch.cuda.device_count(), \
'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None, 'deepspeed', deepspeed.__version__)"
echo "setup done at ${SECONDS}s"

# -- issue 5: the emitted script and the benchmark, same settings, GPU 0 -------------------------------
export CUDA_VISIBLE_DEVICES=0
[[ ${SMOKE:-0} == 1 ]] || stage 100 python3 bench/train_gen_llama.py --steps 24 --device cuda --checkpoint-every 0 \
    --log-jsonl "$OUT/issue5_script.jsonl"
stage 120 python3 bench/runtime_bench.py --systems zgen --grad-accum 2 --steps 20 --warmup 4 \
    --plan "$PLAN1" --sync-each-step --out "$OUT/issue5_bench.jsonl" "${DEV[@]}" "${TINY[@]}"
unset CUDA_VISIBLE_DEVICES

# -- issue 6: one torchrun per system, all GPUs (on a one-GPU machine: the world-size-1 part of it) -----------
if (( N >= 1 )); then
    run6() { stage "$1" torchrun --standalone --nproc_per_node "$N" bench/multi_gpu.py --nccl-timeout-s 60 \
        --out "$OUT/multi_gpu.jsonl" "${DEV[@]}" "${TINY[@]}" "${SEARCH[@]}" "${@:2}"; }
    run6 110 --system zgen --label zgen-plan --plan "$PLANN"
    run6 110 --system fsdp2
    run6 150 --system deepspeed
    run6 110 --system fsdp2-prefetch
    run6 110 --system zgen --label zgen-default
    run6 150 --system zgen-compile --label zgen-plan-compile --plan "$PLANN"
    run6 150 --system fsdp2-compile
    python3 bench/multi_gpu.py --summarize "$OUT/multi_gpu.jsonl"
fi
echo "all done at ${SECONDS}s"
