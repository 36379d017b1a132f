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

/// The argument structs of the core ioctls whose sizes the SDK declares
/// (an excerpt of `drm_mode.h`).
pub const DRM_MODE_H: &str = include_str!("../uapi/drm_mode.h");

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

/// Every `#define` of `headers` and the SDK's `drm.h`, first one winning.
fn all_defines<'a>(headers: &[&'a str]) -> BTreeMap<&'a str, String> {
    let mut all = BTreeMap::new();
    for header in headers.iter().chain([&DRM_H]) {
        for (name, value) in defines(header) {
            all.entry(name).or_insert(value);
        }
    }
    all
}

/// The ioctl number (`cmd & 0xff`) the headers define for `macro_name`.
pub fn ioctl_nr(headers: &[&str], macro_name: &str) -> Option<u8> {
    let all = all_defines(headers);
    let value = evaluate(all.get(macro_name)?, &all, 0)?;
    Some((value & 0xff) as u8)
}

/// The argument type of ioctl `macro_name`: `DRM_IOWR(nr, struct x)`'s
/// second argument, e.g. `struct drm_mode_create_dumb`.
pub fn argument_type(headers: &[&str], macro_name: &str) -> Option<String> {
    let all = all_defines(headers);
    let value = all.get(macro_name)?;
    let args = &value[value.find('(')? + 1..value.rfind(')')?];
    let (_, ty) = args.rsplit_once(',')?;
    Some(ty.trim().into())
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

/// Checks every size a vendor declares against the uAPI structs, by
/// compiling them: `headers` (with the SDK's `drm_mode.h`) must hold the
/// argument struct of each sized ioctl, and the C compiler's `offsetof`
/// and `sizeof` must give the declared offset and width of each field.
/// Needs a C compiler (`cc`) and the kernel's `linux/types.h`; native
/// only. Returns one line per problem.
#[cfg(not(target_family = "wasm"))]
pub fn check_layouts(vendor: &Vendor, headers: &[&str]) -> Result<(), Vec<String>> {
    layout::check(vendor, headers)
}

#[cfg(not(target_family = "wasm"))]
mod layout {
    extern crate std;

    use alloc::{format, string::String, vec::Vec};
    use std::{io::Write as _, process};

    use super::{DRM_MODE_H, argument_type};
    use crate::{Field, Vendor};

    /// One field to measure: the ioctl, its argument type, the field.
    struct Probe<'a> {
        ioctl: &'a str,
        ty: String,
        field: Field,
    }

    pub fn check(vendor: &Vendor, headers: &[&str]) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        let mut probes = Vec::new();
        for ioctl in vendor.ioctls {
            let Some(size) = ioctl.size else { continue };
            let Some(ty) = argument_type(headers, ioctl.name) else {
                problems.push(format!(
                    "{}: no argument type in the headers given",
                    ioctl.name
                ));
                continue;
            };
            let fields = core::iter::once(size.field).chain(size.when.map(|(f, _)| f));
            probes.extend(fields.map(|field| Probe {
                ioctl: ioctl.name,
                ty: ty.clone(),
                field,
            }));
        }
        if probes.is_empty() {
            return if problems.is_empty() {
                Ok(())
            } else {
                Err(problems)
            };
        }
        let measured = match measure(vendor.name, headers, &probes) {
            Ok(measured) => measured,
            Err(e) => return Err(alloc::vec![e]),
        };
        for (probe, (offset, width)) in probes.iter().zip(measured) {
            let declared = (
                usize::from(probe.field.offset),
                usize::from(probe.field.width),
            );
            if declared != (offset, width) {
                problems.push(format!(
                    "{}: {} of {} is at offset {offset}, {width} bytes wide; the table says {}, {}",
                    probe.ioctl, probe.field.name, probe.ty, declared.0, declared.1
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// `(offsetof, sizeof)` of each probe's field, from a C program built
    /// from the headers.
    fn measure(
        name: &str,
        headers: &[&str],
        probes: &[Probe<'_>],
    ) -> Result<Vec<(usize, usize)>, String> {
        let mut source =
            String::from("#include <linux/types.h>\n#include <stddef.h>\n#include <stdio.h>\n");
        for header in core::iter::once(&DRM_MODE_H).chain(headers) {
            source.push_str(header);
            source.push('\n');
        }
        source.push_str("int main(void) {\n");
        for Probe { ty, field, .. } in probes {
            source.push_str(&format!(
                "    printf(\"%zu %zu\\n\", offsetof({ty}, {0}), sizeof((({ty} *)0)->{0}));\n",
                field.name
            ));
        }
        source.push_str("    return 0;\n}\n");
        let binary = std::env::temp_dir().join(format!("kubenpu-layout-{name}-{}", process::id()));
        let mut cc = process::Command::new("cc")
            .args(["-x", "c", "-", "-o"])
            .arg(&binary)
            .stdin(process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run cc to compile the uAPI structs: {e}"))?;
        cc.stdin
            .take()
            .expect("piped")
            .write_all(source.as_bytes())
            .map_err(|e| format!("cannot feed cc: {e}"))?;
        let compiled = cc.wait().map_err(|e| format!("cc: {e}"))?;
        if !compiled.success() {
            return Err(format!(
                "the uAPI structs do not compile ({compiled}); see cc's message above"
            ));
        }
        let output = process::Command::new(&binary).output();
        let _ = std::fs::remove_file(&binary);
        let output = output.map_err(|e| format!("cannot run the layout probe: {e}"))?;
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| {
                let mut numbers = line.split(' ').map(str::parse::<usize>);
                match (numbers.next(), numbers.next()) {
                    (Some(Ok(offset)), Some(Ok(width))) => Ok((offset, width)),
                    _ => Err(format!("the layout probe printed {line:?}")),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ioctl, UsageNames, drm};

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
    fn declared_sizes_are_checked_against_the_compiled_structs() {
        const ACME: &str = "#define DRM_IOCTL_ACME_BO DRM_IOWR(DRM_COMMAND_BASE + 0x01, struct acme_bo)\n\
            struct acme_bo {\n\t__u32 handle;\n\t__u32 flags;\n\t__u64 size;\n};\n";
        let vendor = |size| Vendor {
            name: "acme",
            version: "1",
            drivers: &["acme"],
            pci_vendors: &[],
            products: &[],
            ioctls: alloc::vec![
                Ioctl::alloc("DRM_IOCTL_ACME_BO", 0x41).sized(size),
                drm::MODE_CREATE_DUMB
            ]
            .leak(),
            usage_names: UsageNames::KERNEL,
        };
        assert_eq!(
            check_layouts(&vendor(crate::Size::after("size", 8, 8)), &[ACME]),
            Ok(())
        );
        let problems =
            check_layouts(&vendor(crate::Size::after("size", 4, 4)), &[ACME]).unwrap_err();
        assert_eq!(
            problems,
            [
                "DRM_IOCTL_ACME_BO: size of struct acme_bo is at offset 8, 8 bytes wide; the table says 4, 4"
            ]
        );
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
            usage_names: UsageNames::KERNEL,
        };
        let problems = check(&VENDOR, &[HEADER]).unwrap_err();
        assert_eq!(
            problems,
            ["DRM_IOCTL_ACME_SUBMIT_WR: table says nr 0x68, the header says 0x69"]
        );
    }
}
