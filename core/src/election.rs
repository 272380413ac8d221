//! The pure rules of an election on a lock directory: who may be named
//! leader, what the announcement is, which node an observer watches, and
//! whether a new leader may write its announcement now. No ZooKeeper type,
//! no clock, no I/O: `zk_rwlock::Election` performs what these say.
//!
//! Who leads is decided in one place, [`who_leads`], from a listing of the
//! directory and one read of its head writer: `zk_rwlock::Election::leader`,
//! the election's observers and `zk-rwlock status` read what it asks for
//! and report what it answers.
//!
//! # The announcement
//!
//! The head writer of the queue holds the lock as soon as nothing precedes
//! it, but its own client learns that only a notification's trip later
//! (or much later, if it is cut off). So no one is named leader for being
//! the head writer alone: a candidate, once its campaign is granted,
//! writes [`announcement`] (`leader:<identity>`) as its node's data with
//! one conditional `setData`, and observers name the head writer only if
//! its node carries the announcement of the identity in its name
//! ([`announces`]). The announcement never hides a revocation request
//! ([`crate::node_name::REVOKE_PAYLOAD`]) that the new leader's guard has not
//! recorded yet ([`announce_step`]).
//!
//! # A revocation request does not end a term
//!
//! A revocation request is written over the leader's announcement (it is
//! the node's data), and it stays there: the leader's guard must see it,
//! and the leader decides whether and when to step down. Until it resigns
//! (or its session ends) it holds the write lock, nobody else can lead, and
//! its term stands. So a request written over the announcement leaves the
//! leader named, asked to step down ([`naming`], [`Named::AskedToStepDown`]).
//!
//! The node's data version tells a request written over the announcement
//! from one written before it. A contender node is made with empty data
//! (version 0); the granted candidate writes its announcement over any
//! request it found there, once its guard has taken the request in. So a
//! request that is the node's data at version 1 is the only write the node
//! ever had: it came before the announcement, whose candidate may not know
//! of its grant yet, and names no one. At version 2 or more it was written
//! over an earlier write: the announcement, unless two requests (or a
//! stranger's write and a request) came before the announcement, in which
//! case the head writer is named that long early (a notification's trip on
//! a live connection). Whoever may write the node can forge or erase an
//! announcement anyway (see [`crate::election`]'s "Trust").

use crate::node_name::{Mode, NodeName};
use crate::ordering;

mod keep;
mod look;
mod observe;
pub use keep::{Ended, KeepAnnounced, Keeping, NodeRead, Wrote};
pub use look::{Look, LookAnswer, LookRequest, Looked};
pub use observe::{AfterLook, BeforeLook, Observing};

/// What an announcement starts with; the candidate's identity follows.
pub const ANNOUNCEMENT_PREFIX: &str = "leader:";

/// The data a granted candidate writes to its node: `leader:<identity>`.
pub fn announcement(identity: &str) -> Vec<u8> {
    let mut data = Vec::with_capacity(ANNOUNCEMENT_PREFIX.len() + identity.len());
    data.extend_from_slice(ANNOUNCEMENT_PREFIX.as_bytes());
    data.extend_from_slice(identity.as_bytes());
    data
}

/// True if `data`, read from the contender node `name` (a child name),
/// is that node's announcement: the node is a writer of the native layout
/// with a per-attempt token, and `data` is exactly
/// [`announcement`] of the identity in its name. Anything else (empty
/// data, a revocation request, another identity's announcement, a peer
/// library's node) is not.
pub fn announces(name: &str, data: &[u8]) -> bool {
    candidate(name).is_some_and(|parsed| data == announcement(parsed.identity()).as_slice())
}

/// The contender node `name` (a child name), parsed, if it is a
/// candidate's: a writer of the native layout with a per-attempt token,
/// and no semaphore's permit (a permit's node names no leader, whatever
/// its data: [`crate::semaphore`]).
fn candidate(name: &str) -> Option<NodeName> {
    name.parse::<NodeName>().ok().filter(|parsed| {
        parsed.mode() == Mode::Write
            && parsed.token().is_some()
            && parsed.layout() == crate::Layout::Native
            && crate::semaphore::permits_of(name).is_none()
    })
}

/// What the head writer's node, holding the lock, says of its leadership
/// ([`naming`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// No leader is named: the head writer has not announced itself (yet),
    /// or the node is not a candidate's.
    No,
    /// The head writer leads: its node carries its announcement.
    Leader,
    /// The head writer leads and was asked to step down: a revocation
    /// request was written over its announcement. It leads until it
    /// resigns, as a revoked lock holder holds until it releases.
    AskedToStepDown,
}

impl Named {
    /// Whether a leader is named.
    pub fn is_leader(self) -> bool {
        self != Named::No
    }
}

/// Who the head writer's node `name` (a child name), holding the lock,
/// names as leader, from its `data` and its data version (the stat's
/// `version`: how many times the data was written): the leader if `data`
/// is its announcement ([`announces`]); the leader asked to step down if
/// `data` is a revocation request ([`crate::node_name::REVOKE_PAYLOAD`]) on a
/// candidate's node written at least twice (over the announcement: see
/// the [module documentation](self)); else no one.
pub fn naming(name: &str, data: &[u8], data_version: i32) -> Named {
    if announces(name, data) {
        Named::Leader
    } else if data == crate::node_name::REVOKE_PAYLOAD && data_version >= 2 && candidate(name).is_some() {
        Named::AskedToStepDown
    } else {
        Named::No
    }
}

/// The head writer's node as read to learn who leads ([`who_leads`]): its
/// child name, its data, and the fields of its stat that name a leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadRead<'a> {
    /// The child name of the node read.
    pub node: &'a str,
    /// Its data.
    pub data: &'a [u8],
    /// Its data version (the stat's `version`: how many times the data was
    /// written; see [`naming`]).
    pub version: i32,
    /// The session that owns it (the stat's `ephemeralOwner`): `0` for a
    /// persistent node, which is no candidate's (candidates are ephemeral).
    pub ephemeral_owner: i64,
    /// Its creation's zxid (the stat's `czxid`): the leader's term.
    pub czxid: i64,
}

/// The leader [`who_leads`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The identity in its node's name.
    pub identity: String,
    /// Its node's child name.
    pub node: String,
    /// Its term: its node's czxid, the write lock's fencing token.
    pub term: i64,
    /// Its session: its node's `ephemeralOwner`.
    pub session: i64,
    /// A revocation request was written over its announcement
    /// ([`Named::AskedToStepDown`]): it was asked to step down, and leads
    /// until it resigns.
    pub revocation_requested: bool,
}

/// What [`who_leads`] says: who leads, or what to read first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leads<'a> {
    /// No one leads: the directory holds no contender, its head is a
    /// reader or cannot be ordered, or the head writer's node as read
    /// names no leader (not announced yet, a stranger's data, a persistent
    /// node, not a candidate's node).
    NoOne,
    /// Read this node (a child name: the head writer, which holds the
    /// lock) with its stat, then ask again with what was read.
    Read(&'a str),
    /// This leader leads.
    Leader(Leader),
}

impl Leads<'_> {
    /// The leader, if this answer names one (`None` for [`Leads::NoOne`]
    /// and [`Leads::Read`]).
    pub fn leader(self) -> Option<Leader> {
        match self {
            Leads::Leader(leader) => Some(leader),
            Leads::NoOne | Leads::Read(_) => None,
        }
    }
}

/// Who leads the election on a lock directory, from one listing of it
/// (`children`, any order) and a read of its head writer (`head`): the
/// one rule of `zk_rwlock::Election::leader`, its observers and
/// `zk-rwlock status`.
///
/// The head writer of the queue ([`ordering::leader`]) holds the lock, and
/// leads if its node names it ([`naming`]: its announcement, or a
/// revocation request written over it) and is ephemeral. So: no head
/// writer, [`Leads::NoOne`] (nothing to read); a head writer, but `head` is
/// `None` or a read of another node, [`Leads::Read`] it; else the leader
/// its node names, with its identity (from its name), term (`czxid`) and
/// session (`ephemeralOwner`), or [`Leads::NoOne`].
///
/// Given a read of the node it asked for, or of the head whatever it is
/// ([`watched`], which an observer reads for its watch), it never answers
/// [`Leads::Read`]: one read is the most a look takes.
pub fn who_leads<'a, S: AsRef<str>>(children: &'a [S], head: Option<HeadRead<'_>>) -> Leads<'a> {
    let Some(name) = ordering::leader(children) else {
        return Leads::NoOne;
    };
    let Some(head) = head.filter(|head| head.node == name) else {
        return Leads::Read(name);
    };
    let named = naming(name, head.data, head.version);
    // A persistent node is no candidate's (they are ephemeral).
    if !named.is_leader() || head.ephemeral_owner == 0 {
        return Leads::NoOne;
    }
    match candidate(name) {
        Some(parsed) => Leads::Leader(Leader {
            identity: parsed.identity().to_owned(),
            node: name.to_owned(),
            term: head.czxid,
            session: head.ephemeral_owner,
            revocation_requested: named == Named::AskedToStepDown,
        }),
        None => Leads::NoOne,
    }
}

/// The node an observer watches in a listing of the lock directory: the
/// head of the queue, whatever it is (a leader, a writer not yet
/// announced, a reader). Only its deletion or a write to it can change
/// who leads: a node later in the queue becomes leader only after every
/// node before it has left, so the head leaves first. `None` when the
/// directory holds no contender: the observer then watches the
/// directory's children, the one case where a create (the first
/// candidate's) is the news.
pub fn watched<S: AsRef<str>>(children: &[S]) -> Option<&str> {
    ordering::queue(children).contenders.first().map(|p| p.name)
}

/// What a granted candidate does next about its announcement, given its
/// node's data as just read (`data`), its own announcement (`mine`) and
/// whether its guard has recorded a revocation request already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnounceStep {
    /// The node carries the announcement (an earlier write whose answer
    /// was lost): done.
    Done,
    /// Write the announcement, conditional on the version just read.
    Write,
    /// The node carries a revocation request the guard has not recorded
    /// yet: overwriting it now could hide it from the guard (its kept
    /// watch reads the node after the change). Wait until the guard
    /// records it (or the lock is lost), then read again.
    AwaitRevocation,
}

/// See [`AnnounceStep`].
pub fn announce_step(data: &[u8], mine: &[u8], revocation_recorded: bool) -> AnnounceStep {
    if data == mine {
        AnnounceStep::Done
    } else if data == crate::node_name::REVOKE_PAYLOAD && !revocation_recorded {
        AnnounceStep::AwaitRevocation
    } else {
        AnnounceStep::Write
    }
}

/// Whether a leader whose node holds `data` writes its announcement
/// (`mine`) again: data someone else wrote over it, unless it is a
/// revocation request (which stays, for the guard to see; observers name
/// the leader asked to step down meanwhile, see [`naming`]).
pub fn reannounces(data: &[u8], mine: &[u8]) -> bool {
    data != mine && data != crate::node_name::REVOKE_PAYLOAD
}

#[cfg(test)]
mod tests {
    use super::*;

    const W1: &str = "web01@0123456789abcdef0123456789abcdef-W-0000000001";
    const W2: &str = "web02@fedcba9876543210fedcba9876543210-W-0000000002";
    const R0: &str = "web03@00000000000000000000000000000000-R-0000000000";
    const R3: &str = "web03@00000000000000000000000000000000-R-0000000003";

    #[test]
    fn a_semaphores_permit_names_no_leader() {
        let permit = "web01@permits-2@0123456789abcdef0123456789abcdef-W-0000000001";
        let revoke = crate::node_name::REVOKE_PAYLOAD;
        assert_eq!(
            naming(permit, revoke, 2),
            Named::No,
            "a revoked permit is no leader asked to step down"
        );
        let announced = announcement("web01@permits-2");
        assert_eq!(naming(permit, &announced, 1), Named::No);
        let head = read((permit, revoke, 3, 7, 1));
        assert_eq!(who_leads(&[permit], Some(head)), Leads::NoOne);
    }

    #[test]
    fn the_leader_is_the_head_writer() {
        assert_eq!(ordering::leader::<&str>(&[]), None);
        assert_eq!(ordering::leader(&[W2, W1]), Some(W1));
        assert_eq!(ordering::leader(&[W1, R3, W2]), Some(W1));
        // A reader at the head holds: no writer leads, also not the one after it.
        assert_eq!(ordering::leader(&[W1, R0]), None);
        assert_eq!(ordering::leader(&[R0]), None);
        // Foreign children do not count.
        assert_eq!(ordering::leader(&["not-a-contender", W2]), Some(W2));
        assert_eq!(ordering::leader(&["not-a-contender"]), None);
        // Two nodes with one sequence cannot be ordered: no one leads.
        let twin = "other@0123456789abcdef0123456789abcdef-W-0000000001";
        assert_eq!(ordering::leader(&[W1, twin]), None);
    }

    /// A read of the head writer's node: its name, data, data version,
    /// owner session and czxid.
    type Read<'a> = (&'a str, &'a [u8], i32, i64, i64);

    fn read<'a>((node, data, version, ephemeral_owner, czxid): Read<'a>) -> HeadRead<'a> {
        HeadRead {
            node,
            data,
            version,
            ephemeral_owner,
            czxid,
        }
    }

    fn leader(
        node: &str,
        identity: &str,
        term: i64,
        session: i64,
        revocation_requested: bool,
    ) -> Leads<'static> {
        Leads::Leader(Leader {
            identity: identity.to_owned(),
            node: node.to_owned(),
            term,
            session,
            revocation_requested,
        })
    }

    /// Rows: the listing, what was read of its head writer (if anything),
    /// who leads or what to read.
    #[test]
    fn who_leads_follows_the_head_writer_and_what_its_node_says() {
        let revoke = crate::node_name::REVOKE_PAYLOAD;
        let announced: &[u8] = b"leader:web01";
        let twin = "other@0123456789abcdef0123456789abcdef-W-0000000001";
        let curator = "_c_0123456789abcdef0123456789abcdef-__WRIT__0000000001";
        let bare = "web01-W-0000000001";
        let rows: Vec<(Vec<&str>, Option<Read<'_>>, Leads<'_>)> = vec![
            // Nothing to read: no contender, a reader at the head, a head
            // that cannot be ordered. Whatever was read.
            (vec![], None, Leads::NoOne),
            (vec!["not-a-contender"], None, Leads::NoOne),
            (vec![R0], None, Leads::NoOne),
            (vec![W1, R0], None, Leads::NoOne),
            (vec![W1, R0], Some((R0, b"", 0, 0x51, 9)), Leads::NoOne),
            (vec![W1, R0], Some((W1, announced, 1, 0x51, 9)), Leads::NoOne),
            (vec![W1, twin], None, Leads::NoOne),
            (vec![W1, twin], Some((W1, announced, 1, 0x51, 9)), Leads::NoOne),
            // A head writer, not read yet (or another node read): read it.
            (vec![W2, W1], None, Leads::Read(W1)),
            (vec![W1, R3, W2], None, Leads::Read(W1)),
            (vec!["not-a-contender", W2], None, Leads::Read(W2)),
            (
                vec![W2, W1],
                Some((W2, b"leader:web02", 1, 0x52, 8)),
                Leads::Read(W1),
            ),
            // Peers' writers and bare names are read too: their data decides.
            (vec![curator], None, Leads::Read(curator)),
            (vec![bare], None, Leads::Read(bare)),
            // Read: its announcement names it, with term and session.
            (
                vec![W2, W1],
                Some((W1, announced, 1, 0x51, 9)),
                leader(W1, "web01", 9, 0x51, false),
            ),
            (
                vec![W1, R3, W2],
                Some((W1, announced, 4, 0x51, 9)),
                leader(W1, "web01", 9, 0x51, false),
            ),
            (
                vec![W2],
                Some((W2, b"leader:web02", 1, 0x52, 12)),
                leader(W2, "web02", 12, 0x52, false),
            ),
            // A revocation request over the announcement: still the leader,
            // asked to step down; before it (its only write), no one.
            (
                vec![W1, W2],
                Some((W1, revoke, 2, 0x51, 9)),
                leader(W1, "web01", 9, 0x51, true),
            ),
            (vec![W1, W2], Some((W1, revoke, 1, 0x51, 9)), Leads::NoOne),
            // Not announced yet, or a stranger's write, or another's
            // announcement: no one.
            (vec![W1], Some((W1, b"", 0, 0x51, 9)), Leads::NoOne),
            (vec![W1], Some((W1, b"junk", 2, 0x51, 9)), Leads::NoOne),
            (vec![W1], Some((W1, b"leader:web02", 1, 0x51, 9)), Leads::NoOne),
            // A persistent node is no candidate's, announced or asked.
            (vec![W1], Some((W1, announced, 1, 0, 9)), Leads::NoOne),
            (vec![W1], Some((W1, revoke, 2, 0, 9)), Leads::NoOne),
            // Not a candidate's node, whatever its data.
            (
                vec![curator],
                Some((curator, b"leader:_c_0123456789abcdef0123456789abcdef", 1, 0x51, 9)),
                Leads::NoOne,
            ),
            (vec![bare], Some((bare, announced, 1, 0x51, 9)), Leads::NoOne),
            (vec![bare], Some((bare, revoke, 2, 0x51, 9)), Leads::NoOne),
        ];
        for (children, head, want) in rows {
            assert_eq!(
                who_leads(&children, head.map(read)),
                want,
                "{children:?} {head:?}"
            );
        }
    }

    /// An observer reads the head whatever it is: that read always answers.
    #[test]
    fn a_read_of_the_watched_head_always_answers() {
        let twin = "other@0123456789abcdef0123456789abcdef-W-0000000001";
        let listings: [&[&str]; 7] = [
            &[W1],
            &[W2, W1],
            &[W1, R0],
            &[R0, R3],
            &[W1, twin],
            &[W1, R3, W2],
            &["x", W2],
        ];
        for children in listings {
            let Some(head) = watched(children) else { continue };
            for data in [
                &b"leader:web01"[..],
                b"leader:web02",
                b"",
                crate::node_name::REVOKE_PAYLOAD,
            ] {
                let answer = who_leads(children, Some(read((head, data, 2, 0x51, 9))));
                assert!(
                    !matches!(answer, Leads::Read(_)),
                    "{children:?} {data:?}: {answer:?}"
                );
            }
        }
    }

    #[test]
    fn only_a_named_leader_is_a_leader() {
        assert_eq!(Leads::NoOne.leader(), None);
        assert_eq!(Leads::Read(W1).leader(), None);
        let Leads::Leader(named) = leader(W1, "web01", 9, 0x51, true) else {
            unreachable!()
        };
        assert_eq!(Leads::Leader(named.clone()).leader(), Some(named));
    }

    #[test]
    fn observers_watch_the_head_whatever_it_is() {
        assert_eq!(watched::<&str>(&[]), None);
        assert_eq!(watched(&["not-a-contender"]), None);
        assert_eq!(watched(&[W2, W1]), Some(W1));
        assert_eq!(watched(&[W1, R0]), Some(R0));
    }

    #[test]
    fn announcements() {
        assert_eq!(announcement("web01"), b"leader:web01".to_vec());
        assert!(announces(W1, b"leader:web01"));
        // Another identity's, a prefix of it, empty data, a revocation.
        assert!(!announces(W1, b"leader:web02"));
        assert!(!announces(W1, b"leader:web0"));
        assert!(!announces(W1, b"leader:web01 "));
        assert!(!announces(W1, b""));
        assert!(!announces(W1, crate::node_name::REVOKE_PAYLOAD));
        // A reader, a name without a token, a name that does not parse.
        assert!(!announces(R0, b"leader:web03"));
        assert!(!announces("web01-W-0000000001", b"leader:web01"));
        assert!(!announces("junk", b"leader:junk"));
    }

    /// Rows: the head writer's node, its data, its data version, who it
    /// names.
    #[test]
    fn a_revocation_request_over_the_announcement_leaves_the_leader_named() {
        let revoke = crate::node_name::REVOKE_PAYLOAD;
        let rows: [(&str, &[u8], i32, Named); 16] = [
            // Announced (its first write, or after a request it took in, or
            // after a stranger's write it announced over).
            (W1, b"leader:web01", 1, Named::Leader),
            (W1, b"leader:web01", 2, Named::Leader),
            (W1, b"leader:web01", 7, Named::Leader),
            // A request over the announcement: still the leader, asked to
            // step down.
            (W1, revoke, 2, Named::AskedToStepDown),
            (W1, revoke, 3, Named::AskedToStepDown),
            (W1, revoke, i32::MAX, Named::AskedToStepDown),
            // A request that is the node's only write came before any
            // announcement: the candidate may not know of its grant yet.
            (W1, revoke, 1, Named::No),
            // Not announced yet, or a stranger's write over it.
            (W1, b"", 0, Named::No),
            (W1, b"junk", 2, Named::No),
            (W1, b"leader:web02", 2, Named::No),
            // Versions a server never sends: no request over anything.
            (W1, revoke, 0, Named::No),
            (W1, revoke, -1, Named::No),
            // Not a candidate's node: a reader, a bare name, a peer's layout,
            // a name that does not parse.
            (R0, revoke, 2, Named::No),
            ("web01-W-0000000001", revoke, 2, Named::No),
            (
                "_c_0123456789abcdef0123456789abcdef-__WRIT__0000000001",
                revoke,
                2,
                Named::No,
            ),
            ("junk", revoke, 2, Named::No),
        ];
        for (name, data, version, want) in rows {
            assert_eq!(naming(name, data, version), want, "{name} {data:?} v{version}");
            assert_eq!(naming(name, data, version).is_leader(), want != Named::No);
        }
    }

    #[test]
    fn a_leader_writes_over_strangers_data_but_not_over_a_revocation() {
        let mine = announcement("web01");
        assert!(!reannounces(&mine, &mine));
        assert!(!reannounces(crate::node_name::REVOKE_PAYLOAD, &mine));
        assert!(reannounces(b"junk", &mine));
        assert!(reannounces(b"", &mine));
        assert!(reannounces(b"leader:web02", &mine));
    }

    #[test]
    fn the_announcement_never_hides_an_unrecorded_revocation() {
        let mine = announcement("web01");
        let revoke = crate::node_name::REVOKE_PAYLOAD;
        let rows: [(&[u8], bool, AnnounceStep); 7] = [
            (b"", false, AnnounceStep::Write),
            (b"", true, AnnounceStep::Write),
            (&mine, false, AnnounceStep::Done),
            (&mine, true, AnnounceStep::Done),
            (revoke, false, AnnounceStep::AwaitRevocation),
            (revoke, true, AnnounceStep::Write),
            (b"leader:someone-else", false, AnnounceStep::Write),
        ];
        for (data, recorded, want) in rows {
            assert_eq!(announce_step(data, &mine, recorded), want, "{data:?} {recorded}");
        }
    }
}
