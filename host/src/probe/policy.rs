//! The policy's checks in the kernel (`host-ebpf`'s `lsm.rs`), from the
//! agent's seat: their BPF LSM programs loaded, attached and pinned, and
//! the rules they read.
//!
//! ```text
//! <pin dir>/policy-open-link          file_open
//! <pin dir>/policy-ioctl-link         file_ioctl
//! <pin dir>/policy-ioctl-compat-link  file_ioctl_compat (Linux 6.8+)
//! <pin dir>/maps/RULES, GRANTS, VERDICTS, VERDICTS_LOST
//! ```
//!
//! Pinned links keep the checks, and the rules in the pinned maps, in
//! force while no agent runs; the next agent adopts them if they run its
//! own programs on these maps, and replaces them otherwise. An agent
//! whose policy is off unpins them, and so does `--cleanup` (with the
//! whole pin directory): no check outlives them.

use std::{
    collections::BTreeMap,
    fs,
    os::fd::{AsFd as _, BorrowedFd, OwnedFd},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use aya::{
    Ebpf,
    maps::{HashMap, MapData, PerCpuArray},
};
use kubenpu_ebpf::{GrantKey, VerdictKey, map, program};

use super::{
    Btf, ProbeError,
    hook::load_error,
    relocate::Relocated,
    syscall::{self, Target},
    unpreempted::unpreempted,
};
use crate::program::OBJECT;

/// One check: its program, the LSM hook it runs on, and its pin's name.
struct Check {
    program: &'static str,
    hook: &'static str,
    pin: &'static str,
    /// Whether a kernel may lack the hook: `file_ioctl_compat` is 6.8's;
    /// before it, 32-bit ioctls pass `file_ioctl` too.
    optional: bool,
}

const CHECKS: [Check; 3] = [
    Check {
        program: program::POLICY_OPEN,
        hook: "file_open",
        pin: "policy-open-link",
        optional: false,
    },
    Check {
        program: program::POLICY_IOCTL,
        hook: "file_ioctl",
        pin: "policy-ioctl-link",
        optional: false,
    },
    Check {
        program: program::POLICY_IOCTL_COMPAT,
        hook: "file_ioctl_compat",
        pin: "policy-ioctl-compat-link",
        optional: true,
    },
];

fn link_path(pin_dir: &Path, check: &Check) -> PathBuf {
    pin_dir.join(check.pin)
}

/// Loads the checks and attaches them, adopting pinned links that run the
/// same programs on the same maps (`fresh_maps` false). Returns one line
/// for the log: the hooks checked, and whether they were adopted.
pub fn attach(
    ebpf: &Ebpf,
    vmlinux: &Btf,
    pin_dir: &Path,
    fresh_maps: bool,
    debug: bool,
) -> Result<String, ProbeError> {
    let (mut attached, mut adopted) = (Vec::new(), 0);
    for check in &CHECKS {
        let path = link_path(pin_dir, check);
        let program = match load_lsm(ebpf, OBJECT, (check.program, check.hook), vmlinux, debug) {
            Err(ProbeError::NoLsmHook(_)) if check.optional => {
                let _ = fs::remove_file(&path);
                continue;
            }
            outcome => outcome?,
        };
        let tag = syscall::program_stats(program.as_fd())
            .map_err(|e| ProbeError::Other(format!("cannot read the program's tag: {e}")))?
            .tag;
        attached.push(check.hook);
        let runs = syscall::pinned_link(&path).is_ok_and(|link| link.tag == tag);
        if runs && !fresh_maps {
            adopted += 1;
            continue;
        }
        let link = link_lsm(program.as_fd(), check.hook)?;
        // Pinned beside the old link, then over it: the hook is never
        // unchecked.
        let staged = pin_dir.join(format!("{}-next", check.pin));
        let _ = fs::remove_file(&staged);
        syscall::pin(link.as_fd(), &staged).map_err(|e| pin_error(&staged, &e))?;
        fs::rename(&staged, &path).map_err(|e| pin_error(&path, &e))?;
    }
    let how = if adopted == attached.len() {
        "adopted the pinned checks with their rules"
    } else {
        "attached"
    };
    Ok(format!("BPF LSM checks on {} {how}", attached.join(", ")))
}

/// Loads program `name` of `object` (its maps `ebpf`'s) as BPF LSM on
/// `hook`, e.g. `file_ioctl`.
pub fn load_lsm(
    ebpf: &Ebpf,
    object: &[u8],
    (name, hook): (&str, &str),
    vmlinux: &Btf,
    debug: bool,
) -> Result<OwnedFd, ProbeError> {
    let btf_id = vmlinux
        .func_id(&format!("bpf_lsm_{hook}"), None)
        .ok_or_else(|| ProbeError::NoLsmHook(hook.to_owned()))?;
    let insns = Relocated::new(ebpf, object)?.instructions(name)?;
    syscall::load_program(&insns, name, Target::Lsm { btf_id }, debug)
        .map_err(|e| load_error(&format!("loading the {hook} check"), e, debug))
}

/// Attaches a program [`load_lsm`] loaded to its hook; returns the link.
pub fn link_lsm(program: BorrowedFd<'_>, hook: &str) -> Result<OwnedFd, ProbeError> {
    syscall::lsm_link(program).map_err(|e| {
        ProbeError::classify(
            &e,
            super::Stage::Attach,
            format!("attaching the {hook} check: {e}"),
            ProbeError::Attach,
        )
    })
}

/// How long an unpinned check may take to be gone.
const DETACH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait where the agent may not look programs up by id.
const UNSEEN_RELEASE: Duration = Duration::from_secs(1);

/// Unpins every check and waits until the kernel has detached them: it
/// releases a link a moment after its last pin goes (measured: up to half
/// a second on 6.12 under TCG), and a call in that moment is still
/// checked. Once this returns, nothing is refused.
pub fn detach(pin_dir: &Path) -> Result<(), ProbeError> {
    let mut programs = Vec::new();
    for check in &CHECKS {
        let path = link_path(pin_dir, check);
        programs.extend(syscall::pinned_link(&path).ok().and_then(|l| l.prog_id));
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(pin_error(&path, &e));
            }
            _ => {}
        }
    }
    let deadline = Instant::now() + DETACH_TIMEOUT;
    loop {
        let loaded: Option<Vec<bool>> = programs
            .iter()
            .map(|&id| syscall::program_loaded(id))
            .collect();
        match loaded {
            Some(loaded) if !loaded.contains(&true) => return Ok(()),
            // Without CAP_SYS_ADMIN the kernel will not say: wait out
            // what the release was measured to take, twice over.
            None => {
                std::thread::sleep(UNSEEN_RELEASE);
                return Ok(());
            }
            Some(_) => {}
        }
        if Instant::now() > deadline {
            return Err(ProbeError::Other(format!(
                "the policy's checks were unpinned but are still attached after {} s: a process holds their links",
                DETACH_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether any check is pinned under `pin_dir`.
pub fn pinned(pin_dir: &Path) -> bool {
    CHECKS
        .iter()
        .any(|check| link_path(pin_dir, check).exists())
}

fn pin_error(path: &Path, e: &dyn std::fmt::Display) -> ProbeError {
    ProbeError::Pin {
        path: path.display().to_string(),
        error: e.to_string(),
    }
}

/// The rules in the kernel's maps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// Ruled cgroups and their mode.
    pub modes: BTreeMap<u64, u32>,
    /// What each ruled cgroup may use of each device node.
    pub grants: BTreeMap<GrantKey, u32>,
}

fn other(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Other(e.to_string())
}

fn map_mut<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut aya::maps::Map, ProbeError> {
    ebpf.map_mut(name)
        .ok_or_else(|| other(format!("no {name} map")))
}

fn map<'a>(ebpf: &'a Ebpf, name: &str) -> Result<&'a aya::maps::Map, ProbeError> {
    ebpf.map(name)
        .ok_or_else(|| other(format!("no {name} map")))
}

/// The rules in force, read with lookups (once, as the agent starts).
pub fn rules(ebpf: &Ebpf) -> Result<Rules, ProbeError> {
    let modes: HashMap<&MapData, u64, u32> =
        HashMap::try_from(map(ebpf, map::RULES)?).map_err(other)?;
    let grants: HashMap<&MapData, GrantKey, u32> =
        HashMap::try_from(map(ebpf, map::GRANTS)?).map_err(other)?;
    Ok(Rules {
        modes: modes.iter().collect::<Result<_, _>>().map_err(other)?,
        grants: grants.iter().collect::<Result<_, _>>().map_err(other)?,
    })
}

/// Sets cgroup `id`'s mode, or removes its rule (`None`).
pub fn set_mode(ebpf: &mut Ebpf, id: u64, mode: Option<u32>) -> Result<(), ProbeError> {
    set(ebpf, map::RULES, id, mode)
}

/// Sets a grant's mask, or removes it (`None`).
pub fn set_grant(ebpf: &mut Ebpf, key: GrantKey, mask: Option<u32>) -> Result<(), ProbeError> {
    set(ebpf, map::GRANTS, key, mask)
}

/// Sets `key` of hash map `name` to `value`, or removes it (`None`).
fn set<K: aya::Pod, V: aya::Pod>(
    ebpf: &mut Ebpf,
    name: &str,
    key: K,
    value: Option<V>,
) -> Result<(), ProbeError> {
    let mut map: HashMap<&mut MapData, K, V> =
        HashMap::try_from(map_mut(ebpf, name)?).map_err(other)?;
    match value {
        Some(value) => unpreempted(|| map.insert(key, value, 0)).map_err(other),
        None => remove(unpreempted(|| map.remove(&key))),
    }
}

/// A removal's outcome: a key already gone is no error.
fn remove(outcome: Result<(), aya::maps::MapError>) -> Result<(), ProbeError> {
    match outcome {
        Err(aya::maps::MapError::KeyNotFound) | Ok(()) => Ok(()),
        Err(e) => Err(other(e)),
    }
}

/// Detaches any pinned check and removes every rule: for an agent whose
/// policy is off, so that nothing refuses while it says so, and rules of
/// an earlier mode are not taken up again later.
pub fn remove_all(ebpf: &mut Ebpf, pin_dir: &Path) -> Result<(), ProbeError> {
    if pinned(pin_dir) {
        detach(pin_dir)?;
    }
    clear(ebpf)
}

/// Removes every rule.
fn clear(ebpf: &mut Ebpf) -> Result<(), ProbeError> {
    let Rules { modes, grants } = rules(ebpf)?;
    for id in modes.into_keys() {
        set_mode(ebpf, id, None)?;
    }
    for key in grants.into_keys() {
        set_grant(ebpf, key, None)?;
    }
    Ok(())
}

/// The verdicts and the uncounted ones, copied with lookups: where the
/// kernel refused the map iterators.
pub fn copied_verdicts(ebpf: &Ebpf) -> Result<Verdicts, ProbeError> {
    let counts: HashMap<&MapData, VerdictKey, u64> =
        HashMap::try_from(map(ebpf, map::VERDICTS)?).map_err(other)?;
    let lost: PerCpuArray<&MapData, u64> =
        PerCpuArray::try_from(map(ebpf, map::VERDICTS_LOST)?).map_err(other)?;
    Ok(Verdicts {
        counts: counts.iter().collect::<Result<_, _>>().map_err(other)?,
        lost: lost.get(&0, 0).map_err(other)?.iter().sum(),
    })
}

/// Moves the verdicts `counts` holds for gone cgroup `from` onto the same
/// keys of gone cgroup `into`, or deletes them (`into` is `None`: its
/// grace is over), as its counters are: no call is judged for either any
/// more, so the sums are exact, and the map keeps room for live cgroups.
pub fn fold_verdicts(
    ebpf: &Ebpf,
    counts: &[(VerdictKey, u64)],
    from: u64,
    into: Option<u64>,
) -> Result<(), ProbeError> {
    let aya::maps::Map::HashMap(data) = map(ebpf, map::VERDICTS)? else {
        return Err(other("no hash map VERDICTS"));
    };
    let fd = data.fd().as_fd();
    for (key, _) in counts.iter().filter(|(key, _)| key.cgroup_id == from) {
        let taken = syscall::take_counter::<_, u64>(fd, key).map_err(other)?;
        if let (Some(calls), Some(into)) = (taken, into) {
            let key = VerdictKey {
                cgroup_id: into,
                ..*key
            };
            syscall::add_counter(fd, &key, calls).map_err(other)?;
        }
    }
    Ok(())
}

/// What the checks audited or refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// Calls per verdict key, in key order.
    pub counts: Vec<(VerdictKey, u64)>,
    /// Verdicts that could not be counted (the map was full).
    pub lost: u64,
}
