//! One function per table of BENCHMARKS.md, each from its raw lines.

use std::{collections::BTreeMap, fmt::Write as _};

use anyhow::{Context as _, Result, bail};

use crate::samples::Samples;

/// The fields of every line starting with `tag`, after the tag.
fn lines<'a>(text: &'a str, tag: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(tag)).then(|| words.collect())
        })
        .collect()
}

/// The values of every `TAG ROUND VALUE` line, over the rounds.
fn per_round(text: &str, tag: &str) -> Result<Samples> {
    let mut samples = Samples::default();
    for fields in lines(text, tag) {
        let [_round, value] = fields[..] else {
            bail!("a {tag} line has {} fields, not 2", fields.len());
        };
        samples.push(number(value)?);
    }
    if samples.is_empty() {
        bail!("no {tag} lines: the footprint benchmark did not run");
    }
    Ok(samples)
}

fn number(word: &str) -> Result<f64> {
    word.parse()
        .with_context(|| format!("{word:?} is not a number"))
}

const HOOKS: [&str; 5] = ["kprobe-session", "kprobe-multi", "kprobe", "fentry", "lsm"];
const VARIANTS: [&str; 7] = [
    "none",
    "empty",
    "kubenpu",
    "count",
    "per-event",
    "table-hash",
    "table-array",
];
const CASES: [&str; 4] = ["unrelated", "filtered", "untracked", "counted"];

/// The counting program measured on `hook`: the agent's, but on the LSM
/// hook, which the agent does not count on: the benchmarks' LSM counting
/// program there.
fn counting(hook: &str) -> &'static str {
    if hook == "lsm" { "count" } else { "kubenpu" }
}

/// Run time per call (the entry and exit programs together) and wall time
/// per call, per hook, variant and case; then the ratios of the targets.
pub fn hooks(text: &str) -> Result<String> {
    // (hook, variant, case) -> (run ns, wall ns)
    let mut cost: BTreeMap<(&str, &str, &str), (Samples, Samples)> = BTreeMap::new();
    // The same, by round: a ratio's spread is that of its rounds' ratios,
    // each between two measurements taken minutes apart.
    type ByRound<'t> = BTreeMap<&'t str, (f64, f64)>;
    let mut rounds: BTreeMap<(&str, &str, &str), ByRound> = BTreeMap::new();
    for fields in lines(text, "cost") {
        let [round, hook, variant, case, run, wall] = fields[..] else {
            bail!("a cost line has {} fields, not 6", fields.len());
        };
        let (run, wall) = (number(run)?, number(wall)?);
        let entry = cost.entry((hook, variant, case)).or_default();
        entry.0.push(run);
        entry.1.push(wall);
        rounds
            .entry((hook, variant, case))
            .or_default()
            .insert(round, (run, wall));
    }
    if cost.is_empty() {
        bail!("no cost lines: the hook benchmark did not run");
    }
    let mut out = String::from("### Cost per call, per hook\n\n");
    out.push_str("Median (min–max) over the rounds, in ns.\n\n");
    out.push_str("| hook | program | call | run time per call | wall time per call |\n|---|---|---|---:|---:|\n");
    for (hook, variant) in std::iter::once(("none", "none")).chain(
        HOOKS
            .iter()
            .flat_map(|h| VARIANTS[1..].iter().map(move |v| (*h, *v))),
    ) {
        for case in CASES {
            if let Some((run, wall)) = cost.get(&(hook, variant, case)) {
                let run = if variant == "none" {
                    "–".to_owned()
                } else {
                    run.to_string()
                };
                writeln!(out, "| {hook} | {variant} | {case} | {run} | {wall} |")?;
            }
        }
    }
    let median = |hook, variant, case, wall: bool| {
        cost.get(&(hook, variant, case))
            .map(|(run, w)| if wall { w.median() } else { run.median() })
            .unwrap_or(f64::NAN)
    };
    // `a ÷ b`: the ratio of their medians, and the least and the most of
    // the rounds' ratios; "–" where either was not measured.
    type Measured = (&'static str, &'static str, &'static str);
    let ratio = |a: Measured, b: Measured, wall: bool| {
        let pick = |&(run, w): &(f64, f64)| if wall { w } else { run };
        let of_medians = median(a.0, a.1, a.2, wall) / median(b.0, b.1, b.2, wall);
        if of_medians.is_nan() {
            return "–".to_owned();
        }
        let mut each = Samples::default();
        if let (Some(a), Some(b)) = (rounds.get(&a), rounds.get(&b)) {
            for (round, value) in a {
                if let Some(other) = b.get(round) {
                    each.push(pick(value) / pick(other));
                }
            }
        }
        let (least, most) = each.range();
        format!("{of_medians:.2} ({least:.2}–{most:.2})")
    };
    out.push_str("\n### Ratios (of medians)\n\n");
    out.push_str("Run time is the programs alone, entry and exit (`bpf_stats`); wall time includes the hook's dispatch and the ioctl itself. \"empty\" is the empty pair (for a session, its one empty program, which runs at the entry and at the return; on the LSM hook, one empty program before the call); the per-event variant has an entry program only. On the LSM hook the counting program is `count`, which counts calls only. \"unrelated ÷ none\" is what an ioctl on a file that is no DRM device pays in wall time for the counting program being there. Each ratio is of the medians, then (in brackets) the least and the most of the rounds' own ratios.\n\n");
    out.push_str("| hook | measure | counted ÷ empty | counted ÷ per-event | filtered ÷ empty | unrelated ÷ none |\n|---|---|---:|---:|---:|---:|\n");
    // A hook the kernel lacks has no rows; a session and the LSM hook have
    // no per-event variant ("–").
    let measured = |hook| cost.contains_key(&(hook, counting(hook), "counted"));
    for hook in HOOKS.into_iter().filter(|hook| measured(hook)) {
        for (label, wall) in [("run time", false), ("wall time", true)] {
            let counting = counting(hook);
            let unrelated = if wall {
                ratio(
                    (hook, counting, "unrelated"),
                    ("none", "none", "unrelated"),
                    true,
                )
            } else {
                "–".to_owned()
            };
            writeln!(
                out,
                "| {hook} | {label} | {} | {} | {} | {unrelated} |",
                ratio(
                    (hook, counting, "counted"),
                    (hook, "empty", "counted"),
                    wall
                ),
                ratio(
                    (hook, counting, "counted"),
                    (hook, "per-event", "counted"),
                    wall
                ),
                ratio(
                    (hook, counting, "filtered"),
                    (hook, "empty", "filtered"),
                    wall
                ),
            )?;
        }
    }
    out.push_str("\n### The ioctl table: an array against the hash\n\n");
    out.push_str(
        "The filter's lookups alone (DEVICES, then the ioctl table), run time per call.\n\n",
    );
    out.push_str("| hook | call | hash | array | array ÷ hash |\n|---|---|---:|---:|---:|\n");
    for hook in HOOKS {
        for case in ["untracked", "counted"] {
            let (hash, array) = (
                median(hook, "table-hash", case, false),
                median(hook, "table-array", case, false),
            );
            if hash.is_nan() {
                continue;
            }
            writeln!(
                out,
                "| {hook} | {case} | {hash:.0} | {array:.0} | {:.2} |",
                array / hash
            )?;
        }
    }
    let events = lines(text, "events");
    let complete = events
        .iter()
        .filter(|f| f.len() == 4 && f[2] == f[3])
        .count();
    writeln!(
        out,
        "\nThe per-event reader received every event in {complete} of {} runs.",
        events.len()
    )?;
    let counted = lines(text, "lsm-counted");
    if !counted.is_empty() {
        let exact = counted
            .iter()
            .filter(|f| f.len() == 4 && f[2] == f[3])
            .count();
        writeln!(
            out,
            "The LSM counting program counted every counted call in {exact} of {} runs.",
            counted.len()
        )?;
    }
    out.push('\n');
    Ok(out)
}

/// Start-up, memory, CPU, and loss at the highest rate.
pub fn footprint(text: &str) -> Result<String> {
    let ready = per_round(text, "ready")?;
    let rss = per_round(text, "rss")?.scaled(1.0 / 1024.0);
    let idle = per_round(text, "cpu-idle")?;
    let busy = per_round(text, "cpu-busy")?;
    let mut out =
        String::from("### Agent footprint\n\n| measure | median (min–max) |\n|---|---:|\n");
    writeln!(
        out,
        "| start to ready, all built-in plugins loaded (ms) | {ready} |"
    )?;
    writeln!(out, "| resident memory at idle (MiB) | {rss:.1} |")?;
    writeln!(out, "| CPU at idle (ms per s) | {idle} |")?;
    writeln!(out, "| CPU at the highest call rate (ms per s) | {busy} |")?;
    out.push_str("\n### Loss at the highest rate one vCPU reaches\n\n| round | calls | calls per second | counted | lost |\n|---:|---:|---:|---:|---:|\n");
    let rates = lines(text, "rate");
    if rates.is_empty() {
        bail!("no rate lines: the footprint benchmark did not run");
    }
    for fields in rates {
        let [round, issued, ns, counted, lost] = fields[..] else {
            bail!("a rate line has {} fields, not 5", fields.len());
        };
        let per_second = number(issued)? / (number(ns)? / 1e9);
        writeln!(
            out,
            "| {round} | {issued} | {per_second:.0} | {counted} | {lost} |"
        )?;
    }
    out.push('\n');
    Ok(out)
}

/// /metrics latency under churn: percentiles over every scrape of every
/// round (`scrape ROUND MICROSECONDS` lines).
pub fn churn(text: &str) -> Result<String> {
    let mut micros = lines(text, "scrape")
        .into_iter()
        .map(|fields| match fields[..] {
            [_round, value] => number(value),
            _ => bail!("a scrape line has {} fields, not 2", fields.len()),
        })
        .collect::<Result<Vec<f64>>>()?;
    if micros.is_empty() {
        bail!("no scrape lines: the churn benchmark did not run");
    }
    micros.sort_by(f64::total_cmp);
    // Nearest rank: the smallest value at least a share q of all reach.
    let at = |q: f64| {
        let rank = (q * micros.len() as f64).ceil().max(1.0) as usize;
        micros[rank - 1] / 1000.0
    };
    let mut out = String::from(
        "### `/metrics` while 1,000 cgroups churn and a plugin is added\n\nLatency of every scrape over the rounds, in ms.\n\n| scrapes | p50 | p90 | p99 | max |\n|---:|---:|---:|---:|---:|\n",
    );
    writeln!(
        out,
        "| {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
        micros.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    )?;
    Ok(out)
}

/// criterion's estimates in `text` for the benchmarks of `groups`, by id
/// (`group/function/parameter`): the median and the 95 % interval, as
/// criterion prints them, on the id's line or the next.
fn criterion_estimates(text: &str, groups: &[&str]) -> BTreeMap<String, String> {
    let mut estimates = BTreeMap::new();
    let mut id: Option<&str> = None;
    for line in text.lines() {
        let line = line.trim();
        let name = line.split_whitespace().next().unwrap_or("");
        if name.split('/').count() == 3 && groups.iter().any(|g| name.starts_with(&format!("{g}/")))
        {
            id = Some(name);
        }
        if let (Some(key), Some(times)) = (id, line.split("time:").nth(1)) {
            let values: Vec<&str> = times
                .trim()
                .trim_matches(['[', ']'])
                .split_whitespace()
                .collect();
            if let [low, low_unit, mid, mid_unit, high, high_unit] = values[..] {
                estimates.insert(
                    key.to_owned(),
                    format!("{mid} {mid_unit} ({low} {low_unit} – {high} {high_unit})"),
                );
            }
            id = None;
        }
    }
    estimates
}

/// criterion's estimates for the two halves of a scrape: the map read
/// (`map_read/counts/N`) and the render (`render/FORMAT/N`).
pub fn scrape(text: &str) -> Result<String> {
    let mut estimates: BTreeMap<(u32, String), String> = BTreeMap::new();
    for (id, estimate) in criterion_estimates(text, &["render", "map_read"]) {
        let (column, series) = id.rsplit_once('/').expect("three parts");
        estimates.insert((number(series)? as u32, column.to_owned()), estimate);
    }
    if estimates.is_empty() {
        bail!("no criterion estimates in scrape.txt");
    }
    let mut out = String::from(
        "### One scrape of `/metrics`: map read and render\n\ncriterion's median estimate (95 % interval).\n\n| series | map read | render, text format | render, OpenMetrics |\n|---:|---:|---:|---:|\n",
    );
    let counts: std::collections::BTreeSet<u32> = estimates.keys().map(|(n, _)| *n).collect();
    for n in counts {
        let get = |column: &str| {
            estimates
                .get(&(n, column.to_owned()))
                .cloned()
                .unwrap_or_default()
        };
        writeln!(
            out,
            "| {n} | {} | {} | {} |",
            get("map_read/counts"),
            get("render/text"),
            get("render/openmetrics")
        )?;
    }
    out.push('\n');
    Ok(out)
}

/// criterion's estimates for one interval of energy per pod: reading the
/// devices' sensors (`energy/read/DEVICES`) and dividing the interval
/// among the pods (`energy/divide/PODS`).
pub fn energy(text: &str) -> Result<String> {
    let estimates = criterion_estimates(text, &["energy"]);
    let find = |function: &str| {
        estimates
            .iter()
            .find(|(id, _)| id.starts_with(&format!("energy/{function}/")))
            .map(|(id, estimate)| (id.rsplit('/').next().unwrap_or_default(), estimate))
            .ok_or_else(|| anyhow::anyhow!("no energy/{function} estimate in energy.txt"))
    };
    let (devices, read) = find("read")?;
    let (pods, divide) = find("divide")?;
    Ok(format!(
        "### Energy per pod: one interval

criterion's median estimate (95 % interval), on one core, for {devices} devices (xe's labelled counters, i915's counter, amdgpu's power, in a fixture sysfs) and {pods} pods sharing them (each using one device and holding it).

| part of an interval | time |
|---|---:|
| reading the {devices} devices' sensors | {read} |
| dividing the interval among the {pods} pods | {divide} |

"
    ))
}

/// The counters map's read by vCPU count (`map_read CPUS KEYS MEDIAN_US
/// MIN_US MAX_US` lines, one VM run per count), each against the same key
/// count's read at the fewest vCPUs.
pub fn scaling(text: &str) -> Result<String> {
    // (cpus, keys) -> (median, min, max) in µs
    let mut reads: BTreeMap<(u32, u32), (f64, f64, f64)> = BTreeMap::new();
    for fields in lines(text, "map_read") {
        let [cpus, keys, median, min, max] = fields[..] else {
            bail!("a map_read line has {} fields, not 5", fields.len());
        };
        let key = (number(cpus)? as u32, number(keys)? as u32);
        reads.insert(key, (number(median)?, number(min)?, number(max)?));
    }
    let keys: std::collections::BTreeSet<u32> = reads.keys().map(|(_, k)| *k).collect();
    let cpus: std::collections::BTreeSet<u32> = reads.keys().map(|(c, _)| *c).collect();
    let Some(&fewest) = cpus.first() else {
        bail!("no map_read lines: the scaling benchmark did not run");
    };
    let mut out = String::from(
        "### The counters map's read by vCPU count

The agent's read of the whole map, median (min–max) of 15 reads, in ms; the ratio is the median against the same keys' at the fewest vCPUs.

| vCPUs |",
    );
    for k in &keys {
        write!(out, " {k} keys | ÷ {fewest} vCPUs |")?;
    }
    out.push_str("\n|---:|");
    out.push_str(&"---:|---:|".repeat(keys.len()));
    out.push('\n');
    for c in &cpus {
        write!(out, "| {c} |")?;
        for k in &keys {
            match (reads.get(&(*c, *k)), reads.get(&(fewest, *k))) {
                (Some(&(median, min, max)), Some(&(base, _, _))) => write!(
                    out,
                    " {:.1} ({:.1}–{:.1}) | {:.2} |",
                    median / 1e3,
                    min / 1e3,
                    max / 1e3,
                    median / base
                )?,
                _ => out.push_str(" – | – |"),
            }
        }
        out.push('\n');
    }
    out.push('\n');
    Ok(out)
}

/// Every vCPU counting into one key (`contention ROUND THREADS RUN_NS
/// WALL_NS COUNTED ISSUED` lines): the programs' run time and the wall
/// time per call, per thread count, and whether every call was counted.
pub fn contention(text: &str) -> Result<String> {
    // threads -> (run ns, wall ns, rounds counted exactly, rounds)
    let mut by_threads: BTreeMap<u32, (Samples, Samples, usize, usize)> = BTreeMap::new();
    for fields in lines(text, "contention") {
        let [_round, threads, run, wall, counted, issued] = fields[..] else {
            bail!("a contention line has {} fields, not 6", fields.len());
        };
        let entry = by_threads.entry(number(threads)? as u32).or_default();
        entry.0.push(number(run)?);
        entry.1.push(number(wall)?);
        entry.2 += usize::from(counted == issued);
        entry.3 += 1;
    }
    if by_threads.is_empty() {
        bail!("no contention lines: the contention benchmark did not run");
    }
    let mut out = String::from(
        "### One key from every vCPU

Threads pinned one per vCPU, all counting the same ioctl on one fd in one cgroup, so every call adds to the same counter; median (min–max) over the rounds, in ns.\n\n| vCPUs and threads | run time per call | wall time per call | rounds counted exactly |\n|---:|---:|---:|---:|\n",
    );
    for (threads, (run, wall, exact, rounds)) in by_threads {
        writeln!(out, "| {threads} | {run} | {wall} | {exact} of {rounds} |")?;
    }
    out.push('\n');
    Ok(out)
}

/// The NUMA check's cost per counted call: on a device without a node
/// (the check stops at the device's node) and on one on the other node
/// than the calling CPU's (it asks the CPU's node, compares, and adds one
/// to the remote count), and their difference round by round, which
/// drift between rounds does not move.
pub fn numa(text: &str) -> Result<String> {
    // round -> case -> (run ns, wall ns)
    let mut rounds: BTreeMap<&str, BTreeMap<&str, (f64, f64)>> = BTreeMap::new();
    for fields in lines(text, "numa") {
        let [round, case, run, wall] = fields[..] else {
            bail!("a numa line has {} fields, not 4", fields.len());
        };
        rounds
            .entry(round)
            .or_default()
            .insert(case, (number(run)?, number(wall)?));
    }
    let [remote] = &lines(text, "numa-remote")[..] else {
        bail!("no numa-remote line: the NUMA benchmark did not run");
    };
    let [counted, issued] = remote[..] else {
        bail!("the numa-remote line has {} fields, not 2", remote.len());
    };
    let (mut run, mut wall, mut extra) = (
        BTreeMap::<&str, Samples>::new(),
        BTreeMap::<&str, Samples>::new(),
        Samples::default(),
    );
    for cases in rounds.values() {
        let (Some(unplaced), Some(remote)) = (cases.get("unplaced"), cases.get("remote")) else {
            bail!("a round of the NUMA benchmark lacks its unplaced or remote line");
        };
        for (case, (r, w)) in [("unplaced", unplaced), ("remote", remote)] {
            run.entry(case).or_default().push(*r);
            wall.entry(case).or_default().push(*w);
        }
        extra.push(remote.0 - unplaced.0);
    }
    let mut out = String::from(
        "### The NUMA check

A counted call (virtio-gpu's `WAIT`) from CPU 0 (node 0) on a device without a NUMA node, where the check stops at the device's node, and on a device on node 1, where it asks the CPU's node, compares, and adds one to the remote count; median (min–max) over the rounds, in ns.

| device | run time per call | wall time per call |\n|---|---:|---:|\n",
    );
    for (case, device) in [("unplaced", "no node"), ("remote", "node 1")] {
        writeln!(out, "| {device} | {} | {} |", run[case], wall[case])?;
    }
    writeln!(
        out,
        "\nThe whole check, node 1 − no node, round by round: {extra} ns of run time. Counted as remote: {counted} of the {issued} calls on the node-1 device.\n"
    )?;
    Ok(out)
}

/// The LSM counting program's counts against what the workload issued:
/// more busy threads than CPUs, and waits that signals interrupt.
pub fn lsm_exactness(text: &str) -> Result<String> {
    let mut out = String::from(
        "### An LSM entry as the counting hook: exactness

The benchmarks' LSM counting program on `file_ioctl`, 2 vCPUs: eight threads sharing one fd, 2,500 counted calls each; and 20 syncobj waits of 20 ms interrupted by a SIGALRM (SA_RESTART) every 3 ms, which the kernel restarts unseen by the workload. One row a run.

| round | case | counted | issued | signals taken |\n|---:|---|---:|---:|---:|\n",
    );
    let runs = lines(text, "lsm-threads");
    if runs.is_empty() {
        bail!("no lsm-threads lines: the LSM exactness benchmark did not run");
    }
    for fields in runs {
        let [round, case, counted, issued, signals] = fields[..] else {
            bail!("an lsm-threads line has {} fields, not 5", fields.len());
        };
        writeln!(
            out,
            "| {round} | {case} | {counted} | {issued} | {signals} |"
        )?;
    }
    out.push('\n');
    Ok(out)
}

/// The policy's check per ioctl: no program, an empty LSM program on
/// `file_ioctl` and the agent's check, on an unrelated ioctl and on a DRM
/// ioctl of a claimed device by a caller without a rule; then the check
/// against the empty program.
pub fn policy(text: &str) -> Result<String> {
    let cost = variant_case_costs(text, "policy")?;
    if !cost.contains_key(&("policy", "unrelated")) {
        bail!("no policy lines: the policy benchmark did not run");
    }
    let mut out = String::from(
        "### The policy's check per ioctl

Every ioctl on the node, not only accelerators', passes `file_ioctl`: an unrelated one (`/dev/null`) and virtio-gpu's `WAIT` on its render node by a process outside pods (a claimed device, no rule for the caller); median (min–max) over the rounds, in ns.

| program | ioctl | run time per call | wall time per call |\n|---|---|---:|---:|\n",
    );
    for variant in ["none", "empty", "policy"] {
        for case in ["unrelated", "drm"] {
            if let Some((run, wall)) = cost.get(&(variant, case)) {
                writeln!(out, "| {variant} | {case} | {run} | {wall} |")?;
            }
        }
    }
    out.push_str(
        "
| ioctl | check ÷ empty, run time | check ÷ empty, wall time |\n|---|---:|---:|\n",
    );
    for case in ["unrelated", "drm"] {
        let ratio = |wall: bool| {
            let pick = |variant| {
                cost.get(&(variant, case)).map_or(f64::NAN, |(run, w)| {
                    if wall { w.median() } else { run.median() }
                })
            };
            pick("policy") / pick("empty")
        };
        writeln!(out, "| {case} | {:.2} | {:.2} |", ratio(false), ratio(true))?;
    }
    out.push('\n');
    Ok(out)
}

/// The placement scheduler's cost per wake-up (`placement.txt`).
pub fn placement(text: &str) -> Result<String> {
    const VARIANTS: [&str; 3] = ["fair", "defaults", "kubenpu"];
    const CASES: [&str; 2] = ["idle", "crowded"];
    // (variant, case) -> wall ns per wake-up; (round, case) -> wake-ups
    // under kubenpu.
    let mut wall: BTreeMap<(&str, &str), Samples> = BTreeMap::new();
    let mut wakeups: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for fields in lines(text, "wakeup") {
        let [round, variant, case, count, ns] = fields[..] else {
            bail!("a wakeup line has {} fields, not 5", fields.len());
        };
        wall.entry((variant, case)).or_default().push(number(ns)?);
        if variant == "kubenpu" {
            wakeups.insert((round, case), number(count)?);
        }
    }
    if !wall.contains_key(&("kubenpu", "idle")) {
        bail!("no wakeup lines: the placement benchmark did not run");
    }
    // (case, callback) -> (runs per wake-up, run ns per run).
    let mut callbacks: BTreeMap<(&str, &str), (Samples, Samples)> = BTreeMap::new();
    for fields in lines(text, "callback") {
        let [round, case, program, runs, ns] = fields[..] else {
            bail!("a callback line has {} fields, not 5", fields.len());
        };
        let made = wakeups
            .get(&(round, case))
            .with_context(|| format!("no kubenpu wakeup line for round {round}, {case}"))?;
        let entry = callbacks.entry((case, program)).or_default();
        entry.0.push(number(runs)? / made);
        entry.1.push(number(ns)?);
    }
    let mut out = String::from(
        "### The placement scheduler per wake-up

Pairs of threads pass a byte back and forth through a socket pair (`wakeups`), one pair with CPUs to spare (idle: each wake-up finds an idle CPU) and four pairs per vCPU (crowded: wake-ups queue), under the kernel's fair class, a sched_ext scheduler of defaults only (no callbacks: sched_ext's idle-CPU choice and one global queue), and the agent's (`--placement sched-ext`); wall time per wake-up, median (min–max) over the rounds, in ns.

| case | fair | defaults | kubenpu | kubenpu ÷ defaults | kubenpu ÷ fair |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for case in CASES {
        let [fair, defaults, kubenpu] =
            VARIANTS.map(|v| wall.get(&(v, case)).cloned().unwrap_or_default());
        writeln!(
            out,
            "| {case} | {fair} | {defaults} | {kubenpu} | {:.2} | {:.2} |",
            kubenpu.median() / defaults.median(),
            kubenpu.median() / fair.median()
        )?;
    }
    out.push_str(
        "
The agent's callbacks (a defaults-only scheduler has none): how often each ran per wake-up (median over the rounds), and its run time per run (`kernel.bpf_stats_enabled`), median (min–max) over the rounds.

| case | callback | runs per wake-up | run time per run, ns |\n|---|---|---:|---:|\n",
    );
    for ((case, program), (runs, ns)) in &callbacks {
        writeln!(out, "| {case} | {program} | {:.2} | {ns} |", runs.median())?;
    }
    out.push('\n');
    Ok(out)
}

/// (variant, case) -> (run ns, wall ns) of the `TAG ROUND VARIANT CASE
/// RUN_NS WALL_NS` lines.
type VariantCaseCosts<'a> = BTreeMap<(&'a str, &'a str), (Samples, Samples)>;

fn variant_case_costs<'a>(text: &'a str, tag: &str) -> Result<VariantCaseCosts<'a>> {
    let mut cost = VariantCaseCosts::new();
    for fields in lines(text, tag) {
        let [_round, variant, case, run, wall] = fields[..] else {
            bail!("a {tag} line has {} fields, not 5", fields.len());
        };
        let entry = cost.entry((variant, case)).or_default();
        entry.0.push(number(run)?);
        entry.1.push(number(wall)?);
    }
    Ok(cost)
}

/// Counting on a character device outside DRM (the DMA heap), beside
/// `drm_ioctl`: each case with no program and with the agent's hook, and
/// the hook's wall time over none's.
pub fn chardev(text: &str) -> Result<String> {
    let cost = variant_case_costs(text, "chardev")?;
    if !cost.contains_key(&("kubenpu", "heap-counted")) {
        bail!("no chardev lines: the character device benchmark did not run");
    }
    let mut out = String::from(
        "### Character devices outside DRM

The agent's hook (as `auto` picks it) on `drm_ioctl` and on the DMA heap's and udmabuf's entries: an ioctl on `/dev/null` (unrelated: no program of the agent's sees it), one on a DRM device no vendor claims (bochs), one on the DMA heap that its table does not list, and the heap's ALLOC with a zeroed argument (counted, timed and its size read; the heap refuses a length of 0); median (min–max) over the rounds, in ns, and the hook's wall time over no program's.

| ioctl | run time per call | wall, no program | wall, kubenpu | kubenpu ÷ none |\n|---|---:|---:|---:|---:|\n",
    );
    for case in [
        "unrelated",
        "drm-filtered",
        "heap-untracked",
        "heap-counted",
    ] {
        let (Some((run, wall)), Some((_, none))) =
            (cost.get(&("kubenpu", case)), cost.get(&("none", case)))
        else {
            continue;
        };
        writeln!(
            out,
            "| {case} | {run} | {none} | {wall} | {:.2} |",
            wall.median() / none.median()
        )?;
    }
    if let (Some((classified, classified_wall)), Some((counted, counted_wall))) = (
        cost.get(&("classified", "heap-counted")),
        cost.get(&("kubenpu", "heap-counted")),
    ) {
        writeln!(
            out,
            "\nThe heap's ALLOC classified by its length (a plugin that counts one-page allocations alone): the length read from the caller's memory and looked up, and the zeroed call then not counted, against the same call counted unclassified.\n\n| ALLOC | run time per call | wall time per call |\n|---|---:|---:|\n| counted, unclassified | {counted} | {counted_wall} |\n| classified, not counted | {classified} | {classified_wall} |"
        )?;
    }
    out.push('\n');
    Ok(out)
}

/// Load time per built-in plugin and for all of them.
pub fn plugins(text: &str) -> Result<String> {
    let mut out = String::from(
        "### Plugin load time\n\nA built-in loads from the code the build precompiled; a plugin file is compiled when it is loaded.\n\n| plugin | bytes | built-in load (median) | compiled from the component (median) |\n|---|---:|---:|---:|\n",
    );
    for fields in lines(text, "plugin") {
        let [name, bytes, precompiled, compiled] = fields[..] else {
            bail!("a plugin line has {} fields, not 4", fields.len());
        };
        writeln!(
            out,
            "| {name} | {bytes} | {:.2} ms | {:.1} ms |",
            number(precompiled)? / 1e6,
            number(compiled)? / 1e6
        )?;
    }
    let all = lines(text, "plugins-all");
    let rss = lines(text, "plugins-rss");
    let ([all], [rss]) = (&all[..], &rss[..]) else {
        bail!("plugins.txt lacks its plugins-all or plugins-rss line");
    };
    writeln!(
        out,
        "| all {} built-ins, as the agent loads them at start-up | | {:.1} ms | |\n\nResident memory {:.1} MiB before, {:.1} MiB after loading them.\n",
        all[0],
        number(all[1])? / 1e6,
        number(rss[0])? / 1024.0,
        number(rss[1])? / 1024.0
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{
        chardev, churn, contention, energy, footprint, hooks, lsm_exactness, numa, placement,
        policy, scaling, scrape,
    };

    #[test]
    fn placement_lines_become_medians_ratios_and_runs_per_wakeup() {
        let mut text = String::new();
        for (round, scale) in [(1, 1), (2, 3)] {
            for (variant, ns) in [("fair", 1000), ("defaults", 2000), ("kubenpu", 3000)] {
                text += &format!("wakeup {round} {variant} idle 20000 {}\n", ns * scale);
                text += &format!("wakeup {round} {variant} crowded 80000 {ns}\n");
            }
            text += &format!(
                "callback {round} idle kubenpu_select_ 20000 {}\n",
                100 * scale
            );
            text += &format!("callback {round} crowded kubenpu_enqueue 40000 250\n");
        }
        let out = placement(&text).unwrap();
        assert!(
            out.contains(
                "| idle | 2000 (1000–3000) | 4000 (2000–6000) | 6000 (3000–9000) | 1.50 | 3.00 |"
            ),
            "{out}"
        );
        assert!(out.contains("| crowded | 1000 (1000–1000) |"), "{out}");
        assert!(
            out.contains("| idle | kubenpu_select_ | 1.00 | 200 (100–300) |"),
            "{out}"
        );
        assert!(
            out.contains("| crowded | kubenpu_enqueue | 0.50 | 250 (250–250) |"),
            "{out}"
        );
        assert!(placement("wakeup 1 fair idle 20000 1000\n").is_err());
        assert!(placement("wakeup 1 kubenpu idle 2 1\ncallback 2 idle x 1 1\n").is_err());
    }

    #[test]
    fn chardev_lines_become_medians_and_the_hooks_ratio() {
        let mut text = String::new();
        for (round, wall) in [(1, 900), (2, 1100), (3, 1000)] {
            text += &format!("chardev {round} none unrelated 0 {wall}\n");
            text += &format!("chardev {round} kubenpu unrelated 0 {wall}\n");
            text += &format!("chardev {round} none heap-counted 0 1000\n");
            text += &format!("chardev {round} kubenpu heap-counted 1000 {}\n", 3 * wall);
            text += &format!("chardev {round} classified heap-counted 400 2000\n");
        }
        let out = chardev(&text).unwrap();
        assert!(
            out.contains("| unrelated | 0 (0–0) | 1000 (900–1100) | 1000 (900–1100) | 1.00 |"),
            "{out}"
        );
        assert!(
            out.contains(
                "| heap-counted | 1000 (1000–1000) | 1000 (1000–1000) | 3000 (2700–3300) | 3.00 |"
            ),
            "{out}"
        );
        // Cases not measured have no row.
        assert!(!out.contains("| drm-filtered"), "{out}");
        assert!(
            out.contains("| classified, not counted | 400 (400–400) | 2000 (2000–2000) |"),
            "{out}"
        );
        assert!(chardev("chardev 1 none unrelated 0 900\n").is_err());
    }

    #[test]
    fn hook_lines_become_medians_and_ratios() {
        let mut text = String::new();
        for (round, scale) in [(1, 1), (2, 3)] {
            for (variant, run) in [("empty", 100), ("kubenpu", 200), ("per-event", 800)] {
                for case in ["filtered", "counted"] {
                    let wall = 1000 + run;
                    text += &format!(
                        "cost {round} fentry {variant} {case} {} {wall}\n",
                        run * scale
                    );
                }
            }
            for (variant, run) in [("empty", 100), ("kubenpu", 200 * round)] {
                text += &format!("cost {round} kprobe-session {variant} counted {run} 1000\n");
                text += &format!("cost {round} kprobe-session {variant} filtered {run} 1000\n");
            }
            text += &format!("cost {round} none none unrelated 0 1000\n");
            for (variant, run) in [("empty", 100), ("count", 300)] {
                for case in ["unrelated", "filtered", "counted"] {
                    text += &format!("cost {round} lsm {variant} {case} {run} {}\n", 1000 + run);
                }
            }
            text += &format!("events {round} fentry 201000 201000\nnoise from the console\n");
            text += &format!("lsm-counted {round} lsm {} 201000\n", 201000 - round + 1);
        }
        let out = hooks(&text).unwrap();
        // A session has no per-event variant; kprobe was not measured.
        // Its rounds' ratios were 2 and 4: 3 of the medians.
        assert!(
            out.contains(
                "| kprobe-session | run time | 3.00 (2.00–4.00) | – | 3.00 (2.00–4.00) | – |"
            ),
            "{out}"
        );
        // The LSM hook's counting program is `count`; an unrelated ioctl
        // pays it in wall time against no program at all.
        assert!(
            out.contains(
                "| lsm | wall time | 1.18 (1.18–1.18) | – | 1.18 (1.18–1.18) | 1.30 (1.30–1.30) |"
            ),
            "{out}"
        );
        assert!(out.contains("every counted call in 1 of 2 runs"), "{out}");
        assert!(!out.contains("| kprobe | run time"), "{out}");
        assert!(
            out.contains("| fentry | kubenpu | counted | 400 (200–600) | 1200 (1200–1200) |"),
            "{out}"
        );
        assert!(
            out.contains(
                "| fentry | run time | 2.00 (2.00–2.00) | 0.25 (0.25–0.25) | 2.00 (2.00–2.00) | – |"
            ),
            "{out}"
        );
        assert!(out.contains("every event in 2 of 2 runs"), "{out}");
        assert!(hooks("nothing measured").is_err());
    }

    #[test]
    fn lsm_exactness_lines_become_rows() {
        let out = lsm_exactness(
            "lsm-threads 1 threads 20000 20000 0\nnoise\nlsm-threads 1 restarts 145 20 144\n",
        )
        .unwrap();
        assert!(out.contains("| 1 | threads | 20000 | 20000 | 0 |"), "{out}");
        assert!(out.contains("| 1 | restarts | 145 | 20 | 144 |"), "{out}");
        assert!(lsm_exactness("nothing").is_err());
        assert!(lsm_exactness("lsm-threads 1 threads 1").is_err());
    }

    #[test]
    fn numa_lines_become_rows_and_a_difference_per_round() {
        let mut text = String::new();
        for (round, drift) in [(1, 0), (2, 400), (3, 200)] {
            for (case, run) in [("unplaced", 2000), ("remote", 2030 + round * 10)] {
                text += &format!("numa {round} {case} {} 6000\n", run + drift);
            }
        }
        let out = numa(&(text.clone() + "numa-remote 603001 603001\n")).unwrap();
        assert!(
            out.contains("| node 1 | 2260 (2040–2450) | 6000 (6000–6000) |"),
            "{out}"
        );
        assert!(out.contains("round by round: 50 (40–60) ns"), "{out}");
        assert!(out.contains("603001 of the 603001"), "{out}");
        assert!(numa(&text).is_err(), "no numa-remote line");
    }

    #[test]
    fn policy_lines_become_rows_and_the_check_against_the_floor() {
        let mut text = String::new();
        for round in 1..=3 {
            for (variant, run) in [("none", 0), ("empty", 100), ("policy", 150)] {
                for (case, extra) in [("unrelated", 0), ("drm", 50)] {
                    let wall = 1000 + run + extra;
                    text += &format!(
                        "policy {round} {variant} {case} {} {wall}\n",
                        run + extra * (run > 0) as u64
                    );
                }
            }
        }
        let out = policy(&text).unwrap();
        assert!(
            out.contains("| policy | drm | 200 (200–200) | 1200 (1200–1200) |"),
            "{out}"
        );
        assert!(out.contains("| unrelated | 1.50 | 1.05 |"), "{out}");
        assert!(policy("nothing measured").is_err());
    }

    #[test]
    fn scrape_latencies_become_percentiles() {
        let text: String = (1..=100)
            .map(|ms| format!("scrape {} {}\n", ms % 3, ms * 1000))
            .collect::<String>()
            + "noise from the console\n";
        let out = churn(&text).unwrap();
        assert!(
            out.contains("| 100 | 50.0 | 90.0 | 99.0 | 100.0 |"),
            "{out}"
        );
        assert!(churn("scrape 1\n").is_err());
    }

    #[test]
    fn footprint_lines_and_rates() {
        let out = footprint(
            "ready 1 900\nrss 1 15360\ncpu-idle 1 2\ncpu-busy 1 30\nrate 1 1000 2000000 1000 0\n",
        )
        .unwrap();
        assert!(
            out.contains("| resident memory at idle (MiB) | 15.0 (15.0–15.0) |"),
            "{out}"
        );
        assert!(out.contains("| 1 | 1000 | 500000 | 1000 | 0 |"), "{out}");
    }

    #[test]
    fn energy_estimates_become_one_table() {
        let out = energy(
            "Benchmarking energy/read/8: Analyzing
energy/read/8           time:   [1.0074 ms 1.0291 ms 1.0528 ms]
energy/divide/100
                        time:   [77.147 µs 80.607 µs 84.205 µs]",
        )
        .unwrap();
        assert!(
            out.contains("| reading the 8 devices' sensors | 1.0291 ms (1.0074 ms – 1.0528 ms) |"),
            "{out}"
        );
        assert!(
            out.contains(
                "| dividing the interval among the 100 pods | 80.607 µs (77.147 µs – 84.205 µs) |"
            ),
            "{out}"
        );
        assert!(energy("energy/read/8 time: [1 ms 2 ms 3 ms]").is_err());
    }

    #[test]
    fn criterion_estimates_on_one_line_or_two() {
        let out = scrape(
            "render/text/100         time:   [65.3 µs 65.8 µs 66.3 µs]
                        change: [−1.7% −1.1% −0.5%] (p = 0.00 < 0.05)
render/openmetrics/10000
                        time:   [2.93 ms 2.94 ms 2.95 ms]
Benchmarking map_read/counts/100: Analyzing
map_read/counts/100     time:   [221.0 µs 223.1 µs 225.4 µs]
map_read/counts/10000   time:   [22.430 ms 22.493 ms 22.569 ms]",
        )
        .unwrap();
        assert!(
            out.contains(
                "| 100 | 223.1 µs (221.0 µs – 225.4 µs) | 65.8 µs (65.3 µs – 66.3 µs) |  |"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "| 10000 | 22.493 ms (22.430 ms – 22.569 ms) |  | 2.94 ms (2.93 ms – 2.95 ms) |"
            ),
            "{out}"
        );
    }

    #[test]
    fn reads_by_vcpu_count_against_the_fewest() {
        let out = scaling(
            "map_read 2 1000 2000 1900 2100\nmap_read 2 10000 20000 19000 21000\n\
             map_read 64 1000 3000 2900 3100\nmap_read 64 10000 30000 29000 31000\n",
        )
        .unwrap();
        assert!(
            out.contains("| 2 | 2.0 (1.9–2.1) | 1.00 | 20.0 (19.0–21.0) | 1.00 |"),
            "{out}"
        );
        assert!(
            out.contains("| 64 | 3.0 (2.9–3.1) | 1.50 | 30.0 (29.0–31.0) | 1.50 |"),
            "{out}"
        );
        assert!(scaling("noise").is_err());
    }

    #[test]
    fn contention_rounds_by_thread_count() {
        let out = contention(
            "contention 1 16 2000 4000 100 100\ncontention 2 16 4000 6000 200 201\n\
             contention 1 2 1000 3000 50 50\n",
        )
        .unwrap();
        assert!(
            out.contains("| 2 | 1000 (1000–1000) | 3000 (3000–3000) | 1 of 1 |"),
            "{out}"
        );
        assert!(
            out.contains("| 16 | 3000 (2000–4000) | 5000 (4000–6000) | 1 of 2 |"),
            "{out}"
        );
        assert!(contention("contention 1 2\n").is_err());
    }
}
