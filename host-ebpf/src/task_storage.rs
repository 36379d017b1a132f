//! Task-local storage (`BPF_MAP_TYPE_TASK_STORAGE`), which aya-ebpf 0.2
//! does not offer: one value per thread, kept in the thread itself and
//! freed with it. Finding it is a pointer walk from the current task, not
//! a hash lookup, and keeping it is a write, not a locked insert and
//! delete per call.
//!
//! The kernel creates such a map only with BTF for its key and value,
//! which a legacy map definition cannot carry: the agent creates and pins
//! it before loading, and aya adopts it by name.
//!
//! SPDX-License-Identifier: GPL-2.0-only

use core::{cell::UnsafeCell, marker::PhantomData, ptr};

use aya_ebpf::{
    bindings::{
        BPF_F_NO_PREALLOC, BPF_LOCAL_STORAGE_GET_F_CREATE, bpf_map_def,
        bpf_map_type::BPF_MAP_TYPE_TASK_STORAGE, task_struct,
    },
    helpers::{bpf_get_current_task_btf, bpf_task_storage_get},
};

/// aya's `PinningType::ByName`: pinned under the map's name.
const PIN_BY_NAME: u32 = 1;

/// A task storage map of `V`, pinned by name.
#[repr(transparent)]
pub struct TaskStorage<V> {
    def: UnsafeCell<bpf_map_def>,
    value: PhantomData<V>,
}

// SAFETY: the definition is only read, by the loader; the kernel owns the
// values.
unsafe impl<V> Sync for TaskStorage<V> {}

impl<V> TaskStorage<V> {
    /// The definition: a 4-byte key (the kernel's rule for local storage),
    /// no entries to preallocate.
    pub const fn pinned() -> Self {
        Self {
            def: UnsafeCell::new(bpf_map_def {
                type_: BPF_MAP_TYPE_TASK_STORAGE,
                key_size: 4,
                value_size: size_of::<V>() as u32,
                max_entries: 0,
                map_flags: BPF_F_NO_PREALLOC,
                id: 0,
                pinning: PIN_BY_NAME,
            }),
            value: PhantomData,
        }
    }

    /// The calling thread's value, if it has one.
    #[inline(always)]
    pub fn current(&self) -> Option<*mut V> {
        // SAFETY: a helper without arguments.
        self.of(unsafe { bpf_get_current_task_btf() }, 0)
    }

    /// The calling thread's value, made (zeroed) if it has none; `None`
    /// only if the kernel could not allocate it.
    #[inline(always)]
    pub fn current_or_new(&self) -> Option<*mut V> {
        self.of(
            // SAFETY: a helper without arguments.
            unsafe { bpf_get_current_task_btf() },
            u64::from(BPF_LOCAL_STORAGE_GET_F_CREATE),
        )
    }

    /// `task`'s value, made (zeroed) if `flags` asks and it has none.
    /// `task` must be a trusted BTF pointer to a `task_struct` (the
    /// current task's, or a scheduler callback's argument): the verifier
    /// refuses any other.
    #[inline(always)]
    pub fn of(&self, task: *mut task_struct, flags: u64) -> Option<*mut V> {
        // SAFETY: the map's definition and a task's BTF pointer, as the
        // helper takes them.
        let value =
            unsafe { bpf_task_storage_get(self.def.get().cast(), task, ptr::null_mut(), flags) };
        (!value.is_null()).then_some(value.cast())
    }
}
