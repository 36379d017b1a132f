/* Source: torvalds/linux include/uapi/drm/ethosu_accel.h @ 24f171c7e145f43b9f187578e89b0982ce87e54c (v6.19: the driver as merged) -- excerpt, verbatim lines only:
 * the whole id enum (its values are implicit), the DRM_IOCTL_ETHOSU() macro, the counted
 * entries of the DRM_IOCTL_ETHOSU_* enum and the argument structs those entries name. */
/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2025 Arm, Ltd. */

enum drm_ethosu_ioctl_id {
	/** @DRM_ETHOSU_DEV_QUERY: Query device information. */
	DRM_ETHOSU_DEV_QUERY = 0,

	/** @DRM_ETHOSU_BO_CREATE: Create a buffer object. */
	DRM_ETHOSU_BO_CREATE,

	/** @DRM_ETHOSU_BO_WAIT: Wait on a buffer object's fence. */
	DRM_ETHOSU_BO_WAIT,

	/**
	 * @DRM_ETHOSU_BO_MMAP_OFFSET: Get the file offset to pass to
	 * mmap to map a GEM object.
	 */
	DRM_ETHOSU_BO_MMAP_OFFSET,

	/**
	 * @DRM_ETHOSU_CMDSTREAM_BO_CREATE: Create a command stream buffer
	 * object.
	 */
	DRM_ETHOSU_CMDSTREAM_BO_CREATE,

	/** @DRM_ETHOSU_SUBMIT: Submit a job and BOs to run. */
	DRM_ETHOSU_SUBMIT,
};

/**
 * struct drm_ethosu_bo_create - Arguments passed to DRM_IOCTL_ETHOSU_BO_CREATE.
 */
struct drm_ethosu_bo_create {
	/**
	 * @size: Requested size for the object
	 *
	 * The (page-aligned) allocated size for the object will be returned.
	 */
	__u64 size;

	/**
	 * @flags: Flags. Must be a combination of drm_ethosu_bo_flags flags.
	 */
	__u32 flags;

	/**
	 * @handle: Returned handle for the object.
	 *
	 * Object handles are nonzero.
	 */
	__u32 handle;
};

struct drm_ethosu_bo_wait {
	__u32 handle;
	__u32 pad;
	__s64 timeout_ns;	/* absolute */
};

struct drm_ethosu_cmdstream_bo_create {
	/* Size of the data argument. */
	__u32 size;

	/* Flags, currently must be 0. */
	__u32 flags;

	/* Pointer to the data. */
	__u64 data;

	/** Returned GEM handle for the BO. */
	__u32 handle;

	/* Pad, must be 0. */
	__u32 pad;
};

struct drm_ethosu_submit {
	/** Input: Pointer to an array of struct drm_ethosu_job. */
	__u64 jobs;

	/** Input: Number of jobs passed in. */
	__u32 job_count;

	/** Reserved, must be zero. */
	__u32 pad;
};

#define DRM_IOCTL_ETHOSU(__access, __id, __type) \
	DRM_IO ## __access(DRM_COMMAND_BASE + DRM_ETHOSU_ ## __id, \
			   struct drm_ethosu_ ## __type)

enum {
	DRM_IOCTL_ETHOSU_BO_CREATE =
		DRM_IOCTL_ETHOSU(WR, BO_CREATE, bo_create),
	DRM_IOCTL_ETHOSU_BO_WAIT =
		DRM_IOCTL_ETHOSU(WR, BO_WAIT, bo_wait),
	DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE =
		DRM_IOCTL_ETHOSU(WR, CMDSTREAM_BO_CREATE, cmdstream_bo_create),
	DRM_IOCTL_ETHOSU_SUBMIT =
		DRM_IOCTL_ETHOSU(WR, SUBMIT, submit),
};
