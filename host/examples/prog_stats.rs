//! Prints `NAME RUN_COUNT RUN_TIME_NS` for each loaded KubeNPU program, as
//! the kernel accounts them while `kernel.bpf_stats_enabled` is 1. The
//! run time excludes the hook's dispatch (trampoline or kprobe), so compare
//! hooks by the workload's wall time per call too.
//!
//! A program unloaded between the kernel's listing and its reading (the
//! agent's short-lived ones, as it sweeps) is skipped: it is not one
//! being measured.
//!
//! `cargo run -p kubenpu --example prog_stats` (as root)

use aya::programs::{ProgramError, loaded_programs};

fn main() -> anyhow::Result<()> {
    for program in loaded_programs() {
        let program = match program {
            Err(ProgramError::SyscallError(e))
                if e.io_error.raw_os_error() == Some(libc::ENOENT) =>
            {
                continue;
            }
            other => other?,
        };
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
