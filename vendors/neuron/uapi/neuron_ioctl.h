// SPDX-License-Identifier: GPL-2.0
/*
 * Copyright 2020, Amazon.com, Inc. or its affiliates. All Rights Reserved
 */

/** Definitions of data structures shared between user space application and driver. */

#ifndef NEURON_IOCTL_H
#define NEURON_IOCTL_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* ... */
struct neuron_ioctl_mem_alloc {
	__u64 size; // [in] Allocation size
	__u32 host_memory; // [in] If true allocates from host memory; else allocates from device memory
	__u32 dram_channel; // [in] DRAM channel in device memory
	__u32 dram_region; // [in] DRAM region in device memory
	__u32 nc_id; // [in] NeuronCore id(valid only if location is device)
	__u64 *mem_handle; // [out] Allocated memory handle would stored here.
};

struct neuron_ioctl_mem_alloc_v2 {
	__u64 size; // [in] Allocation size
	__u64 align; // [in] alignment
	__u32 host_memory; // [in] If true allocates from host memory; else allocates from device memory
	__u32 dram_channel; // [in] DRAM channel in device memory
	__u32 dram_region; // [in] DRAM region in device memory
	__u32 nc_id; // [in] NeuronCore id(valid only if location is device)
	__u64 *mem_handle; // [out] Allocated memory handle would stored here.
};

struct neuron_ioctl_mem_alloc_v2_mem_type {
	__u64 size; // [in] Allocation size
	__u64 align; // [in] alignment
	__u32 host_memory; // [in] If true allocates from host memory; else allocates from device memory
	__u32 dram_channel; // [in] DRAM channel in device memory
	__u32 dram_region; // [in] DRAM region in device memory
	__u32 nc_id; // [in] NeuronCore id(valid only if location is device)
	__u32 mem_type; // [in] type of allocation
	__u64 *mem_handle; // [out] Allocated memory handle would stored here.
};

/*
 * identical to neuron_ioctl_mem_alloc_v2_mem_type. Introduced pad to differentiate new ioctl
 * to allow NDL to determine if the driver has >=4GB support for both allocations and copies.
 * It allows NDL to more gracefully fail >=4GB allocations is the driver doesn't support 
 * copy ops to MCs that are larger than 4GB
 */
struct neuron_ioctl_mem_alloc_v2_mem_type64 {
	__u64 size; // [in] Allocation size
	__u64 align; // [in] alignment
	__u32 host_memory; // [in] If true allocates from host memory; else allocates from device memory
	__u32 dram_channel; // [in] DRAM channel in device memory
	__u32 dram_region; // [in] DRAM region in device memory
	__u32 nc_id; // [in] NeuronCore id(valid only if location is device)
	__u32 mem_type; // [in] type of allocation
	__u64 *mem_handle; // [out] Allocated memory handle would stored here.
	__u32 pad;  // [dummy] used to descriminate between ioctl version
};
/* ... */
struct neuron_ioctl_mem_copy {
	__u64 src_mem_handle; // [in] Source memory handle from where data is copied.
	__u64 dst_mem_handle; // [in] Destination memory handle to data is to be copied.
	__u32 size; // [in] Size of the transfer.
	__u32 src_offset; // [in] Offset in the source memory handle.
	__u32 dst_offset; // [in] Offset in the destination memory handle.
};

struct neuron_ioctl_mem_copy64 {
	__u64 src_mem_handle; // [in] Source memory handle from where data is copied.
	__u64 dst_mem_handle; // [in] Destination memory handle to data is to be copied.
	__u64 size; // [in] Size of the transfer.
	__u64 src_offset; // [in] Offset in the source memory handle.
	__u64 dst_offset; // [in] Offset in the destination memory handle.
};

struct neuron_ioctl_mem_copy_async {
	__u64 src_mem_handle;     // [in]  Source memory handle from where data is copied.
	__u64 dst_mem_handle;     // [in]  Destination memory handle to data is to be copied.
	__u32 size;               // [in]  Size of the transfer.
	__u32 src_offset;         // [in]  Offset in the source memory handle where transfer should start.
	__u32 dst_offset;         // [in]  Offset in the destination memory handle where transfer should start.
	__u64 host_prefetch_addr; // [in]  host prefetch address (used for device to host transfers to allocate physical pages to a host buffer that RT will copy data to from the dst buffer)
	__u32 pwait_handle;       // [in]  wait handle for a previous transfer that the caller wants to wait on after starting this transfer. -1 == no prev transfer to wait on.
	__u32 wait_handle;        // [out] wait handle returned for this transfer.
};

struct neuron_ioctl_mem_copy_async64 {
	__u64 src_mem_handle;     // [in]  Source memory handle from where data is copied.
	__u64 dst_mem_handle;     // [in]  Destination memory handle to data is to be copied.
	__u64 size;               // [in]  Size of the transfer.
	__u64 src_offset;         // [in]  Offset in the source memory handle where transfer should start.
	__u64 dst_offset;         // [in]  Offset in the destination memory handle where transfer should start.
	__u64 host_prefetch_addr; // [in]  host prefetch address (used for device to host transfers to allocate physical pages to a host buffer that RT will copy data to from the dst buffer)
	__u32 pwait_handle;       // [in]  wait handle for a previous transfer that the caller wants to wait on after starting this transfer. -1 == no prev transfer to wait on.
	__u32 wait_handle;        // [out] wait handle returned for this transfer.
};

struct neuron_ioctl_mem_copy_async_wait {
	__u64 src_mem_handle;     // [in]  Source memory handle from where data is copied.
	__u64 dst_mem_handle;     // [in]  Destination memory handle to data is to be copied.
	__u32 pwait_handle;       // [in]  wait handle for a previous transfer that the caller wants to wait on after starting this transfer. -1 == no prev transfer to wait on.
};


struct neuron_ioctl_memset {
	__u64 mem_handle; // [in] Destination memory handle to data is to be copied.
	__u64 offset; // [in] Offset in the memory handle.
	__u32 value; // [in] value to set the memory with
	__u32 size; // [in] Size of the transfer.
};

struct neuron_ioctl_memset64 {
	__u64 mem_handle; // [in] Destination memory handle to data is to be copied.
	__u64 offset; // [in] Offset in the memory handle.
	__u32 value; // [in] value to set the memory with
	__u64 size; // [in] Size of the transfer.
};

struct neuron_ioctl_mem_buf_copy {
	__u64 mem_handle; // [in] Source or Destination memory handle from/to data needs to be copied.
	void *buffer; // [in] Buffer from/to where data to be copied.
	__u32 size; // [in] Size of the data to be copied.
	__u32 offset; // [in] Offset in the memory handle where the data to be written/read.
	__u32 copy_to_mem_handle; // [in] if set to True copies from buffer to memhandle else copies from memhandle to buffer.
};

struct neuron_ioctl_mem_buf_copy64 {
	__u64 mem_handle; // [in] Source or Destination memory handle from/to data needs to be copied.
	void *buffer; // [in] Buffer from/to where data to be copied.
	__u64 size; // [in] Size of the data to be copied.
	__u64 offset; // [in] Offset in the memory handle where the data to be written/read.
	__u32 copy_to_mem_handle; // [in] if set to True copies from buffer to memhandle else copies from memhandle to buffer.
};

struct neuron_ioctl_program_engine {
	__u64 dst; // [in] Destination engine address
	void *buffer; // [in] Buffer from/to where data to be copied.
	__u32 size; // [in] Size of the data to be copied.
	__u32 offset; // [in] Offset in the dst address where the data to be written/read.
};

struct neuron_ioctl_program_engine_nc {
	__u32 nc_id; // [in] Neuron core id
	__u64 dst; // [in] Destination engine address
	void *buffer; // [in] Buffer from/to where data to be copied.
	__u32 size; // [in] Size of the data to be copied.
	__u32 offset; // [in] Offset in the dst address where the data to be written/read.
};

struct neuron_ioctl_program_engine_nc64 {
	__u32 nc_id; // [in] Neuron core id
	__u64 dst; // [in] Destination engine address
	void *buffer; // [in] Buffer from/to where data to be copied.
	__u64 size; // [in] Size of the data to be copied.
	__u64 offset; // [in] Offset in the dst address where the data to be written/read.
};
/* ... */
struct neuron_ioctl_dma_queue_copy_start {
	__u32 eng_id; // [in] DMA engine index
	__u32 qid; // [in] Queue index in the DMA engine
	__u32 tx_desc_count; // [in] number of tx desc's need to be allocated
	__u32 rx_desc_count; // [in] number of rx desc's need to be allocated
};
/* ... */
struct neuron_ioctl_hbm_scrub_start {
	__u32 nc_id;
	__u32 hbm_index;
	__u32 axi_port;
	__u32 init_val;
};

struct neuron_ioctl_hbm_scrub_wait {
	__u32 nc_id;
	__u32 hbm_index;
};
/* ... */
#define NEURON_IOCTL_BASE 'N'
/* ... */
/** Allocated memory and return a memory_handle. */
#define NEURON_IOCTL_MEM_ALLOC _IOR(NEURON_IOCTL_BASE, 21, struct neuron_ioctl_mem_alloc *)
#define NEURON_IOCTL_MEM_ALLOC_V2 _IOR(NEURON_IOCTL_BASE, 102, struct neuron_ioctl_mem_alloc_v2 *) // V2 here refers to neuron 2.x, not arch type
#define NEURON_IOCTL_MEM_ALLOC_V2MT _IOR(NEURON_IOCTL_BASE, 102, struct neuron_ioctl_mem_alloc_v2_mem_type) // just V2 with additional field mem_type
#define NEURON_IOCTL_MEM_ALLOC_V2MT64 _IOR(NEURON_IOCTL_BASE, 102, struct neuron_ioctl_mem_alloc_v2_mem_type64) // V2 + mem_type + pad
/* ... */
/** Copy data between two memory handles. (using DMA) */
#define NEURON_IOCTL_MEM_COPY _IOR(NEURON_IOCTL_BASE, 23, struct neuron_ioctl_mem_copy *)
#define NEURON_IOCTL_MEM_COPY64 _IOR(NEURON_IOCTL_BASE, 23, struct neuron_ioctl_mem_copy64)

/** Copy data from/to given host buffer to/from memory_handle. (using DMA)*/
#define NEURON_IOCTL_MEM_BUF_COPY _IOWR(NEURON_IOCTL_BASE, 24, struct neuron_ioctl_mem_buf_copy *)
#define NEURON_IOCTL_MEM_BUF_COPY64 _IOWR(NEURON_IOCTL_BASE, 24, struct neuron_ioctl_mem_buf_copy64)
/* ... */
#define NEURON_IOCTL_PROGRAM_ENGINE _IOWR(NEURON_IOCTL_BASE, 27, struct neuron_ioctl_program_engine *)
/** Meset zeros on the hanlde */
#define NEURON_IOCTL_MEMSET _IOR(NEURON_IOCTL_BASE, 28, struct neuron_ioctl_memset *)
#define NEURON_IOCTL_MEMSET64 _IOR(NEURON_IOCTL_BASE, 28, struct neuron_ioctl_memset64)
/* ... */
/** Starts DMA transfer of given number of descriptors */
#define NEURON_IOCTL_DMA_QUEUE_COPY_START _IOR(NEURON_IOCTL_BASE, 35, struct neuron_ioctl_dma_queue_copy_start *)
/* ... */
/** Neuron-core specific versions of program_engine ioctl to target right cores/dmas */
#define NEURON_IOCTL_PROGRAM_ENGINE_NC _IOWR(NEURON_IOCTL_BASE, 105, struct neuron_ioctl_program_engine_nc *)
#define NEURON_IOCTL_PROGRAM_ENGINE_NC64 _IOWR(NEURON_IOCTL_BASE, 105, struct neuron_ioctl_program_engine_nc64)
/* ... */
/** Copy data between two memory handles asynchronously. (using DMA) */
#define NEURON_IOCTL_MEM_COPY_ASYNC _IOWR(NEURON_IOCTL_BASE, 108, struct neuron_ioctl_mem_copy_async)
#define NEURON_IOCTL_MEM_COPY_ASYNC64 _IOWR(NEURON_IOCTL_BASE, 108, struct neuron_ioctl_mem_copy_async64)

/** wait on asynchronous data copy between two memory handles. */
#define NEURON_IOCTL_MEM_COPY_ASYNC_WAIT _IOW(NEURON_IOCTL_BASE, 109, struct neuron_ioctl_mem_copy_async_wait)
/* ... */
#define NEURON_IOCTL_HBM_SCRUB_START _IOWR(NEURON_IOCTL_BASE, 118, struct neuron_ioctl_hbm_scrub_start) 
#define NEURON_IOCTL_HBM_SCRUB_WAIT _IOWR(NEURON_IOCTL_BASE, 119, struct neuron_ioctl_hbm_scrub_wait) 
/* ... */
#define NEURON_IOCTL_MEM_BUF_ZEROCOPY64 _IOWR(NEURON_IOCTL_BASE, 124, struct neuron_ioctl_mem_buf_copy64)
/* ... */
#endif
