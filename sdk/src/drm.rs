//! The DRM core's part of the uAPI (`include/uapi/drm/drm.h`): the driver
//! command range and the core ioctls that allocate or wait, which drivers'
//! userspace calls on their device nodes as well as the driver's own.

use crate::{Ioctl, Size};

/// First ioctl number of the driver-specific range.
pub const DRM_COMMAND_BASE: u8 = 0x40;
/// One past the last number of the driver-specific range.
pub const DRM_COMMAND_END: u8 = 0xa0;

/// The ioctl number of driver command `local` (`DRM_COMMAND_BASE +
/// DRM_<DRIVER>_<X>`), checked at compile time when used in a constant.
pub const fn command(local: u8) -> u8 {
    assert!(
        local < DRM_COMMAND_END - DRM_COMMAND_BASE,
        "driver commands are 0x00..0x60"
    );
    DRM_COMMAND_BASE + local
}

/// Whether `nr` lies in the driver-specific range.
pub const fn is_driver_command(nr: u8) -> bool {
    nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END
}

/// `DRM_IOCTL_MODE_CREATE_DUMB`: allocates a dumb (CPU-mappable) buffer;
/// the kernel reports its size back in `struct drm_mode_create_dumb`.
pub const MODE_CREATE_DUMB: Ioctl =
    Ioctl::alloc("DRM_IOCTL_MODE_CREATE_DUMB", 0xb2).sized(Size::after("size", 24, 8));
/// `DRM_IOCTL_SYNCOBJ_WAIT`: waits for binary sync objects to signal.
pub const SYNCOBJ_WAIT: Ioctl = Ioctl::wait("DRM_IOCTL_SYNCOBJ_WAIT", 0xc3);
/// `DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT`: waits for timeline sync object points.
pub const SYNCOBJ_TIMELINE_WAIT: Ioctl = Ioctl::wait("DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT", 0xca);

/// Every DRM core ioctl a vendor table may list: a number outside the
/// driver range is accepted only with one of these names.
pub const CORE: &[Ioctl] = &[MODE_CREATE_DUMB, SYNCOBJ_WAIT, SYNCOBJ_TIMELINE_WAIT];
