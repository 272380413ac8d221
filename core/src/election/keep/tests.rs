use std::time::Duration;

use super::{Ended, KeepAnnounced, Keeping, NodeRead, Wrote};
use crate::election::announcement;
use crate::node_name::REVOKE_PAYLOAD;
use crate::wire::Error;

const CZXID: i64 = 42;
const SESSION: i64 = 7;

fn keep() -> KeepAnnounced {
    KeepAnnounced::new(announcement("web01"), CZXID, SESSION)
}

fn node(data: &[u8], version: i32) -> NodeRead<'_> {
    NodeRead {
        data,
        version,
        czxid: CZXID,
        ephemeral_owner: SESSION,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_strangers_write_over_the_announcement_is_written_over_at_the_version_read() {
    let mine = announcement("web01");
    let mut keep = keep();
    assert_eq!(
        keep.read(Ok(node(&mine, 1))),
        Keeping::Await,
        "announced: wait for a change"
    );
    assert_eq!(keep.changed(false), Keeping::Read, "a write: read again");
    assert_eq!(keep.read(Ok(node(b"junk", 2))), Keeping::Write { version: 2 });
    assert_eq!(keep.written(Ok(())), (Keeping::Await, Wrote::Announced));
    assert_eq!(keep.mine(), mine);
}

#[test]
fn a_revocation_request_is_never_written_over() {
    let mut keep = keep();
    assert_eq!(keep.read(Ok(node(REVOKE_PAYLOAD, 2))), Keeping::Await);
}

#[test]
fn a_node_made_again_by_someone_else_is_not_announced() {
    let mut keep = keep();
    let other_session = NodeRead {
        ephemeral_owner: SESSION + 1,
        ..node(b"junk", 0)
    };
    let other_node = NodeRead {
        czxid: CZXID + 9,
        ..node(b"junk", 0)
    };
    assert_eq!(keep.read(Ok(other_session)), Keeping::Stop(Ended::MadeAgain));
    assert_eq!(keep.read(Ok(other_node)), Keeping::Stop(Ended::MadeAgain));
}

#[test]
fn the_nodes_deletion_or_the_sessions_end_ends_the_keeping() {
    for error in [Error::NoNode, Error::SessionEnded] {
        assert_eq!(
            keep().read(Err(error.clone())),
            Keeping::Stop(Ended::Gone),
            "{error:?}"
        );
        assert_eq!(
            keep().written(Err(error.clone())),
            (Keeping::Stop(Ended::Gone), Wrote::Gone)
        );
    }
    assert_eq!(keep().changed(true), Keeping::Stop(Ended::Gone));
}

#[test]
fn a_write_raced_or_refused_waits_for_the_watch() {
    assert_eq!(
        keep().written(Err(Error::BadVersion)),
        (Keeping::Await, Wrote::Raced)
    );
    assert_eq!(
        keep().written(Err(Error::NoAuth)),
        (Keeping::Await, Wrote::Failed)
    );
}

#[test]
fn a_write_whose_answer_was_lost_is_read_again_after_a_pause() {
    // It may not have reached the server: nothing would fire the watch.
    let mut keep = keep();
    assert_eq!(keep.read(Ok(node(b"junk", 2))), Keeping::Write { version: 2 });
    assert_eq!(
        keep.written(Err(Error::Unanswered)),
        (Keeping::Pause(ms(10)), Wrote::Lost)
    );
    assert_eq!(keep.read(Ok(node(b"junk", 2))), Keeping::Write { version: 2 });
    assert_eq!(
        keep.written(Err(Error::Unanswered)),
        (Keeping::Pause(ms(10)), Wrote::Lost)
    );
    // Lost again without an answered read between: the pauses grow.
    assert_eq!(
        keep.written(Err(Error::Unanswered)),
        (Keeping::Pause(ms(20)), Wrote::Lost)
    );
}

#[test]
fn a_node_that_cannot_be_read_is_not_kept() {
    assert_eq!(keep().read(Err(Error::NoAuth)), Keeping::Stop(Ended::CannotWatch));
    assert_eq!(keep().read(Err(Error::Failed)), Keeping::Stop(Ended::CannotWatch));
}

#[test]
fn a_lost_read_is_sent_again_after_pauses_that_double_until_one_is_answered() {
    let mut keep = keep();
    let pauses: Vec<Keeping> = (0..9).map(|_| keep.read(Err(Error::Unanswered))).collect();
    let expected: Vec<Keeping> = [10, 20, 40, 80, 160, 320, 640, 1000, 1000]
        .into_iter()
        .map(|n| Keeping::Pause(ms(n)))
        .collect();
    assert_eq!(pauses, expected);
    // An answered read starts the pauses from the first again.
    let mine = announcement("web01");
    assert_eq!(keep.read(Ok(node(&mine, 1))), Keeping::Await);
    assert_eq!(keep.read(Err(Error::Unanswered)), Keeping::Pause(ms(10)));
}
