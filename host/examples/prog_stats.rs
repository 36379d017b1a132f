//! Prints `NAME RUN_COUNT RUN_TIME_NS` for each loaded KubeNPU program, as
//! the kernel accounts them while `kernel.bpf_stats_enabled` is 1. The
//! run time excludes the hook's dispatch (trampoline or kprobe), so compare
//! hooks by the workload's wall time per call too.
//!
//! `cargo run -p kubenpu --example prog_stats` (as root)

use aya::programs::loaded_programs;

fn main() -> anyhow::Result<()> {
    for program in loaded_programs() {
        let program = program?;
        let name = program.name_as_str().unwrap_or_default();
        if name.starts_with("kubenpu") {
            println!(
                "{name} {} {}",
                program.run_count(),
                program.run_time().as_nanos()
            );
        }
    }
    Ok(())
}
