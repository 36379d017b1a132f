//! What one scrape of `/metrics` costs the agent: rendering a snapshot of
//! 100, 1 000 and 10 000 `kubenpu_ioctl_total` series (plus the fixed
//! families) in both exposition formats. Reading the kernel's counters
//! map, the other half of a scrape, is the `map_read` benchmark.

use std::{hint::black_box, sync::Arc};

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_main};
use kubenpu::{
    attribution::Owner,
    catalog::Series,
    metrics::{Format, Snapshot, render},
};
use kubenpu_sdk::Kind;

/// `count` series: pods of three containers, on four devices, three kinds.
fn snapshot(count: usize) -> Snapshot {
    let devices: Vec<Arc<str>> = (0..4)
        .map(|i| Arc::from(format!("0000:{:02x}:00.0", 0x10 + i)))
        .collect();
    let vendor: Arc<str> = Arc::from("i915");
    let kinds = [Kind::Submit, Kind::Alloc, Kind::Wait];
    let ioctls = (0..count)
        .map(|i| {
            let series = Series {
                owner: Owner {
                    namespace: format!("team-{}", i / 360),
                    pod: format!("inference-{}", i / 36),
                    container: format!("worker-{}", i / 12 % 3),
                },
                device: devices[i / 3 % 4].clone(),
                vendor: vendor.clone(),
                kind: kinds[i % 3],
            };
            let calls = (i as u64 + 1) * 7919;
            let totals = kubenpu_ebpf::CountValue {
                calls,
                failed: calls / 100,
                ns: calls * 35_000,
                bytes: calls * 4096,
                remote: calls / 10,
                busy: calls / 20,
                timed_out: calls / 1000,
            };
            (series, totals)
        })
        .collect();
    Snapshot {
        ioctls,
        losses: vec![("map_full", 0), ("ringbuf_full", 0)],
        hook: "fentry",
        ..Snapshot::default()
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("render");
    for count in [100, 1_000, 10_000] {
        let snapshot = snapshot(count);
        assert_eq!(snapshot.ioctls.len(), count, "series are distinct");
        for (name, format) in [("text", Format::Text), ("openmetrics", Format::OpenMetrics)] {
            group.bench_with_input(BenchmarkId::new(name, count), &snapshot, |b, snapshot| {
                b.iter_batched(
                    || snapshot.clone(),
                    |snapshot| render(black_box(snapshot), format),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

/// criterion's generated group, private (it has no doc comment).
mod group {
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(group::benches);
