//! The kernfs names of the current task's cgroup and its ancestors,
//! recorded once per cgroup, when its first call is counted: the agent
//! places the cgroup from them even if it is gone before the agent could
//! look it up (a container that lived a millisecond, or ran while the
//! agent was stopped).
//!
//! `current->cgroups->dfl_cgrp->kn`, then `name` and the parent link of
//! each kernfs node, at offsets the agent resolves from the kernel's BTF.
//! Probe reads throughout: this runs once per cgroup, not per call.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_NOEXIST},
    helpers::{bpf_get_current_task, bpf_probe_read_kernel, bpf_probe_read_kernel_str_bytes},
    macros::map,
    maps::{HashMap, PerCpuArray},
};
use kubenpu_ebpf::{CgroupPath, PATH_DEPTH};

/// Set by the agent: 1 if the offsets below were found in the kernel's
/// BTF, else nothing is recorded.
#[unsafe(no_mangle)]
static CGROUP_NAMES: u32 = 0;
#[unsafe(no_mangle)]
static TASK_CGROUPS_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static CSS_SET_DFL_CGRP_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static CGROUP_KN_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static KN_NAME_OFFSET: u32 = 0;
#[unsafe(no_mangle)]
static KN_PARENT_OFFSET: u32 = 0;

/// Default capacity; the agent makes it `--max-counters` (every cgroup
/// has a counter). Allocated as entries come: each is over 1 KiB.
#[map]
static NAMES: HashMap<u64, CgroupPath> = HashMap::pinned(16384, BPF_F_NO_PREALLOC);
/// Room to build one path: too large for the 512-byte stack.
#[map]
static SCRATCH: PerCpuArray<CgroupPath> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn global(value: &'static u32) -> usize {
    // SAFETY: a read of our own read-only global; volatile so the
    // compiler does not fold in the placeholder value.
    unsafe { core::ptr::read_volatile(value) as usize }
}

/// Reads the pointer at `base + offset` in kernel memory.
#[inline(always)]
fn pointer_at(base: *const u8, offset: &'static u32) -> Option<*const u8> {
    // SAFETY: a probe read; a fault returns an error.
    let read = unsafe { bpf_probe_read_kernel(base.add(global(offset)) as *const *const u8) };
    read.ok().filter(|p| !p.is_null())
}

/// Records the path of the current task's cgroup, `cgroup_id`, unless it
/// is recorded already.
#[inline(always)]
pub fn record(cgroup_id: u64) {
    // SAFETY (lookup): map values are only read.
    if global(&CGROUP_NAMES) == 0 || unsafe { NAMES.get(cgroup_id) }.is_some() {
        return;
    }
    // SAFETY: a map value pointer for this program run; the per-CPU slot
    // is this program's alone while it runs (the kernel does not run it
    // twice at once on one CPU).
    let Some(path) = SCRATCH.get_ptr_mut(0).map(|p| unsafe { &mut *p }) else {
        return;
    };
    // SAFETY: a helper without arguments.
    let task = unsafe { bpf_get_current_task() } as *const u8;
    let Some(mut node) = pointer_at(task, &TASK_CGROUPS_OFFSET)
        .and_then(|css_set| pointer_at(css_set, &CSS_SET_DFL_CGRP_OFFSET))
        .and_then(|cgroup| pointer_at(cgroup, &CGROUP_KN_OFFSET))
    else {
        return;
    };
    path.depth = 0;
    path.truncated = 1;
    for level in 0..PATH_DEPTH {
        // The root's node has no parent, and its name is not kept.
        let Some(parent) = pointer_at(node, &KN_PARENT_OFFSET) else {
            path.truncated = 0;
            break;
        };
        let name = &mut path.names[level];
        name[0] = 0;
        if let Some(text) = pointer_at(node, &KN_NAME_OFFSET) {
            // SAFETY: a probe read into the slot, bounded by its length.
            let _ = unsafe { bpf_probe_read_kernel_str_bytes(text, name) };
        }
        path.depth = level as u32 + 1;
        node = parent;
    }
    // By reference: a copy (over 1 KiB) would not fit the stack. Another
    // CPU may have recorded it meanwhile: either copy is right.
    let recorded: &CgroupPath = path;
    let _ = NAMES.insert(cgroup_id, recorded, BPF_NOEXIST as u64);
}
