//! Waits with a deadline: the driver's waits (`cuStreamSynchronize`, `cuEventSynchronize`)
//! take none, so a bounded wait asks whether the work is done until it is or the time is up.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Asks `done` until it answers `true` (then `Ok`), fails (its error), or `timeout` has passed
/// since the call ([`Error::Timeout`] naming `what`). `done` is asked at least once, so a
/// `timeout` of zero asks once. Between answers it spins for the first 20 µs (short kernels
/// end within that), then sleeps, from 10 µs doubling to at most 1 ms: a wait ends at most
/// about 1 ms after the work does, and a long one costs a thousand questions a second.
pub(crate) fn until(
    what: &'static str,
    timeout: Duration,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<()> {
    const SPIN: Duration = Duration::from_micros(20);
    const LONGEST_PAUSE: Duration = Duration::from_millis(1);
    let start = Instant::now();
    let mut pause = Duration::from_micros(10);
    loop {
        if done()? {
            return Ok(());
        }
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            return Err(Error::Timeout {
                what,
                after: timeout,
            });
        }
        if elapsed < SPIN {
            std::hint::spin_loop();
            continue;
        }
        std::thread::sleep(pause.min(timeout - elapsed));
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_at_once_is_ok_even_with_no_time() {
        // Catches a deadline checked before the first question.
        let mut asked = 0;
        until("work", Duration::ZERO, || {
            asked += 1;
            Ok(true)
        })
        .unwrap();
        assert_eq!(asked, 1);
    }

    #[test]
    fn never_done_times_out_after_the_time_given_not_before() {
        let start = Instant::now();
        let error = until("the work", Duration::from_millis(30), || Ok(false)).unwrap_err();
        let took = start.elapsed();
        // Catches a wait that returns early, and one that overshoots by more than a pause.
        assert!(took >= Duration::from_millis(30), "returned after {took:?}");
        assert!(took < Duration::from_millis(500), "returned after {took:?}");
        assert_eq!(
            error,
            Error::Timeout {
                what: "the work",
                after: Duration::from_millis(30)
            }
        );
        assert_eq!(
            error.to_string(),
            "the work did not finish within 30ms; it is still queued and runs on"
        );
    }

    #[test]
    fn done_later_ends_the_wait_and_an_error_is_returned() {
        let mut left = 50;
        until("work", Duration::from_secs(10), || {
            left -= 1;
            Ok(left == 0)
        })
        .unwrap();
        assert_eq!(left, 0, "the wait ended before the work was done");
        let failure = Error::InvalidArgument {
            name: "x",
            reason: "y".into(),
        };
        // Catches a failed question read as "not done yet" (the wait would run to its end).
        let start = Instant::now();
        assert_eq!(
            until("work", Duration::from_secs(10), || Err(failure.clone())),
            Err(failure)
        );
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
