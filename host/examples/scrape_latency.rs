//! Scrapes an agent's `/metrics` every INTERVAL_MS until process PID has
//! exited, and prints `scrape ROUND MICROSECONDS` per scrape: the latency
//! a Prometheus server sees while the agent is busy (scripts/bench runs it
//! in the test VM beside a churn of cgroups and a plugin reload).
//!
//! `scrape_latency ADDR ROUND PID INTERVAL_MS`

use std::{
    path::Path,
    thread,
    time::{Duration, Instant},
};

use kubenpu::http;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, round, pid, interval] = &args[..] else {
        anyhow::bail!("usage: scrape_latency ADDR ROUND PID INTERVAL_MS");
    };
    let interval = Duration::from_millis(interval.parse()?);
    let alive = Path::new("/proc").join(pid);
    while alive.exists() {
        let started = Instant::now();
        let (status, body) = http::get(addr, "/metrics", Duration::from_secs(60))?;
        let took = started.elapsed();
        anyhow::ensure!(status == 200, "/metrics answered {status}: {body}");
        println!("scrape {round} {}", took.as_micros());
        thread::sleep(interval);
    }
    Ok(())
}
