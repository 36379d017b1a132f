//! `bench-tables DIR`: reads what scripts/bench measured into DIR
//! (`hooks.txt`, `lsm.txt`, `numa.txt`, `policy.txt`, `chardev.txt`, `placement.txt`, `footprint.txt`, `churn.txt`,
//! `scaling.txt`, `contention.txt`, `scrape.txt`, `energy.txt`, `plugins.txt`)
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
    type Section = fn(&str) -> anyhow::Result<String>;
    let sections: [(&str, Section); 13] = [
        ("hooks.txt", sections::hooks),
        ("lsm.txt", sections::lsm_exactness),
        ("numa.txt", sections::numa),
        ("policy.txt", sections::policy),
        ("chardev.txt", sections::chardev),
        ("placement.txt", sections::placement),
        ("footprint.txt", sections::footprint),
        ("churn.txt", sections::churn),
        ("scaling.txt", sections::scaling),
        ("contention.txt", sections::contention),
        ("scrape.txt", sections::scrape),
        ("energy.txt", sections::energy),
        ("plugins.txt", sections::plugins),
    ];
    // A benchmark run alone (one script of scripts/bench, in the VM by
    // hand) leaves only its own file: its tables are printed, and each
    // missing file is named once.
    let mut printed = 0;
    for (name, section) in sections {
        let path = Path::new(&dir).join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                print!("{}", section(&text)?);
                printed += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "bench-tables: no {} (that benchmark did not run)",
                    path.display()
                );
            }
            Err(e) => anyhow::bail!("{}: {e}", path.display()),
        }
    }
    if printed == 0 {
        anyhow::bail!("{dir} holds no benchmark's output: run scripts/bench first");
    }
    Ok(())
}
