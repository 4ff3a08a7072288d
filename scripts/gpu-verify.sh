#!/usr/bin/env bash
# Builds grma with CUDA on a GPU machine, runs the GPU tests, the examples,
# compute-sanitizer and the benchmarks. Logs and JSON go to $OUT (or ./gpu-out).
#   scripts/gpu-verify.sh [all|tests|bench]
# `tests` builds and runs the tests and the sanitizers, `bench` the benchmarks,
# horizontal diffusion and the model (a second call on a machine that keeps
# build/gpu builds nothing again); `all` does both.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
# Keep NVLink multicast off (shared machines).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
what=${1:-all}
status=0
step() {  # step NAME COMMAND...: runs, logs to $out/NAME.log, records the result
  local name=$1; shift
  local start=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then r=ok; else r="FAILED($?)"; status=1; fi
  printf '%-34s %-10s %4ds\n' "$name" "$r" $((SECONDS - start)) | tee -a "$out/summary.txt"
}
# nodes SECONDS PROGRAM ARGS...: the GPUs here as two nodes, a process
# each (the network engines between them), with this shell's GRMA_*,
# NCCL_* and NVSHMEM_* settings.
nodes() {
  local pass=()
  for v in $(compgen -e | grep -E '^(GRMA_|NCCL_|NVSHMEM_)'); do pass+=(-x "$v"); done
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "$1" mpirun -np 2 --bind-to none \
    "${pass[@]}" sh -c "GRMA_NODE_ID=n\$OMPI_COMM_WORLD_RANK exec ${*:2}"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
# NVSHMEM from the Python environment, when there, for grma-bench's comparison.
nvshmem=$(python3 -c "import nvidia.nvshmem; print(list(nvidia.nvshmem.__path__)[0])" 2>/dev/null || true)
step configure cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DGRMA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGRMA_WARNINGS_AS_ERRORS=ON -DGRMA_NVSHMEM_HOME="$nvshmem"
step build cmake --build build/gpu -j"$(nproc)"
san="compute-sanitizer --error-exitcode 9"
conf="./build/gpu/tests/conformance/grma-conformance-tests"
hd="./build/gpu/apps/grma-hd --iterations 200 --check-iterations 2"
tests() { [ "$what" = all ] || [ "$what" = tests ]; }
benchmarks() { [ "$what" = all ] || [ "$what" = bench ]; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
if tests; then
step example-hello ./build/gpu/examples/grma-hello
step example-rank-exchange ./build/gpu/examples/grma-rank_exchange
step example-ping-pong ./build/gpu/examples/grma-ping_pong --grma-ranks-per-device=4
if [ -d build/gpu/tests/conformance ]; then
  step gpu-tests ctest --test-dir build/gpu -L '^gpu$' --output-on-failure --timeout 1200
  # One process driving two GPUs (GRMA_DEVICES=2): the suite over peer memory.
  if [ "$gpus" -ge 2 ]; then
    step gpu-x2-tests ctest --test-dir build/gpu -L '^gpu-x2$' --output-on-failure --timeout 1200
  fi
fi
# Errors raised on the GPU and the watchdog reach the host; the program exits nonzero.
expect() {  # expect CASE REGEX
  cmake -DPROGRAM=./build/gpu/tests/integration/grma-uncaught-error \
    "-DARGS=$1 --grma-backend=cuda --grma-ranks-per-device=2 --grma-timeout=1" \
    "-DEXPECT=$2" -P tests/expect_failure.cmake
}
step gpu-error-bad-target expect bad-target "grma: rank 1: put_notify: rank 5 is out of range: communicator world has 2 ranks"
step gpu-error-watchdog expect stuck "grma: watchdog: no progress for .*rank 0: wait_notifications\\(window 0, source 1, tag 9, count 1\\)"
# The program's own shared memory counts against a block's with the launch's.
step gpu-error-shared expect "shared --grma-match-capacity=1500" "GRMA_MATCH_CAPACITY 1500 needs 36000 bytes of shared memory per rank, and the program's own shared variables [0-9]+ more"
# After a trap the process's CUDA context is gone: the next run says so.
step gpu-error-again expect again "first run: grma: rank 1: put_notify: rank 5 is out of range.*grma: an earlier run's rank kernel failed on GPU 0: .*run the next job in a new process"
# compute-sanitizer on the portable conformance programs at small sizes (the
# tools slow kernels down a hundredfold and more). HostAccess is left out:
# host operations are served by the engine's proxy, a kernel beside the rank
# kernel, which the sanitizer's serialized launches never start (the test
# waits until the watchdog ends it).
if [ -x "$conf" ]; then
  export GRMA_BACKEND=cuda
  step sanitize-memcheck timeout 150 $san --tool memcheck $conf --gtest_filter='*ranks2_threads32*:*ranks3_threads128*:-*HostAccess*'
  step sanitize-racecheck timeout 110 $san --tool racecheck $conf --gtest_filter='*ranks2_threads32*:-*HostAccess*'
  step sanitize-synccheck timeout 70 $san --tool synccheck $conf --gtest_filter='*ranks3_threads128*:-*HostAccess*'
  if [ "$gpus" -ge 2 ]; then
    step sanitize-memcheck-x2 env GRMA_DEVICES=2 timeout 150 $san --tool memcheck $conf --gtest_filter='*ranks2_threads32*:-*HostAccess*'
    # One process per GPU (CUDA IPC), each under the sanitizer.
    step sanitize-memcheck-mpi2 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      timeout 200 mpirun -np 2 -x GRMA_BACKEND $san --tool memcheck $conf --gtest_filter='*ranks2_threads32*:-*HostAccess*'
    # The two GPUs as two nodes: the network engines' path, without the
    # proxy (a kernel that runs as long as the ranks do). A signal add
    # across nodes is then a kernel beside the rank kernel, which the
    # sanitizer's serialized launches cannot run (design.md), and so is
    # every atomic across nodes (the Atomics and Shmem suites); the Gaspi
    # suite stops there too (two H200s: a rank's quiet never completes,
    # not traced further). Those tests are left out.
    step sanitize-memcheck-remote2 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      CONFORMANCE_NODES=2 GRMA_ENGINE_PROXY=0 timeout 200 mpirun -np 2 -x GRMA_BACKEND -x CONFORMANCE_NODES -x GRMA_ENGINE_PROXY sh -c "GRMA_NODE_ID=node\$OMPI_COMM_WORLD_RANK exec $san --tool memcheck $conf \
      --gtest_filter='*ranks2_threads32*:-*Signals.Adds*:*Signals.SignalsLeave*:*Collectives*:*HostAccess*:*Atomics*:*Shmem*:*Gaspi*'"
  fi
  unset GRMA_BACKEND
fi
# Horizontal diffusion under the sanitizers, small (4096 columns: HD-OVERLAP's
# warps claim rows of blocks of columns, lane 0 for the warp: synccheck).
if [ -x build/gpu/apps/grma-hd ]; then
  step sanitize-memcheck-hd env GRMA_HEAP_SIZE=12G GRMA_RANKS_PER_DEVICE=6 timeout 120 $san --tool memcheck $hd \
    --widths 40,300,4096 --iterations 2 --repeats 1 --variants hd,overlap,nooverlap --no-baseline --json "$out/hd_memcheck.json"
  step sanitize-racecheck-hd env GRMA_HEAP_SIZE=12G GRMA_RANKS_PER_DEVICE=4 timeout 120 $san --tool racecheck $hd \
    --widths 300,4096 --iterations 2 --repeats 1 --variants overlap --no-baseline --json "$out/hd_racecheck.json"
  step sanitize-synccheck-hd env GRMA_HEAP_SIZE=12G GRMA_RANKS_PER_DEVICE=4 timeout 120 $san --tool synccheck $hd \
    --widths 4096 --iterations 2 --repeats 1 --variants overlap --no-baseline --json "$out/hd_synccheck.json"
fi
fi  # tests
if benchmarks; then
# The two GPUs as two nodes (the network engines), then two CPU "nodes",
# quick: every operation between the GPUs costs tens of microseconds so far.
# Its halo exchange is the loaded model's for hd-2nodes.
if [ "$gpus" -ge 2 ]; then
  step grma-bench-remote nodes 900 ./build/gpu/bench/grma-bench --quick --json "$out/grma-bench-remote.json"
fi
# grma-bench: every path of a job over all GPUs here (up to two), NVSHMEM
# between them where the build has it.
step grma-bench env GRMA_DEVICES=$([ "$gpus" -ge 2 ] && echo 2 || echo 1) \
  ./build/gpu/bench/grma-bench --json "$out/grma-bench.json"
# grma-bench goes on without NVSHMEM's figures when its processes fail: say so here.
if [ "$gpus" -ge 2 ] && [ -x build/gpu/bench/grma-bench-nvshmem ]; then
  step grma-bench-nvshmem grep "NVSHMEM int_p" "$out/grma-bench.log"
fi
# The halo exchange of one GPU's ranks, for the loaded model of hd-1gpu.
if [ "$gpus" -ge 2 ]; then
  step grma-bench-halo-1gpu env GRMA_DEVICES=1 ./build/gpu/bench/grma-bench --only halo \
    --backends cuda --json "$out/grma-bench-halo-1gpu.json"
fi
# Horizontal diffusion (papers/000 §4.3), grma beside the kernel-boundary
# baseline, every result checked against the serial reference; on one GPU
# and on two; then the model (Hockney fits of the benchmarks' figures) and
# the plots.
if [ -x build/gpu/apps/grma-hd ]; then
  export GRMA_HEAP_SIZE=12G
  step hd-1gpu env GRMA_DEVICES=1 $hd --widths 64,128,256,512,1024,2048,4096,8192,16384 --json "$out/hd_1gpu.json"
  models=(--hd "$out/hd_1gpu.json:1 GPU")
  if [ "$gpus" -ge 2 ]; then
    step hd-2gpu env GRMA_DEVICES=2 $hd --widths 64,128,256,512,1024,2048,4096,8192,16384 --json "$out/hd_2gpu.json"
    models+=(--hd "$out/hd_2gpu.json:2 GPUs")
    # The two GPUs as two nodes: grma's network engines; the baseline's
    # halos through the host and MPI.
    step hd-2nodes nodes 900 $hd --widths 64,256,1024,4096,16384 --json "$out/hd_2nodes.json"
    models+=(--hd "$out/hd_2nodes.json:2 nodes")
  fi
  unset GRMA_HEAP_SIZE
  benches=()
  # grma-bench's runs first: the model takes each path from the first file
  # that measured it (the GPUs as two nodes: the remote path of hd-2nodes).
  for b in grma-bench grma-bench-remote; do
    [ -f "$out/$b.json" ] && benches+=(--bench "$out/$b.json")
  done
  [ -f "$out/grma-bench-halo-1gpu.json" ] && benches+=(--halo "$out/grma-bench-halo-1gpu.json")
  step model python3 scripts/grma-model.py "${benches[@]}" "${models[@]}" --plots "$out/plots"
fi
# Jacobi 2D over the OpenSHMEM layer (papers/001 §6.3), beside the
# kernel-boundary baselines (Inter-K and Inter-K-Overlap), all checked
# against the serial reference: one GPU, two, and two nodes.
if [ -x build/gpu/apps/grma-jacobi2d ]; then
  jacobi="./build/gpu/apps/grma-jacobi2d --sizes 1024,2048,4096,8192"
  step jacobi2d-1gpu env GRMA_DEVICES=1 $jacobi --json "$out/jacobi2d_1gpu.json"
  if [ "$gpus" -ge 2 ]; then
    step jacobi2d-2gpu env GRMA_DEVICES=2 $jacobi --json "$out/jacobi2d_2gpu.json"
    step jacobi2d-2nodes nodes 300 $jacobi --json "$out/jacobi2d_2nodes.json"
  fi
fi
# The sync-free triangular solve (papers/001 §6.4), beside the level-set
# baseline (one GPU) and the host-helper one (as many GPUs as grma), every
# solution checked against serial forward substitution.
if [ -x build/gpu/apps/grma-spts ]; then
  spts="./build/gpu/apps/grma-spts --generate laplace2d:512,laplace2d:1024,laplace3d:48,chain:20000:4,chain:4000:1"
  step spts-1gpu env GRMA_DEVICES=1 $spts --json "$out/spts_1gpu.json"
  if [ "$gpus" -ge 2 ]; then
    step spts-2gpu env GRMA_DEVICES=2 $spts --json "$out/spts_2gpu.json"
  fi
fi
# The streaming matrix-vector product over the GASPI layer (papers/002 §7),
# beside the kernel-boundary baseline, every product checked: one GPU, two
# (workers on the second), two nodes (the baseline's batches through MPI).
if [ -x build/gpu/apps/grma-mmv ]; then
  step mmv-1gpu env GRMA_DEVICES=1 ./build/gpu/apps/grma-mmv --json "$out/mmv_1gpu.json"
  if [ "$gpus" -ge 2 ]; then
    step mmv-2gpu env GRMA_DEVICES=2 ./build/gpu/apps/grma-mmv --json "$out/mmv_2gpu.json"
    step mmv-2nodes nodes 300 ./build/gpu/apps/grma-mmv --json "$out/mmv_2nodes.json"
  fi
fi
fi  # benchmarks
echo; for f in "$out"/gpu-tests.log "$out"/gpu-x2-tests.log "$out"/sanitize-*.log; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"
  grep -h -m6 -E "SUMMARY|tests passed|^\[  (PASSED|FAILED)|^========= +(Invalid|Race|Barrier|Error)" "$f"
done
[ -f "$out/grma-bench.log" ] && { echo; cat "$out/grma-bench.log"; }
[ -f "$out/grma-bench-remote.log" ] && { echo; sed -n '/other node/,$p' "$out/grma-bench-remote.log"; }
[ -f "$out/hd-2gpu.log" ] && { echo; tail -n 50 "$out/hd-2gpu.log"; }
[ -f "$out/hd-2nodes.log" ] && { echo; tail -n 30 "$out/hd-2nodes.log"; }
[ -f "$out/model.log" ] && { echo; cat "$out/model.log"; }
for j in jacobi2d-1gpu jacobi2d-2gpu jacobi2d-2nodes spts-1gpu spts-2gpu mmv-1gpu mmv-2gpu mmv-2nodes; do [ -f "$out/$j.log" ] && { echo; cat "$out/$j.log"; }; done
echo; cat "$out/summary.txt"
exit $status
