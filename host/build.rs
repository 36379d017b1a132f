//! Builds what the agent embeds, so that a plain `cargo build` on stable
//! produces binaries that need no files beside them:
//!
//! - the kernel program (`host-ebpf`), for the BPF target, with the pinned
//!   nightly and bpf-linker (through aya-build);
//! - every vendor plugin in `vendors/`, as a `wasm32-wasip2` component and
//!   as wasmtime's precompiled code for the target, listed in
//!   `$OUT_DIR/builtin_plugins.rs`;
//! - the client of kubelet's PodResources API, from the vendored
//!   `proto/podresources/v1/api.proto`.

use std::{
    env,
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, anyhow, bail};

/// The engine settings the agent loads plugins with.
#[path = "src/plugins/engine.rs"]
mod plugin_engine;

/// The one place the pinned toolchain and linker versions are written down;
/// `scripts/setup` installs from the same file.
const TOOLCHAIN_ENV: &str = include_str!("../scripts/toolchain.env");

/// The cargo profile plugins are built with (small, stripped).
const PLUGIN_PROFILE: &str = "plugin";
const PLUGIN_TARGET: &str = "wasm32-wasip2";

fn main() -> anyhow::Result<()> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir.parent().context("host/ has a parent")?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    build_kernel_program(root)?;
    build_vendor_plugins(root, &out_dir)?;
    build_pod_resources_client()
}

/// The agent only asks kubelet; the test kubelet in `tests/pods` builds
/// the server side from the same file.
fn build_pod_resources_client() -> anyhow::Result<()> {
    tonic_prost_build::configure()
        .build_server(false)
        .compile_protos(
            &["proto/podresources/v1/api.proto"],
            &["proto/podresources/v1"],
        )
        .context("compiling kubelet's PodResources API (protoc comes with scripts/setup)")
}

fn pinned(key: &str) -> anyhow::Result<&'static str> {
    TOOLCHAIN_ENV
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .map(str::trim)
        .ok_or_else(|| anyhow!("scripts/toolchain.env has no {key}="))
}

fn build_kernel_program(root: &Path) -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=../scripts/toolchain.env");
    let toolchain = pinned("EBPF_TOOLCHAIN")?;
    let linker = pinned("BPF_LINKER_VERSION")?;
    let found = Command::new("bpf-linker").arg("--version").output();
    if !found.is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(linker)) {
        bail!(
            "bpf-linker {linker} is not on PATH: run scripts/setup (it builds bpf-linker against {toolchain}'s LLVM)"
        );
    }
    let ebpf_dir = root.join("host-ebpf");
    let ebpf_dir = ebpf_dir.to_str().context("non-UTF-8 path to host-ebpf")?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "kubenpu-ebpf",
            root_dir: ebpf_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom(toolchain),
    )
    .with_context(|| {
        format!("building the eBPF program with {toolchain} (run scripts/setup if it is missing)")
    })
}

/// Builds every `vendors/<name>` crate (package `kubenpu-vendor-<name>`)
/// in one nested cargo run with its own target directory, so it neither
/// waits on this build's lock nor inherits its flags.
fn build_vendor_plugins(root: &Path, out_dir: &Path) -> anyhow::Result<()> {
    for watched in ["vendors", "sdk", "wit"] {
        println!("cargo:rerun-if-changed=../{watched}");
    }
    let mut vendors: Vec<String> = fs::read_dir(root.join("vendors"))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    vendors.sort();

    let target_dir = out_dir.join("plugins-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--quiet",
            "--profile",
            PLUGIN_PROFILE,
            "--target",
            PLUGIN_TARGET,
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    for vendor in &vendors {
        cmd.args(["--package", &format!("kubenpu-vendor-{vendor}")]);
    }
    for inherited in [
        "RUSTC",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
    ] {
        cmd.env_remove(inherited);
    }
    let status = cmd
        .status()
        .context("running cargo for the vendor plugins")?;
    if !status.success() {
        bail!(
            "building the vendor plugins failed ({status}); is the {PLUGIN_TARGET} target installed? run scripts/setup"
        );
    }

    let artifacts = target_dir.join(PLUGIN_TARGET).join(PLUGIN_PROFILE);
    let precompiler = Precompiler::for_target();
    let mut list = String::from("&[\n");
    for vendor in &vendors {
        let wasm = artifacts.join(format!("kubenpu_vendor_{}.wasm", vendor.replace('-', "_")));
        if !wasm.is_file() {
            bail!("the build of vendors/{vendor} left no {}", wasm.display());
        }
        let precompiled = match precompiler.precompile(&wasm, out_dir) {
            Ok(code) => format!("Some(include_bytes!({:?}))", code.display().to_string()),
            Err(why) => {
                println!(
                    "cargo:warning=the built-in {vendor} is compiled when the agent starts: {why:#}"
                );
                "None".into()
            }
        };
        writeln!(
            list,
            "    Builtin {{ name: {vendor:?}, wasm: include_bytes!({:?}), precompiled: {precompiled} }},",
            wasm.display().to_string()
        )?;
    }
    list.push(']');
    fs::write(out_dir.join("builtin_plugins.rs"), list)?;
    Ok(())
}

/// Compiles the built-in components to machine code for the target being
/// built, with the agent's own engine settings and no CPU features beyond
/// the target's baseline, so the code loads on every CPU of that
/// architecture.
struct Precompiler(anyhow::Result<wasmtime::Engine>);

impl Precompiler {
    fn for_target() -> Self {
        let engine = env::var("TARGET")
            .context("cargo sets TARGET for build scripts")
            .and_then(|target| {
                let mut config = plugin_engine::config();
                config.target(&target)?;
                wasmtime::Engine::new(&config).map_err(|e| {
                    anyhow!("wasmtime cannot compile for {target} ({e}); a cross-build needs --features cross-precompile")
                })
            });
        Self(engine)
    }

    /// Writes `<component>.cwasm` beside the build's other outputs.
    fn precompile(&self, wasm: &Path, out_dir: &Path) -> anyhow::Result<PathBuf> {
        let engine = self.0.as_ref().map_err(|e| anyhow!("{e:#}"))?;
        let code = engine.precompile_component(&fs::read(wasm)?)?;
        let name = wasm.file_stem().context("a component file has a name")?;
        let path = out_dir.join(name).with_extension("cwasm");
        fs::write(&path, code)?;
        Ok(path)
    }
}
