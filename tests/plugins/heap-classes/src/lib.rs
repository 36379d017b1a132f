//! A replacement for the built-in dma_heap vendor whose one command is
//! classified: an allocation counts only when its length is one page.
//! `vm_chardev` drops it into the plugins directory of a running agent
//! and allocates pages and larger buffers on the real system heap: the
//! kernel program reads each call's field and counts the pages alone.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{CharDevice, Command, CommandKey, Field, Nodes, Size, Vendor};

/// The one length that counts.
pub const PAGE: u64 = 4096;

/// The DMA heap, counting page allocations only.
pub const VENDOR: Vendor = Vendor::of_char_devices(
    "dma_heap",
    "2.0.0-test",
    &[CharDevice {
        driver: "dma_heap",
        nodes: Nodes::Class("dma_heap"),
        entry: "dma_heap_ioctl",
        key: CommandKey::Number,
        commands: &[Command::alloc("DMA_HEAP_IOCTL_ALLOC", 0xc018_4800)
            .sized(Size::before("len", 0, 8))
            .only_when(
                Field {
                    name: "len",
                    offset: 0,
                    width: 8,
                },
                &[PAGE],
            )],
    }],
);

kubenpu_sdk::export_vendor!(VENDOR);
