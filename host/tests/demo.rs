//! The README's demo block is what `scripts/demo` prints: the demo runs
//! here as a newcomer runs it, and its output from the boot line on must
//! equal the block, so the two cannot drift apart. The one line that
//! varies between runs, how long ago kubelet's allocations were listed,
//! is compared by its shape.

use std::{path::Path, process::Command};

/// The line whose seconds vary between runs.
const LISTED: &str = "kubelet's allocations: last listed ";

/// `text` with the listing's age replaced by `N`.
fn normalised(text: &str) -> String {
    text.lines()
        .map(|line| match line.strip_prefix(LISTED) {
            Some(rest) if rest.ends_with(" s ago") => format!("{LISTED}N s ago"),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The README's demo block after its `...` (the set-up's lines), up to
/// the block's end.
fn readme_block(readme: &str) -> &str {
    let start = readme
        .find("```text\n$ scripts/demo\n...\n")
        .expect("the README's demo block")
        + "```text\n$ scripts/demo\n...\n".len();
    let length = readme[start..].find("```").expect("the block's end");
    &readme[start..start + length]
}

#[test]
fn the_readme_shows_what_the_demo_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let output = Command::new(root.join("scripts/demo"))
        .current_dir(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = &stdout[stdout.find("demo: booting").expect("the boot line")..];
    assert_eq!(
        normalised(printed.trim_end()),
        normalised(readme_block(&readme).trim_end()),
        "the README's demo block differs from what scripts/demo printed"
    );
}
