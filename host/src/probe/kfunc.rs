//! Calls of kernel functions (kfuncs) from the agent's own programs. aya
//! 0.14 cannot relocate a kfunc call, and rustc emits no `.ksyms` for an
//! extern function, so a program calls a helper number no helper has, and
//! its loader rewrites each such call into the kfunc's, by the kfunc's
//! BTF id in vmlinux, before the kernel sees it.

use aya_obj::generated::bpf_insn;

use super::{Btf, ProbeError};

/// `BPF_JMP | BPF_CALL`.
const CALL: u8 = 0x85;
/// `BPF_PSEUDO_KFUNC_CALL`: `imm` is a BTF id, `off` names the BTF
/// object (0: vmlinux).
const PSEUDO_KFUNC_CALL: u8 = 2;

/// Rewrites every call of helper number `placeholder` in `insns` into a
/// call of vmlinux's kfunc `name`. Fails where the program calls it and
/// vmlinux has no such kfunc (an older kernel).
pub fn link(
    insns: &mut [bpf_insn],
    placeholder: i32,
    name: &str,
    vmlinux: &Btf,
) -> Result<(), ProbeError> {
    if calls(insns, placeholder).next().is_none() {
        return Ok(());
    }
    let btf_id = vmlinux
        .func_id(name, None)
        .ok_or_else(|| ProbeError::Attach(format!("this kernel has no kfunc {name}")))?;
    let btf_id = i32::try_from(btf_id)
        .map_err(|_| ProbeError::Other(format!("{name}'s BTF id {btf_id} is out of range")))?;
    rewrite(insns, placeholder, btf_id);
    Ok(())
}

/// The calls of helper number `placeholder` in `insns`.
pub fn calls(insns: &[bpf_insn], placeholder: i32) -> impl Iterator<Item = &bpf_insn> {
    insns.iter().filter(move |i| calls_helper(i, placeholder))
}

/// Whether `insn` calls helper number `placeholder`.
fn calls_helper(insn: &bpf_insn, placeholder: i32) -> bool {
    insn.code == CALL && insn.src_reg() == 0 && insn.imm == placeholder
}

/// Rewrites the calls of helper `placeholder` into kfunc calls of
/// `btf_id`.
fn rewrite(insns: &mut [bpf_insn], placeholder: i32, btf_id: i32) {
    for insn in insns.iter_mut().filter(|i| calls_helper(i, placeholder)) {
        insn.set_src_reg(PSEUDO_KFUNC_CALL);
        insn.off = 0;
        insn.imm = btf_id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(imm: i32) -> bpf_insn {
        // SAFETY: an instruction is plain bytes; zero is `r0 = r0`-like.
        let mut insn: bpf_insn = unsafe { std::mem::zeroed() };
        insn.code = CALL;
        insn.imm = imm;
        insn
    }

    #[test]
    fn only_calls_of_the_placeholder_become_kfunc_calls() {
        let mut exit = call(0);
        exit.code = 0x95;
        exit.imm = 0x4b4e_5055;
        let mut insns = [call(0x4b4e_5055), call(14), exit, call(0x4b4e_5055)];
        assert_eq!(calls(&insns, 0x4b4e_5055).count(), 2);
        rewrite(&mut insns, 0x4b4e_5055, 61_234);
        assert_eq!(calls(&insns, 0x4b4e_5055).count(), 0);
        for i in [0, 3] {
            assert_eq!(
                (insns[i].src_reg(), insns[i].imm),
                (PSEUDO_KFUNC_CALL, 61_234)
            );
        }
        assert_eq!((insns[1].src_reg(), insns[1].imm), (0, 14));
        assert_eq!(insns[2].imm, 0x4b4e_5055, "not a call");
    }
}
