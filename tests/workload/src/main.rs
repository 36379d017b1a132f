//! `kubenpu-workload [--threads N] NODE:NR:COUNT...`: opens each device
//! node and issues COUNT ioctls with number NR (`cmd & 0xff`) on it, then
//! prints one JSON line per plan item with what it issued (and how long
//! the calls took, for benchmarks), so tests can compare the agent's
//! counts with the workload's own.
//!
//! With `--threads N`, N threads share the one open file and each issues
//! COUNT calls, all at once: the item's `calls` is N × COUNT. More busy
//! threads than CPUs is how preemption inside a kernel hook shows.
//!
//! The argument block is zeroed and the drivers reject most of these calls
//! (no such handle, bad size): every call still enters `drm_ioctl`, which
//! is what is counted. NR accepts `0x48` or `72`.

use std::{fs::File, os::fd::AsRawFd as _, os::unix::fs::MetadataExt as _, process::ExitCode};

/// `_IOWR('d', nr, 64 bytes)`: the DRM ioctl encoding with a 64-byte argument.
fn drm_iowr(nr: u8) -> libc::Ioctl {
    const IOC_READ_WRITE: u32 = 3;
    // The request's type is c_ulong in glibc and c_int in musl; the bits
    // are the same.
    ((IOC_READ_WRITE << 30) | (64 << 16) | (u32::from(b'd') << 8) | u32::from(nr)) as libc::Ioctl
}

struct Plan {
    node: String,
    nr: u8,
    count: u64,
}

fn parse(arg: &str) -> Result<Plan, String> {
    let bad = || format!("{arg:?} is not NODE:NR:COUNT (e.g. /dev/dri/card0:0x48:1000)");
    let mut parts = arg.rsplitn(3, ':');
    let count = parts.next().and_then(|c| c.parse().ok()).ok_or_else(bad)?;
    let nr = parts.next().ok_or_else(bad)?;
    let nr = match nr.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => nr.parse(),
    }
    .map_err(|_| bad())?;
    let node = parts.next().ok_or_else(bad)?.to_owned();
    Ok(Plan { node, nr, count })
}

fn run(plan: &Plan, threads: u64) -> Result<String, String> {
    let file = File::options()
        .read(true)
        .write(true)
        .open(&plan.node)
        .map_err(|e| format!("cannot open {}: {e}", plan.node))?;
    let rdev = file.metadata().map_err(|e| e.to_string())?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| issue(&file, plan));
        }
    });
    let elapsed_ns = started.elapsed().as_nanos();
    Ok(format!(
        "{{\"node\":\"{}\",\"device\":\"{major}:{minor}\",\"nr\":{},\"calls\":{},\"elapsed_ns\":{elapsed_ns}}}",
        plan.node,
        plan.nr,
        plan.count * threads
    ))
}

/// COUNT calls of the plan's ioctl on `file`.
fn issue(file: &File, plan: &Plan) {
    let mut arg = [0u8; 64];
    for _ in 0..plan.count {
        arg.fill(0);
        // SAFETY: the argument buffer is as large as the size encoded in
        // the command; the result is deliberately ignored.
        unsafe { libc::ioctl(file.as_raw_fd(), drm_iowr(plan.nr), arg.as_mut_ptr()) };
    }
}

/// `--threads N` if it comes first, and the rest of the arguments.
fn threads(mut args: Vec<String>) -> Result<(u64, Vec<String>), String> {
    if args.first().map(String::as_str) != Some("--threads") {
        return Ok((1, args));
    }
    let n = args
        .get(1)
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .ok_or("--threads needs a number of threads above 0")?;
    Ok((n, args.split_off(2)))
}

fn main() -> ExitCode {
    let (threads, args) = match threads(std::env::args().skip(1).collect()) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("kubenpu-workload: {e}");
            return ExitCode::from(2);
        }
    };
    let plans: Result<Vec<Plan>, String> = args.iter().map(|a| parse(a)).collect();
    let plans = match plans {
        Ok(plans) if !plans.is_empty() => plans,
        Ok(_) => {
            eprintln!("usage: kubenpu-workload [--threads N] NODE:NR:COUNT...");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("kubenpu-workload: {e}");
            return ExitCode::from(2);
        }
    };
    for plan in &plans {
        match run(plan, threads) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("kubenpu-workload: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
