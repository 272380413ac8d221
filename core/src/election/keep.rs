//! A leader's announcement, kept: [`KeepAnnounced`].

use std::time::Duration;

use super::reannounces;
use crate::backoff::Backoff;
use crate::wire::Error;

/// What keeping the announcement does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeping {
    /// Read the node, with a data watch (`getData`).
    Read,
    /// Write the announcement, conditional on this data version.
    Write {
        /// The version the last read found.
        version: i32,
    },
    /// Wait for the last read's watch.
    Await,
    /// Pause this long, then read again.
    Pause(Duration),
    /// Stop: the announcement is no longer kept.
    Stop(Ended),
}

/// Why keeping the announcement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The node is gone or the session ended: the leadership is over.
    Gone,
    /// The node of its name is not the one this session made at the grant:
    /// someone deleted it and made it again (the leadership is lost).
    MadeAgain,
    /// The node cannot be read (an error that no retry mends: its ACL,
    /// say): the announcement is not kept.
    CannotWatch,
}

/// What came of writing the announcement again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    /// Written over the stranger's data.
    Announced,
    /// Written by someone else meanwhile: the watch tells.
    Raced,
    /// Refused: the announcement stays overwritten until the next write.
    Failed,
    /// Its answer lost: it may not have been applied, so the node is read
    /// again after a pause (the write is conditional on the version read:
    /// the next read finds the announcement, or a newer version).
    Lost,
    /// The node is gone or the session ended.
    Gone,
}

/// A node as a read found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRead<'a> {
    /// Its data.
    pub data: &'a [u8],
    /// Its data version.
    pub version: i32,
    /// Its czxid.
    pub czxid: i64,
    /// Its `ephemeralOwner`.
    pub ephemeral_owner: i64,
}

/// Keeping a leader's announcement on its node while the node lives,
/// sans-IO: a data watch on the node; data someone else wrote over it that
/// is neither the announcement nor a revocation request ([`reannounces`])
/// is replaced by the announcement again, with a `setData` conditional on
/// the version read, so a revocation request written meanwhile is never
/// overwritten. It ends when the node is deleted or the session ends, or
/// when a node of its name is not the one this session made at the grant
/// (deleted and made again by someone else: that node is not announced).
///
/// ```text
/// keep = KeepAnnounced::new(mine, czxid, session)
/// next = Keeping::Read
/// loop:
///     next = match next:
///         Read => keep.read(answer of getData with a watch)
///         Write { version } => keep.written(answer of setData(mine, version)).0
///         Await => keep.changed(the read's watch fired: deleted or the session's end?)
///         Pause(d) => sleep(d); Read
///         Stop(why) => end
/// ```
#[derive(Debug, Clone)]
pub struct KeepAnnounced {
    mine: Vec<u8>,
    czxid: i64,
    session: i64,
    /// The pause after the last lost read (zero after an answered one).
    pause: Duration,
}

impl KeepAnnounced {
    /// Keeps `mine` on the node granted at `czxid` to the session
    /// `session`.
    pub fn new(mine: Vec<u8>, czxid: i64, session: i64) -> KeepAnnounced {
        KeepAnnounced {
            mine,
            czxid,
            session,
            pause: Duration::ZERO,
        }
    }

    /// What a read of the node (with its watch) answered.
    pub fn read(&mut self, answer: Result<NodeRead<'_>, Error>) -> Keeping {
        match answer {
            Ok(read) if read.czxid != self.czxid || read.ephemeral_owner != self.session => {
                Keeping::Stop(Ended::MadeAgain)
            }
            Ok(read) => {
                self.pause = Duration::ZERO;
                if reannounces(read.data, &self.mine) {
                    Keeping::Write {
                        version: read.version,
                    }
                } else {
                    Keeping::Await
                }
            }
            Err(Error::NoNode | Error::SessionEnded) => Keeping::Stop(Ended::Gone),
            Err(Error::Unanswered) => {
                self.pause = Backoff::ANNOUNCEMENT.next(self.pause);
                Keeping::Pause(self.pause)
            }
            Err(_) => Keeping::Stop(Ended::CannotWatch),
        }
    }

    /// What writing the announcement again answered, and what comes next:
    /// the read's watch, unless the node is gone or the answer was lost
    /// (then a pause and a read, as after a lost read).
    pub fn written(&mut self, answer: Result<(), Error>) -> (Keeping, Wrote) {
        match answer {
            Ok(()) => (Keeping::Await, Wrote::Announced),
            Err(Error::BadVersion) => (Keeping::Await, Wrote::Raced),
            Err(Error::NoNode | Error::SessionEnded) => (Keeping::Stop(Ended::Gone), Wrote::Gone),
            Err(Error::Unanswered) => {
                self.pause = Backoff::ANNOUNCEMENT.next(self.pause);
                (Keeping::Pause(self.pause), Wrote::Lost)
            }
            Err(_) => (Keeping::Await, Wrote::Failed),
        }
    }

    /// The read's watch fired: with the node's deletion or the session's
    /// end (`gone`), or with a write: read again.
    pub fn changed(&mut self, gone: bool) -> Keeping {
        if gone {
            Keeping::Stop(Ended::Gone)
        } else {
            Keeping::Read
        }
    }

    /// The announcement this keeps.
    pub fn mine(&self) -> &[u8] {
        &self.mine
    }
}

#[cfg(test)]
mod tests;
