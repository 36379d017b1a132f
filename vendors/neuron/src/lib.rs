//! KubeNPU vendor plugin for AWS Neuron devices (Inferentia, Trainium):
//! the out-of-tree `neuron` driver (`aws-neuronx-dkms`), which is not a
//! DRM driver. Each device is a character device `/dev/neuron<N>` of the
//! sysfs class `neuron_device`, and its ioctls enter through
//! `ncdev_ioctl`. The driver makes the class devices without a parent,
//! so they link to no PCI function.
//!
//! Numbers from `uapi/neuron_ioctl.h`, an excerpt of the driver's
//! `neuron_ioctl.h` (aws-neuron/aws-neuron-driver at
//! fca19f7df31b44cbbffaf121230a66df6f59d118, dkms package 2.24.7.0,
//! GPL-2.0). The unit tests compile it and check every command, and
//! every size field's offset and width, against the table.
//!
//! No Neuron hardware exists in the project's test machines. The table
//! is checked against the header by the unit tests only. The end-to-end
//! path for character devices (node discovery, the probe on the ioctl
//! entry, the per-pod counts) is proven on the kernel's DMA heap and
//! udmabuf devices.
//!
//! Most macros pass a pointer type (`struct x *`), so their `_IOC_SIZE`
//! is 8 whatever the struct; the driver copies the whole struct all the
//! same. The newer variants (`*64`, `V2MT`) pass the struct and share
//! the number of the variant they replace, which is why the key is the
//! whole command.
//!
//! Counted: the memory allocations, the DMA transfers handed to the
//! driver and the waits for them. Left out: frees, queries, DMA queue and
//! engine setup, descriptor ring writes (`DMA_COPY_DESCRIPTORS` fills a
//! ring but starts nothing), notification queue setup, dma-buf export of
//! existing memory, core resets (`NC_RESET`, and `NC_RESET_READY`, which
//! waits for a reset of the cores rather than for work handed to them),
//! and the semaphore and event ioctls, whose part in a model's execution
//! the driver source does not show. The runtime also drives the cores
//! through memory it maps, so the submit count is the DMA transfers the
//! driver starts, not the number of model executions.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{CharDevice, Command, CommandKey, Nodes, Size, Vendor};

/// The vendor's table.
///
/// The Neuron device plugin ships as an image only; its device IDs
/// are not documented, so no allocator is named.
pub const VENDOR: Vendor = Vendor::of_char_devices(
    "neuron",
    env!("CARGO_PKG_VERSION"),
    &[CharDevice {
        driver: "neuron",
        nodes: Nodes::Class("neuron_device"),
        entry: "ncdev_ioctl",
        // ncdev_ioctl compares most commands whole, and tells the
        // versioned variants of one number apart by their size.
        key: CommandKey::Whole,
        commands: &[
            // allocates `size` bytes of host or device memory
            // (mc_alloc_align); the macro names a pointer, so _IOC_SIZE
            // is 8
            Command::alloc("NEURON_IOCTL_MEM_ALLOC", 0x8008_4e15)
                .sized(Size::before("size", 0, 8))
                .argument("struct neuron_ioctl_mem_alloc"),
            // the same with an alignment; also a pointer in the macro
            Command::alloc("NEURON_IOCTL_MEM_ALLOC_V2", 0x8008_4e66)
                .sized(Size::before("size", 0, 8))
                .argument("struct neuron_ioctl_mem_alloc_v2"),
            // the same with a memory type; this macro and the next name
            // the struct itself
            Command::alloc("NEURON_IOCTL_MEM_ALLOC_V2MT", 0x8030_4e66)
                .sized(Size::before("size", 0, 8)),
            // the same, padded so that the runtime can tell a driver
            // that allocates and copies 4 GiB and more
            Command::alloc("NEURON_IOCTL_MEM_ALLOC_V2MT64", 0x8038_4e66)
                .sized(Size::before("size", 0, 8)),
            // copies between two memory handles by DMA and returns when
            // it is done (ndma_memcpy_mc)
            Command::submit("NEURON_IOCTL_MEM_COPY", 0x8008_4e17),
            Command::submit("NEURON_IOCTL_MEM_COPY64", 0x8028_4e17),
            // copies between a user buffer and a memory handle, by DMA
            // through a bounce buffer when the handle is device memory (a
            // plain CPU copy when it is host memory, which the argument
            // does not show)
            Command::submit("NEURON_IOCTL_MEM_BUF_COPY", 0xc008_4e18),
            Command::submit("NEURON_IOCTL_MEM_BUF_COPY64", 0xc028_4e18),
            // the same without the bounce buffer: DMA straight from or to
            // the user buffer (ndma_memcpy_zero_copy_mc)
            Command::submit("NEURON_IOCTL_MEM_BUF_ZEROCOPY64", 0xc028_4e7c),
            // fills a memory handle by DMA: a host buffer copied to its
            // start, then device-to-device copies (ndma_memset)
            Command::submit("NEURON_IOCTL_MEMSET", 0x8008_4e1c),
            Command::submit("NEURON_IOCTL_MEMSET64", 0x8020_4e1c),
            // writes a user buffer to an engine's address by DMA
            // (ndma_memcpy): instructions and state for the cores
            Command::submit("NEURON_IOCTL_PROGRAM_ENGINE", 0xc008_4e1b),
            Command::submit("NEURON_IOCTL_PROGRAM_ENGINE_NC", 0xc008_4e69),
            Command::submit("NEURON_IOCTL_PROGRAM_ENGINE_NC64", 0xc028_4e69),
            // starts a DMA queue on the descriptors the runtime wrote to
            // its rings (udma_m2m_copy_start)
            Command::submit("NEURON_IOCTL_DMA_QUEUE_COPY_START", 0x8008_4e23),
            // starts a DMA copy between two memory handles and returns a
            // handle to wait on (ndma_memcpy_mc_async)
            Command::submit("NEURON_IOCTL_MEM_COPY_ASYNC", 0xc030_4e6c),
            Command::submit("NEURON_IOCTL_MEM_COPY_ASYNC64", 0xc038_4e6c),
            // blocks until an asynchronous copy's DMA completes
            // (ndma_memcpy_mc_wait polls its completion)
            Command::wait("NEURON_IOCTL_MEM_COPY_ASYNC_WAIT", 0x4018_4e6d),
            // fills a whole HBM by DMA on sixteen engines, as a large
            // memset: work handed to the device's DMA engines
            Command::submit("NEURON_IOCTL_HBM_SCRUB_START", 0xc010_4e76),
            // blocks until that fill's DMA completes, polling each
            // engine's completion marker
            // (ndma_memcpy_wait_for_completion)
            Command::wait("NEURON_IOCTL_HBM_SCRUB_WAIT", 0xc008_4e77),
        ],
    }],
);

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/neuron_ioctl.h"));
