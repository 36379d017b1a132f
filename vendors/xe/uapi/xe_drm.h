/* Source: torvalds/linux include/uapi/drm/xe_drm.h @ commit 716c11d462c598328edca2565e8d25457c6ee3d6 ("drm/xe/uapi: Define drm_xe_vm_get_property", merged for v7.1, in linux-next 2026-03) -- excerpt, verbatim lines only */
/* SPDX-License-Identifier: MIT */

/* --- driver-local numbers (nr = DRM_COMMAND_BASE 0x40 + value) --- */
#define DRM_XE_GEM_CREATE		0x01
#define DRM_XE_VM_BIND			0x05
#define DRM_XE_EXEC			0x09
#define DRM_XE_WAIT_USER_FENCE		0x0a

/* --- ioctl request macros --- */
#define DRM_IOCTL_XE_GEM_CREATE			DRM_IOWR(DRM_COMMAND_BASE + DRM_XE_GEM_CREATE, struct drm_xe_gem_create)
#define DRM_IOCTL_XE_VM_BIND			DRM_IOW(DRM_COMMAND_BASE + DRM_XE_VM_BIND, struct drm_xe_vm_bind)
#define DRM_IOCTL_XE_EXEC			DRM_IOW(DRM_COMMAND_BASE + DRM_XE_EXEC, struct drm_xe_exec)
#define DRM_IOCTL_XE_WAIT_USER_FENCE		DRM_IOWR(DRM_COMMAND_BASE + DRM_XE_WAIT_USER_FENCE, struct drm_xe_wait_user_fence)

/* --- full local-number table of this version, for collision checks (verbatim) --- */
#define DRM_XE_DEVICE_QUERY		0x00
#define DRM_XE_GEM_CREATE		0x01
#define DRM_XE_GEM_MMAP_OFFSET		0x02
#define DRM_XE_VM_CREATE		0x03
#define DRM_XE_VM_DESTROY		0x04
#define DRM_XE_VM_BIND			0x05
#define DRM_XE_EXEC_QUEUE_CREATE	0x06
#define DRM_XE_EXEC_QUEUE_DESTROY	0x07
#define DRM_XE_EXEC_QUEUE_GET_PROPERTY	0x08
#define DRM_XE_EXEC			0x09
#define DRM_XE_WAIT_USER_FENCE		0x0a
#define DRM_XE_OBSERVATION		0x0b
#define DRM_XE_MADVISE			0x0c
#define DRM_XE_VM_QUERY_MEM_RANGE_ATTRS	0x0d
#define DRM_XE_EXEC_QUEUE_SET_PROPERTY	0x0e
#define DRM_XE_VM_GET_PROPERTY		0x0f
