//! The agent's `bpf(2)` writes to live maps, made so that no thread's
//! call is skipped while one is under way.
//!
//! While the kernel writes, deletes or copies a map element for a
//! `bpf(2)` caller, it holds that CPU's `bpf_prog_active`, and the kernel
//! skips every kprobe-type program on the CPU until it drops it. It lets
//! the caller be preempted there. On a kernel that preempts kernel code, a
//! write preempted by a busy thread on the same CPU skips that thread's
//! calls until the writer runs again: a burst of them, a tick's worth,
//! counted as `recursion` losses.
//!
//! For the write alone, the writing thread runs as `SCHED_FIFO` at the
//! highest priority: no fair, idle, batch, sched_ext or lower real-time
//! task can preempt it, so no thread that could make a call runs on its
//! CPU while the kernel holds the flag (interrupts do not make calls; a
//! deadline task still could). That needs `CAP_SYS_NICE` (and, on a
//! kernel with `CONFIG_RT_GROUP_SCHED`, real-time runtime for the agent's
//! cgroup, which the warning names too). Without it the
//! write is made all the same, and the agent says once what that can
//! cost.
//!
//! Only single-element commands are raised: short and bounded. Copies of a
//! whole map with `bpf(2)`, where the kernel refused the map iterators,
//! are not, and say so where the agent reports how it reads.

use std::{io, sync::Once};

/// Runs `write` (one `bpf(2)` element command) with the calling thread
/// raised to `SCHED_FIFO`, then puts the thread's policy back.
pub fn unpreempted<T>(write: impl FnOnce() -> T) -> T {
    let _raised = Raised::enter();
    write()
}

/// The calling thread raised to `SCHED_FIFO` until dropped, with the
/// policy to return to; nothing where it already was real-time or could
/// not be raised.
struct Raised {
    previous: Option<libc::c_int>,
}

impl Raised {
    fn enter() -> Self {
        // SAFETY: no arguments but the calling thread (0).
        let previous = unsafe { libc::syscall(libc::SYS_sched_getscheduler, 0) } as libc::c_int;
        let policy = previous & !libc::SCHED_RESET_ON_FORK;
        if previous < 0 || policy == libc::SCHED_FIFO || policy == libc::SCHED_RR {
            return Self { previous: None };
        }
        // SAFETY: a plain query.
        let top = unsafe { libc::sched_get_priority_max(libc::SCHED_FIFO) };
        match set_policy(libc::SCHED_FIFO, top) {
            Ok(()) => Self {
                previous: Some(previous),
            },
            Err(e) => {
                static SAID: Once = Once::new();
                SAID.call_once(|| {
                    tracing::warn!(
                        "cannot run map writes as SCHED_FIFO ({e}): where the kernel preempts one, a busy thread's calls on that CPU are skipped until it resumes, counted as recursion losses; grant CAP_SYS_NICE to prevent it (and, where the kernel has CONFIG_RT_GROUP_SCHED, real-time runtime to the agent's cgroup: cpu.rt_runtime_us)"
                    );
                });
                Self { previous: None }
            }
        }
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // Back to the thread's own policy; its nice value was kept.
            let _ = set_policy(previous, 0);
        }
    }
}

/// Sets the calling thread's policy with the raw system call: musl's
/// `sched_setscheduler` is a stub, and glibc's acts on the thread anyway.
fn set_policy(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    // The kernel's `struct sched_param` is this one int (libc's may carry
    // more fields, which the kernel does not read).
    let param: libc::c_int = priority;
    // SAFETY: `param` outlives the call, which only reads one int.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            0,
            policy,
            std::ptr::from_ref(&param),
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> libc::c_int {
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_sched_getscheduler, 0) as libc::c_int }
    }

    /// Whether CAP_SYS_NICE (bit 23) is in this process's effective set.
    fn has_sys_nice() -> bool {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let effective = status
            .lines()
            .find_map(|line| line.strip_prefix("CapEff:"))
            .unwrap();
        u64::from_str_radix(effective.trim(), 16).unwrap() & (1 << 23) != 0
    }

    #[test]
    fn the_thread_is_raised_for_the_write_alone_where_allowed() {
        let before = policy();
        let during = unpreempted(policy);
        assert_eq!(policy(), before, "the thread's policy is put back");
        if has_sys_nice() {
            assert_eq!(during, libc::SCHED_FIFO);
        } else {
            assert_eq!(during, before, "no raise without the privilege");
        }
    }
}
