//! A store that takes fencing tokens: a directory of files, shared by any
//! number of processes of one machine.
//!
//! A write carries the writer's fencing token. The store accepts it if the
//! token is at least the newest token it has seen, and rejects it as stale
//! if the token is smaller: a holder that was paused, or cut off, past its
//! lease may still believe it holds the lock, but a writer granted after it
//! has a larger token, and once that writer has written, the old holder's
//! writes are refused. (Equal tokens are the same holder writing again.)
//!
//! The directory holds three files:
//!
//! * `lock`: empty; writers take an exclusive `flock` on it, so that the
//!   compare and the write are one step for every process on the machine.
//! * `newest-token`: the largest token accepted, in decimal. Replaced
//!   atomically (written to a temporary file, synced, renamed), and before
//!   the write it admits is logged: after a crash the store may refuse more
//!   than it should, never less.
//! * `log`: one line per write, accepted or not, appended and synced:
//!
//! ```text
//! accepted 4294967301 4294967299 W1 7 end
//! rejected 4294967299 4294967301 W3 2 end
//! ```
//!
//! that is `<accepted|rejected> <token> <newest token before, or -> <record>`.
//! An accepted line's record is the data written; the store's content is
//! its accepted lines, in order.
//!
//! What a file store shared by its writers cannot avoid: a writer paused
//! while it holds `lock` (inside [`FencedStore::write`]) holds up every
//! other writer until it resumes. A store that is a server keeps its lock
//! to itself, and a paused client holds nothing there.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What the store did with a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The token was at least the newest one: the record is written, and
    /// the token is now the newest.
    Accepted,
    /// The token was smaller than `newest`: the record is not written (the
    /// log says it was refused).
    Rejected {
        /// The newest token the store had seen.
        newest: i64,
    },
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Whether the write was accepted.
    pub accepted: bool,
    /// Its token.
    pub token: i64,
    /// The newest token before it (`None`: the first write).
    pub newest_before: Option<i64>,
    /// What was written.
    pub record: String,
}

/// A fenced store in a directory; see the module documentation.
#[derive(Debug, Clone)]
pub struct FencedStore {
    dir: PathBuf,
}

impl FencedStore {
    /// Opens the store in `dir`, creating the directory if needed.
    pub fn open(dir: impl AsRef<Path>) -> io::Result<FencedStore> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        Ok(FencedStore { dir })
    }

    /// The directory of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `record` (one line: no newline) with fencing `token`, unless
    /// the token is stale. Blocks while another process writes.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a record with a newline; the I/O error of the
    /// files otherwise (then nothing was accepted, though the newest token
    /// may have moved up).
    pub fn write(&self, token: i64, record: &str) -> io::Result<Outcome> {
        if record.contains(['\n', '\r']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a record is one line: {record:?}"),
            ));
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("lock"))?;
        // `flock(LOCK_EX)`: released when `lock` is closed, also if this
        // process dies.
        lock.lock()?;
        let newest = self.newest_token()?;
        let outcome = match newest {
            Some(newest) if token < newest => Outcome::Rejected { newest },
            _ => Outcome::Accepted,
        };
        if outcome == Outcome::Accepted && newest != Some(token) {
            self.set_newest(token)?;
        }
        let line = format!(
            "{} {token} {} {record}\n",
            match outcome {
                Outcome::Accepted => "accepted",
                Outcome::Rejected { .. } => "rejected",
            },
            newest.map_or("-".to_owned(), |n| n.to_string())
        );
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log"))?;
        log.write_all(line.as_bytes())?;
        log.sync_data()?;
        Ok(outcome)
    }

    /// The newest token accepted so far (`None` before the first write).
    pub fn newest_token(&self) -> io::Result<Option<i64>> {
        match fs::read_to_string(self.dir.join("newest-token")) {
            Ok(text) => text.trim().parse().map(Some).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("newest-token holds {text:?}: {e}"),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every write so far, in the order the store decided them.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let text = match fs::read_to_string(self.dir.join("log")) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        text.lines().map(parse_entry).collect()
    }

    fn set_newest(&self, token: i64) -> io::Result<()> {
        let tmp = self.dir.join("newest-token.tmp");
        let mut file = File::create(&tmp)?;
        writeln!(file, "{token}")?;
        file.sync_all()?;
        fs::rename(&tmp, self.dir.join("newest-token"))?;
        // The rename itself is durable once the directory is synced.
        File::open(&self.dir)?.sync_all()
    }
}

fn parse_entry(line: &str) -> io::Result<Entry> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("bad log line {line:?}"));
    let mut fields = line.splitn(4, ' ');
    let (Some(verdict), Some(token), Some(newest), Some(record)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(bad());
    };
    Ok(Entry {
        accepted: match verdict {
            "accepted" => true,
            "rejected" => false,
            _ => return Err(bad()),
        },
        token: token.parse().map_err(|_| bad())?,
        newest_before: match newest {
            "-" => None,
            n => Some(n.parse().map_err(|_| bad())?),
        },
        record: record.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fenced-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn stale_tokens_are_rejected_and_logged() {
        let dir = scratch("stale");
        let store = FencedStore::open(&dir).unwrap();
        assert_eq!(store.newest_token().unwrap(), None);
        assert_eq!(store.write(5, "a 1").unwrap(), Outcome::Accepted);
        assert_eq!(
            store.write(5, "a 2").unwrap(),
            Outcome::Accepted,
            "the same holder again"
        );
        assert_eq!(store.write(9, "b 1").unwrap(), Outcome::Accepted);
        assert_eq!(store.write(5, "a 3").unwrap(), Outcome::Rejected { newest: 9 });
        assert_eq!(store.newest_token().unwrap(), Some(9));
        let log: Vec<(bool, i64, Option<i64>, String)> = store
            .entries()
            .unwrap()
            .into_iter()
            .map(|e| (e.accepted, e.token, e.newest_before, e.record))
            .collect();
        assert_eq!(
            log,
            vec![
                (true, 5, None, "a 1".into()),
                (true, 5, Some(5), "a 2".into()),
                (true, 9, Some(5), "b 1".into()),
                (false, 5, Some(9), "a 3".into()),
            ]
        );
        // Another handle (another process) sees the same store.
        let again = FencedStore::open(&dir).unwrap();
        assert_eq!(again.write(7, "c 1").unwrap(), Outcome::Rejected { newest: 9 });
        assert!(store.write(10, "two\nlines").is_err());
        assert_eq!(store.entries().unwrap().len(), 5);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_writers_never_get_a_stale_token_accepted() {
        let dir = scratch("concurrent");
        let store = FencedStore::open(&dir).unwrap();
        let threads: Vec<_> = (0..4i64)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for i in 0..25i64 {
                        // Interleaved tokens: every thread writes some stale ones.
                        store.write(i * 4 + (3 - t) * 3, &format!("t{t} {i}")).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let entries = store.entries().unwrap();
        assert_eq!(entries.len(), 100);
        let mut newest: Option<i64> = None;
        for e in &entries {
            assert_eq!(e.newest_before, newest, "{e:?}");
            assert_eq!(e.accepted, newest.is_none_or(|n| e.token >= n), "{e:?}");
            if e.accepted {
                newest = Some(e.token);
            }
        }
        assert_eq!(store.newest_token().unwrap(), newest);
        let _ = fs::remove_dir_all(&dir);
    }
}
