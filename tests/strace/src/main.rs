//! `kubenpu-strace --devices DEVICES.json --plugins PLUGINS.json TRACE...`:
//! a program's own ioctls, from the records of `strace -f -yy -X raw -e
//! trace=ioctl`, by device node and ioctl number, with how KubeNPU's
//! tables (`kubenpuctl devices --json`, `kubenpuctl plugins --json`)
//! count them. Counted numbers come first.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context as _, Result, bail};
use kubenpu_strace::{Record, Row, Tables, parse, tally};

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kubenpu-strace: {e:#}");
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: kubenpu-strace --devices DEVICES.json --plugins PLUGINS.json TRACE...";

fn run(args: Vec<String>) -> Result<String> {
    let (mut devices, mut plugins, mut traces) = (None, None, Vec::new());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--devices" => devices = Some(PathBuf::from(args.next().context(USAGE)?)),
            "--plugins" => plugins = Some(PathBuf::from(args.next().context(USAGE)?)),
            _ if arg.starts_with("--") => bail!("unknown option {arg}; {USAGE}"),
            _ => traces.push(PathBuf::from(arg)),
        }
    }
    let (Some(devices), Some(plugins)) = (devices, plugins) else {
        bail!(USAGE);
    };
    if traces.is_empty() {
        bail!(USAGE);
    }
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let tables = Tables::from_json(&read(&devices)?, &read(&plugins)?)?;
    let mut record = Record::default();
    for trace in &traces {
        let one = parse(&read(trace)?).with_context(|| trace.display().to_string())?;
        record.calls.extend(one.calls);
        record.elsewhere += one.elsewhere;
    }
    let mut rows = tally(&record, &tables);
    rows.sort_by_key(|r| r.counted.is_none());
    Ok(table(&rows, record.elsewhere))
}

/// The rows, aligned, and what was not on a device node.
fn table(rows: &[Row], elsewhere: usize) -> String {
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            let (name, kind) = r.counted.clone().unwrap_or(("-".into(), "-".into()));
            [
                r.node.clone(),
                format!("{:#04x}", r.nr),
                name,
                kind,
                r.calls.to_string(),
                (r.busy + r.timed_out).to_string(),
                r.failed.to_string(),
            ]
        })
        .collect();
    let header = [
        "NODE",
        "NR",
        "COUNTED AS",
        "KIND",
        "CALLS",
        "NOT READY",
        "FAILED",
    ];
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(&header);
    for row in &cells {
        out += &line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out + &format!("{elsewhere} ioctls on other files\n")
}
