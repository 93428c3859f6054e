#!/usr/bin/env bash
# On a machine with a GPU: runs one test binary with its GPU tests under a watchdog, with the
# driver ABI picked by the probe (auto) or forced to 12; on a hang, writes the stacks of every
# thread (with gdb where it is installed) to $LOG_DIR. Usage:
#   .ci/gpu/watch.sh BINARY auto|12 [LIMIT_S] [FILTER...]
set -u
LOG_DIR=${LOG_DIR:-target/gpu-logs}; mkdir -p "$LOG_DIR"
t=$1; abi=$2; limit=${3:-220}; shift $(( $# < 3 ? $# : 3 ))
export CUDA_CORE_TEST_REQUIRE=gpu,nvrtc-13,nvjitlink-13,cc CUDA_CORE_REQUIRE_NVRTC=13 CUDA_CORE_REQUIRE_NVJITLINK=13
if [ "$abi" = auto ]; then unset CUDA_CORE_DRIVER_ABI; else export CUDA_CORE_DRIVER_ABI=$abi; fi
log=$LOG_DIR/$(basename $t)-$abi.log
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
    timeout 60 gdb -p $pid -batch -ex "thread apply all bt 25" > "$LOG_DIR/stacks-$abi.txt" 2>&1
  else
    for tk in /proc/$pid/task/*; do echo "$tk $(cat $tk/comm) $(cat $tk/wchan)"; done > "$LOG_DIR/stacks-$abi.txt"
  fi
  kill -9 $pid
fi
wait $pid; echo "rc=$? $t $abi"
grep -E "^test result|FAILED|panicked" "$log" | head -20
