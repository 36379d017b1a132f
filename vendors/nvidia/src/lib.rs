//! KubeNPU vendor plugin for NVIDIA GPUs: the `nvidia` kernel module's
//! resource manager (RM), reached through `/dev/nvidiactl` and
//! `/dev/nvidia<N>`, and the `nvidia-uvm` module's unified memory,
//! through `/dev/nvidia-uvm`. Neither is a DRM driver (`nvidia-drm` is a
//! separate module for display, not claimed here), and neither makes a
//! sysfs device for its nodes: nvidia-modprobe (or the container runtime)
//! makes them with `mknod`, so they are found by the majors
//! `/proc/devices` lists as `nvidia` (195, whose nodes include
//! `nvidiactl`, 195:255) and `nvidia-uvm` (dynamic).
//!
//! The counts are allocations, not a utilisation figure. CUDA launches
//! work without an ioctl, by writing GPFIFO entries and ringing a
//! doorbell in memory it has mapped, and waits by polling semaphores in
//! memory or `poll()` on the fd; neither reaches the tables here. The one
//! submit counted is UVM's page migration, which hands the copy engines
//! work. Most RM allocations are made on the `nvidiactl` fd, so they count
//! against that node, not against one GPU. RM and UVM report a failure in
//! the argument (`status`, `rmStatus`) and return 0 from the ioctl, so a
//! call that fails (out of memory, say) counts as a successful one.
//!
//! Numbers from `uapi/`, verbatim excerpts of NVIDIA/open-gpu-kernel-modules
//! at df1c9a3de2be4b130f4fc7680f7198193d8ac6ad (version 595.45.04, MIT):
//! `nv_escape.h`, `nv-unix-nvos-params-wrappers.h`
//! (`src/nvidia/arch/nvalloc/unix/include/`); `nv-ioctl-numbers.h`,
//! `nv-ioctl.h`, `nvCpuUuid.h` (`kernel-open/common/inc/`); `nvos.h`,
//! `nvtypes.h`, `nvstatus.h`, `nvlimits.h` and the class headers `cl*.h`
//! (`src/common/sdk/nvidia/inc/`, `class/`); `uvm_ioctl.h`, `uvm_types.h`
//! (`kernel-open/nvidia-uvm/`). The `nvtypes.h` excerpt keeps the typedefs
//! GCC and Clang take on 64-bit Linux, where `NvP64` is a pointer. The
//! unit tests compile them and check every command, every field's offset
//! and width, and every value a classifier lists against the table.
//!
//! The table is checked against the headers, not against a running
//! driver. The client libraries (libcuda, libnvidia-*) are closed, so
//! which of these calls CUDA makes for a given API is inferred, not read.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{CharDevice, Command, CommandKey, Field, Nodes, Size, Vendor};

/// `hClass` of `NVOS21_PARAMETERS` and `NVOS64_PARAMETERS` (escape.c
/// asserts the two agree): the class of the object `RM_ALLOC` creates.
const H_CLASS: Field = Field {
    name: "hClass",
    offset: 12,
    width: 4,
};

/// The classes whose `RM_ALLOC` allocates memory the GPU uses, or pins
/// memory for it:
///
/// - `NV01_MEMORY_SYSTEM` (0x3e): system memory, allocated by RM
///   (`SystemMemory`).
/// - `NV01_MEMORY_LOCAL_USER` (0x40): video memory (`VideoMemory`), what
///   a `cudaMalloc` is carved from.
/// - `NV01_MEMORY_SYSTEM_OS_DESCRIPTOR` (0x71): the caller's own pages,
///   pinned and described to the GPU (`cudaHostRegister`). It allocates
///   nothing, but makes host memory device memory, as udmabuf does.
///
/// Left out, as they allocate no memory or only name memory allocated
/// under one of the classes above (which would count it twice):
/// `NV50_MEMORY_VIRTUAL` (0x50a0) and `NV01_MEMORY_VIRTUAL` (0x70) reserve
/// GPU virtual addresses that `RM_MAP_MEMORY_DMA` later backs with a
/// physical allocation ("allocate virtual address space ... Later call
/// MapMemoryDma(hThisMem, hSomePhysMem) to back it", virtual_mem.c), so a
/// `cudaMalloc` or `cuMemCreate` that reserves a range and allocates its
/// backing would count twice; `NV01_MEMORY_LOCAL_PHYSICAL` (0xc2), which
/// "does not allocate ANY framebuffer memory" but maps all of it for
/// privileged clients (phys_mem.c); `NV01_MEMORY_LOCAL_PRIVILEGED`
/// (0x3f), a window on the GPU's registers; `NV_MEMORY_FABRIC` (0xf8) and
/// `NV_MEMORY_MULTICAST_FABRIC` (0xfd), fabric addresses for video memory
/// allocated apart; their imports, exports and `NV_MEMORY_MAPPER`;
/// `NV01_MEMORY_DEVICELESS` (0x90ce), CPU-only pages no GPU can reach;
/// `NV01_MEMORY_HW_RESOURCES` (0xb1), compression tags and other hardware
/// resources, not memory; and the privileged lists, console and syncpoint
/// classes.
///
/// The size is not counted: it is in the class's parameters
/// (`NV_MEMORY_ALLOCATION_PARAMS.size`), behind the `pAllocParms`
/// pointer, which the kernel program does not follow.
const RM_ALLOC_CLASSES: &[u64] = &[0x3e, 0x40, 0x71];

/// `hClass` of the `NVOS02_PARAMETERS` that `RM_ALLOC_MEMORY`'s argument
/// wraps.
const H_CLASS_OS02: Field = Field {
    name: "params.hClass",
    offset: 12,
    width: 4,
};

/// The classes whose `RM_ALLOC_MEMORY` allocates or pins memory: system
/// memory, and OS descriptors. Through this older call
/// `NV01_MEMORY_LOCAL_USER` allocates nothing (rmapi_deprecated_allocmemory.c
/// makes it a view of the whole framebuffer, or a dummy handle for the
/// heap's size), nor do `NV01_MEMORY_SYSTEM_DYNAMIC` (0x70, a virtual
/// range) and `NV01_MEMORY_LOCAL_PRIVILEGED`.
const RM_ALLOC_MEMORY_CLASSES: &[u64] = &[0x3e, 0x71];

/// `function` of `NVOS32_PARAMETERS`: which heap operation
/// `RM_VID_HEAP_CONTROL` performs.
const HEAP_FUNCTION: Field = Field {
    name: "function",
    offset: 8,
    width: 4,
};

/// `NVOS32_FUNCTION_ALLOC_SIZE`: the heap allocation whose size the table
/// reads.
const ALLOC_SIZE: u64 = 2;

/// The heap functions that allocate or pin memory: `ALLOC_SIZE` (2),
/// `ALLOC_TILED_PITCH_HEIGHT` (6) and `ALLOC_SIZE_RANGE` (14), which all
/// create a memory object as `RM_ALLOC` would, and `ALLOC_OS_DESCRIPTOR`
/// (27), which pins the caller's pages. Frees, queries, alignment hints,
/// compression and `HW_ALLOC` (comptags and other hardware resources, not
/// memory) are left out.
const HEAP_ALLOCS: &[u64] = &[ALLOC_SIZE, 6, 14, 27];

/// The vendor's table.
pub const VENDOR: Vendor = Vendor::of_char_devices(
    "nvidia",
    env!("CARGO_PKG_VERSION"),
    &[
        CharDevice {
            driver: "nvidia",
            nodes: Nodes::Major("nvidia"),
            entry: "nvidia_unlocked_ioctl",
            // nvidia_ioctl dispatches on _IOC_NR and checks _IOC_SIZE
            // against the argument's struct; it ignores the type ('F') and
            // the direction. A command is 'F' << 8 | NV_ESC_*.
            //
            // NV_ESC_IOCTL_XFER_CMD (0xd3) carries another command, whose
            // number, size and argument are behind a pointer in its own
            // argument (nv_ioctl_xfer_t). The kernel program keys on the
            // outer number and does not unwrap it, so a call sent through
            // the wrapper is not counted. The wrapper is for arguments too
            // large for _IOC's 14-bit size; those counted here are 32 to
            // 184 bytes, so a client has no need to wrap them.
            //
            // Not counted, checked against escape.c's dispatch (and
            // nv.c's for the non-RM escapes): RM_CONTROL (a multiplexer of
            // thousands of controls, keyed behind a pointer); RM_FREE,
            // RM_DUP_OBJECT, RM_SHARE, the exports and imports (handles,
            // not memory); RM_ALLOC_OBJECT (the legacy object allocation,
            // with no parameters, so never a memory class);
            // RM_ALLOC_CONTEXT_DMA2, RM_BIND_CONTEXT_DMA and
            // RM_MAP_MEMORY(_DMA) (describe or map memory allocated
            // elsewhere: counting them would count one allocation again);
            // RM_GET_EVENT_DATA (reads events already pending: it never
            // blocks; clients wait with poll() on the fd);
            // WAIT_OPEN_COMPLETE (waits for the driver's own open of the
            // GPU, not for work); I2C, registry, vblank, diagnostics and
            // the card, version and interrupt queries.
            key: CommandKey::Number,
            commands: &[
                // creates an RM object (NVOS21_PARAMETERS, or the 48-byte
                // NVOS64_PARAMETERS, with hClass at the same offset),
                // counted when its class allocates or pins memory
                Command::alloc("NV_ESC_RM_ALLOC", 0x0000_462b)
                    .only_when(H_CLASS, RM_ALLOC_CLASSES)
                    .argument("NVOS21_PARAMETERS"),
                // allocates through the older RmAllocMemory64: system
                // memory, or an OS descriptor pinning the caller's pages,
                // on a GPU's own node. No size: the argument holds `limit`,
                // the size less one
                Command::alloc("NV_ESC_RM_ALLOC_MEMORY", 0x0000_4627)
                    .only_when(H_CLASS_OS02, RM_ALLOC_MEMORY_CLASSES)
                    .argument("nv_ioctl_nvos02_parameters_with_fd"),
                // the older heap interface: allocates video or system
                // memory (or pins an OS descriptor) as RM_ALLOC would. For
                // ALLOC_SIZE, `size` is the bytes asked for and, as the
                // call returns, the bytes allocated (the memory's size,
                // which RM may round up); the other functions are counted
                // without bytes. With NVOS32_ALLOC_FLAGS_VIRTUAL,
                // ALLOC_SIZE reserves virtual addresses instead; a
                // classifier compares whole values, so those are counted
                // too
                Command::alloc("NV_ESC_RM_VID_HEAP_CONTROL", 0x0000_464a)
                    .only_when(HEAP_FUNCTION, HEAP_ALLOCS)
                    .sized(
                        Size::after("data.AllocSize.size", 88, 8).when(HEAP_FUNCTION, ALLOC_SIZE),
                    )
                    .argument("NVOS32_PARAMETERS"),
                // blocks until the client's channels have no work left
                // (Nv04IdleChannels, with a timeout): the one RM escape
                // that waits on the device's work
                Command::wait("NV_ESC_RM_IDLE_CHANNELS", 0x0000_4641),
            ],
        },
        CharDevice {
            driver: "nvidia-uvm",
            nodes: Nodes::Major("nvidia-uvm"),
            entry: "uvm_unlocked_ioctl_entry",
            // uvm_ioctl switches on the whole command, a plain integer
            // (UVM_IOCTL_BASE(i) is i on Linux) with no size in it.
            //
            // Not counted: UVM_MAP_EXTERNAL_ALLOCATION and
            // UVM_ALLOC_DEVICE_P2P, which map memory an RM_ALLOC allocated
            // (its hClient and hMemory are in their arguments) into the
            // unified address space, or expose it for peer DMA: counting
            // them would count one allocation twice, and one allocation can
            // be mapped many times. Nor are UVM_CREATE_EXTERNAL_RANGE (a
            // virtual range), UVM_POPULATE_PAGEABLE (faults in the
            // process's own pages) or frees. Managed memory
            // (cudaMallocManaged) is made by mmap() on the node, not by an
            // ioctl, and is not seen.
            key: CommandKey::Whole,
            commands: &[
                // allocates `length` bytes (uvm_mem_alloc) for a pool of
                // semaphores mapped on the GPUs: memory UVM allocates
                // itself, which no RM_ALLOC counts
                Command::alloc("UVM_ALLOC_SEMAPHORE_POOL", 68)
                    .sized(Size::before("length", 8, 8))
                    .argument("UVM_ALLOC_SEMAPHORE_POOL_PARAMS"),
                // migrates a range's pages to a GPU or the CPU
                // (cudaMemPrefetchAsync): work for the copy engines. Its
                // `length` is not counted: only allocations declare a size
                Command::submit("UVM_MIGRATE", 51),
                // migrates every range of a range group
                Command::submit("UVM_MIGRATE_RANGE_GROUP", 53),
            ],
        },
    ],
);

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(
    VENDOR,
    include_str!("../uapi/nvtypes.h"),
    include_str!("../uapi/nvstatus.h"),
    include_str!("../uapi/nvlimits.h"),
    include_str!("../uapi/nvCpuUuid.h"),
    include_str!("../uapi/nvos.h"),
    include_str!("../uapi/nv-unix-nvos-params-wrappers.h"),
    include_str!("../uapi/nv_escape.h"),
    include_str!("../uapi/nv-ioctl-numbers.h"),
    include_str!("../uapi/nv-ioctl.h"),
    include_str!("../uapi/cl003e.h"),
    include_str!("../uapi/cl0040.h"),
    include_str!("../uapi/cl0070.h"),
    include_str!("../uapi/cl0071.h"),
    include_str!("../uapi/cl00c2.h"),
    include_str!("../uapi/cl50a0.h"),
    include_str!("../uapi/uvm_types.h"),
    include_str!("../uapi/uvm_ioctl.h"),
);

#[cfg(test)]
mod tests {
    use kubenpu_sdk::{CharDevice, Command, CommandKey, Nodes, Vendor};

    /// Each value a classifier lists, and the header macro it is.
    const NAMED: &[(&str, u64)] = &[
        ("NV01_MEMORY_SYSTEM", 0x3e),
        ("NV01_MEMORY_LOCAL_USER", 0x40),
        ("NV01_MEMORY_SYSTEM_OS_DESCRIPTOR", 0x71),
        ("NVOS32_FUNCTION_ALLOC_SIZE", super::ALLOC_SIZE),
        ("NVOS32_FUNCTION_ALLOC_TILED_PITCH_HEIGHT", 6),
        ("NVOS32_FUNCTION_ALLOC_SIZE_RANGE", 14),
        ("NVOS32_FUNCTION_ALLOC_OS_DESCRIPTOR", 27),
    ];

    /// The header checks compare commands and fields, not the values a
    /// classifier lists: these are compiled from the headers here, as
    /// whole commands of a device made up for the check.
    #[test]
    fn classifiers_list_the_headers_classes_and_functions() {
        let listed = [
            super::RM_ALLOC_CLASSES,
            super::RM_ALLOC_MEMORY_CLASSES,
            super::HEAP_ALLOCS,
        ];
        for value in listed.into_iter().flatten() {
            assert!(
                NAMED.iter().any(|(_, v)| v == value),
                "{value:#x} is listed but not named"
            );
        }
        let commands: Vec<Command> = NAMED
            .iter()
            .map(|&(name, value)| Command::alloc(name, u32::try_from(value).unwrap()))
            .collect();
        let device = CharDevice {
            driver: "nvidia-values",
            nodes: Nodes::Major("nvidia"),
            entry: "nvidia_unlocked_ioctl",
            key: CommandKey::Whole,
            commands: commands.leak(),
        };
        let vendor = Vendor {
            char_devices: Box::leak(Box::new([device])),
            ..super::VENDOR
        };
        let headers = [
            include_str!("../uapi/nvtypes.h"),
            include_str!("../uapi/nvos.h"),
            include_str!("../uapi/cl003e.h"),
            include_str!("../uapi/cl0040.h"),
            include_str!("../uapi/cl0071.h"),
        ];
        assert_eq!(kubenpu_sdk::uapi::check_commands(&vendor, &headers), Ok(()));
    }
}
