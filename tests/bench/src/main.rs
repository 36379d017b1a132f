//! `bench-tables DIR`: reads what scripts/bench measured into DIR
//! (`hooks.txt`, `lsm.txt`, `numa.txt`, `policy.txt`, `footprint.txt`, `churn.txt`,
//! `scaling.txt`, `contention.txt`, `scrape.txt`, `plugins.txt`)
//! and prints
//! BENCHMARKS.md's tables in Markdown: medians with the spread over rounds,
//! and the ratios the targets are stated in.

mod samples;
mod sections;

use std::path::Path;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: bench-tables DIR"))?;
    let read = |name: &str| {
        let path = Path::new(&dir).join(name);
        std::fs::read_to_string(&path)
            .map_err(|e| anyhow::anyhow!("{}: {e} (run scripts/bench first)", path.display()))
    };
    print!("{}", sections::hooks(&read("hooks.txt")?)?);
    print!("{}", sections::lsm_exactness(&read("lsm.txt")?)?);
    print!("{}", sections::numa(&read("numa.txt")?)?);
    print!("{}", sections::policy(&read("policy.txt")?)?);
    print!("{}", sections::footprint(&read("footprint.txt")?)?);
    print!("{}", sections::churn(&read("churn.txt")?)?);
    print!("{}", sections::scaling(&read("scaling.txt")?)?);
    print!("{}", sections::contention(&read("contention.txt")?)?);
    print!("{}", sections::scrape(&read("scrape.txt")?)?);
    print!("{}", sections::plugins(&read("plugins.txt")?)?);
    Ok(())
}
