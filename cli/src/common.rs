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

/// The library's warnings that say what the command line reports as a
/// failure in its own words: its target (module) and the start of its
/// message. Left out unless `RUST_LOG` is set, so that a failure is said
/// once. (The library warns because a program that does not look at the
/// error or the guard's state would otherwise not hear of it.)
const REPORTED: [(&str, &str); 4] = [
    // A held lock lost: `exec` and `lead` say "lock lost (...)".
    ("zk_rwlock::lock::keeper", "lock lost"),
    // The acquire fails with these errors, which the command line prints.
    (
        "zk_rwlock::lock::notice",
        "the lock directory's sequence counter is used up",
    ),
    (
        "zk_rwlock::lock::notice",
        "the lock directory's listing is over the limit",
    ),
    (
        "zk_rwlock::lock::notice",
        "the lock directory holds data that is not a release record",
    ),
];

/// Whether `event` is one of the library's warnings in [`REPORTED`].
fn reported(event: &tracing::Event<'_>) -> bool {
    let target = event.metadata().target();
    if !REPORTED.iter().any(|(t, _)| *t == target) {
        return false;
    }
    let mut fields = Fields::default();
    event.record(&mut fields);
    REPORTED
        .iter()
        .any(|(t, start)| *t == target && fields.message.starts_with(start))
}

/// An event's message and its other fields (`name=value`), as text.
#[derive(Default)]
struct Fields {
    message: String,
    others: Vec<String>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            name => self.others.push(format!("{name}={value}")),
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name => self.others.push(format!("{name}={value:?}")),
        }
    }
}

/// Leaves out the events for which [`reported`] holds.
struct SaidOnce;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SaidOnce {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        !reported(event)
    }
}

/// Writes an event as the command line's own messages read:
/// `zk-rwlock: warning: <message> (<field>=<value>, ...)`, no timestamp.
struct AsMessage;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for AsMessage
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            _ => "note",
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        write!(writer, "zk-rwlock: {level}: {}", fields.message)?;
        if !fields.others.is_empty() {
            write!(writer, " ({})", fields.others.join(", "))?;
        }
        writeln!(writer)
    }
}

/// Installs a `tracing` subscriber writing to stderr.
///
/// With `RUST_LOG` set (and valid), what it asks for, in tracing's full
/// format (timestamps, levels, targets): diagnostics. Without it,
/// [`DEFAULT_LOG`] in the command line's own format, one
/// `zk-rwlock: warning: ...` line per warning, and without the library's
/// warnings that repeat a failure the command line reports itself: each
/// failure is said once.
pub fn init_tracing() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .try_init();
        return;
    }
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(DEFAULT_LOG))
        .with(SaidOnce)
        .with(
            tracing_subscriber::fmt::layer()
                .event_format(AsMessage)
                .with_writer(std::io::stderr),
        )
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

/// Parses `--session-timeout` and `--connect-timeout`: a duration as
/// [`parse_duration`] reads it, of at least a millisecond (ZooKeeper counts
/// session timeouts in milliseconds). Zero is refused: a connect that gives
/// up at once, or a session timeout the server replaces with one of its
/// own choosing, is never what was meant.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let timeout = parse_duration(s)?;
    if timeout < Duration::from_millis(1) {
        return Err(format!(
            "a timeout of `{}` is no time: give at least 1ms, like 10s",
            s.trim()
        ));
    }
    Ok(timeout)
}

/// Checks a lock path before connecting, with the library's one path check
/// ([`zk_rwlock::validate_path`]), so that a bad path is reported as such
/// (exit 2) even when no server is reachable.
pub fn check_lock_path(path: &str) -> Result<(), Failure> {
    zk_rwlock::validate_path(path).map_err(Failure::from)
}

/// Checks `--identity` before connecting, with the library's own rules
/// ([`zk_rwlock::validate_identity`]): a usage error (exit 2) even when no
/// server is reachable. `None` (the host name) is always valid.
pub fn check_identity(identity: Option<&str>) -> Result<(), Failure> {
    identity.map_or(Ok(()), |identity| {
        zk_rwlock::validate_identity(identity).map_err(Failure::from)
    })
}

/// Checks before connecting that the session timeout asked for
/// (`--session-timeout`) can carry `--follower-lag`, with the lease's own
/// rule ([`zk_rwlock::lease::follower_lag_admissible`]). The server may
/// still grant a shorter timeout than asked for: the lock checks the
/// granted one again once connected.
pub fn check_follower_lag(session_timeout: Duration, follower_lag: Option<Duration>) -> Result<(), Failure> {
    let Some(lag) = follower_lag else {
        return Ok(());
    };
    if zk_rwlock::lease::follower_lag_admissible(session_timeout, lag) {
        return Ok(());
    }
    Err(Failure::new(
        exit::USAGE,
        format!(
            "a session timeout of {session_timeout:?} (--session-timeout) leaves too short a lease with a \
             follower lag of {lag:?} (--follower-lag or ZK_RWLOCK_FOLLOWER_LAG): the session timeout must \
             be at least 2.25 x the follower lag, here {:?}: ask for a longer session timeout or give a \
             shorter follower lag",
            lag.saturating_mul(9) / 4,
        ),
    ))
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

    /// The warnings left out are the library's, word for word: a warning
    /// reworded there would show again beside the command line's message.
    #[test]
    fn the_warnings_left_out_are_the_librarys() {
        for (target, start) in REPORTED {
            let source = match target {
                "zk_rwlock::lock::keeper" => include_str!("../../src/lock/keeper.rs"),
                "zk_rwlock::lock::notice" => include_str!("../../src/lock/notice.rs"),
                other => panic!("no source for {other}"),
            };
            assert!(source.contains(&format!("\"{start}")), "{target}: {start:?}");
        }
    }

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

    #[test]
    fn timeouts_are_never_zero() {
        assert_eq!(parse_timeout("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_timeout("1ms"), Ok(Duration::from_millis(1)));
        for zero in ["0", "0s", "0ms", " 0 ", "500us", "0.0001"] {
            let refused = parse_timeout(zero).unwrap_err();
            assert!(refused.contains("give at least 1ms"), "{zero}: {refused}");
        }
        assert!(parse_timeout("soon").unwrap_err().contains("invalid duration"));
    }
}
