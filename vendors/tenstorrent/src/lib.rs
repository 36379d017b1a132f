//! KubeNPU vendor plugin for Tenstorrent accelerators: the out-of-tree
//! `tenstorrent` driver (tt-kmd), which is not a DRM driver. Each device
//! is a character device `/dev/tenstorrent/<N>` of the sysfs class
//! `tenstorrent` (its entry is named `tenstorrent!<N>`, with a `device`
//! link to the PCI function), and its ioctls enter through
//! `tt_cdev_ioctl`, a switch on the whole command. Every command is
//! `_IO(0xFA, n)`, with no size; its argument is a struct of an `in`
//! part, at offset 0, and an `out` part.
//!
//! Numbers from `uapi/ioctl.h`, an excerpt of the driver's `ioctl.h`
//! (tenstorrent/tt-kmd at 4af71921ac021e24859ae15d8438997a44dbbf58,
//! version 2.10.1-pre, GPL-2.0-only WITH Linux-syscall-note). The unit
//! tests compile it and check every command, and every field's offset
//! and width, against the table.
//!
//! No Tenstorrent hardware exists in the project's test machines. The
//! table is checked against the header by the unit tests only. The
//! end-to-end path for character devices (node discovery, the probe on
//! the ioctl entry, the per-pod counts) is proven on the kernel's DMA
//! heap and udmabuf devices.
//!
//! No command submits work: a process hands the device work and data
//! through TLB windows, apertures of the device's PCI BARs onto its
//! network on chip, which it claims (`ALLOCATE_TLB`), points
//! (`CONFIGURE_TLB`), maps and then writes with plain stores that the
//! driver never sees. So the counts here are allocations, pins and
//! blocking lock waits, not a utilisation figure.
//!
//! `ALLOCATE_TLB` is left out: it claims one window of a fixed pool
//! (`tenstorrent_device_allocate_tlb` sets a bit) and allocates no
//! memory, on the host or on the device. Its size is the window's span
//! of address space (1, 2 or 16 MiB on Wormhole, 2 MiB or 4 GiB on
//! Blackhole), which would swamp the allocated bytes with memory nobody
//! allocated. `EXPORT_TLB_DMABUF`
//! and `MAP_PEER_BAR` are left out for the same reason: they expose or
//! map BAR apertures. Also left out: frees and unpins, queries, resets,
//! power states and NOC cleanup registrations.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{
    Attribute, CharDevice, Command, CommandKey, Energy, Field, Nodes, Sensor, Size, Vendor,
};

/// `TENSTORRENT_LOCK_CTL_ACQUIRE_BLOCKING`: the `LOCK_CTL` operation that
/// sleeps until the lock is free.
const LOCK_CTL_ACQUIRE_BLOCKING: u64 = 3;

/// The vendor's table.
///
/// Tenstorrent's own Kubernetes path is a DRA driver whose device
/// names are chip IDs, not node numbers; no allocator is named.
pub const VENDOR: Vendor = Vendor {
    // tt-kmd registers hwmon `wormhole` or `blackhole` on the PCI
    // function, with power in whole watts times a million and no energy
    // counter.
    energy: Energy {
        hwmon_names: &["wormhole", "blackhole"],
        sensors: &[Sensor::Power(Attribute::file("power1_input"))],
        // A rough figure for an idle card, until the agent has measured
        // the device idle itself.
        idle_milliwatts: 20_000,
    },
    ..Vendor::of_char_devices(
        "tenstorrent",
        env!("CARGO_PKG_VERSION"),
        &[CharDevice {
            driver: "tenstorrent",
            nodes: Nodes::Class("tenstorrent"),
            entry: "tt_cdev_ioctl",
            // tt_cdev_ioctl switches on the whole command.
            key: CommandKey::Whole,
            commands: &[
                // allocates `requested_size` bytes of host memory the device
                // reaches by DMA (dma_alloc_coherent); the size is an input
                // the call keeps
                Command::alloc("TENSTORRENT_IOCTL_ALLOCATE_DMA_BUF", 0x0000_fa03)
                    .sized(Size::before("in.requested_size", 0, 4))
                    .argument("struct tenstorrent_allocate_dma_buf"),
                // pins `size` bytes of the caller's pages and maps them for
                // the device's DMA (pin_user_pages, then the IOMMU mapping)
                Command::alloc("TENSTORRENT_IOCTL_PIN_PAGES", 0x0000_fa07)
                    .sized(Size::before("in.size", 16, 8))
                    .argument("struct tenstorrent_pin_pages"),
                // with ACQUIRE_BLOCKING, sleeps until another fd releases one
                // of the device's resource locks (the ERISC cores' locks, by
                // convention): a wait for the device's use by another
                // process, not for the device to finish work. The other
                // operations (try, release, test) return at once.
                Command::wait("TENSTORRENT_IOCTL_LOCK_CTL", 0x0000_fa08)
                    .only_when(
                        Field {
                            name: "in.flags",
                            offset: 4,
                            width: 4,
                        },
                        &[LOCK_CTL_ACQUIRE_BLOCKING],
                    )
                    .argument("struct tenstorrent_lock_ctl"),
            ],
        }],
    )
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/ioctl.h"));

#[cfg(test)]
mod tests {
    /// The header checks compare fields, not the values a classifier
    /// lists: this one is read from the header here.
    #[test]
    fn lock_ctl_counts_the_headers_blocking_acquire() {
        let header = include_str!("../uapi/ioctl.h");
        let value = header
            .lines()
            .find_map(|line| line.strip_prefix("#define TENSTORRENT_LOCK_CTL_ACQUIRE_BLOCKING"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|value| value.parse::<u64>().ok());
        assert_eq!(value, Some(super::LOCK_CTL_ACQUIRE_BLOCKING));
    }
}
