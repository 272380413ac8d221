//! The members' logs: the tails quoted in errors, and the bind failures
//! that make a launch retry on fresh ports.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::ZkCluster;

/// Maximum number of log lines included in errors.
const LOG_TAIL_LINES: usize = 40;

/// Maximum number of log bytes read for the tail included in errors.
const LOG_TAIL_BYTES: u64 = 16 * 1024;

impl ZkCluster {
    /// Whether some member's log (since its last start) shows a bind failure.
    pub(super) fn any_bind_failure(&self) -> bool {
        self.members.iter().any(|m| {
            let tail = read_from(&m.log_path(), m.log_offset);
            tail.contains("Address already in use") || tail.contains("BindException")
        })
    }
}

/// Reads `path` from byte `offset` (at most the last [`LOG_TAIL_BYTES`]).
fn read_from(path: &Path, offset: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = offset.max(len.saturating_sub(LOG_TAIL_BYTES));
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last lines of `path` written since byte `offset`.
pub(super) fn log_tail(path: &Path, offset: u64) -> String {
    let text = read_from(path, offset);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    if tail.is_empty() {
        "(log is empty)".to_owned()
    } else {
        tail
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn log_tail_keeps_last_lines_since_offset() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let dir = scratch.path();
        let path = dir.join("zk.log");
        let old = "old run\n";
        let new: String = (0..100).map(|i| format!("line {i}\n")).collect();
        fs::write(&path, format!("{old}{new}")).expect("write");
        let tail = log_tail(&path, old.len() as u64);
        assert!(!tail.contains("old run"));
        assert!(tail.ends_with("line 99"));
        assert_eq!(tail.lines().count(), LOG_TAIL_LINES);
        assert_eq!(log_tail(&dir.join("missing.log"), 0), "(log is empty)");
    }
}
