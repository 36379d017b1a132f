//! What loading the built-in vendor plugins costs: load (from the
//! precompiled code the agent uses, and compiled from the component, as a
//! plugin file is), instantiate, describe and validate each, timed one by
//! one (the median of ROUNDS), and all together as the agent loads them at
//! start-up, with the process's resident memory before and after. Prints
//! one line a measurement (`plugin NAME BYTES PRECOMPILED_NS COMPILED_NS`,
//! `plugins-all COUNT NS`, `plugins-rss BEFORE_KIB AFTER_KIB`) for
//! scripts/bench's tables.
//!
//! `cargo run --release -p kubenpu --example plugin_load [ROUNDS]`

use std::time::{Duration, Instant};

use kubenpu::plugins::{BUILTIN, Plugin, PluginError, PluginHost, Sandbox, Source};

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
    for builtin in BUILTIN {
        let timed = |load: &dyn Fn() -> Result<Plugin, PluginError>| {
            (0..rounds)
                .map(|_| {
                    let t = Instant::now();
                    load().map(|_| t.elapsed())
                })
                .collect::<Result<Vec<_>, _>>()
                .map(median)
        };
        let precompiled = timed(&|| builtin.load(&sandbox))?;
        let compiled = timed(&|| Plugin::load(&sandbox, builtin.wasm, Source::Builtin))?;
        println!(
            "plugin {} {} {} {}",
            builtin.name,
            builtin.wasm.len(),
            precompiled.as_nanos(),
            compiled.as_nanos()
        );
    }
    println!("plugins-all {} {}", BUILTIN.len(), first_load.as_nanos());
    println!("plugins-rss {before} {after}");
    drop(host);
    Ok(())
}
