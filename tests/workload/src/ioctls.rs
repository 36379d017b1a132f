//! The DRM calls the workload makes, with the uAPI structs they take, and
//! the DMA-heap and udmabuf allocations.

use std::{fs::File, os::fd::AsRawFd as _, time::Duration, time::Instant};

use crate::plan::Item;

/// `DRM_IOCTL_SYNCOBJ_CREATE`'s number.
const SYNCOBJ_CREATE: u8 = 0xbf;
/// `DRM_IOCTL_SYNCOBJ_DESTROY`'s number.
const SYNCOBJ_DESTROY: u8 = 0xc0;
/// `DRM_IOCTL_SYNCOBJ_WAIT`'s number.
pub const SYNCOBJ_WAIT: u8 = 0xc3;
/// `DRM_IOCTL_MODE_CREATE_DUMB`'s number.
pub const MODE_CREATE_DUMB: u8 = 0xb2;
/// `DRM_IOCTL_MODE_DESTROY_DUMB`'s number.
const MODE_DESTROY_DUMB: u8 = 0xb4;
/// `DRM_IOCTL_VIRTGPU_RESOURCE_CREATE`'s number.
pub const VIRTGPU_RESOURCE_CREATE: u8 = 0x44;
/// `DRM_IOCTL_VIRTGPU_WAIT`'s number.
pub const VIRTGPU_WAIT: u8 = 0x48;
/// `DRM_IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB`'s number.
pub const VIRTGPU_RESOURCE_CREATE_BLOB: u8 = 0x4a;
/// `DRM_IOCTL_GEM_CLOSE`'s number.
const GEM_CLOSE: u8 = 0x09;

/// `DMA_HEAP_IOCTL_ALLOC`: `_IOWR('H', 0x0, struct
/// dma_heap_allocation_data)`.
pub const DMA_HEAP_IOCTL_ALLOC: u32 = 0xc018_4800;
/// `UDMABUF_CREATE`: `_IOW('u', 0x42, struct udmabuf_create)`.
pub const UDMABUF_CREATE: u32 = 0x4018_7542;
/// `UDMABUF_FLAGS_CLOEXEC`.
const UDMABUF_FLAGS_CLOEXEC: u32 = 1;

/// `struct dma_heap_allocation_data`.
#[repr(C)]
#[derive(Default)]
struct HeapAllocation {
    len: u64,
    fd: u32,
    fd_flags: u32,
    heap_flags: u64,
}

/// `struct udmabuf_create`.
#[repr(C)]
#[derive(Default)]
struct UdmabufCreate {
    memfd: u32,
    flags: u32,
    offset: u64,
    size: u64,
}

/// `DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT` (bit 1; bit 0 is WAIT_ALL).
const WAIT_FOR_SUBMIT: u32 = 1 << 1;

/// `struct drm_syncobj_create`.
#[repr(C)]
#[derive(Default)]
struct SyncobjCreate {
    handle: u32,
    flags: u32,
}

/// `struct drm_syncobj_wait` (without 6.4's `deadline_nsec`, which
/// `drm_ioctl` zero-fills for shorter arguments).
#[repr(C)]
#[derive(Default)]
struct SyncobjWait {
    handles: u64,
    timeout_nsec: i64,
    count_handles: u32,
    flags: u32,
    first_signaled: u32,
    pad: u32,
}

/// `struct drm_mode_create_dumb`.
#[repr(C)]
#[derive(Default)]
struct CreateDumb {
    height: u32,
    width: u32,
    bpp: u32,
    flags: u32,
    handle: u32,
    pitch: u32,
    size: u64,
}

/// `struct drm_virtgpu_resource_create`.
#[repr(C)]
#[derive(Default)]
struct ResourceCreate {
    target: u32,
    format: u32,
    bind: u32,
    width: u32,
    height: u32,
    depth: u32,
    array_size: u32,
    last_level: u32,
    nr_samples: u32,
    flags: u32,
    bo_handle: u32,
    res_handle: u32,
    size: u32,
    stride: u32,
}

impl ResourceCreate {
    /// A 2D texture (PIPE_TEXTURE_2D), B8G8R8X8, one row of `size` bytes.
    fn row(size: u32) -> Self {
        Self {
            target: 2,
            format: 2,
            width: size / 4,
            height: 1,
            depth: 1,
            array_size: 1,
            size,
            stride: size,
            ..Self::default()
        }
    }
}

/// `VIRTGPU_WAIT_NOWAIT`: the wait returns EBUSY at once if the buffer
/// is busy.
const VIRTGPU_WAIT_NOWAIT: u32 = 1;

/// Polls before a `create-poll` round gives up on its resource.
const MAX_POLLS: u64 = 1_000_000;

/// `struct drm_virtgpu_3d_wait`.
#[repr(C)]
#[derive(Default)]
struct VirtgpuWait {
    handle: u32,
    flags: u32,
}

/// `struct drm_virtgpu_resource_create_blob`.
#[repr(C)]
#[derive(Default)]
struct ResourceCreateBlob {
    blob_mem: u32,
    blob_flags: u32,
    bo_handle: u32,
    res_handle: u32,
    size: u64,
    pad: u32,
    cmd_size: u32,
    cmd: u64,
    blob_id: u64,
}

/// What a run of calls did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    /// Calls of the item's number.
    pub calls: u64,
    /// Of which returned -1.
    pub failed: u64,
    /// Of which with EPERM: refused (by an LSM; DRM itself refuses with
    /// EACCES).
    pub refused: u64,
    /// Of which with EBUSY or EAGAIN (a wait that found the device busy).
    pub busy: u64,
    /// Of which with ETIME or ETIMEDOUT (a wait that timed out).
    pub timed_out: u64,
    /// Their time, summed.
    pub call_ns: u128,
    /// Bytes the successful allocations reported.
    pub bytes: u64,
}

impl Outcome {
    /// Both outcomes together.
    pub fn plus(self, other: &Self) -> Self {
        Self {
            calls: self.calls + other.calls,
            failed: self.failed + other.failed,
            refused: self.refused + other.refused,
            busy: self.busy + other.busy,
            timed_out: self.timed_out + other.timed_out,
            call_ns: self.call_ns + other.call_ns,
            bytes: self.bytes + other.bytes,
        }
    }

    /// Counts one call that returned `ret` after `started`.
    fn record(&mut self, ret: i32, started: Instant) -> bool {
        let errno = std::io::Error::last_os_error().raw_os_error();
        let failed_with =
            |errors: &[i32]| u64::from(ret < 0 && errno.is_some_and(|e| errors.contains(&e)));
        self.refused += failed_with(&[libc::EPERM]);
        self.busy += failed_with(&[libc::EBUSY, libc::EAGAIN]);
        self.timed_out += failed_with(&[libc::ETIME, libc::ETIMEDOUT]);
        self.call_ns += started.elapsed().as_nanos();
        self.calls += 1;
        self.failed += u64::from(ret < 0);
        ret == 0
    }
}

/// `_IOWR('d', nr, size)`: the DRM ioctl encoding.
fn iowr(nr: u8, size: usize) -> libc::Ioctl {
    const IOC_READ_WRITE: u32 = 3;
    // The request's type is c_ulong in glibc and c_int in musl; the bits
    // are the same.
    ((IOC_READ_WRITE << 30) | ((size as u32) << 16) | (u32::from(b'd') << 8) | u32::from(nr))
        as libc::Ioctl
}

/// `ioctl(fd, _IOWR('d', nr, T), arg)`.
fn call<T>(file: &File, nr: u8, arg: &mut T) -> i32 {
    command(file.as_raw_fd(), iowr(nr, size_of::<T>()), arg)
}

/// `ioctl(fd, cmd, arg)`, for a `cmd` that encodes `T`'s size.
fn command<T>(fd: libc::c_int, cmd: libc::Ioctl, arg: &mut T) -> i32 {
    // SAFETY: `arg` is a whole T, as large as the size the command
    // encodes.
    unsafe { libc::ioctl(fd, cmd, std::ptr::from_mut(arg)) }
}

/// Closes a file descriptor the kernel handed back.
fn close_fd(fd: libc::c_int) {
    // SAFETY: a descriptor this process owns and uses no more.
    unsafe { libc::close(fd) };
}

/// A sealed memfd of `bytes`, as udmabuf requires (no shrinking).
fn sealed_memfd(bytes: u64) -> Result<libc::c_int, String> {
    let fail = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    // SAFETY: a NUL-terminated name; the descriptor is checked.
    let fd = unsafe { libc::memfd_create(c"kubenpu-udmabuf".as_ptr(), libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(fail("memfd_create"));
    }
    // SAFETY: calls on the descriptor just made.
    let sized = unsafe { libc::ftruncate(fd, bytes as libc::off_t) } == 0
        && unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } == 0;
    if !sized {
        let error = fail("sizing and sealing the memfd");
        close_fd(fd);
        return Err(error);
    }
    Ok(fd)
}

/// Keeps the CPU busy for `work`, without a system call.
fn spin(work: Duration) {
    let until = Instant::now() + work;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Runs `item` once on `file`; `NODE:NR:COUNT` and `create-wait` items
/// spin for `work` before each call or round.
pub fn issue(file: &File, item: &Item, work: Duration) -> Result<Outcome, String> {
    let mut outcome = Outcome::default();
    match item {
        Item::SendFd { .. } => {}
        Item::Raw { nr, count, .. } | Item::RecvFd { nr, count, .. } => {
            for _ in 0..*count {
                spin(work);
                let mut arg = [0u8; 64];
                let started = Instant::now();
                let ret = call(file, *nr, &mut arg);
                outcome.record(ret, started);
            }
        }
        Item::SyncobjWait { count, timeout, .. } => {
            let mut create = SyncobjCreate::default();
            if call(file, SYNCOBJ_CREATE, &mut create) != 0 {
                return Err(format!(
                    "DRM_IOCTL_SYNCOBJ_CREATE: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let handle = create.handle;
            for _ in 0..*count {
                let mut wait = SyncobjWait {
                    handles: std::ptr::from_ref(&handle) as u64,
                    timeout_nsec: deadline(*timeout),
                    count_handles: 1,
                    flags: WAIT_FOR_SUBMIT,
                    ..SyncobjWait::default()
                };
                let started = Instant::now();
                let ret = call(file, SYNCOBJ_WAIT, &mut wait);
                outcome.record(ret, started);
            }
            call(file, SYNCOBJ_DESTROY, &mut create);
        }
        Item::Dumb { sizes, .. } => {
            for &(width, height, bpp) in sizes {
                let mut dumb = CreateDumb {
                    width,
                    height,
                    bpp,
                    ..CreateDumb::default()
                };
                let started = Instant::now();
                if outcome.record(call(file, MODE_CREATE_DUMB, &mut dumb), started) {
                    outcome.bytes += dumb.size;
                    let mut handle = dumb.handle;
                    call(file, MODE_DESTROY_DUMB, &mut handle);
                }
            }
        }
        Item::Resource { sizes, .. } => {
            for &size in sizes {
                let mut resource = ResourceCreate::row(size);
                let started = Instant::now();
                if outcome.record(call(file, VIRTGPU_RESOURCE_CREATE, &mut resource), started) {
                    outcome.bytes += u64::from(size);
                    close(file, resource.bo_handle);
                }
            }
        }
        Item::CreateWait { count, .. } => {
            for _ in 0..*count {
                spin(work);
                let handle = create_resource(file)?;
                // Without flags the wait blocks until the host has made
                // the resource: the create's fence is on it.
                let mut wait = VirtgpuWait {
                    handle,
                    ..VirtgpuWait::default()
                };
                let started = Instant::now();
                outcome.record(call(file, VIRTGPU_WAIT, &mut wait), started);
                close(file, handle);
            }
        }
        Item::CreatePoll { count, .. } => {
            for _ in 0..*count {
                let handle = create_resource(file)?;
                // As Mesa polls a buffer: no-block waits, each EBUSY
                // while the host has not made the resource yet.
                let mut polls = 0;
                loop {
                    let mut wait = VirtgpuWait {
                        handle,
                        flags: VIRTGPU_WAIT_NOWAIT,
                    };
                    let started = Instant::now();
                    if outcome.record(call(file, VIRTGPU_WAIT, &mut wait), started) {
                        break;
                    }
                    polls += 1;
                    if polls == MAX_POLLS {
                        return Err(format!("a resource was still busy after {MAX_POLLS} polls"));
                    }
                }
                close(file, handle);
            }
        }
        Item::Heap { count, bytes, .. } => {
            for _ in 0..*count {
                let mut allocation = HeapAllocation {
                    len: *bytes,
                    fd_flags: (libc::O_RDWR | libc::O_CLOEXEC) as u32,
                    ..HeapAllocation::default()
                };
                let started = Instant::now();
                let ret = command(
                    file.as_raw_fd(),
                    DMA_HEAP_IOCTL_ALLOC as libc::Ioctl,
                    &mut allocation,
                );
                if outcome.record(ret, started) {
                    outcome.bytes += bytes;
                    close_fd(allocation.fd as libc::c_int);
                }
            }
        }
        Item::Udmabuf { count, bytes, .. } => {
            let memfd = sealed_memfd(*bytes)?;
            for _ in 0..*count {
                let mut create = UdmabufCreate {
                    memfd: memfd as u32,
                    flags: UDMABUF_FLAGS_CLOEXEC,
                    offset: 0,
                    size: *bytes,
                };
                let started = Instant::now();
                let ret = command(file.as_raw_fd(), UDMABUF_CREATE as libc::Ioctl, &mut create);
                // It returns the dma-buf's descriptor.
                if outcome.record(ret.min(0), started) {
                    outcome.bytes += bytes;
                    close_fd(ret);
                }
            }
            close_fd(memfd);
        }
        Item::Blob { sizes, .. } => {
            for &size in sizes {
                // VIRTGPU_BLOB_MEM_GUEST, VIRTGPU_BLOB_FLAG_USE_MAPPABLE.
                let mut blob = ResourceCreateBlob {
                    blob_mem: 1,
                    blob_flags: 1,
                    size,
                    ..ResourceCreateBlob::default()
                };
                let started = Instant::now();
                if outcome.record(call(file, VIRTGPU_RESOURCE_CREATE_BLOB, &mut blob), started) {
                    outcome.bytes += size;
                    close(file, blob.bo_handle);
                }
            }
        }
    }
    Ok(outcome)
}

/// A 4 KiB virtio-gpu 2D resource; its buffer's handle. The host makes
/// it asynchronously: until then, the create's fence keeps it busy.
fn create_resource(file: &File) -> Result<u32, String> {
    let mut resource = ResourceCreate::row(4096);
    if call(file, VIRTGPU_RESOURCE_CREATE, &mut resource) != 0 {
        return Err(format!(
            "DRM_IOCTL_VIRTGPU_RESOURCE_CREATE: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(resource.bo_handle)
}

/// `DRM_IOCTL_GEM_CLOSE` of `handle`.
fn close(file: &File, handle: u32) {
    let mut close = [handle, 0];
    call(file, GEM_CLOSE, &mut close);
}

/// CLOCK_MONOTONIC `timeout` from now, in ns: the absolute deadline a
/// syncobj wait takes (and keeps when the kernel restarts it).
#[allow(
    clippy::unnecessary_cast,
    reason = "time_t and c_long are 64-bit here, 32-bit on i386"
)]
fn deadline(timeout: Duration) -> i64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as i64 * 1_000_000_000 + now.tv_nsec as i64 + timeout.as_nanos() as i64
}

/// SIGALRMs handled so far.
static ALARMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn count_alarm(_: libc::c_int) {
    ALARMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// SIGALRMs handled so far: while the workers run, each one interrupted a
/// worker (the main thread holds them off), nearly always inside a call.
pub fn alarms() -> u64 {
    ALARMS.load(std::sync::atomic::Ordering::Relaxed)
}

/// SIGALRM held off the calling thread while it lives. The kernel gives a
/// process's signal to its main thread first: while the main thread waits
/// for the workers, it must hold SIGALRM off, or the workers' calls are
/// never interrupted.
pub struct AlarmsToOtherThreads(());

impl AlarmsToOtherThreads {
    /// Holds SIGALRM off the calling thread. Threads it spawns after this
    /// inherit the mask: spawn the workers first.
    pub fn hold() -> Self {
        alarm_mask(libc::SIG_BLOCK);
        Self(())
    }
}

impl Drop for AlarmsToOtherThreads {
    fn drop(&mut self) {
        alarm_mask(libc::SIG_UNBLOCK);
    }
}

fn alarm_mask(how: libc::c_int) {
    // SAFETY: a set filled by sigemptyset and sigaddset; the old mask is
    // not asked for.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGALRM);
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// A SIGALRM every `interval`, handled by a handler that only counts it,
/// with SA_RESTART: the kernel restarts the calls it interrupts.
pub fn interrupt_every(interval: Duration) -> Result<(), String> {
    // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_alarm as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        if libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()) != 0 {
            return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
        }
        let mut tick: libc::timeval = std::mem::zeroed();
        // The fields' types differ between glibc and musl; the values fit.
        tick.tv_sec = interval.as_secs() as _;
        tick.tv_usec = interval.subsec_micros() as _;
        let timer = libc::itimerval {
            it_interval: tick,
            it_value: tick,
        };
        if libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) != 0 {
            return Err(format!("setitimer: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}
