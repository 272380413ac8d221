//! What the subcommands share: tracing set-up, the runtime, durations,
//! layouts, lock paths.

use std::future::Future;
use std::time::Duration;

use zk_rwlock::Layout;

use crate::failure::{exit, Failure};

/// What is logged when `RUST_LOG` is not set: warnings, except the
/// ZooKeeper client's own. The command line says what went wrong in its
/// own words (one `zk-rwlock: ` line); the client's retries ("fails to
/// establish session ... due to timeout") would come in another format
/// among them. `RUST_LOG=zookeeper_client=warn` (or `debug`, ...) shows them.
pub const DEFAULT_LOG: &str = "warn,zookeeper_client=off";

/// Installs a `tracing` subscriber writing to stderr, filtered by `RUST_LOG`
/// (default: [`DEFAULT_LOG`]).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Parses a duration in humantime's grammar (`500ms`, `3s`, `1m30s`,
/// `2h 15m`, `1day`), or a plain number of seconds (`1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let parsed = match s.parse::<f64>() {
        // A plain number is seconds (say so in the errors below).
        Ok(secs) if secs.is_finite() && (0.0..=1e9).contains(&secs) => {
            return Ok(Duration::from_secs_f64(secs))
        }
        Ok(_) => None,
        Err(_) => Some(humantime::parse_duration(s).map_err(|e| {
            format!(
                "invalid duration `{s}`: {e}; write a number with a unit, like 500ms, 3s, 1m30s or 2h \
                 (a plain number is seconds)"
            )
        })?),
    };
    match parsed {
        Some(d) if d.as_secs_f64() <= 1e9 => Ok(d),
        _ => Err(format!(
            "invalid duration `{s}`: must be between 0 and 1e9 seconds"
        )),
    }
}

/// Checks a lock path before connecting, with the library's one path check
/// ([`zk_rwlock::validate_path`]), so that a bad path is reported as such
/// (exit 2) even when no server is reachable.
pub fn check_lock_path(path: &str) -> Result<(), Failure> {
    zk_rwlock::validate_path(path).map_err(Failure::from)
}

/// Parses `--layout`.
pub fn parse_layout(s: &str) -> Result<Layout, String> {
    s.parse()
        .map_err(|e: zk_rwlock::node_name::ParseLayoutError| e.to_string())
}

/// Runs a subcommand's `future` on a runtime of one thread, dropped (its
/// tasks with it) before this returns.
///
/// One thread: `exec` spawns the command from the main thread, which lives
/// as long as the process (the parent-death signal is tied to the thread).
pub fn block_on<T>(future: impl Future<Output = Result<T, Failure>>) -> Result<T, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot start the runtime: {e}")))?;
    let result = runtime.block_on(future);
    drop(runtime);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h 15m"), Ok(Duration::from_secs(8100)));
        assert_eq!(parse_duration("5d"), Ok(Duration::from_secs(5 * 86_400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("abc")
            .unwrap_err()
            .contains("a plain number is seconds"));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("100000years").is_err());
    }
}
