//! Project automation, run as `cargo xtask <command>`.
//!
//! - `regenerate-bindings [--cuda-include DIR]`: fetches the pinned header wheels with pip (or
//!   takes a local toolkit's `include` directory), runs bindgen and writes the committed files of
//!   `cuda-sys12`, `cuda-sys13` and `cuda-nvrtc-sys`, the parts of `cuda-core` derived from
//!   the driver header (device attribute accessors, named result codes: see [`core_gen`]), and
//!   `cuda-core`'s NCCL types and table (`src/driver/nccl/generated`, from `nccl.h`).
//! - `check-bindings`: regenerates into a temporary directory and fails, showing the difference,
//!   when the committed files drift from what the pinned headers give.
//! - `bench-report [--criterion DIR] [--out FILE] [--plot FILE] [--save FILE ...]`: one
//!   markdown table of the overhead suites' criterion results, and the scaling suite's table
//!   and SVG plot, the results optionally stored as data; `bench-report --readme [--check]`:
//!   the table of `benches/README.md` from the newest stored results (see [`bench_report`]).
//! - `import-graph [--crate DIR] [--check]`: which files of a crate's `src/` import which, and the
//!   circles among them (see [`imports`]; cuda-core by default, held by `--check` to the family
//!   of objects and the circle sizes in `docs/architecture-notes.md`).

mod bench_report;
mod bindings;
mod core_gen;
mod headers;
mod imports;
mod main_table;
mod parse;
mod per_major;
mod report_table;
mod results;
mod scaling;

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> &'static str {
    "usage: cargo xtask <command>\n\
     \n\
     commands:\n  \
       regenerate-bindings [--cuda-include DIR]      remake the committed FFI bindings\n  \
       check-bindings                                fail if the committed bindings drift\n  \
       bench-report [--criterion DIR] [--out FILE] [--plot FILE]\n                                                \
       the benches' results as tables, scaling plotted\n  \
       bench-report ... --save FILE --gpu NAME --driver VERSION [--date D] [--commit C] [--note T]\n                                                \
       the same, and the results stored as data\n  \
       bench-report --readme [--results FILE] [--check]\n                                                \
       benches/README.md's table from stored results\n  \
       import-graph [--crate DIR] [--check]          which files import which, and the circles\n"
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("regenerate-bindings") => parse_include(&args[1..])
            .and_then(|local| bindings::regenerate(&workspace_root(), local.as_deref())),
        Some("check-bindings") if args.len() == 1 => bindings::check(&workspace_root()),
        Some("bench-report") => bench_report::run(&args[1..], &workspace_root()),
        Some("import-graph") => imports::run(&args[1..], &workspace_root()),
        Some("-h" | "--help" | "help") => {
            print!("{}", usage());
            Ok(())
        }
        _ => Err(format!("unknown or missing command\n\n{}", usage())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Reads the optional `--cuda-include DIR` argument.
fn parse_include(args: &[String]) -> Result<Option<PathBuf>, String> {
    match args {
        [] => Ok(None),
        [flag, dir] if flag == "--cuda-include" => Ok(Some(PathBuf::from(dir))),
        _ => Err(format!("unexpected arguments {args:?}\n\n{}", usage())),
    }
}

/// The workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
