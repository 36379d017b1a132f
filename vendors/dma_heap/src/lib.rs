//! KubeNPU vendor plugin for the kernel's DMA-BUF heaps
//! (`/dev/dma_heap/<heap>`): the allocator NPU and camera runtimes on
//! SoCs take their buffers from. Not a DRM driver: its nodes are a sysfs
//! class of their own, and its ioctls enter through `dma_heap_ioctl`.
//!
//! Numbers from `uapi/dma-heap.h`, the kernel's
//! `include/uapi/linux/dma-heap.h` (torvalds/linux at 2555693dd85c; the
//! same bytes as Linux 6.1's, unchanged since 5.6); the unit tests check
//! every command and size against it as a C compiler reads it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{CharDevice, Command, CommandKey, Nodes, Size, Vendor};

/// The vendor's table.
///
/// No device plugin hands heaps out: runtimes open them directly.
pub const VENDOR: Vendor = Vendor::of_char_devices(
    "dma_heap",
    env!("CARGO_PKG_VERSION"),
    &[CharDevice {
        driver: "dma_heap",
        // One node per heap: system, and the CMA or carveout heaps a
        // device tree declares.
        nodes: Nodes::Class("dma_heap"),
        entry: "dma_heap_ioctl",
        // dma_heap_ioctl dispatches on the number alone: it checks
        // neither the type nor the size, taking arguments shorter or
        // longer than its own struct (zero-filled, or trailing zeros
        // checked).
        key: CommandKey::Number,
        commands: &[
            // allocates a buffer of len bytes from the heap, as a dma-buf
            Command::alloc("DMA_HEAP_IOCTL_ALLOC", 0xc018_4800).sized(Size::before("len", 0, 8)),
        ],
    }],
);

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/dma-heap.h"));
