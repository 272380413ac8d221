//! Sets `ZK_RWLOCK_VERSION`, what `zk-rwlock --version` prints: the
//! package's version, and the git revision it was built from when it is
//! built in the project's repository (`0.1.0 (e3b931b)`). A packaged crate
//! has no repository (nor does a machine without git): the version alone.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = env!("CARGO_PKG_VERSION");
    let version = match revision() {
        Some(rev) => format!("{version} ({rev})"),
        None => version.to_owned(),
    };
    println!("cargo:rustc-env=ZK_RWLOCK_VERSION={version}");
}

/// The short revision of HEAD, and the files to watch for its change.
fn revision() -> Option<String> {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    // The workspace's own checkout only: not a repository the crate happens
    // to be unpacked in.
    let root = Path::new(&manifest).parent()?;
    if !root.join(".git").exists() {
        return None;
    }
    let git = |args: &[&str]| {
        let out = Command::new("git").current_dir(root).args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
    };
    let rev = git(&["rev-parse", "--short", "HEAD"])?;
    // A new commit moves HEAD's branch (or HEAD itself when detached).
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
        watched.push(git(&["rev-parse", "--git-common-dir"]).map(|dir| format!("{dir}/packed-refs")));
    }
    for path in watched.into_iter().flatten() {
        let path = root.join(path);
        // A missing file would make cargo run this script on every build.
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Some(rev)
}
