//! What the kernel side of one scrape of `/metrics` costs the agent: the
//! agent's own reader fetching the counters map in batches, at 100, 1 000
//! and 10 000 keys, in a map made from the embedded object's own
//! definition (16 384 keys, the agent's default).
//!
//! Only the map is created, no program is loaded, so this runs on any
//! kernel that creates BPF maps, this machine's included. It needs
//! CAP_BPF: run it as root. Each key holds one value for all CPUs, so the
//! CPU count does not enter; `map_read_scaling` shows it in the VM.

use criterion::{BenchmarkId, Criterion, criterion_main};
use kubenpu::probe::sum_counts;

#[path = "support/counters.rs"]
mod counters;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("map_read");
    for keys in [100, 1_000, 10_000] {
        let counts = counters::counters_with(keys);
        let read = sum_counts(&counts).expect("the map reads back");
        assert_eq!(read.len(), keys, "keys are distinct");
        group.bench_with_input(BenchmarkId::new("counts", keys), &counts, |b, counts| {
            b.iter(|| sum_counts(counts))
        });
    }
    group.finish();
}

/// criterion's generated group, private (it has no doc comment).
mod group {
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(group::benches);
