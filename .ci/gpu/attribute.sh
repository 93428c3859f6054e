#!/usr/bin/env bash
# Copy next to .gpu/run.sh (cp .ci/gpu/*.sh .gpu/) after bash ../shared/gpu/bundle.sh, then run
# on the GPU machine with .gpu carried.
# memcheck over the named modules' tests one at a time: each error line with the test it came in.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-out}
cs=/usr/local/cuda/bin/compute-sanitizer
export CUDA_CORE_REQUIRE_NVRTC=13 CUDA_CORE_REQUIRE_NVJITLINK=13
for m in $1; do
  timeout ${PER_MODULE_S:-150} $cs --tool memcheck --target-processes all --print-limit 200 .gpu/tests/cuda_core_tests-test --include-ignored --test-threads 1 "$m::" 2>&1 |
    awk -v m="$m" '/^test [a-z_:0-9]+ \.\.\./ {t=$2} /Program hit/ {sub(/^=+ */,""); print m ": " t ": " substr($0,1,170)} /^test result/ {print m ": " $0}'
done
