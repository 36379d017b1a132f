//! The exit side: as a counted call returns, add how it ended (failed,
//! or for a wait busy or timed out: [`ending`]), the time it spent inside
//! `drm_ioctl` and the bytes it allocated to its counter, and its duration
//! to the histogram. Calls the entry programs
//! did not keep find their thread's record idle (or none) and return.
//!
//! A call that returns `-ERESTART*` was interrupted by a signal; the
//! kernel runs it again with the same arguments after the handler (or
//! userspace, given EINTR, retries it, as libdrm does). It is one call: its
//! time so far counts, it is not a failure, and its record stays for the
//! restart to continue. If the thread's next counted call is another one,
//! the interrupted call was given up (EINTR): it is concluded as failed.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use aya_ebpf::helpers::bpf_ktime_get_ns;
use kubenpu_ebpf::{CountKey, Inflight, Loss, ending, inflight};

use crate::{Field, INFLIGHT, add, counter, lose, record_duration, value_field};

/// `-ERESTARTSYS`, `-ERESTARTNOINTR`, `-ERESTARTNOHAND` and
/// `-ERESTART_RESTARTBLOCK`: kernel-internal, never seen by userspace.
/// (515, `ENOIOCTLCMD`, is not a restart: it reaches the caller as
/// `ENOTTY`.)
#[inline(always)]
fn restarts(ret: i64) -> bool {
    matches!(-ret, 512..=514 | 516)
}

/// fexit on `drm_ioctl`.
#[aya_ebpf::macros::fexit(function = "drm_ioctl")]
pub fn kubenpu_fexit(ctx: aya_ebpf::programs::FExitContext) -> u32 {
    // drm_ioctl has three arguments; the slot after them is its `long`
    // return value.
    let ret: i64 = ctx.arg(3);
    finish(ret);
    0
}

/// A return probe on `drm_ioctl` (a kretprobe, or a kprobe.multi return
/// link).
#[aya_ebpf::macros::kretprobe]
pub fn kubenpu_kretprobe(ctx: aya_ebpf::programs::RetProbeContext) -> u32 {
    finish(ctx.ret::<i64>());
    0
}

/// The exit side of a call that returned `ret`.
#[inline(always)]
pub fn finish(ret: i64) {
    let Some(record) = INFLIGHT.current() else {
        return;
    };
    // SAFETY: this thread's record; only this thread writes it.
    let call: Inflight = unsafe { *record };
    if call.state != inflight::INSIDE {
        return;
    }
    // SAFETY: a helper without arguments.
    let ns = unsafe { bpf_ktime_get_ns() }.saturating_sub(call.start_ns);
    if restarts(ret) {
        // SAFETY: as above.
        unsafe {
            (*record).state = inflight::RESTARTING;
            (*record).earlier_ns = call.earlier_ns + ns;
        }
        measure(call.key, ending::DONE, ns, 0);
        return;
    }
    // SAFETY: as above.
    unsafe { (*record).state = inflight::IDLE };
    let bytes = match (ret >= 0, call.size_at) {
        (false, _) => 0,
        (true, 0) => call.bytes,
        (true, at) => crate::filter::read_user(at, call.size_width).unwrap_or_else(|| {
            lose(Loss::SizeUnread);
            0
        }),
    };
    conclude(&call, ending::of(call.kind, ret), ns, bytes);
}

/// Adds a call's last run to its counter and its whole time to the
/// histogram: how it `ended` (an [`ending`]), the run's `ns` and the
/// `bytes` it allocated.
#[inline(always)]
pub fn conclude(call: &Inflight, ended: u8, ns: u64, bytes: u64) {
    measure(call.key, ended, ns, bytes);
    record_duration(call.key.dev, call.kind, call.earlier_ns + ns);
}

/// Adds a return's measurements to its counter (made anew, with no call,
/// if it went while the call ran: the cgroup was found gone and folded).
#[inline(always)]
fn measure(key: CountKey, ended: u8, ns: u64, bytes: u64) {
    let Some(value) = counter(key) else {
        lose(Loss::Unmeasured);
        return;
    };
    let outcome = match ended {
        ending::FAILED => Some(Field::Failed),
        ending::BUSY => Some(Field::Busy),
        ending::TIMED_OUT => Some(Field::TimedOut),
        _ => None,
    };
    if let Some(field) = outcome {
        add(value_field(value, field), 1);
    }
    add(value_field(value, Field::Ns), ns);
    if bytes != 0 {
        add(value_field(value, Field::Bytes), bytes);
    }
}
