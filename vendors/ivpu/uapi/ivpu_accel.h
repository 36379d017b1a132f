/* Source: torvalds/linux include/uapi/drm/ivpu_accel.h @ commit e65d9626f9bbc1b9f94aa1d1a1fa2450578ec0b8 (newest torvalds version of THIS FILE readable in the index; v6.15-era: has CMDQ_* 0x0b-0x0d, no CMDQ turbo flag, no 0x0e) -- excerpt, verbatim lines only.
 * The two BO_CREATE_FROM_USERPTR lines at the end are NOT from that torvalds version: they are verbatim from intel/linux-npu-driver linux/include/uapi/drm/ivpu_accel.h @ 7b138739c9e8 (2026-04-17),
 * the copy the Level Zero NPU UMD builds against. Upstream they were added by torvalds commit 57557964b582238d5ee4b8538d1c4694f91c2186 ("accel/ivpu: Add support for userptr buffer objects", pushed to torvalds master 2025-12-04 = v6.19 merge window);
 * torvalds drivers/accel/ivpu/ivpu_drv.c @ 57557964 (read) registers DRM_IOCTL_DEF_DRV(IVPU_BO_CREATE_FROM_USERPTR, ivpu_bo_create_from_userptr_ioctl, 0). */
/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */

/* --- driver-local numbers (nr = DRM_COMMAND_BASE 0x40 + value); note the hole at 0x04 --- */
#define DRM_IVPU_BO_CREATE		  0x02
#define DRM_IVPU_SUBMIT			  0x05
#define DRM_IVPU_BO_WAIT		  0x06
#define DRM_IVPU_CMDQ_SUBMIT              0x0d

/* --- ioctl request macros --- */
#define DRM_IOCTL_IVPU_BO_CREATE                                               \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_IVPU_BO_CREATE, struct drm_ivpu_bo_create)
#define DRM_IOCTL_IVPU_SUBMIT                                                  \
	DRM_IOW(DRM_COMMAND_BASE + DRM_IVPU_SUBMIT, struct drm_ivpu_submit)
#define DRM_IOCTL_IVPU_BO_WAIT                                                 \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_IVPU_BO_WAIT, struct drm_ivpu_bo_wait)
#define DRM_IOCTL_IVPU_CMDQ_SUBMIT                                             \
	DRM_IOW(DRM_COMMAND_BASE + DRM_IVPU_CMDQ_SUBMIT, struct drm_ivpu_cmdq_submit)

/* --- full local-number table of the torvalds version read (verbatim), for collision checks --- */
#define DRM_IVPU_GET_PARAM		  0x00
#define DRM_IVPU_SET_PARAM		  0x01
#define DRM_IVPU_BO_CREATE		  0x02
#define DRM_IVPU_BO_INFO		  0x03
#define DRM_IVPU_SUBMIT			  0x05
#define DRM_IVPU_BO_WAIT		  0x06
#define DRM_IVPU_METRIC_STREAMER_START	  0x07
#define DRM_IVPU_METRIC_STREAMER_STOP	  0x08
#define DRM_IVPU_METRIC_STREAMER_GET_DATA 0x09
#define DRM_IVPU_METRIC_STREAMER_GET_INFO 0x0a
#define DRM_IVPU_CMDQ_CREATE              0x0b
#define DRM_IVPU_CMDQ_DESTROY             0x0c
#define DRM_IVPU_CMDQ_SUBMIT              0x0d

/* --- from intel/linux-npu-driver's copy (upstream since v6.19, see header comment), verbatim --- */
#define DRM_IVPU_BO_CREATE_FROM_USERPTR	  0x0e
#define DRM_IOCTL_IVPU_BO_CREATE_FROM_USERPTR                        \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_IVPU_BO_CREATE_FROM_USERPTR, \
		 struct drm_ivpu_bo_create_from_userptr)

/* --- argument structs of the alloc ioctls whose sizes the table declares; Source: torvalds/linux include/uapi/drm/ivpu_accel.h @ e65d9626f9bbc1b9f94aa1d1a1fa2450578ec0b8 (stored index version; Copyright 2020-2025, has DRM_IVPU_CMDQ_CREATE/DESTROY/SUBMIT => ~v6.15+). DRM_IOWR/DRM_COMMAND_BASE come from drm.h (see drm_core.h) -- verbatim --- */
struct drm_ivpu_bo_create {
	/** @size: The size in bytes of the allocated memory */
	__u64 size;

	/**
	 * @flags:
	 *
	 * Supported flags:
	 *
	 * %DRM_IVPU_BO_HIGH_MEM:
	 *
	 * Allocate VPU address from >4GB range.
	 * Buffer object with vpu address >4GB can be always accessed by the
	 * VPU DMA engine, but some HW generation may not be able to access
	 * this memory from then firmware running on the VPU management processor.
	 * Suitable for input, output and some scratch buffers.
	 *
	 * %DRM_IVPU_BO_MAPPABLE:
	 *
	 * Buffer object can be mapped using mmap().
	 *
	 * %DRM_IVPU_BO_CACHED:
	 *
	 * Allocated BO will be cached on host side (WB) and snooped on the VPU side.
	 * This is the default caching mode.
	 *
	 * %DRM_IVPU_BO_UNCACHED:
	 *
	 * Not supported. Use DRM_IVPU_BO_WC instead.
	 *
	 * %DRM_IVPU_BO_WC:
	 *
	 * Allocated BO will use write combining buffer for writes but reads will be
	 * uncached.
	 */
	__u32 flags;

	/** @handle: Returned GEM object handle */
	__u32 handle;

	/** @vpu_addr: Returned VPU virtual address */
	__u64 vpu_addr;
};
