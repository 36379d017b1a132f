/* Source: torvalds/linux include/uapi/drm/qaic_accel.h @ 2e60c498a4a305d18a97c913dcd924da041c01fc (newest stored version; ioctl set 0x00..0x08 matches the qaic_drv.c ioctl table of the AIC200-era driver) -- excerpt */
/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 *
 * Copyright (c) 2019-2020, The Linux Foundation. All rights reserved.
 * Copyright (c) 2021-2023 Qualcomm Innovation Center, Inc. All rights reserved.
 */

#define DRM_QAIC_CREATE_BO			0x01
#define DRM_QAIC_EXECUTE_BO			0x04
#define DRM_QAIC_PARTIAL_EXECUTE_BO		0x05
#define DRM_QAIC_WAIT_BO			0x06

#define DRM_IOCTL_QAIC_CREATE_BO		DRM_IOWR(DRM_COMMAND_BASE + DRM_QAIC_CREATE_BO,	struct qaic_create_bo)
#define DRM_IOCTL_QAIC_EXECUTE_BO		DRM_IOW(DRM_COMMAND_BASE + DRM_QAIC_EXECUTE_BO,	struct qaic_execute)
#define DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO	DRM_IOW(DRM_COMMAND_BASE + DRM_QAIC_PARTIAL_EXECUTE_BO,	struct qaic_execute)
#define DRM_IOCTL_QAIC_WAIT_BO			DRM_IOW(DRM_COMMAND_BASE + DRM_QAIC_WAIT_BO, struct qaic_wait)

/* --- argument structs of the alloc ioctls whose sizes the table declares; Source: torvalds/linux include/uapi/drm/qaic_accel.h @ 2e60c498a4a305d18a97c913dcd924da041c01fc (stored index version; has DRM_QAIC_DETACH_SLICE_BO => >= v6.8). DRM_IOWR/DRM_COMMAND_BASE come from drm.h (see drm_core.h) -- verbatim --- */
struct qaic_create_bo {
	__u64 size;
	__u32 handle;
	__u32 pad;
};
