/* SPDX-License-Identifier: MIT */
/*
 * Excerpt of include/uapi/drm/drm_mode.h (torvalds/linux commit
 * 7d461b291e65938f15f56fe58da2303b07578a76; the struct is unchanged since):
 * the argument of DRM_IOCTL_MODE_CREATE_DUMB, verbatim. Under the MIT-style
 * notice of its authors:
 * Copyright (c) 2007 Dave Airlie <airlied@linux.ie>
 * Copyright (c) 2007 Jakob Bornecrantz <wallbraker@gmail.com>
 * Copyright (c) 2008 Red Hat Inc.
 * Copyright (c) 2007-2008 Tungsten Graphics, Inc., Cedar Park, TX., USA
 * Copyright (c) 2007-2008 Intel Corporation
 */

struct drm_mode_create_dumb {
	__u32 height;
	__u32 width;
	__u32 bpp;
	__u32 flags;

	__u32 handle;
	__u32 pitch;
	__u64 size;
};
