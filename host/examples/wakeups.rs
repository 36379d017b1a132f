//! The yardstick of the placement scheduler's cost: wake-ups, as many as
//! the scheduler can make. PAIRS pairs of threads each pass a byte back
//! and forth N times through a socket pair, so that every pass puts one
//! thread to sleep and wakes the other, and each wake-up goes through the
//! scheduler's CPU choice, its queues, and a switch. Prints
//! `WAKEUPS WALL_NS_PER_WAKEUP`: all pairs' wake-ups and the wall time
//! over them.
//!
//! With `--defaults`, the run is under a sched_ext scheduler without
//! callbacks, which only uses sched_ext's defaults (the kernel's idle-CPU
//! choice and one global queue): the floor of any sched_ext scheduler,
//! against which the agent's own is measured (its callbacks' run time,
//! from `prog_stats`, is its cost above that floor).
//!
//! `wakeups PAIRS N [--defaults]` (as root with `--defaults`)

use std::{
    io::{Read as _, Write as _},
    os::unix::net::UnixStream,
    time::Instant,
};

fn main() -> anyhow::Result<()> {
    let usage = "usage: wakeups PAIRS N [--defaults]";
    let mut args = std::env::args().skip(1);
    let mut number = || -> anyhow::Result<u64> {
        args.next()
            .ok_or_else(|| anyhow::anyhow!(usage))?
            .parse()
            .map_err(|e| anyhow::anyhow!("{e}; {usage}"))
    };
    let (pairs, passes) = (number()?, number()?);
    let defaults = match args.next().as_deref() {
        None => None,
        Some("--defaults") => Some(kubenpu::placement::scheduler::load_defaults(
            "defaults", false,
        )?),
        Some(other) => anyhow::bail!("{other:?} is not an option; {usage}"),
    };
    let started = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut ends = Vec::new();
        for _ in 0..pairs {
            let (mut here, mut there) = UnixStream::pair()?;
            ends.push(scope.spawn(move || -> std::io::Result<()> {
                let mut byte = [0u8];
                for _ in 0..passes {
                    there.read_exact(&mut byte)?;
                    there.write_all(&byte)?;
                }
                Ok(())
            }));
            ends.push(scope.spawn(move || -> std::io::Result<()> {
                let mut byte = [0u8];
                for _ in 0..passes {
                    here.write_all(&byte)?;
                    here.read_exact(&mut byte)?;
                }
                Ok(())
            }));
        }
        for end in ends {
            end.join().expect("a passing thread")?;
        }
        Ok(())
    })?;
    let wall = started.elapsed().as_nanos();
    drop(defaults);
    let wakeups = pairs * passes * 2;
    println!("{wakeups} {}", wall / u128::from(wakeups.max(1)));
    Ok(())
}
