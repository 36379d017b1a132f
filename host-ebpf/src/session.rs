//! The kprobe session on `drm_ioctl` (Linux 6.10): one program runs as
//! the call enters and, only if it returned 0 then, as the call returns.
//! A call the vendor tables do not keep returns 1 at entry, so nothing
//! runs at its return: the kprobe types' exit program runs for every call
//! just to find no in-flight record.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use core::ffi::c_void;

use aya_ebpf::{
    EbpfContext as _,
    programs::{ProbeContext, RetProbeContext},
};
use kubenpu_ebpf::SESSION_IS_RETURN_CALL;

use crate::{enter, exit, filter};

/// Both sides of a kprobe session.
#[aya_ebpf::macros::kprobe]
pub fn kubenpu_session(ctx: ProbeContext) -> u32 {
    if is_return(&ctx) {
        // The same pt_regs, now holding the return value.
        exit::finish(RetProbeContext::new(ctx.as_ptr()).ret::<i64>());
        return 0;
    }
    if let Some(call) = filter::kprobe_call(&ctx)
        && let Some(kept) = filter::tracked(&call)
    {
        enter(&call, &kept);
        return 0;
    }
    1
}

/// `bpf_session_is_return(ctx)`: whether the session runs at the return.
/// Called through [`SESSION_IS_RETURN_CALL`], which the agent's loader
/// turns into the kfunc call. The context is passed because kernels from
/// 7.0 take it, and older ones ignore it. The kfunc returns a `bool`:
/// only its low byte is defined.
#[inline(always)]
fn is_return(ctx: &ProbeContext) -> bool {
    // SAFETY: a call instruction with the placeholder number, which the
    // loader rewrites into the kfunc's; the kernel refuses the program if
    // it was not rewritten.
    let kfunc: unsafe extern "C" fn(*mut c_void) -> u64 =
        unsafe { core::mem::transmute(SESSION_IS_RETURN_CALL as usize) };
    // SAFETY: as above, with the program's own context.
    let returning = unsafe { kfunc(ctx.as_ptr()) };
    returning & 0xff != 0
}
