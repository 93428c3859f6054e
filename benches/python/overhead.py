#!/usr/bin/env python3
"""The per-call cost of cudacore_rs against NVIDIA's cuda.core, CuPy and the raw driver.

Each case is timed with ``timeit`` in every implementation that can be imported, in interleaved
rounds (case by case, implementation by implementation, then again), and the median of the
rounds is reported in nanoseconds per call. Cases that queue work ("batched": a record, a launch,
an allocation) are timed in batches of 256 calls with the stream drained between batches, outside
the clock, as the Rust overhead suite does. The raw driver's figures are the Rust overhead suite's
``raw`` variants (criterion's medians), read from its output directory with ``--criterion DIR``,
so that all columns come from one machine in one run:

    CUDA_CORE_BENCH_ROUNDS=3 CRITERION_HOME=/tmp/crit target/release/deps/overhead-* --bench \\
        '^(device_current|device_by_ordinal|stream_churn|event_churn|event_record|stream_sync_idle|launch_0|launch_4|alloc_free_1k)/(raw|cuda-core)/'
    python3 benches/python/overhead.py --criterion /tmp/crit --csv python-overhead.csv

The work is the same in every column: events without timing, non-blocking streams, one block
of 32 threads of an empty kernel with 0 or 4 parameters (three pointers and an ``int``), 1 KiB
from the device's memory resource (CuPy: its default caching pool, which is not stream-ordered),
and a program-cache hit that yields a kernel (CuPy: ``RawModule`` over source it compiled before).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import timeit

BATCH = 256

LAUNCH_KERNELS = r"""
extern "C" __global__ void empty0() {}
extern "C" __global__ void empty4(float* a, const float* b, float* c, int n) {}
"""

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

# (case, what a reader sees in the table)
CASES = [
    ("device_current", "`Device()`"),
    ("device_by_ordinal", "`Device(0)`"),
    ("stream_churn", "`create_stream` + close"),
    ("event_churn", "`create_event` + close"),
    ("event_record", "`stream.record(event)`"),
    ("stream_sync_idle", "`stream.sync()`, idle"),
    ("launch_0", "`launch`, 0 arguments"),
    ("launch_4", "`launch`, 4 arguments"),
    ("alloc_free_1k", "allocate + free 1 KiB"),
    ("cache_hit_get_kernel", "program-cache hit + `get_kernel`"),
]


def _cuda_core_like(module, utils):
    """The cases for cudacore_rs and cuda.core, which share their names."""
    import numpy as np

    d = module.Device(0)
    d.set_current()
    s = d.create_stream()
    ev = d.create_event()
    mr = d.memory_resource
    arch = f"sm_{d.compute_capability.major}{d.compute_capability.minor}"
    options = module.ProgramOptions(arch=arch)
    code = module.Program(LAUNCH_KERNELS, "c++", options=options).compile("cubin")
    k0, k4 = code.get_kernel("empty0"), code.get_kernel("empty4")
    b0, b1, b2 = (mr.allocate(1024, stream=s) for _ in range(3))
    s.sync()
    cache = utils.InMemoryProgramCache()
    cache["saxpy"] = module.Program(SAXPY, "c++", options=options).compile("cubin")
    names = {
        "Device": module.Device,
        "ObjectCode": module.ObjectCode,
        "launch": module.launch,
        "d": d,
        "s": s,
        "ev": ev,
        "mr": mr,
        "cfg": module.LaunchConfig(grid=1, block=32),
        "k0": k0,
        "k4": k4,
        "b0": b0,
        "b1": b1,
        "b2": b2,
        "n": np.int32(256),
        "cache": cache,
    }
    drain = s.sync
    cases = {
        "device_current": ("Device()", None),
        "device_by_ordinal": ("Device(0)", None),
        "stream_churn": ("d.create_stream().close()", None),
        "event_churn": ("d.create_event().close()", None),
        "event_record": ("s.record(ev)", drain),
        "stream_sync_idle": ("s.sync()", None),
        "launch_0": ("launch(s, cfg, k0)", drain),
        "launch_4": ("launch(s, cfg, k4, b0, b1, b2, n)", drain),
        "alloc_free_1k": ("mr.allocate(1024, stream=s).close()", drain),
        "cache_hit_get_kernel": (
            "ObjectCode.from_cubin(cache.get('saxpy')).get_kernel('saxpy')",
            None,
        ),
    }
    return names, cases


def ours():
    import cudacore_rs
    import cudacore_rs.utils

    return _cuda_core_like(cudacore_rs, cudacore_rs.utils)


def cuda_core():
    import cuda.core
    import cuda.core.utils

    return _cuda_core_like(cuda.core, cuda.core.utils)


def cupy():
    import cupy as cp
    import numpy as np

    cp.cuda.Device(0).use()
    s = cp.cuda.Stream(non_blocking=True)
    ev = cp.cuda.Event(disable_timing=True)
    module = cp.RawModule(code=LAUNCH_KERNELS)
    f0, f4 = module.get_function("empty0"), module.get_function("empty4")
    a, b, c = (cp.empty(256, dtype=cp.float32) for _ in range(3))
    cp.RawModule(code=SAXPY).get_function("saxpy")  # compiled once: later ones hit its cache
    s.synchronize()
    names = {
        "cp": cp,
        "s": s,
        "ev": ev,
        "f0": f0,
        "f4": f4,
        "a": a,
        "b": b,
        "c": c,
        "n": np.int32(256),
        "SAXPY": SAXPY,
    }
    drain = s.synchronize
    cases = {
        "device_current": ("cp.cuda.Device()", None),
        "device_by_ordinal": ("cp.cuda.Device(0)", None),
        # A CuPy stream or event is destroyed when its last reference goes: here, at once.
        "stream_churn": ("cp.cuda.Stream(non_blocking=True)", None),
        "event_churn": ("cp.cuda.Event(disable_timing=True)", None),
        "event_record": ("ev.record(s)", drain),
        "stream_sync_idle": ("s.synchronize()", None),
        "launch_0": ("f0((1,), (32,), (), stream=s)", drain),
        "launch_4": ("f4((1,), (32,), (a, b, c, n), stream=s)", drain),
        "alloc_free_1k": ("cp.cuda.alloc(1024)", None),
        "cache_hit_get_kernel": ("cp.RawModule(code=SAXPY).get_function('saxpy')", None),
    }
    return names, cases


IMPLEMENTATIONS = [("cudacore_rs", ours), ("cuda.core", cuda_core), ("CuPy", cupy)]


def calibrate(timer):
    """A call count that takes about 20 ms, at least one batch."""
    number = BATCH
    while True:
        took = timer.timeit(number)
        if took > 0.02 or number >= 1 << 22:
            return max(BATCH, int(number * 0.02 / max(took, 1e-9)))
        number *= 4


def measure(timer, drain, number):
    """Nanoseconds per call over `number` calls; batched with `drain` between batches."""
    if drain is None:
        return timer.timeit(number) / number * 1e9
    total = 0.0
    left = number
    while left > 0:
        k = min(left, BATCH)
        total += timer.timeit(k)
        drain()
        left -= k
    return total / number * 1e9


def criterion_raw(directory):
    """The Rust overhead suite's raw and cuda-core medians (ns) by case, from criterion's
    directory: `<case>/<variant>/new/estimates.json`, or with several rounds (the suite's
    default), the median of `<case>/<variant>/r<N>/new/estimates.json`."""
    found = {}
    for case, _ in CASES:
        for variant in ("raw", "cuda-core"):
            base = os.path.join(directory, case, variant)
            paths = [os.path.join(base, "new", "estimates.json")]
            if os.path.isdir(base):
                paths += [
                    os.path.join(base, d, "new", "estimates.json")
                    for d in sorted(os.listdir(base))
                    if d.startswith("r") and d[1:].isdigit()
                ]
            medians = []
            for path in paths:
                try:
                    with open(path) as f:
                        medians.append(json.load(f)["median"]["point_estimate"])
                except (OSError, KeyError, ValueError):
                    pass
            if medians:
                found[(case, variant)] = statistics.median(medians)
    return found


def versions():
    out = {"python": platform.python_version()}
    for name, module in (
        ("cudacore_rs", "cudacore_rs"),
        ("cuda.core", "cuda.core"),
        ("CuPy", "cupy"),
        ("NumPy", "numpy"),
    ):
        try:
            imported = __import__(module, fromlist=["__version__"])
            out[name] = getattr(imported, "__version__", "?")
        except Exception:  # noqa: BLE001 - absent is a fact to report, not an error
            pass
    return out


BEGIN = "<!-- python-overhead:begin -->"
END = "<!-- python-overhead:end -->"


def render(header, columns, rows):
    """The markdown table and the targets' verdicts, from a run's header lines, its column
    names and its rows (case, cells in ns or None)."""
    labels = dict(CASES)
    out = [f"{line}  " for line in header] + [""]
    out.append("| case | " + " | ".join(columns) + " |")
    out.append("| --- |" + " ---: |" * len(columns))
    for case, cells in rows:
        shown = ["–" if c is None else f"{c:,.0f}" for c in cells]
        out.append(f"| {labels.get(case, case)} | " + " | ".join(shown) + " |")
    out.append("")
    at = {(case, col): cell for case, cells in rows for col, cell in zip(columns, cells)}
    ours = {case: at.get((case, "cudacore_rs")) for case, _ in CASES}
    checks = []
    for case, _ in CASES:
        cupy_ = at.get((case, "CuPy"))
        if ours[case] is not None and cupy_ is not None:
            checks.append((f"{labels[case]}: at or below CuPy", ours[case] <= cupy_,
                           f"{ours[case]:,.0f} vs {cupy_:,.0f} ns"))
    core_event = at.get(("event_churn", "cuda.core"))
    if ours["event_churn"] is not None and core_event is not None:
        checks.append(("event creation at most a quarter of cuda.core's",
                       ours["event_churn"] <= core_event / 4,
                       f"{ours['event_churn']:,.0f} vs {core_event:,.0f} ns"))
    if ours["device_current"] is not None:
        checks.append(("`Device()` at most 100 ns", ours["device_current"] <= 100,
                       f"{ours['device_current']:,.0f} ns"))
    raw4 = at.get(("launch_4", "raw driver (Rust)"))
    if ours["launch_4"] is not None and raw4 is not None:
        checks.append(("a 4-argument launch within 300 ns of the raw driver's",
                       ours["launch_4"] - raw4 <= 300,
                       f"{ours['launch_4']:,.0f} vs {raw4:,.0f} ns"))
    for what, met, figures in checks:
        out.append(f"- {'met' if met else '**not met**'}: {what} ({figures})")
    return "\n".join(out)


def read_csv(path):
    """A stored run: its header lines, column names and rows."""
    header, columns, rows = [], None, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# "):
                header.append(line[2:])
            elif columns is None:
                columns = line.split(",")[1:]
            elif line:
                case, *cells = line.split(",")
                rows.append((case, [float(c) if c else None for c in cells]))
    return header, columns or [], rows


def write_readme(readme, table, source):
    """Replaces the table between the README's markers with `table`."""
    with open(readme) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{readme} has no {BEGIN} ... {END} block")
    before, rest = text.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    block = f"{BEGIN}\n<!-- generated by benches/python/overhead.py --from-csv {source} -->\n{table}\n{END}"
    with open(readme, "w") as f:
        f.write(before + block + after)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--criterion", help="the Rust overhead suite's criterion directory")
    parser.add_argument("--csv", help="write the medians here too")
    parser.add_argument(
        "--only", help="comma list of implementations (cudacore_rs, cuda.core, CuPy)"
    )
    parser.add_argument("--from-csv", help="render a stored run instead of measuring")
    parser.add_argument("--readme", help="with --from-csv: write the table into this file")
    args = parser.parse_args()

    if args.from_csv:
        table = render(*read_csv(args.from_csv))
        if args.readme:
            write_readme(args.readme, table, os.path.relpath(args.from_csv))
        else:
            print(table)
        return

    loaded = []
    for name, make in IMPLEMENTATIONS:
        if args.only and name not in args.only.split(","):
            continue
        try:
            names, cases = make()
        except Exception as e:  # noqa: BLE001 - an anchor that cannot load is left out, said so
            print(f"# {name}: not measured: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        timers = {}
        for case, (stmt, drain) in cases.items():
            try:
                timer = timeit.Timer(stmt, globals=names)
                number = calibrate(timer)
                if drain is not None:
                    drain()
                timers[case] = (timer, drain, number)
            except Exception as e:  # noqa: BLE001
                print(f"# {name} {case}: not measured: {type(e).__name__}: {e}", file=sys.stderr)
        loaded.append((name, timers))

    samples = {}
    for _ in range(args.rounds):
        for case, _ in CASES:
            for name, timers in loaded:
                if case in timers:
                    timer, drain, number = timers[case]
                    samples.setdefault((case, name), []).append(measure(timer, drain, number))
    medians = {key: statistics.median(values) for key, values in samples.items()}
    rust = criterion_raw(args.criterion) if args.criterion else {}

    import cudacore_rs

    device = cudacore_rs.Device(0)
    major, minor = cudacore_rs.system.driver_version
    header = [
        f"gpu: {device.name}",
        f"driver: CUDA {major}.{minor}, ABI {os.environ.get('CUDA_CORE_DRIVER_ABI', 'probed')}",
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        f"rounds: {args.rounds} interleaved; medians in ns per call",
    ]
    columns = [name for name, _ in loaded] + ["raw driver (Rust)", "cuda-core (Rust)"]
    rows = []
    for case, _ in CASES:
        cells = [medians.get((case, name)) for name, _ in loaded]
        cells += [rust.get((case, "raw")), rust.get((case, "cuda-core"))]
        rows.append((case, cells))
    print(render(header, columns, rows))
    if args.csv:
        with open(args.csv, "w") as f:
            for line in header:
                f.write(f"# {line}\n")
            f.write("case," + ",".join(columns) + "\n")
            for case, cells in rows:
                f.write(case + "," + ",".join("" if c is None else f"{c:.1f}" for c in cells))
                f.write("\n")


if __name__ == "__main__":
    main()
