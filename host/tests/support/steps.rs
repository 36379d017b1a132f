//! A guest script and a test in step: the script writes `/shared/NAME`
//! when it reaches step NAME and waits for `NAME.done`; the test checks
//! what it must meanwhile (through the agent's forwarded port).

use std::{
    cell::RefCell,
    path::PathBuf,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use kubenpu::http;

/// The VM's thread.
pub type Guest = JoinHandle<anyhow::Result<kubenpu_vm::Outcome>>;

/// The test's side of the guest's steps.
pub struct Host {
    /// The directory shared with the guest.
    pub shared: PathBuf,
    /// The agent's address, forwarded from the guest.
    pub agent: String,
    /// The running guest, until it is joined.
    pub guest: RefCell<Option<Guest>>,
}

impl Host {
    /// Boots `vm` (which shares `shared`, and has containerd and the pod
    /// helpers) with the agent's port forwarded and fifteen minutes to
    /// finish, and runs `script` after the guest helpers.
    pub fn boot(vm: kubenpu_vm::Vm, shared: PathBuf, script: String) -> Self {
        let port = kubenpu_prometheus::free_port().unwrap();
        let vm = vm.forward(port, 8080).timeout(Duration::from_secs(900));
        let guest = std::thread::spawn(move || {
            vm.run(&format!(
                ". /drm.sh && . /agent.sh && . /pods.sh && {script}"
            ))
        });
        Self {
            shared,
            agent: format!("127.0.0.1:{port}"),
            guest: RefCell::new(Some(guest)),
        }
    }

    /// Waits for the guest to reach `name`, checks, then lets it go on.
    pub fn step(&self, name: &str, check: impl FnOnce()) {
        let marker = self.shared.join(name);
        let stopped = || self.guest.borrow().as_ref().is_none_or(|g| g.is_finished());
        wait_until(Duration::from_secs(600), || marker.exists() || stopped());
        if !marker.exists() {
            let outcome = match self.guest.take().map(|g| g.join().unwrap()) {
                Some(Ok(outcome)) => outcome.output,
                Some(Err(e)) => format!("{e:#}"),
                None => String::new(),
            };
            panic!("the guest never reached step {name}:\n{outcome}");
        }
        check();
        std::fs::write(self.shared.join(format!("{name}.done")), "ok").unwrap();
    }

    /// The agent's exposition in the classic text format.
    pub fn metrics(&self) -> String {
        let (status, body) = http::get(&self.agent, "/metrics", Duration::from_secs(10)).unwrap();
        assert_eq!(status, 200, "{body}");
        body
    }

    /// `kubenpuctl ARGS --agent <the agent>`'s output; it must succeed.
    pub fn kubenpuctl(&self, args: &[&str]) -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubenpuctl"))
            .args(args)
            .args(["--agent", &self.agent])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubenpuctl {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// Waits for the guest script to end; it must have succeeded.
    pub fn finish(&self) -> kubenpu_vm::Outcome {
        let guest = self.guest.take().expect("the guest is still running");
        let outcome = guest.join().unwrap().unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            outcome.status, 0,
            "the guest script failed:\n{}",
            outcome.output
        );
        outcome
    }
}

/// Tells the guest to give up if the test panics, so the VM stops at once.
impl Drop for Host {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::fs::write(self.shared.join("abort"), "abort");
        }
    }
}

/// Polls `done` every 200 ms until it holds or `timeout` passes; says
/// whether it held.
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    done()
}
