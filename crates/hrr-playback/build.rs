//! Embeds the source revision (`git rev-parse --short HEAD`, `+dirty` when tracked files differ
//! from HEAD) as `HRR_REVISION`; "unknown" when git or the repository is unavailable.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-env-changed=HRR_REVISION");
    let revision = if let Ok(forced) = std::env::var("HRR_REVISION") {
        forced
    } else if let Some(hash) = git(&["rev-parse", "--short", "HEAD"]) {
        // Re-run when HEAD moves (checkout, commit) or the index changes (add, commit).
        if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
            let git_dir = PathBuf::from(git_dir);
            let mut watch = vec![git_dir.join("HEAD"), git_dir.join("index")];
            if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch.push(git_dir.join(head_ref));
            }
            for path in watch.into_iter().filter(|p| p.exists()) {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some();
        if dirty {
            format!("{hash}+dirty")
        } else {
            hash
        }
    } else {
        "unknown".to_string()
    };
    println!("cargo:rustc-env=HRR_REVISION={revision}");
}
