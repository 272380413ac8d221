//! The lease file `exec` shows its command (`ZK_RWLOCK_LEASE_FILE`): one
//! line, `<lease deadline, Unix epoch milliseconds> <held|suspended|lost>`,
//! rewritten atomically (a temporary file renamed over it) whenever the
//! deadline moves or the state changes, in a private directory (mode 0700)
//! that the keeper creates for the run and removes when it exits. The
//! keeper writes it from what `exec` tells it, and writes `lost` itself
//! once the deadline passes without news (`exec` stopped).

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_rwlock::HoldState;

/// How often `exec` looks at the lease (it moves with every answer from
/// the server, which nothing announces): min(250 ms, session timeout /
/// 20), at least 10 ms. The client pings every 3/20 of the timeout, so the
/// lease file lags the lease by at most about a third of a ping interval.
pub fn check_period(session_timeout: Duration) -> Duration {
    Duration::from_millis(250)
        .min(session_timeout / 20)
        .max(Duration::from_millis(10))
}

/// The file's name in its directory.
const NAME: &str = "lease";

/// A lease file and its private directory; dropping it removes both.
pub struct LeaseFile {
    dir: PathBuf,
    file: PathBuf,
    /// What the file says now: the deadline (Unix ms), and the state.
    written: Option<(u64, HoldState)>,
    /// A write failed: warned once, then only logged.
    warned: bool,
}

impl LeaseFile {
    /// Creates a private directory in the system's temporary directory
    /// (`$TMPDIR`, else `/tmp`) and the file in it, saying `deadline` (Unix
    /// epoch ms) and `state`.
    pub fn create(deadline: u64, state: HoldState) -> io::Result<LeaseFile> {
        let base = std::env::temp_dir();
        let pid = std::process::id();
        let mut attempt = 0u32;
        let dir = loop {
            // Unpredictable enough that guessing it is pointless; mkdir
            // fails rather than reuse what someone else put there.
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("zk-rwlock-exec-{pid}-{nanos:x}-{attempt}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
                Err(e) => return Err(e),
            }
        };
        let mut file = LeaseFile {
            file: dir.join(NAME),
            dir,
            written: None,
            warned: false,
        };
        // On failure, dropping `file` removes the directory.
        file.write(deadline, state)?;
        Ok(file)
    }

    /// The file's path, for `ZK_RWLOCK_LEASE_FILE`.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Rewrites the file if the deadline or the state changed. A failure
    /// is reported once on stderr (the command goes on with the file as it
    /// was), then logged.
    pub fn update(&mut self, deadline: u64, state: HoldState) {
        if self.written == Some((deadline, state)) {
            return;
        }
        if let Err(e) = self.write(deadline, state) {
            if !self.warned {
                self.warned = true;
                eprintln!(
                    "zk-rwlock: warning: cannot update the lease file {}: {e}",
                    self.file.display()
                );
            }
            tracing::debug!(error = %e, "lease file not updated");
        }
    }

    fn write(&mut self, deadline: u64, state: HoldState) -> io::Result<()> {
        let line = line(deadline, state);
        let tmp = self.dir.join(format!("{NAME}.tmp"));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(line.as_bytes())?;
        drop(f);
        std::fs::rename(&tmp, &self.file)?;
        self.written = Some((deadline, state));
        Ok(())
    }
}

impl Drop for LeaseFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove the lease file's directory");
        }
    }
}

/// The file's content.
pub fn line(deadline_ms: u64, state: HoldState) -> String {
    format!("{deadline_ms} {state}\n")
}

/// `at` on the monotonic clock as Unix epoch milliseconds, given one
/// reading of both clocks (`now`, `now_wall`): now_wall + (at − now).
pub fn unix_ms(at: Instant, now: Instant, now_wall: SystemTime) -> u64 {
    let wall = if at >= now {
        now_wall.checked_add(at - now)
    } else {
        now_wall.checked_sub(now - at)
    };
    wall.and_then(|w| w.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn check_period_is_at_most_250ms_and_a_twentieth() {
        assert_eq!(
            check_period(Duration::from_millis(10_000)),
            Duration::from_millis(250)
        );
        assert_eq!(
            check_period(Duration::from_millis(4_000)),
            Duration::from_millis(200)
        );
        assert_eq!(
            check_period(Duration::from_millis(400)),
            Duration::from_millis(20)
        );
        assert_eq!(
            check_period(Duration::from_millis(100)),
            Duration::from_millis(10)
        );
    }

    #[test]
    fn monotonic_to_wall_clock() {
        let now = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        assert_eq!(unix_ms(now, now, wall), 1_700_000_000_000);
        assert_eq!(
            unix_ms(now + Duration::from_millis(3_920), now, wall),
            1_700_000_003_920
        );
        assert_eq!(
            unix_ms(now + Duration::from_micros(999), now, wall),
            1_700_000_000_000
        );
        if let Some(past) = now.checked_sub(Duration::from_millis(1_500)) {
            assert_eq!(unix_ms(past, now, wall), 1_699_999_998_500);
        }
        // Before the epoch: 0 rather than a wrap.
        if let Some(past) = now.checked_sub(Duration::from_secs(10)) {
            assert_eq!(unix_ms(past, now, UNIX_EPOCH), 0);
        }
    }

    #[test]
    fn lines() {
        assert_eq!(line(1_700_000_003_920, HoldState::Held), "1700000003920 held\n");
        assert_eq!(line(1, HoldState::Suspended), "1 suspended\n");
        assert_eq!(line(2, HoldState::Lost), "2 lost\n");
    }

    #[test]
    fn private_rewritten_and_removed() {
        let t0 = 1_700_000_000_000;
        let mut file = LeaseFile::create(t0 + 4_000, HoldState::Held).unwrap();
        let path = file.path().to_owned();
        let dir = path.parent().unwrap().to_owned();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        let read = || std::fs::read_to_string(&path).unwrap();
        let first = read();
        assert!(first.ends_with(" held\n"), "{first:?}");
        let ms = |s: &str| s.split(' ').next().unwrap().parse::<u64>().unwrap();
        file.update(t0 + 5_000, HoldState::Held);
        let second = read();
        assert_eq!(ms(&second), ms(&first) + 1_000, "{first:?} {second:?}");
        file.update(t0 + 5_000, HoldState::Suspended);
        assert!(read().ends_with(" suspended\n"));
        // Only the file itself is left in the directory.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["lease"]);
        drop(file);
        assert!(!dir.exists());
    }
}
