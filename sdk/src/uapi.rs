//! Checks a vendor table against the kernel's uAPI header it was written
//! from, so a wrong number is caught by the vendor's unit tests rather
//! than by a node that silently counts the wrong ioctl.
//!
//! Keep an excerpt of the header (the `#define` lines of the counted
//! ioctls, verbatim, with the kernel version read) beside the vendor crate
//! and call [`check`] on it.

use alloc::{collections::BTreeMap, format, string::String, vec::Vec};

use crate::{Vendor, validate};

/// The DRM core's own definitions (an excerpt of `drm.h`), against which
/// core entries such as [`crate::drm::SYNCOBJ_WAIT`] are checked.
pub const DRM_H: &str = include_str!("../uapi/drm.h");

/// `#define NAME VALUE` lines, continuation lines joined.
fn defines(header: &str) -> BTreeMap<&str, String> {
    let mut defines = BTreeMap::new();
    let mut lines = header.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim_start().strip_prefix("#define") else {
            continue;
        };
        let mut text = String::from(rest);
        while text.ends_with('\\') {
            text.pop();
            text.push(' ');
            text.push_str(lines.next().unwrap_or_default());
        }
        let rest = rest.trim_start();
        let name_len = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        let name = &rest[..name_len];
        let value = text.trim_start()[name_len..].trim();
        // First definition wins, as for the preprocessor's first pass.
        defines.entry(name).or_insert_with(|| value.into());
    }
    defines
}

/// The value of `expr` (`0x29`, `DRM_COMMAND_BASE + DRM_I915_GEM_WAIT`,
/// `DRM_IOWR(..., struct ...)`), resolving names through `defines`.
fn evaluate(expr: &str, defines: &BTreeMap<&str, String>, depth: u32) -> Option<u32> {
    if depth > 16 {
        return None;
    }
    let expr = expr
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    // DRM_IO(nr) / DRM_IOR / DRM_IOW / DRM_IOWR (nr, type): the number is
    // the first argument.
    if let Some(rest) = expr.strip_prefix("DRM_IO") {
        let args = &rest[rest.find('(')? + 1..];
        let first = args.split([',', ')']).next()?;
        return evaluate(first, defines, depth + 1);
    }
    expr.split('+')
        .map(|term| {
            let term = term.trim();
            if let Some(hex) = term.strip_prefix("0x").or_else(|| term.strip_prefix("0X")) {
                u32::from_str_radix(hex, 16).ok()
            } else if term.bytes().all(|b| b.is_ascii_digit()) && !term.is_empty() {
                term.parse().ok()
            } else {
                evaluate(defines.get(term)?, defines, depth + 1)
            }
        })
        .sum()
}

/// The ioctl number (`cmd & 0xff`) the headers define for `macro_name`.
pub fn ioctl_nr(headers: &[&str], macro_name: &str) -> Option<u8> {
    let mut all = BTreeMap::new();
    for header in headers.iter().chain([&DRM_H]) {
        for (name, value) in defines(header) {
            all.entry(name).or_insert(value);
        }
    }
    let value = evaluate(all.get(macro_name)?, &all, 0)?;
    Some((value & 0xff) as u8)
}

/// Runs the agent's validation on `vendor` and checks every entry's number
/// against `headers` (plus the SDK's `drm.h` for core ioctls). Returns one
/// line per problem.
pub fn check(vendor: &Vendor, headers: &[&str]) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if let Err(fault) = validate(&vendor.description()) {
        problems.push(format!("{}: {fault}", vendor.name));
    }
    for ioctl in vendor.ioctls {
        match ioctl_nr(headers, ioctl.name) {
            Some(nr) if nr == ioctl.nr => {}
            Some(nr) => problems.push(format!(
                "{}: table says nr {:#04x}, the header says {nr:#04x}",
                ioctl.name, ioctl.nr
            )),
            None => problems.push(format!("{}: not defined in the headers given", ioctl.name)),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ioctl, drm};

    const HEADER: &str = "#define DRM_ACME_SUBMIT 0x29\n\
        #define DRM_ACME_SUBMIT_WR DRM_ACME_SUBMIT\n\
        #define DRM_IOCTL_ACME_SUBMIT_WR \\\n\tDRM_IOWR(DRM_COMMAND_BASE + DRM_ACME_SUBMIT_WR, struct x)\n\
        #define DRM_IOCTL_ACME_BO DRM_IOW (DRM_COMMAND_BASE + 0x02, struct y)\n";

    #[test]
    fn numbers_resolve_through_aliases_continuations_and_spaces() {
        assert_eq!(ioctl_nr(&[HEADER], "DRM_IOCTL_ACME_SUBMIT_WR"), Some(0x69));
        assert_eq!(ioctl_nr(&[HEADER], "DRM_IOCTL_ACME_BO"), Some(0x42));
        assert_eq!(ioctl_nr(&[HEADER], "DRM_IOCTL_ACME_NONE"), None);
    }

    #[test]
    fn the_sdk_core_ioctls_match_drm_h() {
        for core in drm::CORE {
            assert_eq!(ioctl_nr(&[], core.name), Some(core.nr), "{}", core.name);
        }
        assert_eq!(
            ioctl_nr(&[], "DRM_COMMAND_BASE"),
            Some(drm::DRM_COMMAND_BASE)
        );
        assert_eq!(ioctl_nr(&[], "DRM_COMMAND_END"), Some(drm::DRM_COMMAND_END));
    }

    #[test]
    fn a_wrong_number_is_reported() {
        const VENDOR: Vendor = Vendor {
            name: "acme",
            version: "1",
            drivers: &["acme"],
            pci_vendors: &[],
            products: &[],
            ioctls: &[
                Ioctl::submit("DRM_IOCTL_ACME_SUBMIT_WR", 0x68),
                drm::SYNCOBJ_WAIT,
            ],
        };
        let problems = check(&VENDOR, &[HEADER]).unwrap_err();
        assert_eq!(
            problems,
            ["DRM_IOCTL_ACME_SUBMIT_WR: table says nr 0x68, the header says 0x69"]
        );
    }
}
