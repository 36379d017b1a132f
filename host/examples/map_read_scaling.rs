//! How one scrape's read of the counters map grows with the keys and the
//! CPUs: for each key count given, fills the agent's counters map (made
//! from the embedded object's definition) and times the agent's own reader
//! over it, `ROUNDS` times after one warm-up read. Prints
//! `map_read CPUS KEYS MEDIAN_US MIN_US MAX_US`, CPUS being the possible
//! CPUs (what a per-CPU map holds a value for).
//!
//! Run it in the VM at several vCPU counts (the possible CPUs are the
//! guest's), e.g. after `cargo build --release --target
//! x86_64-unknown-linux-musl -p kubenpu --example map_read_scaling`:
//! `target/release/kubenpu-vm run --kernel sid --cpus 64 --bin
//! target/x86_64-unknown-linux-musl/release/examples/map_read_scaling --
//! "map_read_scaling 1000 10000"`.

use std::time::Instant;

use kubenpu::probe::sum_counts;

#[path = "../benches/support/counters.rs"]
mod counters;

/// Timed reads per key count.
const ROUNDS: usize = 15;

fn main() -> anyhow::Result<()> {
    let cpus = aya::util::nr_cpus().map_err(|(_, e)| e)?;
    for arg in std::env::args().skip(1) {
        let keys: usize = arg
            .parse()
            .map_err(|_| anyhow::anyhow!("{arg:?} is not a number of keys"))?;
        let map = counters::counters_with(keys);
        anyhow::ensure!(sum_counts(&map)?.len() == keys, "the keys read back");
        let mut micros: Vec<u128> = (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                let read = sum_counts(&map).map(|c| c.len());
                assert_eq!(read.ok(), Some(keys), "every key is read");
                started.elapsed().as_micros()
            })
            .collect();
        micros.sort_unstable();
        println!(
            "map_read {cpus} {keys} {} {} {}",
            micros[ROUNDS / 2],
            micros[0],
            micros[ROUNDS - 1]
        );
    }
    Ok(())
}
