#!/usr/bin/env bash
# On a machine with a GPU and compute-sanitizer: runs memcheck over the tests of the modules
# named, one test at a time, and prints each error with the test it came in.
# Usage: .ci/gpu/attribute.sh "MODULE [MODULE...]" (see common.sh for TEST_BIN and the rest).
set -u
source "$(dirname "$0")/common.sh"
export CUDA_CORE_REQUIRE_NVRTC=13 CUDA_CORE_REQUIRE_NVJITLINK=13
for m in $1; do
  timeout ${PER_MODULE_S:-150} $cs --tool memcheck --target-processes all --print-limit 200 "$TEST_BIN" --include-ignored --test-threads 1 "$m::" 2>&1 |
    awk -v m="$m" '/^test [a-z_:0-9]+ \.\.\./ {t=$2} /Program hit/ {sub(/^=+ */,""); print m ": " t ": " substr($0,1,170)} /^test result/ {print m ": " $0}'
done
