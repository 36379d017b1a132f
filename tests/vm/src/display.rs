//! The host side of a 3D virtio-gpu: qemu runs the guest's OpenGL
//! commands (virgl) with the host's Mesa in the OpenGL context of its SDL
//! window, so it needs an X display. These hosts have no GPU and no render
//! node (`-display egl-headless` fails), but Xvfb's GLX renders with
//! llvmpipe.

use std::{
    env,
    io::{BufRead as _, BufReader, ErrorKind},
    path::PathBuf,
    process::{Child, Command, Stdio},
};

use anyhow::{Result, bail};

/// What the missing parts of the host are fixed with.
const FIX: &str = "install xvfb and qemu-system-gui (scripts/setup does)";

/// qemu's modules a 3D virtio-gpu shown in an SDL window loads: Debian
/// ships the first two in qemu-system-gui, the device in qemu-system-x86.
const QEMU_MODULES: [&str; 3] = [
    "ui-sdl.so",
    "ui-opengl.so",
    "hw-display-virtio-gpu-pci-gl.so",
];

/// The X display qemu's window opens on, for one run.
pub struct GlDisplay {
    /// Our own X server, stopped when this is dropped; none where the
    /// caller has a display of its own.
    xvfb: Option<Child>,
    name: String,
}

impl GlDisplay {
    /// Fails in one line if the host lacks a part that `open` and `qemu`
    /// need: Xvfb (unless `DISPLAY` is set) or one of qemu's modules.
    pub fn check(qemu: &str) -> Result<()> {
        check_qemu_modules(qemu)?;
        if own_display().is_none() && find_program("Xvfb").is_none() {
            bail!("--gpu-3d needs Xvfb: {FIX}");
        }
        Ok(())
    }

    /// `DISPLAY` if it is set (a desktop), else a private Xvfb on a display
    /// number it picks itself, so that runs in parallel never share one.
    pub fn open() -> Result<Self> {
        if let Some(name) = own_display() {
            return Ok(Self { xvfb: None, name });
        }
        // -displayfd: Xvfb writes the number it chose once it accepts clients.
        let mut xvfb = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", "1024x768x24"])
            .args(["-nolisten", "tcp"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => anyhow::anyhow!("--gpu-3d needs Xvfb: {FIX}"),
                _ => anyhow::anyhow!("cannot start Xvfb ({e})"),
            })?;
        let mut number = String::new();
        if let Some(out) = xvfb.stdout.take() {
            BufReader::new(out).read_line(&mut number)?;
        }
        let number = number.trim().to_owned();
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            let _ = xvfb.kill();
            let _ = xvfb.wait();
            bail!("Xvfb exited without opening a display: run `Xvfb -displayfd 1` to see why");
        }
        Ok(Self {
            xvfb: Some(xvfb),
            name: format!(":{number}"),
        })
    }

    /// The value of `DISPLAY` for qemu.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for GlDisplay {
    fn drop(&mut self) {
        if let Some(xvfb) = &mut self.xvfb {
            let _ = xvfb.kill();
            let _ = xvfb.wait();
        }
    }
}

/// The caller's X display.
fn own_display() -> Option<String> {
    env::var("DISPLAY").ok().filter(|d| !d.is_empty())
}

/// Fails if Debian's qemu lacks a module the 3D device needs: qemu itself
/// only says so once it has started, among its other messages. A qemu
/// without a module directory (`QEMU_MODULE_DIR`, or Debian's beside its
/// binary) is taken to have them built in.
fn check_qemu_modules(qemu: &str) -> Result<()> {
    let Some(dir) = module_dir(qemu) else {
        return Ok(());
    };
    if !dir.is_dir() {
        return Ok(());
    }
    let missing: Vec<&str> = QEMU_MODULES
        .into_iter()
        .filter(|module| !dir.join(module).exists())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{qemu} lacks its {} module(s) for --gpu-3d: {FIX}",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Where `qemu` loads its modules from.
fn module_dir(qemu: &str) -> Option<PathBuf> {
    if let Some(dir) = env::var_os("QEMU_MODULE_DIR").filter(|d| !d.is_empty()) {
        return Some(dir.into());
    }
    let binary = find_program(qemu)?;
    // Debian's layout: /usr/bin/qemu-system-x86_64 loads /usr/lib/<triplet>/qemu/*.so.
    let prefix = binary.parent()?.parent()?;
    Some(prefix.join("lib/x86_64-linux-gnu/qemu"))
}

/// Where `program` is in `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}
