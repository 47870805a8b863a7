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
OUT=${OUT:-/tmp/zgen_out}
DEADLINE=${DEADLINE:-470}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=3

if [[ ${SMOKE:-0} == 1 ]]; then
    N=2; DEV=(--device cpu); TINY=(--tiny --seq 64); SEARCH=(--max-micro-batch 3 --loss-steps 6)
    PLAN1=$OUT/tiny_w1.json; PLANN=$OUT/tiny_w2.json
else
    # DeepSpeed and its pure-Python needs (libcst and z3 are for the checker, not needed here)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        $(ls .whl/*.whl | grep -v -e z3_solver -e libcst) || exit 1
    export PYTHONPATH=/tmp/site:$PWD
    N=$(nvidia-smi -L | wc -l); DEV=(); TINY=(); SEARCH=()
    PLAN1=bench/plans/llama1b_w1_seq8192.json; PLANN=bench/plans/llama1b_w${N}_seq8192.json
    nvidia-smi --query-gpu=index,name,memory.total,clocks.sm,clocks.mem,temperature.gpu --format=csv
    nvidia-smi topo -m
fi
python3 -c "import torch, deepspeed; print('torch', torch.__version__, 'gpus', torch.cuda.device_count(), \
'nccl', torch.cuda.nccl.version(), 'deepspeed', deepspeed.__version__)"
echo "setup done at ${SECONDS}s"

left() {  # seconds a stage may take: its own limit, or what is left before DEADLINE
    local t=$(( DEADLINE - SECONDS )); (( t > $1 )) && t=$1; echo $t
}
stage() {  # stage LIMIT COMMAND...: run unless too little time is left
    local t; t=$(left "$1"); shift
    if (( t < 30 )); then echo "SKIPPED (time): $*"; return; fi
    echo "=== [${SECONDS}s] $* (limit ${t}s)"
    timeout "$t" "$@"; echo "=== rc=$? at ${SECONDS}s"
}

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
    python3 bench/multi_gpu.py --summarize "$OUT/multi_gpu.jsonl"
fi
echo "all done at ${SECONDS}s"
