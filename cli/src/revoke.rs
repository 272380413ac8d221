//! `zk-rwlock revoke`: ask the holder(s) of a lock, or the owner of one
//! contender node, to let go (cooperative revocation: the payload
//! [`zk_rwlock::REVOKE_PAYLOAD`] written to the node; see
//! [`zk_rwlock::SharedLock::revoke`]).

use std::process::ExitCode;
use std::time::Duration;

use zk_rwlock::node_name::{revocation_target, RevocationTarget};
use zk_rwlock::SharedLock;

use zk_rwlock_cli::common;
use zk_rwlock_cli::connection;
use zk_rwlock_cli::{exit, Failure};

const AFTER_HELP: &str = "See `zk-rwlock revoke --help` for what it does and exit codes.";

const AFTER_LONG_HELP: &str = "\
What it does:
  Writes `__REVOKE__` (Apache Curator's revocation message) as the data of
  the contender node NODE of the lock directory PATH, or, without NODE, of
  every node that holds the lock now. Prints the full path of each node
  asked, one a line, then reports each node that refused (every holder is
  asked, also when one refused). Revoking needs WRITE on the contender
  nodes: nodes created with an ACL such as creator-all cannot be revoked by
  other identities. The holder sees a request only if it may READ its own
  node.
  Revocation is cooperative: the holder is asked, not forced. A holder that
  listens (the library's `revocation_requested()`, `zk-rwlock exec
  --on-revoke SIGNAL`) lets go; one that does not keeps the lock. Nobody
  else is granted the lock until the holder releases it. The leader of an
  election (`zk-rwlock lead`, the library's Election) is asked to step
  down, and leads until it resigns: `zk-rwlock status` keeps naming it,
  marked as asked to step down (the request is written over its
  announcement), and so do the library's `leader()` and `observe()`.
  On a semaphore's directory (`zk-rwlock exec --permits N`, the
  library's Semaphore) the holders are its permit holders, the first N
  contenders: each is asked, as a lock's holder is (`exec --permits N
  --on-revoke SIGNAL` listens).
  A request on a node that still waits is kept: its owner sees it once
  granted, when it looks for requests (`revocation_requested()` reads the
  node).
  kazoo contender nodes (`...__lock__...`, `...__rlock__...`) are never
  written to: kazoo has no revocation and keeps its contender's identifier
  in the node's data. They are named on stderr as not asked. A Curator
  holder acts on `__REVOKE__` only if it made its lock revocable
  (`makeRevocable`).

Exit codes:
  0    at least one node was asked
  1    nothing was asked: NODE does not exist (any more) or is a kazoo
       node, or no one (or only kazoo holders) holds the lock
  2    usage error: bad option or argument, invalid lock path, NODE that is
       not a contender node name, invalid connect string
  69   ZooKeeper unreachable or refusing sessions
  70   other ZooKeeper error
  77   permission denied by ZooKeeper (NoAuth: no WRITE on a contender
       node); the nodes asked are printed all the same

Environment:
  ZK_CONNECT  ZooKeeper servers when --connect is not given (set but
              empty: a usage error)
  ZK_RWLOCK_AUTH  --auth when it is not given (out of sight of ps)

Examples:
  zk-rwlock revoke /locks/backup
  zk-rwlock revoke /semaphores/encoders   # every permit holder
  zk-rwlock revoke /locks/backup 'web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042'";

/// Nothing was asked (see the help's exit codes).
const NOTHING_ASKED: u8 = 1;

/// Arguments of `revoke`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP, after_long_help = AFTER_LONG_HELP)]
pub struct Args {
    /// The lock directory, an absolute ZooKeeper path like /locks/backup
    #[arg(value_name = "PATH")]
    path: String,

    /// The contender node to ask, a child name of PATH (as `status` shows
    /// it) or its full path [default: every node holding the lock now]
    #[arg(value_name = "NODE")]
    node: Option<String>,

    /// ZooKeeper servers, host:port[,host:port...] [env: ZK_CONNECT]
    /// [default: 127.0.0.1:2181]
    #[arg(short, long, value_name = "SERVERS")]
    connect: Option<String>,

    /// Give up connecting to ZooKeeper after DUR (more than 0)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_timeout, allow_hyphen_values = true)]
    connect_timeout: Duration,

    #[command(flatten)]
    security: connection::Security,
}

/// Runs `revoke`.
pub fn run(args: Args) -> ExitCode {
    match common::block_on(revoke(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

async fn revoke(args: Args) -> Result<(), Failure> {
    common::check_lock_path(&args.path)?;
    let name = match &args.node {
        Some(node) => Some(target(&args.path, node)?),
        None => None,
    };
    let servers = connection::servers(args.connect.clone())?;
    let client = args
        .security
        .connect(&servers, Duration::from_secs(10), args.connect_timeout)
        .await?;
    let states = client.state_watcher();
    let result = async {
        let lock = SharedLock::new(client, &args.path)?;
        match name {
            Some(name) => {
                let node = format!("{}/{name}", args.path);
                Ok(match lock.revoke(name).await {
                    Ok(true) => (vec![node], Vec::new(), Vec::new()),
                    Ok(false) => (Vec::new(), Vec::new(), Vec::new()),
                    Err(e @ zk_rwlock::Error::NoAuth { .. }) => (Vec::new(), vec![(node, e)], Vec::new()),
                    Err(e) => return Err(e),
                })
            }
            None => lock
                .revoke_holders()
                .await
                .map(|revoked| (revoked.asked, revoked.refused, revoked.not_revocable)),
        }
    }
    .await;
    connection::await_session_end(states, Duration::from_secs(2)).await;
    let (asked, refused, kazoo) = result.map_err(Failure::from)?;
    // Every node asked is printed, also when others refused.
    for node in &asked {
        println!("{node}");
    }
    for node in &kazoo {
        eprintln!("zk-rwlock: not asked: `{node}` is a kazoo contender node (kazoo has no revocation)");
    }
    if !refused.is_empty() {
        for (node, _) in &refused[1..] {
            let _ = refused_failure(node).report();
        }
        return Err(refused_failure(&refused[0].0));
    }
    if asked.is_empty() {
        return Err(Failure::new(
            NOTHING_ASKED,
            match &args.node {
                Some(node) => format!("no contender node `{node}` in {}: nothing asked", args.path),
                None if !kazoo.is_empty() => {
                    format!("only kazoo holders hold the lock on {}: nothing asked", args.path)
                }
                None => format!("no one holds the lock on {}: nothing asked", args.path),
            },
        ));
    }
    Ok(())
}

/// The failure for a contender node whose ACL refused the request (NoAuth).
fn refused_failure(node: &str) -> Failure {
    Failure::new(
        exit::NOPERM,
        format!(
            "ZooKeeper refused the request on `{node}` (NoAuth): this client may not write to \
             contender node {node}: revoking needs WRITE on the contender nodes"
        ),
    )
}

/// The child name of the contender node NODE of the lock directory `dir`
/// that is asked ([`revocation_target`]); the failure if none is: NODE is
/// not a contender node of `dir` (a usage error), or one that takes no
/// requests (a kazoo node: nothing asked).
fn target<'a>(dir: &str, node: &'a str) -> Result<&'a str, Failure> {
    match revocation_target(dir, node) {
        RevocationTarget::Ask(name) => Ok(name),
        RevocationTarget::NotRevocable { name, layout } => Err(Failure::new(
            NOTHING_ASKED,
            format!(
                "`{name}` is a {layout} contender node: {} has no revocation: nothing asked",
                layout.library()
            ),
        )),
        RevocationTarget::NotAContender => Err(Failure::new(
            exit::USAGE,
            format!(
                "`{node}` is not a contender node of {dir}: give a child name like \
                 `web01@<token>-W-0000000042` (as `zk-rwlock status` shows it) or its full path"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_asked_and_not() {
        let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
        let kazoo = "0123456789abcdef0123456789abcdef__lock__0000000001";
        let code = |node: &str| target("/locks/x", node).map(str::to_owned).map_err(|f| f.code);
        assert_eq!(code(name), Ok(name.to_owned()));
        assert_eq!(code(&format!("/locks/x/{name}")), Ok(name.to_owned()));
        assert_eq!(code(&format!("/locks/x/sub/{name}")), Err(exit::USAGE));
        assert_eq!(code("web01"), Err(exit::USAGE));
        assert_eq!(code(kazoo), Err(NOTHING_ASKED));
        assert_eq!(code(&format!("/locks/x/{kazoo}")), Err(NOTHING_ASKED));
        let message = target("/locks/x", kazoo).err().map(|f| f.message);
        assert_eq!(
            message.as_deref(),
            Some(
                "`0123456789abcdef0123456789abcdef__lock__0000000001` is a kazoo contender node: \
                 kazoo has no revocation: nothing asked"
            )
        );
    }
}
