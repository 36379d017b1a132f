//! Attribution over fixture cgroup trees laid out as kubelet lays them out
//! with each cgroup driver and runtime: every cgroup's id (its directory's
//! inode, as in cgroup2) leads to the right question for the runtime, and
//! cgroups that go away are found and forgotten.

use std::{
    os::unix::fs::MetadataExt,
    path::Path,
    time::{Duration, Instant},
};

use kubenpu::attribution::{Attributor, Owner, index::CgroupIndex, resolver::Ask};

const UID: &str = "1f3a6b2c-8d4e-4f5a-9b6c-7d8e9f0a1b2c";
const ID: &str = "4e1b8c5d2a3f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e1d";

fn id_of(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// Each layout, and what its deepest cgroup should be asked as.
fn layouts() -> Vec<(String, Option<Ask>)> {
    let systemd_uid = UID.replace('-', "_");
    let container = Some(Ask::Container(ID.into()));
    vec![
        (
            format!("kubepods/besteffort/pod{UID}/{ID}"),
            container.clone(),
        ),
        (
            format!("kubepods/burstable/pod{UID}/{ID}"),
            container.clone(),
        ),
        (format!("kubepods/pod{UID}/{ID}"), container.clone()),
        (
            format!("kubepods/besteffort/pod{UID}/{ID}/nested/deeper"),
            container.clone(),
        ),
        (
            format!(
                "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{systemd_uid}.slice/cri-containerd-{ID}.scope"
            ),
            container.clone(),
        ),
        (
            format!(
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{systemd_uid}.slice/crio-{ID}.scope"
            ),
            container.clone(),
        ),
        (
            format!("kubepods.slice/kubepods-pod{systemd_uid}.slice/docker-{ID}.scope/init.scope"),
            container.clone(),
        ),
        (
            format!(
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{systemd_uid}.slice/crio-conmon-{ID}.scope"
            ),
            Some(Ask::Pod(UID.into())),
        ),
        ("system.slice/containerd.service".into(), None),
        ("user.slice/user-1000.slice/session-2.scope".into(), None),
    ]
}

#[test]
fn every_layout_leads_to_the_right_question() {
    let root = tempfile::tempdir().unwrap();
    let mut attributor = Attributor::new(CgroupIndex::new(root.path(), Duration::ZERO));
    for (path, expected) in layouts() {
        let dir = root.path().join(&path);
        std::fs::create_dir_all(&dir).unwrap();
        let id = id_of(&dir);
        // Created after the index's last walk: found by walking again.
        assert_eq!(
            attributor.note(id, Instant::now(), || None),
            expected.clone(),
            "{path}"
        );
        match expected {
            None => assert_eq!(attributor.owner(id), Some(&Owner::default()), "{path}"),
            Some(_) => assert_eq!(attributor.owner(id), None, "{path}: waits for the runtime"),
        }
    }
}

/// The named cgroups found gone by now.
fn gone(attributor: &mut Attributor) -> Vec<u64> {
    attributor.mark_gone(kubenpu::clock::boottime());
    let mut ids: Vec<u64> = attributor
        .named()
        .filter(|n| n.gone_at.is_some())
        .map(|n| n.id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn answers_name_every_cgroup_of_a_container_and_go_with_them() {
    let root = tempfile::tempdir().unwrap();
    let container = root
        .path()
        .join(format!("kubepods/besteffort/pod{UID}/{ID}"));
    let nested = container.join("worker");
    std::fs::create_dir_all(&nested).unwrap();
    let mut attributor = Attributor::new(CgroupIndex::new(root.path(), Duration::ZERO));
    let (outer, inner) = (id_of(&container), id_of(&nested));
    let ask = Ask::Container(ID.into());
    assert_eq!(
        attributor.note(outer, Instant::now(), || None),
        Some(ask.clone())
    );
    assert_eq!(
        attributor.note(inner, Instant::now(), || None),
        Some(ask.clone())
    );
    let owner = Owner {
        namespace: "ml".into(),
        pod: "trainer-0".into(),
        container: "train".into(),
    };
    attributor.answer(ask.clone(), Some(owner.clone()));
    assert_eq!(attributor.owner(outer), Some(&owner));
    assert_eq!(attributor.owner(inner), Some(&owner));
    assert!(gone(&mut attributor).is_empty());

    std::fs::remove_dir(&nested).unwrap();
    assert_eq!(gone(&mut attributor), vec![inner]);
    attributor.forget(&[inner]);
    // The container's answer is still cached for the outer cgroup's sake:
    // a new cgroup in it needs no question.
    let again = container.join("again");
    std::fs::create_dir(&again).unwrap();
    assert_eq!(
        attributor.note(id_of(&again), Instant::now(), || None),
        None
    );
    assert_eq!(attributor.owner(id_of(&again)), Some(&owner));
}

#[test]
fn a_cgroup_gone_before_it_was_placed_counts_outside_pods() {
    let root = tempfile::tempdir().unwrap();
    let mut attributor = Attributor::new(CgroupIndex::new(root.path(), Duration::ZERO));
    let brief = root
        .path()
        .join(format!("kubepods/besteffort/pod{UID}/{ID}"));
    std::fs::create_dir_all(&brief).unwrap();
    let id = id_of(&brief);
    std::fs::remove_dir(&brief).unwrap();
    assert_eq!(attributor.note(id, Instant::now(), || None), None);
    assert_eq!(attributor.owner(id), Some(&Owner::default()));
    assert_eq!(gone(&mut attributor), vec![id]);
}

#[test]
fn a_cgroup_gone_before_a_walk_is_placed_from_the_kernels_record() {
    let root = tempfile::tempdir().unwrap();
    let mut attributor = Attributor::new(CgroupIndex::new(root.path(), Duration::ZERO));
    let relative = format!("kubepods/besteffort/pod{UID}/{ID}");
    let brief = root.path().join(&relative);
    std::fs::create_dir_all(&brief).unwrap();
    let id = id_of(&brief);
    std::fs::remove_dir(&brief).unwrap();
    // The program recorded the path when it counted the first call.
    assert_eq!(
        attributor.note(id, Instant::now(), || Some(relative.into())),
        Some(Ask::Container(ID.into()))
    );
    assert_eq!(attributor.owner(id), None, "waits for the runtime");
    assert_eq!(gone(&mut attributor), Vec::<u64>::new(), "not named yet");
    let owner = Owner {
        namespace: "jobs".into(),
        pod: "blink".into(),
        container: "main".into(),
    };
    attributor.answer(Ask::Container(ID.into()), Some(owner.clone()));
    assert_eq!(attributor.owner(id), Some(&owner));
    assert_eq!(gone(&mut attributor), vec![id]);
    assert_eq!(attributor.index().rebuilds(), 0, "no walk was needed");
}
