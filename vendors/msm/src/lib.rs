//! KubeNPU vendor plugin for Qualcomm Adreno GPUs (the msm driver).
//!
//! Numbers from `uapi/msm_drm.h`, an excerpt of the kernel's
//! `include/uapi/drm/msm_drm.h` as of v6.x (before VM_BIND in v6.17; its
//! numbers are appended to only); the unit test checks every entry against
//! it.
#![cfg_attr(target_family = "wasm", no_std)]

use kubenpu_sdk::{Allocators, Energy, Ioctl, Size, UsageNames, Vendor, drm};

/// The vendor's table.
pub const VENDOR: Vendor = Vendor {
    name: "msm",
    version: env!("CARGO_PKG_VERSION"),
    // The msm DRM device sits on the display controller that binds it
    // (`msm_dpu`, `msm_mdp` for MDP5, `mdp4`), on a headless GPU's own
    // device (`adreno`), or on older kernels on the `msm` platform device.
    drivers: &["msm_dpu", "msm_mdp", "mdp4", "adreno", "msm"],
    // Device-tree GPUs: no PCI identity to match.
    pci_vendors: &[],
    products: &[],
    ioctls: &[
        // submits command streams to a submit queue
        Ioctl::submit("DRM_IOCTL_MSM_GEM_SUBMIT", drm::command(0x06)),
        // creates a buffer object
        Ioctl::alloc("DRM_IOCTL_MSM_GEM_NEW", drm::command(0x02)).sized(Size::before("size", 0, 8)),
        // waits for a submission's fence
        Ioctl::wait("DRM_IOCTL_MSM_WAIT_FENCE", drm::command(0x07)),
        // waits for the GPU to finish with a buffer before the CPU uses it
        Ioctl::wait("DRM_IOCTL_MSM_GEM_CPU_PREP", drm::command(0x04)),
        drm::MODE_CREATE_DUMB,
        drm::SYNCOBJ_WAIT,
        drm::SYNCOBJ_TIMELINE_WAIT,
    ],
    usage_names: UsageNames::KERNEL,
    allocators: Allocators::NONE,
    char_devices: &[],
    energy: Energy::NONE,
};

kubenpu_sdk::export_vendor!(VENDOR);

kubenpu_sdk::uapi_test!(VENDOR, include_str!("../uapi/msm_drm.h"));
