//! OCI images from local files, imported without a registry: one
//! uncompressed layer, written as an OCI image layout in a tar archive
//! that `ctr images import` takes.

use std::path::{Path, PathBuf};

use anyhow::Context;
use kubenpu_vm::elf;
use sha2::{Digest, Sha256};

use crate::Containerd;

/// The OCI name of the architecture this program runs on: containerd
/// refuses to import an image of another one.
#[cfg(target_arch = "x86_64")]
const OCI_ARCHITECTURE: &str = "amd64";
#[cfg(target_arch = "aarch64")]
const OCI_ARCHITECTURE: &str = "arm64";
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("kubenpu-pods knows the OCI names of x86_64 and aarch64 only");

/// The pod sandbox ("pause") image the private containerd is configured
/// with; [`Image::pause`] builds it.
pub const SANDBOX_IMAGE: &str = "localhost/kubenpu/pause:test";

/// An image to build: files from this machine placed at paths in the
/// image, and the command it runs.
#[derive(Debug, Clone)]
pub struct Image {
    /// Full reference, e.g. `localhost/kubenpu/workload:test`.
    pub name: String,
    /// (file on this machine, absolute path in the image).
    pub files: Vec<(PathBuf, String)>,
    /// Symbolic links: (path in the image, target).
    pub links: Vec<(String, String)>,
    /// The entrypoint.
    pub entrypoint: Vec<String>,
}

impl Image {
    /// busybox alone, with `sh` and `sleep` linked to it.
    pub fn busybox(name: &str, entrypoint: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            files: vec![(PathBuf::from(BUSYBOX), "/bin/busybox".to_owned())],
            links: ["sh", "sleep", "cat", "mkdir", "echo"]
                .iter()
                .map(|applet| (format!("/bin/{applet}"), "busybox".to_owned()))
                .collect(),
            entrypoint: entrypoint.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Adds an executable at `/bin/<name>` with the shared libraries it
    /// links, at their own paths, as the dynamic loader lists them.
    pub fn with_binary(mut self, binary: &Path) -> anyhow::Result<Self> {
        let name = binary
            .file_name()
            .context("a binary needs a file name")?
            .to_string_lossy();
        self.files.push((binary.to_owned(), format!("/bin/{name}")));
        for library in linked_libraries(binary)? {
            let path = library.to_string_lossy().into_owned();
            if !self.files.iter().any(|(_, p)| *p == path) {
                self.files.push((library, path));
            }
        }
        Ok(self)
    }

    /// The sandbox image: a process that sleeps until told to stop.
    pub fn pause() -> Self {
        Self::busybox(
            SANDBOX_IMAGE,
            &[
                "/bin/sh",
                "-c",
                "trap 'exit 0' TERM INT; while :; do sleep 1; done",
            ],
        )
    }

    /// Builds the image and imports it into `containerd`.
    pub fn import(&self, containerd: &Containerd, scratch: &Path) -> anyhow::Result<()> {
        let archive = scratch.join(format!("{}.tar", self.name.replace(['/', ':'], "_")));
        std::fs::write(&archive, self.archive()?)?;
        containerd.ctr(&[
            "images",
            "import",
            "--snapshotter",
            "native",
            archive.to_str().context("archive path is not UTF-8")?,
        ])?;
        Ok(())
    }

    /// The OCI image layout, as a tar archive, for the architecture this
    /// program was built for (its layer holds this program's own files).
    pub fn archive(&self) -> anyhow::Result<Vec<u8>> {
        let layer = self.layer()?;
        let layer_digest = digest(&layer);
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": OCI_ARCHITECTURE,
            "os": "linux",
            "config": { "Entrypoint": self.entrypoint, "Env": ["PATH=/bin"] },
            "rootfs": { "type": "layers", "diff_ids": [layer_digest] },
        }))?;
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": descriptor("application/vnd.oci.image.config.v1+json", &config),
            "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", &layer)],
        }))?;
        let mut manifest_descriptor =
            descriptor("application/vnd.oci.image.manifest.v1+json", &manifest);
        manifest_descriptor["annotations"] = serde_json::json!({
            "io.containerd.image.name": self.name,
            "org.opencontainers.image.ref.name": self.name.rsplit(':').next(),
        });
        manifest_descriptor["platform"] =
            serde_json::json!({ "architecture": OCI_ARCHITECTURE, "os": "linux" });
        let index = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "manifests": [manifest_descriptor],
        }))?;

        let mut archive = tar::Builder::new(Vec::new());
        append(
            &mut archive,
            "oci-layout",
            br#"{"imageLayoutVersion":"1.0.0"}"#,
            0o644,
        )?;
        append(&mut archive, "index.json", &index, 0o644)?;
        for blob in [&layer, &config, &manifest] {
            let name = format!("blobs/sha256/{}", hex(blob));
            append(&mut archive, &name, blob, 0o644)?;
        }
        Ok(archive.into_inner()?)
    }

    /// The root filesystem: the files, their directories, the links.
    fn layer(&self) -> anyhow::Result<Vec<u8>> {
        let mut layer = tar::Builder::new(Vec::new());
        let mut dirs = std::collections::BTreeSet::new();
        let paths = self
            .files
            .iter()
            .map(|(_, p)| p)
            .chain(self.links.iter().map(|(p, _)| p));
        for path in paths {
            let mut parent = Path::new(path).parent();
            while let Some(dir) = parent.filter(|d| *d != Path::new("/")) {
                dirs.insert(dir.to_owned());
                parent = dir.parent();
            }
        }
        for dir in ["/tmp", "/dev", "/proc", "/sys", "/etc"] {
            dirs.insert(PathBuf::from(dir));
        }
        for dir in &dirs {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            layer.append_data(
                &mut header,
                relative(dir.to_str().unwrap_or_default()),
                std::io::empty(),
            )?;
        }
        for (source, path) in &self.files {
            let bytes = std::fs::read(source)
                .with_context(|| format!("cannot read {} for the image", source.display()))?;
            append(&mut layer, relative(path), &bytes, 0o755)?;
        }
        for (path, target) in &self.links {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            layer.append_link(&mut header, relative(path), target)?;
        }
        Ok(layer.into_inner()?)
    }
}

/// The loader and libraries `binary` needs, from the dynamic loader it
/// names (which works where `ldd` is not installed); none for a static one.
fn linked_libraries(binary: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let bytes =
        std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
    let Some(loader) = elf::interpreter(&bytes) else {
        return Ok(Vec::new());
    };
    let output = std::process::Command::new(&loader)
        .arg("--list")
        .arg(binary)
        .output()
        .with_context(|| format!("cannot run {loader}"))?;
    anyhow::ensure!(
        output.status.success(),
        "{loader} --list {} failed: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let mut libraries: Vec<PathBuf> = elf::parse_list(&String::from_utf8_lossy(&output.stdout))
        .with_context(|| format!("{} cannot run here", binary.display()))?
        .into_iter()
        .chain([loader])
        .map(PathBuf::from)
        .collect();
    libraries.sort();
    libraries.dedup();
    Ok(libraries)
}

/// Debian's static busybox.
const BUSYBOX: &str = "/bin/busybox";

fn relative(path: &str) -> &str {
    path.trim_start_matches('/')
}

fn append(
    archive: &mut tar::Builder<Vec<u8>>,
    name: &str,
    bytes: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_mode(mode);
    header.set_size(bytes.len() as u64);
    archive.append_data(&mut header, name, bytes)
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(bytes))
}

fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
    serde_json::json!({ "mediaType": media_type, "digest": digest(bytes), "size": bytes.len() })
}
