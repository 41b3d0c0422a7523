//! `file:///shared/dir` rendezvous: rank 0 publishes its bootstrap address in a file.
//!
//! Rank 0 listens on an ephemeral port of the interface `HCOMM_SOCKET_IFNAME` chooses and
//! writes `ip:port` to `<dir>/<key>.rank0`, atomically: the text goes to a temporary file in the
//! same directory, which is then renamed over the final name, so a reader sees either no file
//! or the whole address, never half of it. The other ranks poll for the file until the
//! bootstrap timeout and connect to that address exactly as with `tcp://` (re-reading the file
//! on every retry, so a stale file left by a crashed earlier job is replaced by the fresh one).
//! Rank 0 removes the file once every rank has joined.
//!
//! `<key>` is `job-<HCOMM_JOB_ID>`, or, for ranks started without a job id, `uri-<hash>` of the
//! URI (every rank of a job uses the same URI, and two concurrent jobs need two directories or
//! two job ids).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// FNV-1a, 64 bits: a stable hash for file names (std's hasher is randomly seeded).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The file in which rank `rank` publishes its address.
pub fn address_file(dir: &Path, job: Option<&str>, uri: &str, rank: usize) -> PathBuf {
    let key = match job {
        Some(j) if !j.is_empty() => format!("job-{j}"),
        _ => format!("uri-{:016x}", fnv1a(uri)),
    };
    dir.join(format!("{key}.rank{rank}"))
}

/// Writes `text` to `path` atomically (temporary file in the same directory, then rename).
pub fn publish(path: &Path, text: &str) -> Result<()> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::other(format!(
                "cannot publish the rendezvous address in {}: {e}",
                path.display()
            ))
        })
}

/// The published address, if the file exists and holds one.
pub fn read(path: &Path) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_atomic_publish() {
        let dir = std::env::temp_dir().join(format!("hcomm-file-rv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let uri = format!("file://{}", dir.display());
        let by_job = address_file(&dir, Some("ab12"), &uri, 0);
        assert_eq!(by_job.file_name().unwrap(), "job-ab12.rank0");
        let by_uri = address_file(&dir, None, &uri, 3);
        let name = by_uri.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("uri-") && name.ends_with(".rank3"),
            "{name}"
        );
        assert_eq!(by_uri, address_file(&dir, Some(""), &uri, 3));

        assert_eq!(read(&by_job), None);
        publish(&by_job, "10.0.0.1:4000\n").unwrap();
        assert_eq!(read(&by_job).as_deref(), Some("10.0.0.1:4000"));
        publish(&by_job, "10.0.0.1:4001").unwrap();
        assert_eq!(read(&by_job).as_deref(), Some("10.0.0.1:4001"));
        // Only the final file is left: the temporary one was renamed.
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn publish_into_missing_dir_fails_clearly() {
        let e = publish(Path::new("/nonexistent-hcomm-dir/x.rank0"), "a").unwrap_err();
        assert!(
            e.msg.contains("/nonexistent-hcomm-dir/x.rank0"),
            "{}",
            e.msg
        );
    }
}
