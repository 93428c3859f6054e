#!/usr/bin/env bash
# Copy next to .gpu/run.sh (cp .ci/gpu/*.sh .gpu/). Usage: watch.sh BINARY auto|12 [LIMIT_S] [FILTER...]
# Runs one test binary under a watchdog; on a hang dumps the stacks of every thread.
set -u
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
t=$1; abi=$2; limit=${3:-220}; shift $(( $# < 3 ? $# : 3 ))
export CUDA_CORE_TEST_REQUIRE=gpu,nvrtc-13,nvjitlink-13,cc CUDA_CORE_REQUIRE_NVRTC=13 CUDA_CORE_REQUIRE_NVJITLINK=13
if [ "$abi" = auto ]; then unset CUDA_CORE_DRIVER_ABI; else export CUDA_CORE_DRIVER_ABI=$abi; fi
log=$OUT/$(basename $t)-$abi.log
"$t" --include-ignored "$@" > "$log" 2>&1 &
pid=$!
for i in $(seq $limit); do
  kill -0 $pid 2>/dev/null || break
  sleep 1
done
if kill -0 $pid 2>/dev/null; then
  echo "=== HUNG after $limit s: $t $abi" | tee -a "$log"
  grep "running for over" "$log" | head
  if command -v gdb >/dev/null && [ -z "${NO_GDB:-}" ]; then
    timeout 60 gdb -p $pid -batch -ex "thread apply all bt 25" > "$OUT/stacks-$abi.txt" 2>&1
  else
    for tk in /proc/$pid/task/*; do echo "$tk $(cat $tk/comm) $(cat $tk/wchan)"; done > "$OUT/stacks-$abi.txt"
  fi
  kill -9 $pid
fi
wait $pid; echo "rc=$? $t $abi"
grep -E "^test result|FAILED|panicked" "$log" | head -20
