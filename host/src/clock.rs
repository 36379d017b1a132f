//! The clock that grace periods run on: CLOCK_BOOTTIME, which counts
//! across an agent restart (and a suspend), so a restarted agent keeps
//! the deadlines its predecessor recorded in the pinned maps.

use std::time::Duration;

/// Time since boot.
pub fn boottime() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; CLOCK_BOOTTIME exists on every
    // kernel the agent runs on (2.6.39+).
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now) } == 0;
    assert!(ok, "clock_gettime(CLOCK_BOOTTIME) failed");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}
