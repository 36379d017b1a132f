//! A named cgroup as the pinned OWNERS map stores it: fixed-size,
//! NUL-padded labels and the time it went.

use std::time::Duration;

use kubenpu_ebpf::OwnerRecord;

use super::{Named, Owner};

/// The record of `named`. Labels longer than their field (Kubernetes'
/// limits fit) are cut at a character boundary.
pub fn record(named: &Named) -> OwnerRecord {
    let mut record = OwnerRecord {
        gone_at_ns: named
            .gone_at
            .map_or(0, |at| u64::try_from(at.as_nanos()).unwrap_or(u64::MAX)),
        namespace: [0; 64],
        pod: [0; 256],
        container: [0; 64],
    };
    fill(&mut record.namespace, &named.owner.namespace);
    fill(&mut record.pod, &named.owner.pod);
    fill(&mut record.container, &named.owner.container);
    record
}

/// The named cgroup `id` that `record` describes.
pub fn named(id: u64, record: &OwnerRecord) -> Named {
    Named {
        id,
        owner: Owner {
            namespace: text(&record.namespace),
            pod: text(&record.pod),
            container: text(&record.container),
        },
        gone_at: (record.gone_at_ns != 0).then(|| Duration::from_nanos(record.gone_at_ns)),
    }
}

fn fill(field: &mut [u8], value: &str) {
    let mut end = value.len().min(field.len());
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    field[..end].copy_from_slice(&value.as_bytes()[..end]);
}

fn text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_cgroup_round_trips_through_its_record() {
        let named_cgroup = Named {
            id: 4242,
            owner: Owner {
                namespace: "ml-jobs".into(),
                pod: "train-7f9c-abcde".into(),
                container: "worker".into(),
            },
            gone_at: Some(Duration::from_nanos(123_456_789_012)),
        };
        assert_eq!(named(4242, &record(&named_cgroup)), named_cgroup);
        let live = Named {
            gone_at: None,
            ..named_cgroup
        };
        assert_eq!(named(4242, &record(&live)), live);
        let outside = Named {
            id: 1,
            owner: Owner::default(),
            gone_at: None,
        };
        assert_eq!(named(1, &record(&outside)), outside);
    }

    #[test]
    fn an_overlong_label_is_cut_at_a_character_boundary() {
        let long = Named {
            id: 7,
            owner: Owner {
                namespace: "é".repeat(40),
                pod: "p".into(),
                container: "c".into(),
            },
            gone_at: None,
        };
        let back = named(7, &record(&long));
        assert_eq!(back.owner.namespace, "é".repeat(32));
    }
}
