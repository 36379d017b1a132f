//! What loading the built-in vendor plugins costs: compile, instantiate,
//! describe and validate each component, timed one by one (the median of
//! ROUNDS) and all together as the agent loads them at start-up, with the
//! process's resident memory before and after. Prints one line a
//! measurement (`plugin NAME BYTES NS`, `plugins-all COUNT NS`,
//! `plugins-rss BEFORE_KIB AFTER_KIB`) for scripts/bench's tables.
//!
//! `cargo run --release -p kubenpu --example plugin_load [ROUNDS]`

use std::time::{Duration, Instant};

use kubenpu::plugins::{BUILTIN, Plugin, PluginHost, Sandbox, Source};

/// Resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(5), |r| r.parse())?;
    let before = rss_kib();
    let started = Instant::now();
    let empty = std::env::temp_dir().join("kubenpu-plugin-load-empty");
    let host = PluginHost::new(&empty)?;
    let first_load = started.elapsed();
    let after = rss_kib();

    // One line a measurement, for scripts/bench's tables.
    let sandbox = Sandbox::new()?;
    for (name, bytes) in BUILTIN {
        let samples = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                Plugin::load(&sandbox, bytes, Source::Builtin).map(|_| t.elapsed())
            })
            .collect::<Result<Vec<_>, _>>()?;
        println!(
            "plugin {name} {} {}",
            bytes.len(),
            median(samples).as_nanos()
        );
    }
    println!("plugins-all {} {}", BUILTIN.len(), first_load.as_nanos());
    println!("plugins-rss {before} {after}");
    drop(host);
    Ok(())
}
