//! The one wasmtime configuration plugins are compiled with. The build
//! script compiles the built-in vendors ahead of time with it (for the
//! target, with no CPU features inferred), and the agent loads them with
//! it, so the two cannot drift apart: wasmtime refuses precompiled code
//! whose settings differ from the engine's. Only wasmtime is used here,
//! because `build.rs` includes this file too.

/// Fuel metering (a budget per call), the component model, and full
/// backtraces for a plugin's traps. The stack limit is a runtime setting
/// and lives with the sandbox.
pub fn config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config
        .consume_fuel(true)
        .wasm_backtrace_max_frames(None)
        .wasm_component_model(true);
    config
}
