//! Checks a vendor table against the kernel's uAPI header it was written
//! from, so a wrong number is caught by the vendor's unit tests rather
//! than by a node that silently counts the wrong ioctl.
//!
//! Keep an excerpt of the header (the `#define` lines of the counted
//! ioctls, verbatim, with the kernel version read) beside the vendor crate
//! and call [`check`] on it. Headers that number their ioctls with enum
//! constants, implicit or built by a token-pasting macro, are read as the
//! compiler reads them, so their excerpt stays verbatim too.

use alloc::{collections::BTreeMap, format, string::String, vec::Vec};

use crate::{Vendor, validate};

/// The DRM core's own definitions (an excerpt of `drm.h`), against which
/// core entries such as [`crate::drm::SYNCOBJ_WAIT`] are checked.
pub const DRM_H: &str = include_str!("../uapi/drm.h");

/// The argument structs of the core ioctls whose sizes the SDK declares
/// (an excerpt of `drm_mode.h`).
pub const DRM_MODE_H: &str = include_str!("../uapi/drm_mode.h");

/// What a set of headers names, as the preprocessor and the compiler
/// see it: object-like `#define`s and enum constants by value, and
/// function-like `#define`s by parameters and body. panthor and ethosu
/// number their ioctls with enum constants built by a token-pasting macro
/// (`DRM_IOCTL_PANTHOR(WR, BO_CREATE, bo_create)`); amdxdna numbers them
/// with an enum of implicit values.
#[derive(Debug, Default)]
struct Symbols {
    /// `#define NAME VALUE` and enum constants: the value's text.
    values: BTreeMap<String, String>,
    /// `#define NAME(params) body`.
    macros: BTreeMap<String, (Vec<String>, String)>,
}

/// `DRM_IO(nr)`, `DRM_IOR(nr, type)` and the like, whose first argument is
/// the number; drm.h defines them through `_IOC`, which the SDK need not
/// follow.
const DRM_IO_MACROS: [&str; 4] = ["DRM_IO", "DRM_IOR", "DRM_IOW", "DRM_IOWR"];

/// `_IO(type, nr)`, `_IOR(type, nr, argument)` and the like, which other
/// drivers' headers define their commands with; `linux/ioctl.h` defines
/// them, which the SDK need not follow either.
const IO_MACROS: [&str; 4] = ["_IO", "_IOR", "_IOW", "_IOWR"];

impl Symbols {
    /// Every definition of `headers` and the SDK's `drm.h`, the first one
    /// of a name winning, as for the preprocessor's first pass.
    fn of(headers: &[&str]) -> Self {
        let mut symbols = Self::default();
        for header in headers.iter().chain([&DRM_H]) {
            symbols.read_defines(header);
            symbols.read_enums(header);
        }
        symbols
    }

    /// `#define` lines, continuation lines joined.
    fn read_defines(&mut self, header: &str) {
        let mut lines = header.lines();
        while let Some(line) = lines.next() {
            let Some(rest) = line.trim_start().strip_prefix("#define") else {
                continue;
            };
            let mut text = String::from(rest.trim_start());
            while text.ends_with('\\') {
                text.pop();
                text.push(' ');
                text.push_str(lines.next().unwrap_or_default());
            }
            // A comment after the value is not part of it.
            let text = without_comments(&text);
            let name_len = identifier_len(&text);
            let (name, rest) = text.split_at(name_len);
            if name.is_empty() {
                continue;
            }
            // A function-like macro has its '(' right after the name.
            if let Some(params) = rest.strip_prefix('(') {
                let Some((params, body)) = params.split_once(')') else {
                    continue;
                };
                let params = params.split(',').map(|p| p.trim().into()).collect();
                self.macros
                    .entry(name.into())
                    .or_insert((params, body.trim().into()));
            } else {
                self.values
                    .entry(name.into())
                    .or_insert_with(|| rest.trim().into());
            }
        }
    }

    /// The constants of every `enum { ... }`: an explicit value's text, or
    /// the last explicitly valued constant plus how far it is behind it,
    /// or its position when none before it has a value (so a long enum
    /// does not nest one addition per constant).
    fn read_enums(&mut self, header: &str) {
        let code = without_comments(header);
        let mut rest = code.as_str();
        while let Some(at) = find_word(rest, "enum") {
            rest = &rest[at + "enum".len()..];
            let Some(open) = rest.find(['{', ';']) else {
                break;
            };
            if rest.as_bytes()[open] == b';' {
                // A declaration such as `enum x y;`, not a definition.
                rest = &rest[open + 1..];
                continue;
            }
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            let body = &rest[open + 1..open + close];
            rest = &rest[open + close..];
            let mut base: Option<&str> = None;
            let mut behind = 0u32;
            for item in split_top_level(body, ',') {
                let item = item.trim();
                if item.is_empty() || item.starts_with('#') {
                    continue;
                }
                let (name, value) = match item.split_once('=') {
                    Some((name, value)) => {
                        base = Some(name.trim());
                        behind = 0;
                        (name.trim(), value.trim().into())
                    }
                    None => (
                        item,
                        base.map_or_else(|| format!("{behind}"), |b| format!("{b} + {behind}")),
                    ),
                };
                self.values.entry(name.into()).or_insert(value);
                behind += 1;
            }
        }
    }

    /// `text` with each call of a function-like macro (but the `DRM_IO`
    /// family) replaced by its body, arguments substituted and `##`
    /// pasted, until none is left at its top.
    fn expand(&self, text: &str, depth: u32) -> Option<String> {
        let text = without_outer_parens(text.trim());
        let Some((name, args)) = call(text) else {
            return Some(text.into());
        };
        if depth > 16 || DRM_IO_MACROS.contains(&name) || IO_MACROS.contains(&name) {
            return Some(text.into());
        }
        let (params, body) = self.macros.get(name)?;
        if params.len() != args.len() {
            return None;
        }
        let mut substituted = String::new();
        let mut rest = body.as_str();
        while !rest.is_empty() {
            let len = identifier_len(rest).max(rest.chars().next().map_or(0, char::len_utf8));
            let (token, tail) = rest.split_at(len);
            match params.iter().position(|p| p == token) {
                Some(i) => substituted.push_str(args[i].trim()),
                None => substituted.push_str(token),
            }
            rest = tail;
        }
        let pasted = substituted
            .split("##")
            .map(str::trim)
            .collect::<Vec<_>>()
            .concat();
        self.expand(&pasted, depth + 1)
    }

    /// The value of `expr` (`0x29`, `DRM_COMMAND_BASE + DRM_I915_GEM_WAIT`,
    /// `DRM_IOWR(..., struct ...)`, `DRM_IOCTL_PANTHOR(WR, ...)`).
    fn evaluate(&self, expr: &str, depth: u32) -> Option<u32> {
        if depth > 16 {
            return None;
        }
        let expr = self.expand(expr, 0)?;
        // DRM_IO(nr) / DRM_IOR / DRM_IOW / DRM_IOWR (nr, type): the number
        // is the first argument.
        if let Some((_, args)) = call(&expr) {
            return self.evaluate(args.first()?, depth + 1);
        }
        split_top_level(&expr, '+')
            .map(|term| {
                let term = without_outer_parens(term.trim());
                if let Some(hex) = term.strip_prefix("0x").or_else(|| term.strip_prefix("0X")) {
                    u32::from_str_radix(hex, 16).ok()
                } else if term.bytes().all(|b| b.is_ascii_digit()) && !term.is_empty() {
                    term.parse().ok()
                } else {
                    self.evaluate(self.values.get(term)?, depth + 1)
                }
            })
            .sum()
    }
}

/// The length of the C identifier `text` starts with.
fn identifier_len(text: &str) -> usize {
    text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len())
}

/// Where `word` first stands alone in `text`, not inside an identifier.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(word).map(|(at, _)| at).find(|&at| {
        !is_ident(text[..at].chars().next_back())
            && !is_ident(text[at + word.len()..].chars().next())
    })
}

/// `text` without its `/* */` and `//` comments.
fn without_comments(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                code.push_str(&rest[..b]);
                rest = rest[b..].find("*/").map_or("", |end| &rest[b + end + 2..]);
            }
            (_, Some(l)) => {
                code.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |end| &rest[l + end..]);
            }
            _ => {
                code.push_str(rest);
                return code;
            }
        }
    }
}

/// The parts of `text` between `separator`s outside parentheses.
fn split_top_level(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut parts = Vec::new();
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == separator && depth == 0 => {
                parts.push(&text[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter()
}

/// Where the parenthesis opening `text` closes.
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` without parentheses around all of it: `((x + 1))` is `x + 1`.
fn without_outer_parens(mut text: &str) -> &str {
    while text.starts_with('(') && closing_paren(text) == Some(text.len() - 1) {
        text = text[1..text.len() - 1].trim();
    }
    text
}

/// `NAME(args)` spanning all of `text` (spaces allowed before the
/// parenthesis): the name and the top-level arguments.
fn call(text: &str) -> Option<(&str, Vec<&str>)> {
    let name_len = identifier_len(text);
    if name_len == 0 {
        return None;
    }
    let (name, rest) = text.split_at(name_len);
    let rest = rest.trim_start();
    if !rest.starts_with('(') || closing_paren(rest) != Some(rest.len() - 1) {
        return None;
    }
    Some((
        name,
        split_top_level(&rest[1..rest.len() - 1], ',').collect(),
    ))
}

/// The ioctl number (`cmd & 0xff`) the headers define for `macro_name`.
pub fn ioctl_nr(headers: &[&str], macro_name: &str) -> Option<u8> {
    let symbols = Symbols::of(headers);
    let value = symbols.evaluate(symbols.values.get(macro_name)?, 0)?;
    Some((value & 0xff) as u8)
}

/// The argument type of ioctl `macro_name`: the last argument of
/// `DRM_IOWR(nr, struct x)` or `_IOWR(type, nr, struct x)`, e.g. `struct
/// drm_mode_create_dumb`.
pub fn argument_type(headers: &[&str], macro_name: &str) -> Option<String> {
    let symbols = Symbols::of(headers);
    let value = symbols.expand(symbols.values.get(macro_name)?, 0)?;
    let (_, args) = call(&value)?;
    let ty = args.last()?.trim();
    (args.len() >= 2 && !ty.is_empty()).then(|| ty.into())
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

/// Checks each character device command of `vendor` against `headers`,
/// as the compiler computes the macro it is named after: `_IO` commands
/// without a size, `_IOWR` with the argument's size, plain integers, enum
/// constants. On a device keyed on the type and number, only those bits
/// are compared; where the header defines the number alone (a value
/// below 0x100, as NVIDIA's escape codes are), only the number.
///
/// Needs a C compiler (`cc`); native only. Returns one line per problem.
#[cfg(not(target_family = "wasm"))]
pub fn check_commands(vendor: &Vendor, headers: &[&str]) -> Result<(), Vec<String>> {
    let commands: Vec<(&crate::CharDevice, &crate::Command)> = vendor
        .char_devices
        .iter()
        .flat_map(|d| d.commands.iter().map(move |c| (d, c)))
        .collect();
    if commands.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = commands.iter().map(|(_, c)| c.name).collect();
    let values = layout::commands(vendor.name, headers, &names).map_err(|e| alloc::vec![e])?;
    let problems: Vec<String> = commands
        .iter()
        .zip(values)
        .filter_map(|((device, command), value)| {
            let mask = match device.key {
                crate::CommandKey::TypeAndNumber if value < 0x100 => 0xff,
                key => u64::from(key.mask()),
            };
            (value & mask != u64::from(command.cmd) & mask).then(|| {
                format!(
                    "{}: table says {:#010x}, the header says {value:#010x} ({} bits compared: {mask:#x})",
                    command.name,
                    command.cmd,
                    device.key.as_str()
                )
            })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(not(target_family = "wasm"))]
mod layout {
    extern crate std;

    use alloc::{format, string::String, vec::Vec};
    use std::{io::Write as _, process};

    use super::{DRM_H, DRM_MODE_H, argument_type};
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
        let size_fields = |size: Option<crate::Size>| {
            size.into_iter()
                .flat_map(|size| core::iter::once(size.field).chain(size.when.map(|(f, _)| f)))
        };
        let commands = vendor.char_devices.iter().flat_map(|d| d.commands);
        type Read<'a> = (&'a str, Option<&'a str>, Vec<Field>);
        let read: Vec<Read<'_>> = vendor
            .ioctls
            .iter()
            .map(|i| (i.name, None, size_fields(i.size).collect()))
            .chain(commands.map(|c| {
                let only = c.only_when.map(|(field, _)| field);
                (
                    c.name,
                    c.argument,
                    size_fields(c.size).chain(only).collect(),
                )
            }))
            .filter(|(_, _, fields): &Read<'_>| !fields.is_empty())
            .collect();
        for (ioctl, argument, fields) in read {
            let ty = argument
                .map(String::from)
                .or_else(|| argument_type(headers, ioctl));
            let Some(ty) = ty else {
                problems.push(format!(
                    "{ioctl}: no argument type in the headers given (name it with .argument(...))"
                ));
                continue;
            };
            probes.extend(fields.into_iter().map(|field| Probe {
                ioctl,
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
        let statements: Vec<String> = probes
            .iter()
            .map(|Probe { ty, field, .. }| {
                format!(
                    "printf(\"%zu %zu\\n\", offsetof({ty}, {0}), sizeof((({ty} *)0)->{0}));",
                    field.name
                )
            })
            .collect();
        run(name, headers, &statements)?
            .iter()
            .map(|line| {
                let mut numbers = line.split(' ').map(str::parse::<usize>);
                match (numbers.next(), numbers.next()) {
                    (Some(Ok(offset)), Some(Ok(width))) => Ok((offset, width)),
                    _ => Err(format!("the layout probe printed {line:?}")),
                }
            })
            .collect()
    }

    /// The value of each character device command's macro, as the
    /// compiler computes it from the headers.
    pub fn commands(name: &str, headers: &[&str], macros: &[&str]) -> Result<Vec<u64>, String> {
        let statements: Vec<String> = macros
            .iter()
            .map(|m| format!("printf(\"%lu\\n\", (unsigned long)({m}));"))
            .collect();
        run(name, headers, &statements)?
            .iter()
            .map(|line| {
                line.parse()
                    .map_err(|_| format!("the command probe printed {line:?}"))
            })
            .collect()
    }

    /// Compiles `statements` in `main` after the headers, runs the
    /// program and returns what it printed, line by line.
    fn run(name: &str, headers: &[&str], statements: &[String]) -> Result<Vec<String>, String> {
        let mut source = String::from(
            "#include <linux/ioctl.h>\n#include <linux/types.h>\n#include <stddef.h>\n#include <stdio.h>\n",
        );
        for header in [&DRM_H, &DRM_MODE_H].into_iter().chain(headers) {
            source.push_str(header);
            source.push('\n');
        }
        source.push_str("int main(void) {\n");
        for statement in statements {
            source.push_str("    ");
            source.push_str(statement);
            source.push('\n');
        }
        source.push_str("    return 0;\n}\n");
        // Unique per call: tests run probes of one vendor name at once.
        static PROBES: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
        let probe = PROBES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        let binary =
            std::env::temp_dir().join(format!("kubenpu-uapi-{name}-{}-{probe}", process::id()));
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
                "the uAPI header does not compile ({compiled}); see cc's message above"
            ));
        }
        let output = process::Command::new(&binary).output();
        let _ = std::fs::remove_file(&binary);
        let output = output.map_err(|e| format!("cannot run the uAPI probe: {e}"))?;
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(String::from)
            .collect())
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

    /// As panthor_drm.h and ethosu_accel.h number their ioctls: an enum
    /// of implicit ids, and enum constants built by a token-pasting macro.
    const ENUM_HEADER: &str = "enum drm_acme_ioctl_id {\n\
        \t/** @DRM_ACME_QUERY: a comment, with = and , in it. */\n\
        \tDRM_ACME_QUERY = 0,\n\
        \tDRM_ACME_BO_CREATE, // another\n\
        \tDRM_ACME_SUBMIT,\n\
        \tDRM_ACME_WAIT = 0x10,\n\
        \tDRM_ACME_AFTER_WAIT\n\
        };\n\
        enum drm_acme_flags { ACME_FLAG = (1 << 0), };\n\
        #define DRM_IOCTL_ACME(__access, __id, __type) \\\n\
        \tDRM_IO ## __access(DRM_COMMAND_BASE + DRM_ACME_ ## __id, \\\n\
        \t\t\t   struct drm_acme_ ## __type)\n\
        enum {\n\
        \tDRM_IOCTL_ACME_BO_CREATE =\n\
        \t\tDRM_IOCTL_ACME(WR, BO_CREATE, bo_create),\n\
        \tDRM_IOCTL_ACME_SUBMIT = DRM_IOCTL_ACME(W, SUBMIT, submit),\n\
        };\n\
        #define DRM_IOCTL_ACME_AFTER_WAIT DRM_IOWR(DRM_COMMAND_BASE + DRM_ACME_AFTER_WAIT, struct w)\n";

    #[test]
    fn enum_constants_count_on_from_the_last_explicit_value() {
        assert_eq!(ioctl_nr(&[ENUM_HEADER], "DRM_ACME_QUERY"), Some(0));
        assert_eq!(ioctl_nr(&[ENUM_HEADER], "DRM_ACME_BO_CREATE"), Some(1));
        assert_eq!(ioctl_nr(&[ENUM_HEADER], "DRM_ACME_SUBMIT"), Some(2));
        assert_eq!(ioctl_nr(&[ENUM_HEADER], "DRM_ACME_WAIT"), Some(0x10));
        assert_eq!(
            ioctl_nr(&[ENUM_HEADER], "DRM_IOCTL_ACME_AFTER_WAIT"),
            Some(0x51)
        );
    }

    #[test]
    fn a_long_implicit_enum_resolves_to_its_last_constant() {
        let names: Vec<String> = (0..100).map(|i| format!("DRM_ACME_ID_{i}")).collect();
        let header = format!("enum acme {{ {} }};\n", names.join(",\n"));
        assert_eq!(ioctl_nr(&[&header], "DRM_ACME_ID_99"), Some(99));
        let header = format!("enum acme {{ FIRST = 0x10, {} }};\n", names.join(", "));
        assert_eq!(ioctl_nr(&[&header], "DRM_ACME_ID_99"), Some(0x10 + 100));
    }

    #[test]
    fn token_pasting_macros_expand_to_the_number_and_the_argument_type() {
        assert_eq!(
            ioctl_nr(&[ENUM_HEADER], "DRM_IOCTL_ACME_BO_CREATE"),
            Some(0x41)
        );
        assert_eq!(
            ioctl_nr(&[ENUM_HEADER], "DRM_IOCTL_ACME_SUBMIT"),
            Some(0x42)
        );
        assert_eq!(
            argument_type(&[ENUM_HEADER], "DRM_IOCTL_ACME_BO_CREATE").as_deref(),
            Some("struct drm_acme_bo_create")
        );
        assert_eq!(
            argument_type(&[HEADER], "DRM_IOCTL_ACME_BO").as_deref(),
            Some("struct y")
        );
        // A macro called with the wrong number of arguments defines nothing.
        let wrong = "#define M(a, b) DRM_IOW(DRM_COMMAND_BASE + a, b)\n#define DRM_IOCTL_X M(1)\n";
        assert_eq!(ioctl_nr(&[wrong], "DRM_IOCTL_X"), None);
    }

    #[test]
    fn an_alias_of_an_ioctl_macro_resolves_through_it() {
        let alias = "#define DRM_IOCTL_ACME_SUBMIT_OLD DRM_IOCTL_ACME_SUBMIT\n";
        assert_eq!(
            ioctl_nr(&[alias, ENUM_HEADER], "DRM_IOCTL_ACME_SUBMIT_OLD"),
            Some(0x42)
        );
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
            allocators: crate::Allocators::NONE,
            char_devices: &[],
            energy: crate::Energy::NONE,
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
            allocators: crate::Allocators::NONE,
            char_devices: &[],
            energy: crate::Energy::NONE,
        };
        let problems = check(&VENDOR, &[HEADER]).unwrap_err();
        assert_eq!(
            problems,
            ["DRM_IOCTL_ACME_SUBMIT_WR: table says nr 0x68, the header says 0x69"]
        );
    }

    /// A header in the other encodings character drivers use: `_IOWR`
    /// with a struct's size, `_IO` without one, a plain integer, and a
    /// number defined alone (NVIDIA's escapes).
    const CHAR_HEADER: &str = "struct acme_alloc {\n\t__u64 len;\n\t__u32 fd;\n\t__u32 flags;\n};\n\
        #define ACME_IOC_MAGIC 'A'\n\
        #define ACME_IOCTL_ALLOC _IOWR(ACME_IOC_MAGIC, 0x0, struct acme_alloc)\n\
        #define ACME_IOCTL_RESET _IO(0xFA, 6)\n\
        #define ACME_IOCTL_ALLOC2 _IOWR(ACME_IOC_MAGIC, 0x1, struct acme_alloc) // the same\n\
        #define ACME_PLAIN 0x30000001\n\
        #define ACME_ESC_ALLOC 0x2B\n";

    fn char_vendor(commands: &'static [crate::Command], key: crate::CommandKey) -> Vendor {
        Vendor {
            name: "acme",
            version: "1",
            drivers: &[],
            pci_vendors: &[],
            products: &[],
            ioctls: &[],
            usage_names: UsageNames::KERNEL,
            allocators: crate::Allocators::NONE,
            char_devices: alloc::vec![crate::CharDevice {
                driver: "acme_char",
                nodes: crate::Nodes::Class("acme"),
                entry: "acme_ioctl",
                key,
                commands,
            }]
            .leak(),
            energy: crate::Energy::NONE,
        }
    }

    #[test]
    fn character_device_commands_are_checked_as_the_compiler_computes_them() {
        use crate::{Command, CommandKey, Size};
        const RIGHT: &[Command] = &[
            Command::alloc("ACME_IOCTL_ALLOC", 0xc010_4100).sized(Size::before("len", 0, 8)),
            Command::wait("ACME_IOCTL_RESET", 0x0000_fa06),
            Command::submit("ACME_PLAIN", 0x3000_0001),
        ];
        let right = char_vendor(RIGHT, CommandKey::Whole);
        assert_eq!(check_commands(&right, &[CHAR_HEADER]), Ok(()));
        assert_eq!(check_layouts(&right, &[CHAR_HEADER]), Ok(()));
        assert_eq!(check(&right, &[CHAR_HEADER]), Ok(()));
        // The argument's size is part of a whole command.
        const WRONG: &[Command] = &[Command::alloc("ACME_IOCTL_ALLOC", 0xc018_4100)];
        let wrong = char_vendor(WRONG, CommandKey::Whole);
        assert_eq!(
            check_commands(&wrong, &[CHAR_HEADER]).unwrap_err(),
            [
                "ACME_IOCTL_ALLOC: table says 0xc0184100, the header says 0xc0104100 (whole bits compared: 0xffffffff)"
            ]
        );
        // Not when the key is the type and number; a number defined alone
        // is compared as a number.
        const KEYED: &[Command] = &[
            Command::alloc("ACME_IOCTL_ALLOC", 0x0000_4100),
            Command::alloc("ACME_ESC_ALLOC", 0x0000_462b),
        ];
        let keyed = char_vendor(KEYED, CommandKey::TypeAndNumber);
        assert_eq!(check_commands(&keyed, &[CHAR_HEADER]), Ok(()));
        const MISNUMBERED: &[Command] = &[Command::alloc("ACME_ESC_ALLOC", 0x0000_462c)];
        let misnumbered = char_vendor(MISNUMBERED, CommandKey::TypeAndNumber);
        assert_eq!(
            check_commands(&misnumbered, &[CHAR_HEADER])
                .unwrap_err()
                .len(),
            1
        );
        assert_eq!(
            argument_type(&[CHAR_HEADER], "ACME_IOCTL_ALLOC").as_deref(),
            Some("struct acme_alloc")
        );
        // A comment after a definition is not part of it.
        assert_eq!(
            argument_type(&[CHAR_HEADER], "ACME_IOCTL_ALLOC2").as_deref(),
            Some("struct acme_alloc")
        );
    }
}
