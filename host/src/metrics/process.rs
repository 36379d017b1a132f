//! The agent's own footprint, in the standard `process_*` metrics, read
//! from /proc at scrape time.

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

/// The collector of this process's metrics.
#[derive(Debug)]
pub struct Process;

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stat) = Stat::read() else {
            return Ok(());
        };
        ConstGauge::new(stat.resident_bytes).encode(encoder.encode_descriptor(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            None,
            MetricType::Gauge,
        )?)?;
        ConstCounter::new(stat.cpu_seconds).encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            MetricType::Counter,
        )?)?;
        ConstGauge::new(stat.start_time_seconds).encode(encoder.encode_descriptor(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            None,
            MetricType::Gauge,
        )?)?;
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            ConstGauge::new(fds.count() as i64).encode(encoder.encode_descriptor(
                "process_open_fds",
                "Number of open file descriptors.",
                None,
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}

struct Stat {
    resident_bytes: i64,
    cpu_seconds: f64,
    start_time_seconds: f64,
}

impl Stat {
    fn read() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name, which may contain spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // Numbered as in proc(5) minus 3: state is field 3.
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        // SAFETY: sysconf only reads configuration values.
        let (ticks, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK) as f64,
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let boot = std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok())?;
        Some(Self {
            resident_bytes: field(24)? as i64 * page,
            cpu_seconds: (field(14)? + field(15)?) as f64 / ticks,
            start_time_seconds: boot as f64 + field(22)? as f64 / ticks,
        })
    }
}
