//! The carrier of a look at who leads ([`rules::Look`]): each request as
//! the client's call, each answer in the core's terms.

use super::{rules, Leader};
use crate::lock::{child_path, with_retry};
use crate::zk;
use rules::{LookAnswer, LookRequest, Looked};

/// What a look found: who leads, and (with watches) the watch its last
/// request left, which says when to look again.
pub(super) struct Found {
    pub(super) leader: Option<Leader>,
    pub(super) changed: Option<zk::OneshotWatcher>,
}

/// Looks at who leads the election on the directory `dir` as
/// [`rules::Look`] says, with watches if `watch` (an observer's), each
/// request sent again after a lost answer if `retry` (until the session is
/// over or retrying is, [`with_retry`]). Any error but a missing node ends
/// the look: it comes with the path of the node its request concerned.
pub(super) async fn look(
    client: &zk::Client,
    dir: &str,
    watch: bool,
    retry: bool,
) -> Result<Found, (zk::Error, String)> {
    let mut look = rules::Look::new(watch);
    let mut request = look.start();
    loop {
        let sent = if retry {
            with_retry(client, || send(client, dir, &request)).await
        } else {
            send(client, dir, &request).await
        };
        let (answer, changed) = sent.map_err(|e| {
            let path = match &request {
                LookRequest::Read { node, .. } => child_path(dir, node),
                LookRequest::List { .. } | LookRequest::WatchDirectory => dir.to_owned(),
            };
            (e, path)
        })?;
        // The last request's watch is the look's; an earlier one goes
        // (dropping it removes it).
        match look.answered(answer) {
            Looked::Send(next) => request = next,
            Looked::Mismatched => {
                let what = "an answer that does not answer the look's request".to_owned();
                return Err((zk::Error::UnexpectedError(what), dir.to_owned()));
            }
            Looked::Over(leader) => {
                return Ok(Found {
                    leader: leader.map(|leader| Leader::named(dir, leader)),
                    changed,
                })
            }
        }
    }
}

/// Sends one request of a look: its answer (a missing node is one), and
/// the watch it left.
async fn send(
    client: &zk::Client,
    dir: &str,
    request: &LookRequest,
) -> Result<(LookAnswer, Option<zk::OneshotWatcher>), zk::Error> {
    let missing = |e: zk::Error| match e {
        zk::Error::NoNode => Ok((LookAnswer::Missing, None)),
        e => Err(e),
    };
    match request {
        LookRequest::List { watch: false } => match client.list_children(dir).await {
            Ok(children) => Ok((LookAnswer::Listed(children), None)),
            Err(e) => missing(e),
        },
        LookRequest::List { watch: true } => match client.list_and_watch_children(dir).await {
            Ok((children, changed)) => Ok((LookAnswer::Listed(children), Some(changed))),
            Err(e) => missing(e),
        },
        LookRequest::WatchDirectory => match client.check_and_watch_stat(dir).await {
            Ok((stat, changed)) => Ok((LookAnswer::Exists(stat.is_some()), Some(changed))),
            Err(e) => missing(e),
        },
        LookRequest::Read { node, watch } => {
            let path = child_path(dir, node);
            let read = if *watch {
                client
                    .get_and_watch_data(&path)
                    .await
                    .map(|(data, stat, changed)| (data, stat, Some(changed)))
            } else {
                client
                    .get_data(&path)
                    .await
                    .map(|(data, stat)| (data, stat, None))
            };
            match read {
                Ok((data, stat, changed)) => Ok((
                    LookAnswer::Read {
                        data,
                        version: stat.version,
                        ephemeral_owner: stat.ephemeral_owner,
                        czxid: stat.czxid,
                    },
                    changed,
                )),
                Err(e) => missing(e),
            }
        }
    }
}
