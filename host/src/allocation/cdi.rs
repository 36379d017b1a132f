//! CDI specs: which device nodes a fully qualified CDI device name
//! (`vendor.com/class=name`) gives a container. DRA drivers name their
//! devices to kubelet this way; PodResources passes the names on.
//!
//! A spec lists `devices[]`, each with `containerEdits.deviceNodes[]`
//! (`path`, `hostPath` defaulting to `path`, optional `major`/`minor`);
//! the spec's own `containerEdits` apply to each of its devices. Where a
//! node has no numbers, the host path is looked up with `stat(2)`. Specs
//! are JSON (`.json`) or YAML (`.yaml`, `.yml`); others are ignored.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use serde::Deserialize;

use crate::discovery::DevNum;

/// The standard places CDI specs are written: static, then transient.
pub const DEFAULT_DIRS: [&str; 2] = ["/etc/cdi", "/var/run/cdi"];

/// What the spec directories say now.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Specs {
    /// Device numbers per fully qualified device name.
    pub devices: HashMap<String, Vec<DevNum>>,
    /// Spec files that could not be used, each with why, on one line.
    pub invalid: Vec<(PathBuf, String)>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    kind: String,
    #[serde(default)]
    devices: Vec<SpecDevice>,
    #[serde(default)]
    container_edits: Edits,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecDevice {
    name: String,
    #[serde(default)]
    container_edits: Edits,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Edits {
    #[serde(default)]
    device_nodes: Vec<DeviceNode>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeviceNode {
    path: String,
    host_path: Option<String>,
    major: Option<i64>,
    minor: Option<i64>,
}

/// Reads every spec in `dirs` (missing directories are fine); host paths
/// under `/dev` are looked up under `dev_root`.
pub fn read(dirs: &[PathBuf], dev_root: &Path) -> Specs {
    let mut specs = Specs::default();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        files.sort();
        for file in files {
            let Some(format) = Format::of(&file) else {
                continue;
            };
            match read_spec(&file, format, dev_root) {
                Ok(devices) => specs.devices.extend(devices),
                Err(why) => specs.invalid.push((file, why)),
            }
        }
    }
    specs
}

#[derive(Clone, Copy)]
enum Format {
    Json,
    Yaml,
}

impl Format {
    fn of(file: &Path) -> Option<Self> {
        match file.extension()?.to_str()? {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }
}

fn read_spec(
    file: &Path,
    format: Format,
    dev_root: &Path,
) -> Result<Vec<(String, Vec<DevNum>)>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let spec: Spec = match format {
        Format::Json => serde_json::from_str(&text).map_err(|e| e.to_string())?,
        Format::Yaml => serde_norway::from_str(&text).map_err(|e| e.to_string())?,
    };
    if !spec.kind.contains('/') {
        return Err(format!("kind {:?} is not vendor.com/class", spec.kind));
    }
    let common = nodes(&spec.container_edits, dev_root)?;
    spec.devices
        .iter()
        .map(|device| {
            let mut numbers = nodes(&device.container_edits, dev_root)?;
            numbers.extend(&common);
            Ok((format!("{}={}", spec.kind, device.name), numbers))
        })
        .collect()
}

fn nodes(edits: &Edits, dev_root: &Path) -> Result<Vec<DevNum>, String> {
    edits
        .device_nodes
        .iter()
        .filter_map(|node| number(node, dev_root).transpose())
        .collect()
}

/// A node's device number: from the spec, else from its host path. A
/// host path that does not exist (yet) gives none: it grants nothing
/// the agent could count.
fn number(node: &DeviceNode, dev_root: &Path) -> Result<Option<DevNum>, String> {
    if let (Some(major), Some(minor)) = (node.major, node.minor) {
        let number = u32::try_from(major)
            .ok()
            .zip(u32::try_from(minor).ok())
            .and_then(|(major, minor)| DevNum::new(major, minor));
        return number
            .map(Some)
            .ok_or_else(|| format!("{}: {major}:{minor} is not a device number", node.path));
    }
    let host = node.host_path.as_deref().unwrap_or(&node.path);
    let local = match Path::new(host).strip_prefix("/dev") {
        Ok(rest) => dev_root.join(rest),
        Err(_) => PathBuf::from(host),
    };
    Ok(std::fs::metadata(local)
        .ok()
        .and_then(|m| DevNum::from_st_rdev(m.rdev())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(text: &str) -> DevNum {
        text.parse().unwrap()
    }

    #[test]
    fn devices_get_their_own_and_the_specs_common_nodes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("intel.yaml"),
            r#"
cdiVersion: "0.6.0"
kind: intel.com/gpu
devices:
  - name: "0d2f"
    containerEdits:
      deviceNodes:
        - path: /dev/dri/card1
          major: 226
          minor: 1
        - path: /dev/dri/renderD129
          type: c
          major: 226
          minor: 129
containerEdits:
  deviceNodes:
    - path: /dev/kfd
      major: 235
      minor: 0
"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("amd.json"),
            r#"{"cdiVersion":"0.6.0","kind":"k8s.gpu.amd.com/gpu","devices":[{"name":"common","containerEdits":{"env":["A=1"]}}]}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a spec").unwrap();
        let specs = read(&[dir.path().to_owned()], Path::new("/dev"));
        assert_eq!(specs.invalid, []);
        assert_eq!(
            specs.devices["intel.com/gpu=0d2f"],
            [dev("226:1"), dev("226:129"), dev("235:0")]
        );
        assert_eq!(specs.devices["k8s.gpu.amd.com/gpu=common"], []);
        assert_eq!(specs.devices.len(), 2);
    }

    #[test]
    fn a_node_without_numbers_is_looked_up_on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let spec = r#"{"kind":"acme.io/npu","devices":[{"name":"a","containerEdits":{"deviceNodes":[{"path":"/dev/acme0","hostPath":"/dev/null"},{"path":"/dev/gone"}]}}]}"#;
        std::fs::write(dir.path().join("acme.json"), spec).unwrap();
        let specs = read(&[dir.path().to_owned()], Path::new("/dev"));
        assert_eq!(specs.devices["acme.io/npu=a"], [dev("1:3")]);
    }

    #[test]
    fn a_malformed_spec_is_reported_and_the_others_still_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a-broken.yaml"), "kind: [unterminated").unwrap();
        std::fs::write(dir.path().join("b-kind.json"), r#"{"kind":"gpu"}"#).unwrap();
        std::fs::write(
            dir.path().join("c-good.json"),
            r#"{"kind":"acme.io/npu","devices":[{"name":"a"}]}"#,
        )
        .unwrap();
        let missing = dir.path().join("missing");
        let specs = read(&[missing, dir.path().to_owned()], Path::new("/dev"));
        let files: Vec<_> = specs
            .invalid
            .iter()
            .map(|(f, _)| f.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(files, ["a-broken.yaml", "b-kind.json"]);
        assert!(
            specs.invalid[1].1.contains("vendor.com/class"),
            "{:?}",
            specs.invalid
        );
        assert!(specs.devices.contains_key("acme.io/npu=a"));
    }
}
