//! A real Prometheus server for tests and the demo: Debian's `prometheus`
//! on a loopback port with its own data directory, scraping the given
//! targets, and PromQL through its HTTP API. Also `promtool check metrics`.

use std::{
    collections::BTreeMap,
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use kubenpu::http;

/// One sample of a query's result: its labels and value.
pub type Sample = (BTreeMap<String, String>, f64);

/// A running Prometheus, stopped on drop.
pub struct Prometheus {
    child: Child,
    address: String,
}

impl Prometheus {
    /// Starts Prometheus with its data under `dir`, scraping `targets`
    /// (`host:port`, path /metrics) every `interval`, and waits until it is
    /// ready.
    pub fn start(dir: &Path, targets: &[String], interval: Duration) -> anyhow::Result<Self> {
        // Not a port a target is about to listen on.
        let port = loop {
            let port = free_port()?;
            if !targets.iter().any(|t| t.ends_with(&format!(":{port}"))) {
                break port;
            }
        };
        let config = dir.join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {ms}ms\n  scrape_timeout: {ms}ms\nscrape_configs:\n  - job_name: kubenpu\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", "),
                ms = interval.as_millis(),
            ),
        )?;
        let log = std::fs::File::create(dir.join("prometheus.log"))?;
        let address = format!("127.0.0.1:{port}");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start prometheus (apt-get install prometheus)")?;
        let prometheus = Self { child, address };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok((200, _)) = http::get(&prometheus.address, "/-/ready", Duration::from_secs(2))
            {
                return Ok(prometheus);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        bail!(
            "prometheus was not ready within 60 s: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        )
    }

    /// The result of an instant PromQL query (a vector).
    pub fn query(&self, promql: &str) -> anyhow::Result<Vec<Sample>> {
        let path = format!("/api/v1/query?query={}", http::encode_query(promql));
        let (status, body) = http::get(&self.address, &path, Duration::from_secs(10))?;
        if status != 200 {
            bail!("query {promql:?}: HTTP {status}: {body}");
        }
        let json: serde_json::Value = serde_json::from_str(&body)?;
        let result = json["data"]["result"]
            .as_array()
            .with_context(|| format!("query {promql:?}: no result in {body}"))?;
        result
            .iter()
            .map(|sample| {
                let labels = sample["metric"]
                    .as_object()
                    .context("a sample without labels")?
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect();
                let value = sample["value"][1]
                    .as_str()
                    .context("a sample without a value")?
                    .parse()?;
                Ok((labels, value))
            })
            .collect()
    }

    /// Waits until `promql` returns at least one sample.
    pub fn wait_for(&self, promql: &str, timeout: Duration) -> anyhow::Result<Vec<Sample>> {
        let deadline = Instant::now() + timeout;
        loop {
            let samples = self.query(promql)?;
            if !samples.is_empty() {
                return Ok(samples);
            }
            if Instant::now() > deadline {
                bail!("{promql:?} returned nothing within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `promtool check metrics` on an exposition: its complaints, if any.
pub fn check_metrics(exposition: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run promtool (apt-get install prometheus)")?;
    child
        .stdin
        .take()
        .context("promtool's stdin")?
        .write_all(exposition.as_bytes())?;
    let output = child.wait_with_output()?;
    let complaints = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() || !complaints.trim().is_empty() {
        bail!("promtool check metrics: {}", complaints.trim());
    }
    Ok(())
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
