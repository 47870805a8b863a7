#!/usr/bin/env bash
# Issues 14 and 15 on a two-GPU machine, in two device calls, from the repository root:
#
#     PART=1 DEADLINE=330 bash bench/gpu_run.sh   # one GPU at a time: two lanes side by side
#     PART=2 DEADLINE=540 bash bench/gpu_run.sh   # both GPUs: multi_gpu.py per system, then the memory peaks
#     PART=3 DEADLINE=420 bash bench/gpu_run.sh   # both GPUs: optimizer offload, zgen against DeepSpeed
#     PART=4 DEADLINE=420 bash bench/gpu_run.sh   # both GPUs: kernel tables at micro batch 1 and 5 (issue 15)
#     PART=5 DEADLINE=480 bash bench/gpu_run.sh   # GPU 0: correctness checks; both GPUs: parameter offload vs DeepSpeed's
#
# Part 1 runs two lanes at once, each on its own GPU and half of the cores (taskset), one process per
# system: lane A on GPU 0 is issue 14's regression check at world size 1 (zgen and FSDP2, compiled and
# eager, DeepSpeed; README's 161.2/194.5/179.2/213.6/301.8 ms); lane B on GPU 1 is the GPU correctness
# checks (offload among them) and optimizer offload against DeepSpeed's own (its CPU Adam, JIT-built).
# Part 2: one torchrun per system over both GPUs (bench/multi_gpu.py: micro batch 1, then the largest
# that fits, starting at 5, the largest issue 15 saw), then bench/memory_peak.py for zgen (default plan
# and the planner's plan) and FSDP2 at micro batch 1. Needs DeepSpeed's wheels in .whl/
# (../shared/scripts/gpu-wheels.sh .whl --with-deepspeed). Stages stop starting after DEADLINE seconds.
# SMOKE=1: the same stages on the CPU (tiny model, gloo), without DeepSpeed's offload and the lanes' GPUs.
# The device tool sends the session's checkout (/work/main), not a helper's worktree: from a helper, put
# `git archive <branch>` as .whl/rt.tar there (ignored) and start the command with
#     mkdir -p /tmp/rt && tar -xf .whl/rt.tar -C /tmp/rt && mkdir /tmp/rt/.whl && cp .whl/*.whl /tmp/rt/.whl && cd /tmp/rt
set -u
source "$(dirname "$0")/lib.sh"
export TORCH_CUDA_ARCH_LIST=9.0  # DeepSpeed 0.19.8's op builder cannot parse torch's "9.0a"

if [[ ${SMOKE:-0} == 1 ]]; then
    DEV=(--device cpu); TINY=(--tiny --seq 64); MG=(--max-micro-batch 3 --start-micro-batch 2 --fake-oom-above 2)
    PLANN=""; GPU0=""; GPU1=""; CORES_A=0; CORES_B=0
else
    install_wheels
    DEV=(); TINY=(); MG=(--start-micro-batch 5)
    PLANN=bench/plans/llama1b_w2_seq8192.json; GPU0=0; GPU1=1; CORES_A=0-15; CORES_B=16-31
    nvidia-smi topo -m
fi
python3 -c "import torch; print('torch', torch.__version__, 'gpus', torch.cuda.device_count(), \
'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None)"
echo "setup done at ${SECONDS}s"

bench1() {  # bench1 GPU CORES LIMIT ARGS...: one runtime_bench process on one GPU
    local gpu=$1 cores=$2; shift 2
    CUDA_VISIBLE_DEVICES=$gpu stage "$1" taskset -c "$cores" python3 bench/runtime_bench.py --steps 12 --warmup 3 \
        "${DEV[@]}" "${TINY[@]}" "${@:2}"
}

if [[ ${PART:-1} == 1 ]]; then
    lane_a() {
        for s in zgen-compile zgen fsdp2-compile fsdp2 deepspeed; do
            bench1 "$GPU0" "$CORES_A" 150 --systems "$s" --out "$OUT/w1_regression.jsonl"
        done
    }
    lane_b() {
        bench1 "$GPU1" "$CORES_B" 120 --check --systems none
        local systems=(zgen-offload zgen-offload-compile deepspeed-offload)
        [[ ${SMOKE:-0} == 1 ]] && systems=(zgen-offload)
        for s in "${systems[@]}"; do
            bench1 "$GPU1" "$CORES_B" 240 --systems "$s" --out "$OUT/w1_offload.jsonl"
        done
    }
    lane_a > "$OUT/lane_a.txt" 2>&1 &
    pid_a=$!
    lane_b > "$OUT/lane_b.txt" 2>&1 &
    wait $pid_a $!  # not a bare `wait`: that would also wait for lib.sh's tee
    grep -h "^===\|^check\|SKIPPED\|Error" "$OUT/lane_a.txt" "$OUT/lane_b.txt"
    for f in w1_regression w1_offload; do
        [[ -f $OUT/$f.jsonl ]] && python3 bench/runtime_bench.py --summarize "$OUT/$f.jsonl"
    done
elif [[ ${PART} == 4 ]]; then
    # Where the step goes at the largest micro batch: zgen and FSDP2 (compiled, then eager), each with
    # torch's default caching allocator and with expandable segments, micro batch 1 and 5 (and 6 if it
    # fits), two steps of each profiled: GPU ms per kernel category and the allocator's retry counters.
    [[ ${SMOKE:-0} == 1 ]] && MG=(--max-micro-batch 3 --start-micro-batch 2 --fake-oom-above 2) \
        || MG=(--start-micro-batch 5 --max-micro-batch 7)
    prof() { stage "$1" torchrun --standalone --nproc_per_node 2 bench/multi_gpu.py --nccl-timeout-s 60 \
        --loss-steps 5 --warmup 2 --profile-steps 2 --steps-max 4 --warmup-max 2 \
        --out "$OUT/profile.jsonl" "${DEV[@]}" "${TINY[@]}" "${MG[@]}" "${@:2}"; }
    prof 100 --system zgen-compile
    prof 100 --system fsdp2-compile
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True prof 100 --system zgen-compile --label zgen-compile-xseg
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True prof 100 --system fsdp2-compile --label fsdp2-compile-xseg
    [[ ${SMOKE:-0} == 1 ]] || MG=(--start-micro-batch 4 --max-micro-batch 5)
    prof 90 --system zgen
    prof 90 --system fsdp2
    python3 bench/multi_gpu.py --summarize "$OUT/profile.jsonl"
elif [[ ${PART} == 5 ]]; then
    # The GPU checks (parameter offload among them), then parameter + optimizer offload against DeepSpeed's
    # own, over both GPUs at micro batch 1 and the largest that fits (no profile steps).
    CUDA_VISIBLE_DEVICES=${GPU0:-0} stage 150 python3 bench/runtime_bench.py --check --systems none "${DEV[@]}" "${TINY[@]}"
    offp() { OMP_NUM_THREADS=16 stage "$1" torchrun --standalone --nproc_per_node 2 bench/multi_gpu.py \
        --nccl-timeout-s 120 --loss-steps 10 --warmup 3 --profile-steps 0 --steps-max 4 --warmup-max 2 \
        --out "$OUT/multi_gpu_offload_param.jsonl" "${DEV[@]}" "${TINY[@]}" "${MG[@]}" "${@:2}"; }
    offp 120 --system zgen-offload
    offp 120 --system zgen-offload-param
    [[ ${SMOKE:-0} == 1 ]] || offp 200 --system deepspeed-offload-param
    python3 bench/multi_gpu.py --summarize "$OUT/multi_gpu_offload_param.jsonl"
elif [[ ${PART} == 3 ]]; then
    # Optimizer offload over both GPUs; the host update gets half of the cores per rank (torchrun's default
    # OMP_NUM_THREADS=1 would make every system's CPU Adam single-threaded).
    off() { OMP_NUM_THREADS=16 stage "$1" torchrun --standalone --nproc_per_node 2 bench/multi_gpu.py \
        --nccl-timeout-s 120 --loss-steps 10 --warmup 3 --profile-steps 0 --steps-max 4 --warmup-max 2 \
        --out "$OUT/multi_gpu_offload.jsonl" "${DEV[@]}" "${TINY[@]}" "${MG[@]}" "${@:2}"; }
    off 150 --system zgen-offload
    off 150 --system zgen-offload-compile
    off 150 --system zgen-offload-param
    [[ ${SMOKE:-0} == 1 ]] || off 260 --system deepspeed-offload
    python3 bench/multi_gpu.py --summarize "$OUT/multi_gpu_offload.jsonl"
else
    run2() { stage "$1" torchrun --standalone --nproc_per_node 2 bench/multi_gpu.py --nccl-timeout-s 60 \
        --loss-steps 10 --warmup 3 --profile-steps 2 --steps-max 4 --warmup-max 2 \
        --out "$OUT/multi_gpu.jsonl" "${DEV[@]}" "${TINY[@]}" "${MG[@]}" "${@:2}"; }
    run2 100 --system zgen-compile --label zgen-compile
    run2 100 --system fsdp2-compile
    run2 90 --system zgen --label zgen
    run2 90 --system fsdp2
    run2 100 --system deepspeed
    [[ -n $PLANN ]] && run2 100 --system zgen-compile --label zgen-plan-compile --plan "$PLANN"
    python3 bench/multi_gpu.py --summarize "$OUT/multi_gpu.jsonl"
    if [[ ${SMOKE:-0} != 1 ]]; then
        peak() { stage 60 torchrun --standalone --nproc_per_node 2 bench/memory_peak.py --out "$OUT/memory_peak.jsonl" "$@"; }
        peak --system zgen
        peak --system fsdp2
        peak --system zgen --plan "$PLANN"
    fi
fi
echo "all done at ${SECONDS}s"
