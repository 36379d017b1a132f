//! Shared by the host's integration tests: sysfs fixture trees modelled on
//! real machines, and the test plugins built as real components.
#![allow(
    dead_code,
    unused_macros,
    reason = "each test binary uses part of the support"
)]

pub mod exposition;
pub mod guest;
pub mod steps;
pub mod sysfs;

/// Declares each `$test` once per kernel of the list, as `$test::sid` and
/// so on.
macro_rules! on_kernels {
    ($kernels:tt: $($test:ident),* $(,)?) => {$(
        on_kernels!(@one $kernels $test);
    )*};
    (@one [$($name:ident => $kernel:ident),*] $test:ident) => {
        mod $test {
            use kubenpu_vm::Kernel;

            $(
                #[test]
                fn $name() {
                    super::$test(Kernel::$kernel);
                }
            )*
        }
    };
}

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

/// The crates under `tests/plugins`, by directory name.
pub const TEST_PLUGINS: [&str; 16] = [
    "acme",
    "bochs-alloc",
    "bomb",
    "conflicting-kinds",
    "heap-classes",
    "legacy-0-1",
    "legacy-0-2",
    "legacy-0-3",
    "legacy-0-4",
    "legacy-0-5",
    "no-drivers",
    "numbered",
    "spin",
    "thief",
    "vgem-alt",
    "virtio-energy",
];

/// The component of the built-in vendor `name`.
pub fn builtin_wasm(name: &str) -> &'static [u8] {
    kubenpu::plugins::BUILTIN
        .iter()
        .find(|builtin| builtin.name == name)
        .unwrap_or_else(|| panic!("no built-in {name}"))
        .wasm
}

/// The path of a test plugin's component, built (once per test run) for
/// wasm32-wasip2 the way the built-in vendors are.
pub fn test_plugin(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_owned();
        let target = root.join("target/test-plugins");
        let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cargo
            .current_dir(&root)
            .args([
                "build",
                "--quiet",
                "--profile",
                "plugin",
                "--target",
                "wasm32-wasip2",
            ])
            .arg("--target-dir")
            .arg(&target);
        for plugin in TEST_PLUGINS {
            cargo.args(["--package", &format!("kubenpu-test-plugin-{plugin}")]);
        }
        let status = cargo.status().expect("cargo runs");
        assert!(status.success(), "building the test plugins failed");
        target.join("wasm32-wasip2/plugin")
    });
    let path = dir.join(format!(
        "kubenpu_test_plugin_{}.wasm",
        name.replace('-', "_")
    ));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// The `numbered` test plugin as vendor `name` (16 bytes, as its
/// placeholder), claiming driver `<name>_drv`: one file made into many
/// distinct vendors.
pub fn numbered_plugin(name: &str) -> Vec<u8> {
    const PLACEHOLDER: &[u8; 16] = b"numbered-vendor0";
    assert_eq!(name.len(), PLACEHOLDER.len());
    let mut bytes = std::fs::read(test_plugin("numbered")).unwrap();
    let at = bytes
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER)
        .expect("the placeholder is in the component's data");
    bytes[at..at + PLACEHOLDER.len()].copy_from_slice(name.as_bytes());
    bytes
}
