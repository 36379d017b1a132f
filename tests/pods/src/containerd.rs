//! A private containerd: its own root, state, socket and config, so it
//! can run beside anything else on the machine and leaves nothing behind.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};

use crate::{Kubelet, image::SANDBOX_IMAGE};

/// A running containerd, stopped (and its containers killed) on drop.
pub struct Containerd {
    dir: PathBuf,
    child: Option<Child>,
}

impl Containerd {
    /// Starts containerd with everything under `dir` and waits until its
    /// socket answers.
    pub fn start(dir: &Path) -> anyhow::Result<Self> {
        Self::start_with_hook(dir, &[])
    }

    /// [`Containerd::start`], with `hook` (a program and its arguments;
    /// none if empty) run as an OCI `createRuntime` hook for every
    /// container, as a node's base runtime spec gives it.
    pub fn start_with_hook(dir: &Path, hook: &[String]) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let base_spec = match hook {
            [] => None,
            hook => {
                let path = dir.join("base-spec.json");
                std::fs::write(&path, base_spec(hook)?)?;
                Some(path)
            }
        };
        std::fs::write(
            dir.join("config.toml"),
            config_toml(dir, base_spec.as_deref()),
        )?;
        let mut containerd = Self {
            dir: dir.to_owned(),
            child: None,
        };
        containerd.spawn()?;
        Ok(containerd)
    }

    /// A handle on a containerd another process started under `dir`; it
    /// is left running when the handle drops.
    pub fn attach(dir: &Path) -> anyhow::Result<Self> {
        if !socket(dir).exists() {
            bail!(
                "no containerd socket at {} (start one with `kubenpu-pods containerd --dir {}`)",
                socket(dir).display(),
                dir.display()
            );
        }
        Ok(Self {
            dir: dir.to_owned(),
            child: None,
        })
    }

    /// The CRI (and containerd) socket.
    pub fn socket(&self) -> PathBuf {
        socket(&self.dir)
    }

    /// containerd's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default()
    }

    /// Runs `ctr` against this containerd, in kubelet's `k8s.io` namespace.
    pub fn ctr(&self, args: &[&str]) -> anyhow::Result<String> {
        let output = Command::new("ctr")
            .arg("--address")
            .arg(self.socket())
            .args(["--namespace", "k8s.io"])
            .args(args)
            .output()
            .context("cannot run ctr")?;
        if !output.status.success() {
            bail!(
                "ctr {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Kills containerd abruptly, as a crash would; its containers keep
    /// running under their shims.
    pub fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts containerd again after [`kill`](Self::kill), on the same
    /// state.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill()?;
        self.spawn()
    }

    /// Runs containerd and waits until its socket answers.
    fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("containerd.log"))?;
        let child = Command::new("containerd")
            .arg("--config")
            .arg(self.dir.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start containerd (apt-get install containerd runc)")?;
        self.child = Some(child);

        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("containerd exited with {status}: {}", self.log());
            }
            if self.socket().exists() && self.ctr(&["version"]).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("containerd did not answer within 30 s: {}", self.log())
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        // Remove every pod first, so no shim, container process or mount
        // outlives containerd. On a thread of its own: the owner may be
        // inside an async runtime, which cannot block on another.
        if self.child.is_some() {
            let socket = self.socket();
            let removed = std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(async { Kubelet::connect(&socket).await?.remove_all_pods().await })
            })
            .join();
            if let Ok(Err(e)) = removed {
                eprintln!("containerd teardown: {e:#}");
            }
        }
        let _ = self.kill();
    }
}

/// Whether `/` is the kernel's rootfs (an unpacked initramfs).
fn root_is_initramfs() -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|mounts| {
        mounts.lines().any(|line| {
            let mut fields = line.split(' ');
            let point = fields.nth(4);
            let filesystem = line.split(" - ").nth(1).and_then(|f| f.split(' ').next());
            point == Some("/") && matches!(filesystem, Some("rootfs" | "ramfs"))
        })
    })
}

/// containerd's default OCI spec (as `ctr oci spec` prints it) with `hook`
/// added as a `createRuntime` hook: what a node administrator writes to
/// give every container a hook.
fn base_spec(hook: &[String]) -> anyhow::Result<String> {
    let output = Command::new("ctr")
        .args(["oci", "spec"])
        .output()
        .context("cannot run ctr oci spec")?;
    if !output.status.success() {
        bail!(
            "ctr oci spec: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let mut spec: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    spec["hooks"] = serde_json::json!({
        "createRuntime": [{"path": hook[0], "args": hook, "timeout": 30}]
    });
    Ok(serde_json::to_string_pretty(&spec)?)
}

fn socket(dir: &Path) -> PathBuf {
    dir.join("containerd.sock")
}

/// containerd's configuration: private paths; the cgroupfs driver (no
/// systemd here); the native snapshotter (works on any filesystem); no
/// CNI (pods use the host network); `restrict_oom_score_adj` because a VM's
/// root may lack CAP_SYS_RESOURCE; and no pivot_root when the root is an
/// initramfs, which cannot be pivoted away from.
fn config_toml(dir: &Path, base_spec: Option<&Path>) -> String {
    let dir = dir.display();
    let no_pivot_root = root_is_initramfs();
    let base_spec = base_spec.map_or(String::new(), |path| {
        format!("base_runtime_spec = \"{}\"", path.display())
    });
    format!(
        r#"version = 2
root = "{dir}/root"
state = "{dir}/state"
[grpc]
  address = "{dir}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      {base_spec}
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        NoPivotRoot = {no_pivot_root}
"#
    )
}
