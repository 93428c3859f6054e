# Sourced by the scripts beside it: the repository root as the working directory, the
# integration-test binary to run ($TEST_BIN, else the newest cuda_core_tests binary cargo built),
# compute-sanitizer ($COMPUTE_SANITIZER, else the one on PATH, else the toolkit's) and where
# logs go ($LOG_DIR, default target/gpu-logs).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -z "${TEST_BIN:-}" ]; then
  TEST_BIN=$(ls -t target/*/deps/cuda_core_tests-* 2>/dev/null | grep -v '\.d$' | head -1)
fi
if [ -z "$TEST_BIN" ] || [ ! -x "$TEST_BIN" ]; then
  echo "no test binary: build it with 'cargo test -p cuda-core --release --no-run', or set TEST_BIN" >&2
  exit 2
fi
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
LOG_DIR=${LOG_DIR:-target/gpu-logs}
mkdir -p "$LOG_DIR"
