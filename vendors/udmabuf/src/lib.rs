//! KubeNPU vendor plugin for the kernel's udmabuf (`/dev/udmabuf`):
//! turns pages of a memfd into a DMA-BUF a device can use, as NPU and
//! media runtimes do to share host memory with a device without a copy.
//! A misc device, not a DRM driver: its ioctls enter through
//! `udmabuf_ioctl`.
//!
//! Numbers from `uapi/udmabuf.h`, the kernel's
//! `include/uapi/linux/udmabuf.h` (torvalds/linux at fbda16fbaf29; the
//! same bytes as Linux 6.1's, unchanged since 5.2); the unit tests check
//! every command and size against it as a C compiler reads it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{CharDevice, Command, CommandKey, Nodes, Size, Vendor};

/// The vendor's table.
///
/// No device plugin hands it out: runtimes open it directly.
pub const VENDOR: Vendor = Vendor::of_char_devices(
    "udmabuf",
    env!("CARGO_PKG_VERSION"),
    &[CharDevice {
        driver: "udmabuf",
        nodes: Nodes::Misc("udmabuf"),
        entry: "udmabuf_ioctl",
        // udmabuf_ioctl takes exactly these commands, sizes included.
        key: CommandKey::Whole,
        commands: &[
            // makes a dma-buf of `size` bytes of a memfd
            Command::alloc("UDMABUF_CREATE", 0x4018_7542).sized(Size::before("size", 16, 8)),
            // makes one dma-buf of several memfd ranges; their sizes are in
            // a list of variable length, so no bytes are counted
            Command::alloc("UDMABUF_CREATE_LIST", 0x4008_7543),
        ],
    }],
);

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/udmabuf.h"));
