//! `kubenpu-workload [--threads N] [--signals MS] [--after PATH] ITEM...`:
//! opens each item's device node, issues its ioctls, then prints one JSON
//! line per item with what it issued (`calls`), the run's wall time
//! (`elapsed_ns`), how many calls failed (and of those, how many with
//! `EPERM`: `refused`, as an LSM refuses; with `EBUSY` or `EAGAIN`:
//! `busy`; with `ETIME` or `ETIMEDOUT`: `timed_out`), how long they took
//! (`call_ns`, summed over the calls as the workload's own clock saw them), how many bytes the
//! kernel reported allocated, and how many SIGALRMs interrupted its
//! threads (`signals`), so tests can compare the agent's numbers with
//! the workload's own.
//!
//! Items:
//!
//! - `NODE:NR:COUNT`: COUNT ioctls with number NR (`cmd & 0xff`, `0x48`
//!   or `72`) and a zeroed 64-byte argument. The drivers reject most of
//!   these (no such handle, bad size): every call still enters
//!   `drm_ioctl`, which is what is counted.
//! - `syncobj-wait:NODE:COUNT:TIMEOUT_MS`: creates a syncobj that nothing
//!   will signal, then COUNT `DRM_IOCTL_SYNCOBJ_WAIT`s on it with
//!   `WAIT_FOR_SUBMIT` and an absolute timeout TIMEOUT_MS ahead: each
//!   blocks until the timeout and fails with ETIME.
//! - `dumb:NODE:WxHxBPP,...`: one `DRM_IOCTL_MODE_CREATE_DUMB` per size
//!   (each destroyed again); the kernel reports each buffer's size back.
//! - `resource:NODE:BYTES,...`: one 2D `DRM_IOCTL_VIRTGPU_RESOURCE_CREATE`
//!   of each size (virtio-gpu only).
//! - `create-wait:NODE:COUNT`: COUNT rounds of a 4 KiB 2D
//!   `DRM_IOCTL_VIRTGPU_RESOURCE_CREATE` and a blocking
//!   `DRM_IOCTL_VIRTGPU_WAIT` on it (virtio-gpu only), the resource closed
//!   again: each wait sleeps until the host has made the resource, as a
//!   thread waiting on its device does. Its line counts the waits; the
//!   creates, as many, are calls too.
//! - `create-poll:NODE:COUNT`: as `create-wait`, but polls each resource,
//!   as Mesa polls its buffers: `DRM_IOCTL_VIRTGPU_WAIT`s with
//!   `VIRTGPU_WAIT_NOWAIT` until one succeeds, each failing with EBUSY
//!   while the host has not made the resource yet. Its line counts the
//!   polls, and how many were busy.
//! - `blob:NODE:BYTES,...`: one guest-memory
//!   `DRM_IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB` of each size (virtio-gpu
//!   with blob resources only; elsewhere each fails).
//! - `send-fd:SOCKET:NODE`: opens NODE and sends it (`SCM_RIGHTS`) to the
//!   process listening at the unix socket SOCKET; no calls.
//! - `recv-fd:SOCKET:NR:COUNT`: listens at SOCKET, and makes COUNT calls
//!   of NR on the node a peer sends.
//! - `heap:NODE:COUNT:BYTES`: COUNT `DMA_HEAP_IOCTL_ALLOC`s of BYTES each
//!   on a DMA heap (`/dev/dma_heap/system`), each buffer closed again.
//! - `udmabuf:NODE:COUNT:BYTES`: COUNT `UDMABUF_CREATE`s of the first
//!   BYTES (a multiple of the page size) of one sealed memfd on
//!   `/dev/udmabuf`, each buffer closed again.
//!
//! With `--threads N`, N threads share the one open file and each runs the
//! item, all at once: its counts are N times one thread's. `--spread` pins
//! thread `i` to the `i`-th CPU the workload may run on (modulo their
//! number), so every CPU counts into the same keys at once. More busy
//! threads than CPUs is how preemption inside a kernel hook shows. With
//! `--signals MS`, a SIGALRM with an SA_RESTART handler that only counts
//! it arrives every MS milliseconds meanwhile, at the workers, never at
//! the main thread waiting for them: calls it interrupts are restarted
//! by the kernel, unseen by the workload, as a profiler's or a language
//! runtime's signals do. With `--after PATH`, each item's calls wait,
//! with its node already open, until PATH exists: a test changes what
//! the kernel allows between a pod's open and its calls. With
//! `--work-us US`, the threads of a `NODE:NR:COUNT` or `create-wait` item
//! spin US microseconds (by the clock) before each call or round, as a
//! thread that computes between its submits does (placement runs it near
//! its device). With `--sched-ext`, every thread runs under policy
//! `SCHED_EXT`, as a sched_ext scheduler loaded with
//! `SCX_OPS_SWITCH_PARTIAL` (`kubenpu-pods scheduler --partial`) takes
//! only such tasks.

mod ioctls;
mod passing;
mod plan;

use std::{fs::File, os::unix::fs::MetadataExt as _, process::ExitCode};

use plan::{Item, Options};

/// The CPUs this process may run on, in order.
fn allowed_cpus() -> Result<Vec<usize>, String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a whole cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(format!(
            "sched_getaffinity: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: reads of the set just filled.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) -> Result<(), String> {
    // SAFETY: as in `allowed_cpus`; `cpu` is below CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a whole cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(format!(
            "cannot pin a thread to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Puts the calling thread under policy `SCHED_EXT` (7), which a
/// sched_ext scheduler loaded with `SCX_OPS_SWITCH_PARTIAL` runs.
fn to_sched_ext() -> Result<(), String> {
    const SCHED_EXT: libc::c_int = 7;
    // SAFETY: plain data, all zero: priority 0, which SCHED_EXT takes
    // (musl's has more fields than glibc's).
    let param: libc::sched_param = unsafe { std::mem::zeroed() };
    // SAFETY: the calling thread (0), and a whole sched_param.
    if unsafe { libc::sched_setscheduler(0, SCHED_EXT, &param) } != 0 {
        return Err(format!(
            "cannot set policy SCHED_EXT (a kernel with sched_ext?): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Waits until `path` exists.
fn wait_for(path: &std::path::Path) {
    while !path.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn run(item: &Item, options: &Options) -> Result<String, String> {
    let (threads, spread) = (options.threads, options.spread);
    let cpus = if spread { allowed_cpus()? } else { Vec::new() };
    let file = match item {
        Item::RecvFd { socket, .. } => passing::receive(socket.as_ref())?,
        _ => File::options()
            .read(true)
            .write(true)
            .open(item.node())
            .map_err(|e| format!("cannot open {}: {e}", item.node()))?,
    };
    if let Item::SendFd { socket, .. } = item {
        passing::send(&file, socket.as_ref())?;
    }
    let rdev = file.metadata().map_err(|e| e.to_string())?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    if let Some(path) = &options.after {
        wait_for(path);
    }
    let started = std::time::Instant::now();
    let alarms_before = ioctls::alarms();
    let outcomes: Vec<ioctls::Outcome> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let cpu = (!cpus.is_empty()).then(|| cpus[i as usize % cpus.len()]);
                let file = &file;
                scope.spawn(move || {
                    cpu.map_or(Ok(()), pin_to)?;
                    if options.sched_ext {
                        to_sched_ext()?;
                    }
                    ioctls::issue(file, item, options.work)
                })
            })
            .collect();
        let _alarms = ioctls::AlarmsToOtherThreads::hold();
        workers
            .into_iter()
            .map(|w| w.join().expect("a workload thread"))
            .collect::<Result<_, _>>()
    })?;
    let elapsed_ns = started.elapsed().as_nanos();
    let total = outcomes
        .iter()
        .fold(ioctls::Outcome::default(), |a, b| a.plus(b));
    Ok(format!(
        "{{\"node\":\"{}\",\"device\":\"{major}:{minor}\",\"nr\":{},\"calls\":{},\"elapsed_ns\":{elapsed_ns},\"failed\":{},\"refused\":{},\"busy\":{},\"timed_out\":{},\"call_ns\":{},\"bytes\":{},\"signals\":{}}}",
        item.node(),
        item.nr(),
        total.calls,
        total.failed,
        total.refused,
        total.busy,
        total.timed_out,
        total.call_ns,
        total.bytes,
        ioctls::alarms() - alarms_before
    ))
}

fn main() -> ExitCode {
    let options = match plan::parse(std::env::args().skip(1).collect()) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("kubenpu-workload: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(interval) = options.signals
        && let Err(e) = ioctls::interrupt_every(interval)
    {
        eprintln!("kubenpu-workload: {e}");
        return ExitCode::FAILURE;
    }
    for item in &options.items {
        match run(item, &options) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("kubenpu-workload: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
