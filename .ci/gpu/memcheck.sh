#!/usr/bin/env bash
# On a machine with a GPU and compute-sanitizer: runs memcheck over the integration-test binary,
# module by module, so that each error is attributed to a module; prints one line per module
# (errors found, the test result) with its most frequent error lines, and keeps each module's
# log in $LOG_DIR. Usage: .ci/gpu/memcheck.sh ["MODULE [MODULE...]"] (all modules by default;
# see common.sh for TEST_BIN and the rest).
set -u
source "$(dirname "$0")/common.sh"
bin=$TEST_BIN
export CUDA_CORE_REQUIRE_NVRTC=13 CUDA_CORE_REQUIRE_NVJITLINK=13
per=${PER_MODULE_S:-120}
for m in ${1:-cache checkpoint composition copies default_resource device dlpack driver_info_example ecosystem globals graph_conditional graph_nodes graph_params graphs green_context hot_path_allocations inputs ipc kernel_effects launch linker managed memory multi_device nvrtc_preload pools program program_cache recycling sanitizer_clean sticky_error stream_event system tensor_map textures views virtual_memory}; do
  log="$LOG_DIR/memcheck-$m.log"
  # The modules in SERIAL_MODULES run one test at a time: with several ipc tests' child
  # processes under the sanitizer at once, a child's driver call can block for good inside
  # the sanitizer's own callback (libsanitizer-collection, waiting on a futex; seen with
  # 13.0's compute-sanitizer in 2 runs of 5), while the same test passes alone.
  threads=4
  case " ${SERIAL_MODULES-ipc} " in *" $m "*) threads=1 ;; esac
  timeout $per $cs --tool memcheck --target-processes all --print-limit 200 "$bin" --include-ignored --test-threads $threads "$m::" > "$log" 2>&1
  rc=$?
  errs=$(grep -E "ERROR SUMMARY" "$log" | awk '{s+=$4} END {print s+0}')
  res=$(grep -E "^test result" "$log" | tail -1 | cut -c1-60)
  echo "$m rc=$rc errors=$errs $res"
  grep -E "Program hit|CUDA_ERROR" "$log" | sed 's/^========= *//' | sort | uniq -c | sort -rn | head -8 | sed 's/^/    /'
done
