/* Source: torvalds/linux include/uapi/drm/habanalabs_accel.h @ 0648c4d0806fe167fe699299573100507ae99502 (accel/DRM-ioctl era, newer than v6.6.14 which still used _IOWR('H',...)); legacy block below from @ 20faaeec3794661c1d73578316691174a5a0e5a9 -- excerpt */
/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
 *
 * Copyright 2016-2022 HabanaLabs, Ltd.
 * All Rights Reserved.
 *
 */

/* Opcode to create a new command buffer */
#define HL_CB_OP_CREATE		0

/* Opcode to allocate device memory */
#define HL_MEM_OP_ALLOC			0
#define HL_MEM_OP_FREE			1
#define HL_MEM_OP_MAP			2
#define HL_MEM_OP_UNMAP			3
#define HL_MEM_OP_MAP_BLOCK		4
#define HL_MEM_OP_EXPORT_DMABUF_FD	5
#define HL_MEM_OP_TS_ALLOC		6

#define HL_IOCTL_INFO		0x00
#define HL_IOCTL_CB		0x01
#define HL_IOCTL_CS		0x02
#define HL_IOCTL_WAIT_CS	0x03
#define HL_IOCTL_MEMORY		0x04
#define HL_IOCTL_DEBUG		0x05

#define DRM_IOCTL_HL_CB		DRM_IOWR(DRM_COMMAND_BASE + HL_IOCTL_CB, union hl_cb_args)
#define DRM_IOCTL_HL_CS		DRM_IOWR(DRM_COMMAND_BASE + HL_IOCTL_CS, union hl_cs_args)
#define DRM_IOCTL_HL_WAIT_CS	DRM_IOWR(DRM_COMMAND_BASE + HL_IOCTL_WAIT_CS, union hl_wait_cs_args)
#define DRM_IOCTL_HL_MEMORY	DRM_IOWR(DRM_COMMAND_BASE + HL_IOCTL_MEMORY, union hl_mem_args)

#define HL_COMMAND_START	(DRM_COMMAND_BASE + HL_IOCTL_INFO)
#define HL_COMMAND_END		(DRM_COMMAND_BASE + HL_IOCTL_DEBUG + 1)

