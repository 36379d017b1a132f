//! Builds what the agent embeds, so that a plain `cargo build` on stable
//! produces binaries that need no files beside them:
//!
//! - the kernel programs (`host-ebpf`), for the BPF target, with the
//!   pinned nightly and bpf-linker;
//! - every vendor plugin in `vendors/`, as a `wasm32-wasip2` component and
//!   as wasmtime's precompiled code for the target, listed in
//!   `$OUT_DIR/builtin_plugins.rs`;
//! - the client of kubelet's PodResources API, from the vendored
//!   `proto/podresources/v1/api.proto`.
//!
//! The first two are nested cargo builds, in target directories shared by
//! every build of the agent (see [`nested_target_root`]).

use std::{
    env,
    ffi::OsStr,
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

/// The programs `host-ebpf` builds, which `src/program.rs` embeds.
const KERNEL_PROGRAMS: [&str; 6] = [
    "kubenpu",
    "kubenpu-floor",
    "kubenpu-lsm-count",
    "kubenpu-per-event",
    "kubenpu-scheduler",
    "kubenpu-table",
];

fn main() -> anyhow::Result<()> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir.parent().context("host/ has a parent")?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let nested = nested_target_root(&out_dir);
    build_kernel_programs(root, &nested, &out_dir)?;
    build_vendor_plugins(root, &nested, &out_dir)?;
    build_pod_resources_client()
}

/// Where the nested builds keep their target directories: `kubenpu-nested`
/// in this build's target directory. Each build of the agent (clippy's,
/// the tests', a release or a cross build) has an OUT_DIR of its own, but
/// what the nested builds make does not depend on which build asks, so
/// the first one builds it and the others find it fresh. OUT_DIR itself
/// where the layout is not cargo's usual
/// `<target>[/<triple>]/<profile>/build/<package>-<hash>/out`.
fn nested_target_root(out_dir: &Path) -> PathBuf {
    let mut target = out_dir.ancestors().nth(4);
    if let (Some(dir), Ok(triple)) = (target, env::var("TARGET"))
        && dir.file_name() == Some(OsStr::new(&triple))
    {
        target = dir.parent();
    }
    match target {
        Some(dir) if dir.join("CACHEDIR.TAG").is_file() => dir.join("kubenpu-nested"),
        _ => out_dir.to_owned(),
    }
}

/// A cargo command for a nested build, without what this build's cargo
/// set for itself (its compiler, wrappers such as clippy's, flags and
/// build-script variables), so that the nested build is the same whichever
/// build of the agent runs it.
fn nested_cargo(program: impl AsRef<OsStr>, root: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(root);
    for inherited in [
        "RUSTC",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "OUT_DIR",
        "TARGET",
        "HOST",
        "PROFILE",
        "OPT_LEVEL",
        "DEBUG",
    ] {
        cmd.env_remove(inherited);
    }
    cmd
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

/// Builds `host-ebpf`'s programs for the BPF target of this build's
/// endianness, with the `bpf_target_arch` cfg of its architecture (the
/// programs read `pt_regs`), in one nested directory per architecture.
fn build_kernel_programs(root: &Path, nested: &Path, out_dir: &Path) -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=../scripts/toolchain.env");
    println!("cargo:rerun-if-changed=../host-ebpf");
    let toolchain = pinned("EBPF_TOOLCHAIN")?;
    let linker = pinned("BPF_LINKER_VERSION")?;
    let found = Command::new("bpf-linker").arg("--version").output();
    if !found.is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(linker)) {
        bail!(
            "bpf-linker {linker} is not on PATH: run scripts/setup (it builds bpf-linker against {toolchain}'s LLVM)"
        );
    }
    let arch = env::var("CARGO_CFG_TARGET_ARCH")?;
    let bpf_target = match env::var("CARGO_CFG_TARGET_ENDIAN")?.as_str() {
        "big" => "bpfeb-unknown-none",
        _ => "bpfel-unknown-none",
    };
    let target_dir = nested.join(format!("ebpf-{arch}"));
    let status = nested_cargo("rustup", root)
        .args(["run", toolchain, "cargo", "build", "--quiet", "--release"])
        .args([
            "--package",
            "kubenpu-ebpf",
            "--bins",
            "--target",
            bpf_target,
        ])
        .args(["-Z", "build-std=core", "--target-dir"])
        .arg(&target_dir)
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            format!("--cfg=bpf_target_arch=\"{arch}\"\x1f-Cdebuginfo=2\x1f-Clink-arg=--btf"),
        )
        .status()
        .context("running rustup to build the eBPF program (run scripts/setup)")?;
    if !status.success() {
        bail!(
            "building the eBPF program with {toolchain} failed ({status}); run scripts/setup if it is missing"
        );
    }
    let built = target_dir.join(bpf_target).join("release");
    for program in KERNEL_PROGRAMS {
        fs::copy(built.join(program), out_dir.join(program))
            .with_context(|| format!("the eBPF build left no {program}"))?;
    }
    Ok(())
}

/// Builds every `vendors/<name>` crate (package `kubenpu-vendor-<name>`)
/// in one nested cargo run with its own target directory, so it neither
/// waits on this build's lock nor inherits its flags, then precompiles
/// each for this build's target.
fn build_vendor_plugins(root: &Path, nested: &Path, out_dir: &Path) -> anyhow::Result<()> {
    for watched in ["vendors", "sdk", "wit"] {
        println!("cargo:rerun-if-changed=../{watched}");
    }
    let mut vendors: Vec<String> = fs::read_dir(root.join("vendors"))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    vendors.sort();

    let target_dir = nested.join("plugins");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = nested_cargo(cargo, root);
    cmd.args([
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
