#!/usr/bin/env bash
# Builds the cudacore_rs wheel from this checkout, installs it into a fresh virtual environment
# and runs its pytest suite on the CPU against the stand-in driver
# (cuda-core/tests/standin/libcuda_standin.c), which is libcuda.so.1 for the run.
# Needs python3 (3.9 or newer, with venv), a C compiler, cargo, and network for pip.
# WORK=DIR keeps the venv, wheel and stand-in there (default: a temporary directory, removed).
# Extra arguments go to pytest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
if [ -n "${WORK:-}" ]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

echo "--- python: a fresh virtual environment with maturin and pytest ($work/venv)"
rm -rf "$work/venv" "$work/wheels"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check maturin pytest numpy

echo "--- python: maturin build --release"
"$work/venv/bin/maturin" build --release --quiet --manifest-path "$here/Cargo.toml" \
  --out "$work/wheels"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-index --force-reinstall "$work"/wheels/cudacore_rs-*.whl

echo "--- python: the stand-in driver as libcuda.so.1"
mkdir -p "$work/standin"
"${CC:-cc}" -shared -fPIC -pthread -o "$work/standin/libcuda.so.1" \
  "$root/cuda-core/tests/standin/libcuda_standin.c" -lm

echo "--- python: pytest against the stand-in"
cd "$here"
env -u CUDA_CORE_DRIVER_ABI \
  LD_LIBRARY_PATH="$work/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$work/venv/bin/python" -m pytest -p no:cacheprovider -q "$@"

echo "--- python: the example against the stand-in"
env -u CUDA_CORE_DRIVER_ABI \
  LD_LIBRARY_PATH="$work/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$work/venv/bin/python" "$here/examples/time_a_stream.py"
