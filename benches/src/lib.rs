//! Shared helpers of the overhead bench suites (see `benches/`).
