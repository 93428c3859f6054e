#!/usr/bin/env bash
# On a machine with a GPU and the CUDA toolkit: builds gc.c (plain driver calls, no
# cuda-core) and runs it plainly and under initcheck. On 580.159.04 with 13.0's compute-sanitizer, initcheck kills it (status 11)
# with one thread or two, as it does cuda-core's green_contexts example; memcheck passes both.
set -u
cd "$(dirname "$0")"
nvcc -cubin -arch=sm_90 k.cu -o k.cubin &&
  gcc -O1 gc.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda -lpthread -o gc || exit 1
./gc 2; echo "plain rc=$?"
for threads in 2 1; do
  /usr/local/cuda/bin/compute-sanitizer --tool initcheck ./gc $threads | tail -3
  echo "initcheck, $threads threads: rc=${PIPESTATUS[0]}"
done
