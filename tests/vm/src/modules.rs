//! Kernel modules for the guest: which files to load, in dependency order,
//! decompressed for busybox's `insmod`.

use std::{
    collections::{HashMap, HashSet},
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::command::output_bytes;

/// The kernel's module index (`modules.dep` and `modules.builtin`).
pub struct ModuleIndex {
    dir: PathBuf,
    /// Module name -> (path relative to `dir`, dependencies).
    modules: HashMap<String, (String, Vec<String>)>,
    /// Modules built into the kernel; `None` where the packages ship no
    /// `modules.builtin` (Debian's 7.x split packages).
    builtin: Option<HashSet<String>>,
}

/// `kernel/drivers/gpu/drm/vgem/vgem.ko.xz` -> `vgem`; the kernel treats `-`
/// and `_` in module names alike.
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

impl ModuleIndex {
    /// Reads the index of the modules in `dir` (`lib/modules/<release>`).
    pub fn load(dir: &Path) -> Result<Self> {
        let dep = fs::read_to_string(dir.join("modules.dep"))
            .with_context(|| format!("reading {}/modules.dep", dir.display()))?;
        let modules = dep
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(path, deps)| {
                let deps = deps.split_whitespace().map(module_name).collect();
                (module_name(path), (path.to_owned(), deps))
            })
            .collect();
        let builtin = fs::read_to_string(dir.join("modules.builtin"))
            .ok()
            .map(|text| text.lines().map(module_name).collect());
        Ok(Self {
            dir: dir.to_owned(),
            modules,
            builtin,
        })
    }

    /// The module files `names` need, dependencies first; modules built into
    /// the kernel are left out. Without a `modules.builtin` to check against,
    /// a name that is not a module is taken as built in: a device that then
    /// fails to appear is caught by the guest's own checks.
    pub fn load_order(&self, names: &[&str]) -> Result<Vec<PathBuf>> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        for name in names {
            self.visit(&name.replace('-', "_"), &mut seen, &mut order)?;
        }
        Ok(order)
    }

    fn visit(
        &self,
        name: &str,
        seen: &mut HashSet<String>,
        order: &mut Vec<PathBuf>,
    ) -> Result<()> {
        if !seen.insert(name.to_owned()) {
            return Ok(());
        }
        let Some((path, deps)) = self.modules.get(name) else {
            if self
                .builtin
                .as_ref()
                .is_none_or(|builtin| builtin.contains(name))
            {
                return Ok(());
            }
            bail!(
                "module {name} is neither built into the kernel nor in {}",
                self.dir.display()
            );
        };
        for dep in deps {
            self.visit(dep, seen, order)?;
        }
        order.push(self.dir.join(path));
        Ok(())
    }
}

/// The module's ELF bytes, decompressed if the distribution compressed it.
pub fn read_module(path: &Path) -> Result<Vec<u8>> {
    let tool = match path.extension().and_then(|e| e.to_str()) {
        Some("ko") => return fs::read(path).with_context(|| format!("reading {}", path.display())),
        Some("xz") => "xz",
        Some("zst") => "zstd",
        Some("gz") => "gzip",
        _ => bail!("{}: unknown module compression", path.display()),
    };
    output_bytes(Command::new(tool).arg("-dc").arg(path))
}

#[cfg(test)]
mod tests {
    use super::module_name;

    #[test]
    fn module_names_drop_directory_suffix_and_dashes() {
        assert_eq!(
            module_name("kernel/drivers/gpu/drm/vgem/vgem.ko.xz"),
            "vgem"
        );
        assert_eq!(module_name("kernel/net/9p/9pnet_virtio.ko"), "9pnet_virtio");
        assert_eq!(
            module_name("kernel/drivers/virtio/virtio-pci.ko.zst"),
            "virtio_pci"
        );
    }
}
