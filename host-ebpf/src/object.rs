//! What every BPF object of this crate carries: its licence (the programs
//! use GPL-only helpers, and the benchmarks' programs carry the same one so
//! the comparison is like for like) and a panic handler, which the
//! verifier never lets run.
//!
//! SPDX-License-Identifier: GPL-2.0-only

/// The object's licence, as the kernel reads it.
#[unsafe(no_mangle)]
#[unsafe(link_section = "license")]
pub static LICENSE: [u8; 4] = *b"GPL\0";

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
