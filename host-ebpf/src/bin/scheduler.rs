//! KubeNPU's placement scheduler, for sched_ext: a fair scheduler for
//! every task on the node, plus one rule. A thread that called an
//! accelerator within the last [`HINT_FRESH_NS`] wakes on an idle CPU of
//! that device's NUMA node, if one it may use exists; otherwise it goes
//! where the fair rule puts it, and never waits for the node.
//!
//! SPDX-License-Identifier: GPL-2.0-only
//!
//! The fair rule is weighted virtual time, as in the kernel's example
//! schedulers. A task's virtual time advances by the time it ran, scaled
//! by 100 over its weight, and the runnable task with the least virtual
//! time runs first. The weight is its nice level's (nice 0 is 100)
//! flattened through its cgroups' `cpu.weight` ([`groups`]), so that a
//! pod's CPU request holds against a pod with more threads.
//!
//! A task that slept is brought up to a slice of its own running behind
//! the current virtual time ([`within_reach`]), so that sleeping earns
//! no credit beyond a slice; and a task queues at most [`MAX_LEAD_NS`]
//! (five slices of virtual time) ahead of it. Without
//! that bound, a task of low weight (nice 19 weighs 1) that ran a whole
//! slice was charged a hundred slices, and behind enough busy tasks it
//! waited past the watchdog's timeout, which stopped the scheduler
//! (measured: `khugepaged` after 6 s, under 32 threads waking each other
//! on 4 CPUs). Weights therefore hold only up to that lead, about 25 to 1
//! between two busy tasks with the kernel's 4 ms tick: a busy task of
//! nice 19 beside busy tasks of nice 0 gets more than the kernel's fair
//! class would give it. One slice of lead held cgroups' weights only to
//! about 5 to 1 (measured: 27 % of a CPU for a cgroup whose share was
//! 10 %).
//!
//! - Queues: one per NUMA node, not one for the machine, so CPUs of one
//!   node do not contend for the lock of another's queue. A task queues
//!   on the node of the CPU it last ran on.
//! - A CPU with nothing to run takes from its own node's queue, then from
//!   the others', so no CPU idles while a task it may run waits.
//! - A task queued while a CPU it may use is idle wakes that CPU.
//! - Wake-ups of threads without a hint take the kernel's default
//!   choice of an idle CPU (the previous one, its cache's, its node's).
//! - A task that wakes when no CPU it may use is idle preempts the task
//!   running on a CPU of its queue's node, if that task is ahead of it in
//!   virtual time by more than [`WAKEUP_GRANULARITY_NS`] and has run at
//!   least as long, as the kernel's fair class preempts on wake-up. Without that, a thread that sleeps
//!   between short bursts (as one waiting on a device does) would wait
//!   for a CPU-bound task's slice to end at every wake-up.
//!
//! Affinity is never widened: every choice of CPU is among those the
//! task may use (`cpus_ptr`, which holds its affinity and its cpuset),
//! and the queues only hand a task to a CPU it may run on.
//!
//! The kernel's watchdog reverts every task to the fair class if a
//! runnable task waits past the scheduler's timeout, if the scheduler
//! errs, or if its link closes.
//!
//! Each callback is a program in section `fentry/<member>`, written
//! without aya's attribute macros (whose programs return 0 whatever the
//! function returns; `select_cpu` and `init` return values). The section
//! is only for aya's parser, which refuses `struct_ops/`: the agent loads
//! each program itself, as a struct_ops program for its member. Its
//! context is the same as an fentry program's, the member's arguments in
//! 64-bit slots.
#![no_std]
#![no_main]
#![feature(core_intrinsics)]
#![allow(
    internal_features,
    reason = "atomic_xadd and atomic_xchg are the BPF atomic instructions"
)]

use core::ffi::c_void;

use aya_ebpf::{
    bindings::task_struct,
    helpers::{bpf_ktime_get_ns, bpf_probe_read_kernel_str_bytes},
    macros::map,
    maps::{Array, PerCpuArray},
    programs::FEntryContext,
};
use kubenpu_ebpf::{
    Inflight, NO_NUMA_NODE, SchedulerExit,
    placement::{counter, kfunc},
};
use task_storage::TaskStorage;

#[path = "../groups.rs"]
mod groups;
#[path = "../object.rs"]
mod object;
#[path = "../task_storage.rs"]
#[allow(
    dead_code,
    reason = "the scheduler reads other threads' records, never the current thread's"
)]
mod task_storage;

/// A task's time on a CPU before the scheduler is asked again: the
/// kernel's default slice (`SCX_SLICE_DFL`).
const SLICE_NS: u64 = 20_000_000;
/// The shortest slice: a task of weight below nice 0's runs a slice
/// shortened in proportion, down to this.
const MIN_SLICE_NS: u64 = 1_000_000;
/// The furthest ahead of the current virtual time a task queues.
const MAX_LEAD_NS: u64 = 5 * SLICE_NS;
/// The CPU's own local queue (`SCX_DSQ_LOCAL`).
const DSQ_LOCAL: u64 = 0x8000_0000_0000_0002;
/// `SCX_PICK_IDLE_IN_NODE`: only CPUs of the given node.
const PICK_IDLE_IN_NODE: u64 = 2;
/// `SCX_KICK_IDLE`: wake the CPU only if it is idle.
const KICK_IDLE: u64 = 1;
/// Queues made: node ids from 0 to this, a bound the verifier can see.
const MAX_NODES: u32 = 64;
/// `E2BIG`, as `ops.init` returns it: more NUMA nodes than queues.
const E2BIG: i32 = 7;
/// The weight of a task of nice 0.
const BASE_WEIGHT: u64 = 100;
/// `SCX_ENQ_WAKEUP`: the task is runnable because it woke up.
const ENQ_WAKEUP: u64 = 1;
/// `SCX_KICK_PREEMPT`: end the CPU's current task's slice now.
const KICK_PREEMPT: u64 = 2;
/// How far ahead in virtual time a running task must be for a waking
/// one to preempt it: the kernel's fair class's former wake-up
/// granularity, so that two tasks waking each other do not preempt each
/// other at every turn.
const WAKEUP_GRANULARITY_NS: u64 = 1_000_000;
/// CPUs the per-CPU record of the running task covers: the kernel's
/// largest `NR_CPUS`.
const MAX_CPUS: u32 = 8192;

/// The task this scheduler is running on a CPU, as a waking task's
/// preemption sees it; all zero while the CPU runs none of its tasks.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Running {
    /// Its virtual time when it started.
    vtime: u64,
    /// When it started.
    since_ns: u64,
    /// Its flattened weight, in [`groups::WEIGHT_ONE`]s.
    weight: u64,
}

/// The counting program's per-thread records: the hint.
#[map]
static INFLIGHT: TaskStorage<Inflight> = TaskStorage::pinned();
/// Per-CPU counters, by [`counter`].
#[map]
static PLACEMENT: PerCpuArray<u64> = PerCpuArray::with_max_entries(counter::COUNT, 0);
/// The task running on each CPU, by CPU.
#[map]
static RUNNING: Array<Running> = Array::with_max_entries(MAX_CPUS, 0);
/// Why the scheduler last stopped, written by its `exit` callback.
#[map]
static EXITS: Array<SchedulerExit> = Array::with_max_entries(1, 0);

/// Offsets the agent sets from the running kernel's BTF.
#[unsafe(no_mangle)]
static TASK_CPUS_PTR_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static TASK_DSQ_VTIME_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static TASK_SLICE_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static TASK_WEIGHT_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static EXIT_KIND_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static EXIT_CODE_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static EXIT_REASON_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static EXIT_MSG_OFFSET: u32 = 0;
/// How long after its last counted call a thread's hint places it.
#[unsafe(no_mangle)]
static HINT_FRESH_NS: u64 = 0;

/// The virtual time of the task that last started running: the floor a
/// waking task is brought up to (less a slice).
#[unsafe(no_mangle)]
static mut VTIME_NOW: u64 = 0;

#[inline(always)]
fn global<T: Copy>(value: &'static T) -> T {
    // SAFETY: a read of our own global; volatile so the compiler does not
    // fold in the placeholder value.
    unsafe { core::ptr::read_volatile(value) }
}

/// A field of `p` at byte offset `offset`.
#[inline(always)]
fn field<T>(p: *mut task_struct, offset: &'static u32) -> *mut T {
    // SAFETY: an offset into the task, from its BTF; the verifier checks
    // the access against `struct task_struct`.
    unsafe { p.cast::<u8>().add(global(offset) as usize).cast() }
}

/// Declares a kfunc call through its placeholder helper number, which
/// the agent's loader rewrites into the kfunc's BTF id.
macro_rules! kfunc {
    ($(#[$doc:meta])* fn $name:ident = $placeholder:path, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        #[inline(always)]
        fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: a call with the placeholder number, which the loader
            // rewrites into the kfunc's; the kernel refuses the program
            // if it was not rewritten, and checks the arguments against
            // the kfunc's BTF.
            unsafe {
                let call: unsafe extern "C" fn($($ty),*) -> $ret =
                    core::mem::transmute($placeholder as usize);
                call($($arg),*)
            }
        }
    };
}

kfunc!(
    /// The kernel's default idle-CPU choice; `is_idle` says whether the
    /// CPU it returns was idle (and is now claimed).
    fn select_cpu_dfl = kfunc::SELECT_CPU_DFL,
    (p: *mut task_struct, prev_cpu: i32, wake_flags: u64, is_idle: *mut bool) -> i32
);
kfunc!(
    /// Claims an idle CPU of `cpus_allowed` on `node` (or, without
    /// [`PICK_IDLE_IN_NODE`], the nearest node with one); negative if
    /// none.
    fn pick_idle_cpu_node = kfunc::PICK_IDLE_CPU_NODE,
    (cpus_allowed: *const c_void, node: i32, flags: u64) -> i32
);
kfunc!(
    fn dsq_insert = kfunc::DSQ_INSERT,
    (p: *mut task_struct, dsq: u64, slice: u64, enq_flags: u64) -> ()
);
kfunc!(
    fn dsq_insert_vtime = kfunc::DSQ_INSERT_VTIME,
    (p: *mut task_struct, dsq: u64, slice: u64, vtime: u64, enq_flags: u64) -> ()
);
kfunc!(
    /// Moves the first task of `dsq` this CPU may run to its local
    /// queue. A `bool`: only the low byte is defined.
    fn dsq_move_to_local = kfunc::DSQ_MOVE_TO_LOCAL,
    (dsq: u64) -> u64
);
kfunc!(
    /// Claims an idle CPU of `cpus_allowed` on `node` if there is one,
    /// else names any CPU of them there (with [`PICK_IDLE_IN_NODE`]);
    /// negative if `node` has none of them. With no CPU idle, a test of
    /// whether a task may run on the node.
    fn pick_any_cpu_node = kfunc::PICK_ANY_CPU_NODE,
    (cpus_allowed: *const c_void, node: i32, flags: u64) -> i32
);
kfunc!(fn dsq_nr_queued = kfunc::DSQ_NR_QUEUED, (dsq: u64) -> i32);
kfunc!(fn create_dsq = kfunc::CREATE_DSQ, (dsq: u64, node: i32) -> i32);
kfunc!(fn cpu_node = kfunc::CPU_NODE, (cpu: i32) -> i32);
kfunc!(fn nr_node_ids = kfunc::NR_NODE_IDS, () -> u32);
kfunc!(fn task_cpu = kfunc::TASK_CPU, (p: *mut task_struct) -> i32);
kfunc!(fn kick_cpu = kfunc::KICK_CPU, (cpu: i32, flags: u64) -> ());
kfunc!(
    /// Sets `p`'s virtual time (the kernel deprecates writing it
    /// directly).
    fn set_vtime = kfunc::TASK_SET_DSQ_VTIME,
    (p: *mut task_struct, vtime: u64) -> u64
);
kfunc!(
    /// Sets what is left of `p`'s slice.
    fn set_slice = kfunc::TASK_SET_SLICE,
    (p: *mut task_struct, slice: u64) -> u64
);

/// The CPUs `p` may run on: its affinity within its cpuset.
#[inline(always)]
fn cpus_allowed(p: *mut task_struct) -> *const c_void {
    // SAFETY: `cpus_ptr`, a pointer the kernel keeps valid under RCU,
    // which a scheduler callback holds.
    unsafe { *field::<*const c_void>(p, &TASK_CPUS_PTR_OFFSET) }
}

/// `p`'s virtual time.
#[inline(always)]
fn vtime(p: *mut task_struct) -> u64 {
    // SAFETY: `p`'s own field, read.
    unsafe { *field::<u64>(p, &TASK_DSQ_VTIME_OFFSET) }
}

/// `p`'s weight from its nice level (nice 0 is [`BASE_WEIGHT`]).
#[inline(always)]
fn weight(p: *mut task_struct) -> u64 {
    // SAFETY: `p`'s own field, read.
    u64::from(unsafe { *field::<u32>(p, &TASK_WEIGHT_OFFSET) }).max(1)
}

/// The slice of a task of flattened weight `weight`: [`SLICE_NS`],
/// shortened in proportion to a weight below nice 0's (down to
/// [`MIN_SLICE_NS`]). A task queues at most [`MAX_LEAD_NS`] ahead of the
/// others, so a low weight could not hold it back for long; a short slice
/// is how it gets less of a busy CPU instead.
#[inline(always)]
fn slice_of(weight: u64) -> u64 {
    (SLICE_NS * weight / (BASE_WEIGHT * groups::WEIGHT_ONE)).clamp(MIN_SLICE_NS, SLICE_NS)
}

/// `ran` nanoseconds in virtual time, for a task of flattened weight
/// `weight`. The time is capped at 2^40 ns (18 minutes, beyond any lead
/// [`within_reach`] lets a task keep), so that the product cannot
/// overflow.
#[inline(always)]
fn virtual_ns(ran: u64, weight: u64) -> u64 {
    ran.min(1 << 40) * BASE_WEIGHT * groups::WEIGHT_ONE / weight.max(1)
}

/// `vtime`, of a task of flattened weight `weight`, brought within reach
/// of the current virtual time: a task that slept earns no more credit
/// than a slice of its own running (at most [`MAX_LEAD_NS`]), and one of
/// low weight waits no more than [`MAX_LEAD_NS`] ahead (module doc).
///
/// The credit is the task's own slice in virtual time, not a slice of
/// virtual time: flattened weights are small (a pod's threads share its
/// weight), so virtual time runs fast, and a fixed credit would shrink to
/// a fraction of a slice of the waking thread's running.
#[inline(always)]
fn within_reach(vtime: u64, weight: u64) -> u64 {
    let now = vtime_now();
    let credit = virtual_ns(SLICE_NS, weight).min(MAX_LEAD_NS);
    // `max` then `min`, not `clamp`, whose check of its bounds would be a
    // panic path the verifier refuses.
    vtime.max(now.saturating_sub(credit)).min(now + MAX_LEAD_NS)
}

#[inline(always)]
fn vtime_now() -> u64 {
    // SAFETY: our own global; a racing update loses at most one
    // advance, which the next task to run makes again.
    unsafe { core::ptr::read_volatile(&raw const VTIME_NOW) }
}

/// The node of the device `p` called last, if it did so within
/// [`HINT_FRESH_NS`].
#[inline(always)]
fn hinted_node(p: *mut task_struct) -> Option<i32> {
    let record = INFLIGHT.of(p, 0)?;
    // SAFETY: the thread's record; its own thread may be writing it on
    // another CPU, and a torn read only gives a stale hint.
    let (node, called_ns) = unsafe { ((*record).numa_node, (*record).start_ns) };
    if node == NO_NUMA_NODE {
        return None;
    }
    // SAFETY: a helper without arguments.
    let age = unsafe { bpf_ktime_get_ns() }.saturating_sub(called_ns);
    (age <= global(&HINT_FRESH_NS)).then_some(node as i32)
}

#[inline(always)]
fn bump(index: u32) {
    if let Some(count) = PLACEMENT.get_ptr_mut(index) {
        // SAFETY: this CPU's own slot.
        unsafe { *count += 1 };
    }
}

/// `ops.select_cpu`: where a waking task goes.
#[unsafe(link_section = "fentry/select_cpu")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_select_cpu(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let p: *mut task_struct = ctx.arg(0);
    let prev_cpu: i32 = ctx.arg(1);
    let wake_flags: u64 = ctx.arg(2);
    if let Some(node) = hinted_node(p) {
        let cpu = pick_idle_cpu_node(cpus_allowed(p), node, PICK_IDLE_IN_NODE);
        if cpu >= 0 {
            dsq_insert(p, DSQ_LOCAL, SLICE_NS, 0);
            bump(counter::PLACED);
            return cpu;
        }
        bump(counter::FELL_BACK);
    }
    let mut is_idle = false;
    let cpu = select_cpu_dfl(p, prev_cpu, wake_flags, &mut is_idle);
    if is_idle {
        dsq_insert(p, DSQ_LOCAL, SLICE_NS, 0);
    }
    cpu
}

/// `ops.enqueue`: a runnable task joins a node's queue in virtual-time
/// order. The node it wants: a thread with a fresh hint its device's;
/// any other task the node with the shortest queue (its own on a tie),
/// so that the queues stay even and the threads placed near their
/// devices wait no longer than they would anywhere.
///
/// - If a CPU it may use is idle (the wanted node's first, then the
///   nearest), it joins that CPU's node and the CPU is woken: no CPU
///   idles while a task it may run waits.
/// - Else it joins the wanted node if it may use a CPU there, else its
///   own CPU's; a waking task then preempts a task running there that is
///   well ahead of it ([`preempt_for`]).
#[unsafe(link_section = "fentry/enqueue")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_enqueue(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let p: *mut task_struct = ctx.arg(0);
    let enq_flags: u64 = ctx.arg(1);
    let here = cpu_node(task_cpu(p));
    let hinted = hinted_node(p);
    let wanted = match hinted {
        Some(device) => device,
        None => shortest_queue(here),
    };
    let idle = pick_idle_cpu_node(cpus_allowed(p), wanted, 0);
    // With no CPU idle, one of the wanted node's it may use, if any. One
    // that went idle since is claimed by the pick: it is woken below.
    let near = if idle >= 0 {
        -1
    } else {
        pick_any_cpu_node(cpus_allowed(p), wanted, PICK_IDLE_IN_NODE)
    };
    let node = if idle >= 0 {
        cpu_node(idle)
    } else if near >= 0 {
        wanted
    } else {
        here
    };
    if hinted.is_some() {
        bump(if node == wanted {
            counter::QUEUED_NEAR
        } else {
            counter::QUEUED_AWAY
        });
    }
    let own = within_reach(vtime(p), groups::flattened(p, weight(p)));
    dsq_insert_vtime(p, node as u64, SLICE_NS, own, enq_flags);
    if idle >= 0 {
        kick_cpu(idle, KICK_IDLE);
    } else {
        if near >= 0 {
            kick_cpu(near, KICK_IDLE);
        }
        if enq_flags & ENQ_WAKEUP != 0 {
            preempt_for(p, own, node, near);
        }
    }
    0
}

/// Ends the slice of the task furthest ahead in virtual time of two
/// running on `node` (the waking task's last CPU, if there, and `other`,
/// one of the node's CPUs it may use, taken in turn, or -1), if it is
/// ahead of `own` by more than [`WAKEUP_GRANULARITY_NS`]. Two candidates,
/// not the node's every CPU, so that a wake-up costs the same on a
/// 256-CPU node; the CPU whose task is preempted then takes the first
/// task of its node's queue it may run.
#[inline(always)]
fn preempt_for(p: *mut task_struct, own: u64, node: i32, other: i32) {
    let last = task_cpu(p);
    let last_ahead = if cpu_node(last) == node {
        running_vtime(last)
    } else {
        0
    };
    let other_ahead = if other >= 0 { running_vtime(other) } else { 0 };
    let (victim, ahead) = if last_ahead >= other_ahead {
        (last, last_ahead)
    } else {
        (other, other_ahead)
    };
    if ahead > own + WAKEUP_GRANULARITY_NS {
        kick_cpu(victim, KICK_PREEMPT);
    }
}

/// The virtual time the task running on `cpu` has reached; 0 if the CPU
/// runs none of this scheduler's tasks, or one that has run less than
/// [`WAKEUP_GRANULARITY_NS`] since it started, which is not preempted:
/// threads that wake each other, each running a moment, would otherwise
/// preempt each other at every wake-up, for nothing (measured: 1.46
/// switches per wake-up against 1.03, BENCHMARKS.md).
#[inline(always)]
fn running_vtime(cpu: i32) -> u64 {
    let Some(running) = RUNNING.get(cpu as u32) else {
        return 0;
    };
    // SAFETY: a helper without arguments.
    let ran = unsafe { bpf_ktime_get_ns() }.saturating_sub(running.since_ns);
    if running.weight == 0 || ran < WAKEUP_GRANULARITY_NS {
        return 0;
    }
    running.vtime + virtual_ns(ran, running.weight)
}

/// The node whose queue holds the fewest tasks, `here` on a tie.
#[inline(always)]
fn shortest_queue(here: i32) -> i32 {
    let nodes = nr_node_ids();
    let mut best = here;
    let mut least = dsq_nr_queued(here as u64);
    for node in 0..MAX_NODES {
        if node >= nodes {
            break;
        }
        if node as i32 == here {
            continue;
        }
        let queued = dsq_nr_queued(u64::from(node));
        if queued < least {
            best = node as i32;
            least = queued;
        }
    }
    best
}

/// `ops.dispatch`: a CPU with nothing to run takes the first task it may
/// run from its node's queue, else from another node's.
#[unsafe(link_section = "fentry/dispatch")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_dispatch(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let cpu: i32 = ctx.arg(0);
    let home = cpu_node(cpu);
    if dsq_move_to_local(home as u64) & 0xff != 0 {
        return 0;
    }
    let nodes = nr_node_ids();
    for node in 0..MAX_NODES {
        if node >= nodes {
            break;
        }
        if node as i32 != home && dsq_move_to_local(u64::from(node)) & 0xff != 0 {
            return 0;
        }
    }
    0
}

/// `ops.running`: the task starting to run sets the current virtual time,
/// and gets its slice, by its flattened weight. Tasks are queued with a
/// whole slice: the slice is set here, once per run, where the weight is
/// needed anyway for the charge in `stopping`.
#[unsafe(link_section = "fentry/running")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_running(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let p: *mut task_struct = ctx.arg(0);
    // A task placed straight on an idle CPU skipped `enqueue`'s bound: it
    // gets it here, so that it cannot drag the current virtual time on.
    let weight = groups::flattened(p, weight(p));
    let own = within_reach(vtime(p), weight);
    if own != vtime(p) {
        set_vtime(p, own);
    }
    if own > vtime_now() {
        // SAFETY: our own global.
        unsafe { core::ptr::write_volatile(&raw mut VTIME_NOW, own) };
    }
    // `p`'s CPU, not this one: sched_ext also calls `running` and
    // `stopping` from the CPU that changes a running task's weight,
    // affinity or cgroup.
    let cpu = task_cpu(p) as u32;
    set_slice(p, slice_of(weight));
    // SAFETY: a helper without arguments.
    let now = unsafe { bpf_ktime_get_ns() };
    set_running(
        cpu,
        Running {
            vtime: own,
            since_ns: now,
            weight,
        },
    );
    0
}

/// Records the task running on `cpu`, for waking tasks to compare with.
#[inline(always)]
fn set_running(cpu: u32, running: Running) {
    if let Some(slot) = RUNNING.get_ptr_mut(cpu) {
        // SAFETY: the slot of the CPU `p` runs on, written under that
        // CPU's run-queue lock; another CPU reading it mid-write sees a
        // stale task, and at worst preempts or spares it once.
        unsafe { *slot = running };
    }
}

/// `ops.stopping`: the task is charged the time it ran, scaled by its
/// weight. The time is the clock's since `running`, not the slice used
/// up: a preempted task's slice is zeroed, and charging it a whole slice
/// would rob CPU-bound tasks of the time that waking tasks take.
#[unsafe(link_section = "fentry/stopping")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_stopping(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let p: *mut task_struct = ctx.arg(0);
    // `p`'s CPU, as in `running`.
    let cpu = task_cpu(p) as u32;
    let started = RUNNING.get(cpu).copied().filter(|r| r.weight != 0);
    let charge = match started {
        // SAFETY: a helper without arguments.
        Some(r) => virtual_ns(
            unsafe { bpf_ktime_get_ns() }.saturating_sub(r.since_ns),
            r.weight,
        ),
        // No record of its start (it started before this scheduler was
        // attached): what it used of its slice.
        None => {
            // SAFETY: `p`'s own field, read.
            let left = unsafe { *field::<u64>(p, &TASK_SLICE_OFFSET) };
            virtual_ns(
                SLICE_NS.saturating_sub(left),
                groups::flattened(p, weight(p)),
            )
        }
    };
    set_vtime(p, vtime(p) + charge);
    set_running(cpu, Running::default());
    0
}

/// `ops.runnable`: the task's weight joins its cgroup's load.
#[unsafe(link_section = "fentry/runnable")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_runnable(context: *mut c_void) -> i32 {
    let p: *mut task_struct = FEntryContext::new(context).arg(0);
    groups::account(p, weight(p), true);
    0
}

/// `ops.quiescent`: the task's weight leaves its cgroup's load.
#[unsafe(link_section = "fentry/quiescent")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_quiescent(context: *mut c_void) -> i32 {
    let p: *mut task_struct = FEntryContext::new(context).arg(0);
    groups::account(p, weight(p), false);
    0
}

/// `ops.cgroup_init`: a cgroup of the `cpu` controller appeared (or was
/// there when the scheduler was attached).
#[unsafe(link_section = "fentry/cgroup_init")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_cgroup_init(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    if let groups::GroupOutcome::Untracked = groups::init(ctx.arg(0), ctx.arg(1)) {
        bump(counter::UNTRACKED_CGROUPS);
    }
    0
}

/// `ops.cgroup_exit`: a cgroup went. One that still had load was
/// miscounted (it has no task left): counted, for the agent to show.
#[unsafe(link_section = "fentry/cgroup_exit")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_cgroup_exit(context: *mut c_void) -> i32 {
    if let groups::GroupOutcome::Miscounted = groups::exit(FEntryContext::new(context).arg(0)) {
        bump(counter::MISCOUNTED_CGROUPS);
    }
    0
}

/// `ops.cgroup_set_weight`: a cgroup's `cpu.weight` changed.
#[unsafe(link_section = "fentry/cgroup_set_weight")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_cgroup_set_weight(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    groups::set_weight(ctx.arg(0), ctx.arg(1));
    0
}

/// `ops.enable`: a task joining the scheduler starts at the current
/// virtual time.
#[unsafe(link_section = "fentry/enable")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_enable(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let p: *mut task_struct = ctx.arg(0);
    set_vtime(p, vtime_now());
    0
}

/// `ops.init`: one queue per NUMA node, its id the node's; a machine of
/// more than [`MAX_NODES`] nodes is refused.
#[unsafe(link_section = "fentry/init")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_init(context: *mut c_void) -> i32 {
    let _ctx = FEntryContext::new(context);
    let nodes = nr_node_ids();
    if nodes > MAX_NODES {
        // A node without a queue would be an error at its first task,
        // which would stop the scheduler mid-run: refuse it at the start
        // instead (the agent then says so, and stays on hints).
        return -E2BIG;
    }
    for node in 0..MAX_NODES {
        if node >= nodes {
            break;
        }
        let made = create_dsq(u64::from(node), node as i32);
        if made < 0 {
            return made;
        }
    }
    0
}

/// `ops.exit`: keeps why the scheduler stopped, for the agent to log.
#[unsafe(link_section = "fentry/exit")]
#[unsafe(no_mangle)]
pub extern "C" fn kubenpu_exit(context: *mut c_void) -> i32 {
    let ctx = FEntryContext::new(context);
    let info: *const u8 = ctx.arg(0);
    let Some(exit) = EXITS.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: `info` is the kernel's `struct scx_exit_info`, read at
    // offsets from its BTF; the strings are read with the helper, which
    // stops at their end or at our buffer's.
    unsafe {
        let exit = &mut *exit;
        exit.kind = *(info.add(global(&EXIT_KIND_OFFSET) as usize) as *const u32);
        exit.code = *(info.add(global(&EXIT_CODE_OFFSET) as usize) as *const i64);
        let reason = *(info.add(global(&EXIT_REASON_OFFSET) as usize) as *const *const u8);
        let message = *(info.add(global(&EXIT_MSG_OFFSET) as usize) as *const *const u8);
        let _ = bpf_probe_read_kernel_str_bytes(reason, &mut exit.reason);
        let _ = bpf_probe_read_kernel_str_bytes(message, &mut exit.message);
        exit.exits += 1;
    }
    0
}
