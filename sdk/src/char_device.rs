//! Character devices outside DRM and accel (WIT 0.5.0): drivers with
//! their own nodes and their own ioctl entry, such as NVIDIA's, AWS
//! Neuron's, Tenstorrent's and the kernel's DMA heaps. Their commands are
//! not DRM's, so a table entry holds the whole command as the driver's
//! uAPI header defines it, and the device says which of its bits pick the
//! entry.

use alloc::{
    string::{String, ToString as _},
    vec::Vec,
};

use crate::{Field, FieldSpec, Kind, Size, SizeSpec};

/// How the agent finds a driver's device nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nodes {
    /// Every device of a sysfs class, `/sys/class/<name>/*` with a `dev`
    /// file: `dma_heap`, `tenstorrent`, `neuron_device`.
    Class(&'static str),
    /// One misc device, `/sys/class/misc/<name>`: `udmabuf`.
    Misc(&'static str),
    /// Every node under `/dev` of the character major `/proc/devices`
    /// lists under this name, for drivers that make no sysfs device for
    /// their nodes: `nvidia`, `nvidia-uvm`.
    Major(&'static str),
}

/// [`Nodes`] in a [`CharDeviceSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NodesSpec {
    /// See [`Nodes::Class`].
    Class(String),
    /// See [`Nodes::Misc`].
    Misc(String),
    /// See [`Nodes::Major`].
    Major(String),
}

impl NodesSpec {
    /// The class, misc device or major's name.
    pub fn name(&self) -> &str {
        match self {
            NodesSpec::Class(name) | NodesSpec::Misc(name) | NodesSpec::Major(name) => name,
        }
    }
}

impl core::fmt::Display for NodesSpec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NodesSpec::Class(name) => write!(f, "class {name}"),
            NodesSpec::Misc(name) => write!(f, "misc device {name}"),
            NodesSpec::Major(name) => write!(f, "major {name}"),
        }
    }
}

impl From<Nodes> for NodesSpec {
    fn from(nodes: Nodes) -> Self {
        match nodes {
            Nodes::Class(name) => NodesSpec::Class(name.to_string()),
            Nodes::Misc(name) => NodesSpec::Misc(name.to_string()),
            Nodes::Major(name) => NodesSpec::Major(name.to_string()),
        }
    }
}

/// Which bits of an ioctl command pick its table entry: the bits the
/// driver dispatches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandKey {
    /// The number alone, `cmd & 0xff`, as for DRM: for drivers that
    /// dispatch on it whatever the type and size (`dma_heap_ioctl`).
    Number,
    /// The type (magic) and number, `cmd & 0xffff`: for drivers that take
    /// one command with arguments of several sizes (NVIDIA's escapes).
    TypeAndNumber,
    /// The whole command, direction and size included: for numbers that
    /// variants of different sizes share (Neuron), and for commands that
    /// are plain integers (nvidia-uvm).
    Whole,
}

impl CommandKey {
    /// The bits of a command that pick its entry.
    pub const fn mask(self) -> u32 {
        match self {
            CommandKey::Number => 0xff,
            CommandKey::TypeAndNumber => 0xffff,
            CommandKey::Whole => u32::MAX,
        }
    }

    /// Its name in the WIT package.
    pub const fn as_str(self) -> &'static str {
        match self {
            CommandKey::Number => "number",
            CommandKey::TypeAndNumber => "type-and-number",
            CommandKey::Whole => "whole",
        }
    }
}

/// One counted command, as an author writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// The command as the uAPI header defines it (for a header that
    /// defines only the number, the type shifted left by 8, or'ed with
    /// it).
    pub cmd: u32,
    /// The uAPI macro.
    pub name: &'static str,
    /// What it does.
    pub kind: Kind,
    /// For an alloc: where its argument holds the bytes it allocates.
    pub size: Option<Size>,
    /// Counted only when this field of its argument has one of these
    /// values.
    pub only_when: Option<(Field, &'static [u64])>,
    /// The argument's C type, for the header check, where the macro the
    /// command is named after does not give it (a header that defines
    /// the number alone, as NVIDIA's escape codes are). Not sent to the
    /// agent.
    pub argument: Option<&'static str>,
}

/// The most values a classifier may list.
pub const MAX_CLASSES: usize = 64;

impl Command {
    const fn new(name: &'static str, cmd: u32, kind: Kind) -> Self {
        Self {
            cmd,
            name,
            kind,
            size: None,
            only_when: None,
            argument: None,
        }
    }

    /// A command that submits work.
    pub const fn submit(name: &'static str, cmd: u32) -> Self {
        Self::new(name, cmd, Kind::Submit)
    }

    /// A command that allocates memory.
    pub const fn alloc(name: &'static str, cmd: u32) -> Self {
        Self::new(name, cmd, Kind::Alloc)
    }

    /// A command that waits for the device.
    pub const fn wait(name: &'static str, cmd: u32) -> Self {
        Self::new(name, cmd, Kind::Wait)
    }

    /// The same command, with the size it allocates at `size`.
    pub const fn sized(self, size: Size) -> Self {
        Self {
            size: Some(size),
            ..self
        }
    }

    /// The same command, its argument of C type `ty` (`NVOS21_PARAMETERS`),
    /// for the header check of its fields.
    pub const fn argument(self, ty: &'static str) -> Self {
        Self {
            argument: Some(ty),
            ..self
        }
    }

    /// The same command, counted only when `field` (read from the
    /// caller's memory as the call enters) has one of `values`: for a
    /// command that multiplexes operations, such as NVIDIA's `RM_ALLOC`,
    /// whose class field says what it makes.
    pub const fn only_when(self, field: Field, values: &'static [u64]) -> Self {
        Self {
            only_when: Some((field, values)),
            ..self
        }
    }
}

/// One driver's character devices and their table, as an author writes
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CharDevice {
    /// The driver's name as the metrics show it: `dma_heap`, `nvidia-uvm`.
    pub driver: &'static str,
    /// Where its nodes are.
    pub nodes: Nodes,
    /// The kernel function its `file_operations.unlocked_ioctl` is.
    pub entry: &'static str,
    /// Which bits of a command pick its entry.
    pub key: CommandKey,
    /// The counted commands.
    pub commands: &'static [Command],
}

impl CharDevice {
    /// The owned form.
    pub fn spec(&self) -> CharDeviceSpec {
        CharDeviceSpec {
            driver: self.driver.to_string(),
            nodes: self.nodes.into(),
            entry: self.entry.to_string(),
            key: self.key,
            commands: self
                .commands
                .iter()
                .map(|c| CommandSpec {
                    cmd: c.cmd,
                    name: c.name.to_string(),
                    kind: c.kind,
                    size: c.size.as_ref().map(SizeSpec::from),
                    only_when: c
                        .only_when
                        .map(|(field, values)| (FieldSpec::from(&field), values.to_vec())),
                })
                .collect(),
        }
    }
}

/// A [`CharDevice`] as the agent receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharDeviceSpec {
    /// The driver's name.
    pub driver: String,
    /// Where its nodes are.
    pub nodes: NodesSpec,
    /// The kernel function the agent hooks.
    pub entry: String,
    /// Which bits of a command pick its entry.
    pub key: CommandKey,
    /// The counted commands.
    pub commands: Vec<CommandSpec>,
}

/// A [`Command`] in a [`CharDeviceSpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command.
    pub cmd: u32,
    /// The uAPI macro.
    pub name: String,
    /// What it does.
    pub kind: Kind,
    /// Where an alloc's size is.
    pub size: Option<SizeSpec>,
    /// The field and values that make a call of it count.
    pub only_when: Option<(FieldSpec, Vec<u64>)>,
}
