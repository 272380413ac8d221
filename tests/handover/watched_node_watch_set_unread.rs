//! A wait that knows it reads its own node sets its watched node's data
//! watch in the same `SetWatches` as its own node's, without reading the
//! watched node; the watch its listing left on the directory's children
//! makes up for what that request cannot tell (whether it may read the
//! watched node). Schedules against a real server.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{client, joined, lock, server, unique_path, wait_contenders, wait_watching};
use zk_rwlock::zk;

const SHORT: Duration = Duration::from_secs(10);

/// A writer right behind a holder whose node it may not read (READ taken
/// away by an operator): the server sends no event of that node's
/// deletion, and the `SetWatches` that set its watch said nothing of it.
/// The holder's release changes the directory's children: the waiter reads
/// the holder's node once, finds it gone, and is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_behind_a_holder_it_may_not_read_is_granted_at_the_release() {
    let path = unique_path("unread-watch-noauth");
    let second_lock = lock(&path).await;
    let second_session = second_lock.client().session_id().0;
    let first_lock = lock(&path).await;
    crate::teach_own_readable(&first_lock, &second_lock).await;
    let first = first_lock.write().await.unwrap();
    let first_node = first_lock.contenders().await.unwrap()[0].path.clone();
    let stranger = client().await;
    crate::take_read_away(&stranger, &first_node).await;
    assert!(matches!(
        second_lock.client().get_data(&first_node).await,
        Err(zk::Error::NoAuth)
    ));
    let second = {
        let second_lock = second_lock.clone();
        tokio::spawn(async move { second_lock.write().await })
    };
    wait_contenders(&first_lock, 2).await;
    let second_node = first_lock.contenders().await.unwrap()[1].path.clone();
    // Its wait's request was answered: its own node's watch is set.
    wait_watching(server(), &second_node, second_session).await;
    first.release().await.unwrap();
    let second = joined(SHORT, second).await;
    assert!(matches!(&second, Ok(g) if g.is_held()), "{second:?}");
    assert_eq!(first_lock.contenders().await.unwrap().len(), 1);
}

/// A stranger's child made in the directory during the wait fires the
/// listing's watch first: the waiter reads the holder's node (readable),
/// keeps the watch it set, and is granted by the release's event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_arrival_during_the_wait_leaves_it_watching_the_holder() {
    let path = unique_path("unread-watch-child");
    let second_lock = lock(&path).await;
    let second_session = second_lock.client().session_id().0;
    let first_lock = lock(&path).await;
    crate::teach_own_readable(&first_lock, &second_lock).await;
    let first = first_lock.write().await.unwrap();
    let first_node = first_lock.contenders().await.unwrap()[0].path.clone();
    let second = {
        let second_lock = second_lock.clone();
        tokio::spawn(async move { second_lock.write().await })
    };
    wait_contenders(&first_lock, 2).await;
    wait_watching(server(), &first_node, second_session).await;
    let stranger = client().await;
    let options = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    stranger
        .create(&format!("{path}/a-strangers-child"), b"", &options)
        .await
        .unwrap();
    // Still waiting, still watching the holder's node.
    assert!(!second.is_finished());
    wait_watching(server(), &first_node, second_session).await;
    first.release().await.unwrap();
    let second = joined(SHORT, second).await;
    assert!(matches!(&second, Ok(g) if g.is_held()), "{second:?}");
}

/// A create the directory refuses (no CREATE for this identity): its
/// listing, answered, left a watch on the directory's children, which is
/// left to fire, never removed. The session sends the create and the
/// listing, and nothing else (no `removeWatches`) before the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_create_leaves_its_listings_watch_and_sends_no_removal() {
    let path = unique_path("unread-watch-refused");
    let owner = client().await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    owner.mkdir(&path, &open).await.unwrap();
    let no_create = [zk::Acl::new(
        zk::Permission::READ | zk::Permission::WRITE | zk::Permission::DELETE | zk::Permission::ADMIN,
        zk::AuthId::anyone(),
    )];
    owner.set_acl(&path, &no_create, None).await.unwrap();
    let contender = client().await;
    let session = contender.session_id().0;
    let lock = zk_rwlock::SharedLock::new(contender.clone(), &path).unwrap();
    let before = received(session);
    assert!(lock.write().await.is_err());
    // The next request of the session: whatever it sent before is counted.
    contender.check_stat("/").await.unwrap();
    let (sent, last) = (received(session) - before, last_op(session));
    assert_eq!(
        (sent, last.as_str()),
        (3, "EXIS"),
        "the create, the listing and the probe"
    );
}

/// The server's `cons` line of session `session`: its `field`.
fn cons_field(session: i64, field: &str) -> String {
    let cons = server().four_letter(0, "cons").expect("cons");
    let tag = format!("sid=0x{session:x},");
    let line = cons
        .lines()
        .find(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("session {session:x} in {cons}"));
    let start = line.find(&format!("{field}=")).expect("the field") + field.len() + 1;
    let rest = &line[start..];
    rest[..rest.find([',', ')']).unwrap_or(rest.len())].to_owned()
}

/// Requests the server received from `session`.
fn received(session: i64) -> u64 {
    cons_field(session, "recved").parse().expect("a count")
}

/// The last request the server took from `session` (`lop`).
fn last_op(session: i64) -> String {
    cons_field(session, "lop")
}
