# Shared by the device scripts in bench/ (sourced, not run): output folder, environment, time-boxed stages.
#   OUT       results and log.txt (default /tmp/zgen_out)
#   DEADLINE  seconds after which no further stage starts (default 470)
OUT=${OUT:-/tmp/zgen_out}
DEADLINE=${DEADLINE:-470}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=3

install_wheels() {  # DeepSpeed and its pure-Python needs from .whl/ (libcst and z3 are for the checker only)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        $(ls .whl/*.whl | grep -v -e z3_solver -e libcst) || exit 1
    export PYTHONPATH=/tmp/site:$PWD
    nvidia-smi --query-gpu=index,name,memory.total,clocks.sm,clocks.mem,temperature.gpu --format=csv
}

left() {  # seconds a stage may take: its own limit, or what is left before DEADLINE
    local t=$(( DEADLINE - SECONDS )); (( t > $1 )) && t=$1; echo $t
}
stage() {  # stage LIMIT COMMAND...: run unless too little time is left
    local t; t=$(left "$1"); shift
    if (( t < 30 )); then echo "SKIPPED (time): $*"; return; fi
    echo "=== [${SECONDS}s] $* (limit ${t}s)"
    timeout "$t" "$@"; echo "=== rc=$? at ${SECONDS}s"
}
