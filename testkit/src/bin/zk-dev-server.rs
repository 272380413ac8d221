//! `zk-dev-server`: a local Apache ZooKeeper for trying zk-rwlock by hand.
//!
//! Starts a standalone server (or, with `--ensemble N`, an ensemble of N
//! servers on consecutive client ports) on 127.0.0.1, prints its connect
//! string on stdout, and serves until Ctrl-C or SIGTERM; then it stops the
//! servers cleanly (SIGTERM) and deletes their data, unless `--data-dir`
//! keeps it for the next run.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use zk_rwlock_testkit::{ClientAuth, LaunchError, ZkCluster};

/// Run a throwaway local ZooKeeper until Ctrl-C.
///
/// Prints the connect string (e.g. 127.0.0.1:2181) as the only line on
/// stdout, once the servers serve; messages go to stderr. The data lives in
/// a temporary directory that is deleted on exit, unless --data-dir keeps it.
#[derive(Debug, Parser)]
#[command(name = "zk-dev-server", version, about)]
struct Args {
    /// Client port of the (first) server; member i of an ensemble listens on PORT + i.
    #[arg(long, value_name = "PORT", default_value_t = 2181)]
    port: u16,
    /// Start an ensemble of this many servers (3, 5 or 7) instead of one.
    #[arg(long, value_name = "N")]
    ensemble: Option<usize>,
    /// ZooKeeper tickTime in milliseconds; sessions may last 2 to 20 ticks.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    tick_ms: u64,
    /// Also serve TLS only on another port (its connect string and the CA,
    /// client certificate and key files are printed on stderr): `none`
    /// asks clients for no certificate, `need` requires one
    #[arg(long, value_name = "CLIENT_AUTH", value_parser = ["none", "need"])]
    tls: Option<String>,
    /// Accept SASL DIGEST-MD5 for USER:PASSWORD (repeatable)
    #[arg(long, value_name = "USER:PASSWORD")]
    sasl_user: Vec<String>,
    /// Keep the servers' data (the tree and the sessions) in DIR, made if
    /// missing: a server started again on the same DIR (and port) has the
    /// same tree, and a client whose session timeout has not run out
    /// meanwhile reconnects to the same session
    #[arg(long, value_name = "DIR")]
    data_dir: Option<std::path::PathBuf>,
}

/// How often the servers are checked for having exited on their own.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// Lines of a server's log shown when it exited on its own.
const LOG_TAIL: usize = 20;

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let args = Args::parse();
    match serve(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("zk-dev-server: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: &Args) -> Result<(), String> {
    if let Some(n) = args.ensemble {
        if !(3..=7).contains(&n) || n % 2 == 0 {
            return Err(format!("--ensemble {n}: an ensemble has 3, 5 or 7 members"));
        }
    }
    let members = args.ensemble.unwrap_or(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    // Signal handlers first: a Ctrl-C during the start-up still stops the servers.
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            Ok::<_, std::io::Error>((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?))
        })
        .map_err(|e| format!("cannot handle signals: {e}"))?;
    let mut builder = ZkCluster::builder()
        .members(members)
        .client_port(args.port)
        .tick_time(Duration::from_millis(args.tick_ms));
    match args.tls.as_deref() {
        Some("need") => builder = builder.tls(ClientAuth::Need),
        Some(_) => builder = builder.tls(ClientAuth::None),
        None => {}
    }
    if let Some(dir) = &args.data_dir {
        builder = builder.data_dir(dir);
    }
    for user in &args.sasl_user {
        let Some((name, password)) = user.split_once(':') else {
            return Err(format!("--sasl-user {user}: expected USER:PASSWORD"));
        };
        builder = builder.sasl_user(name, password);
    }
    let mut cluster = builder.start().map_err(|e| match e {
        LaunchError::NotInstalled { .. } => format!("{e}\n(scripts/ensure-zookeeper.sh installs it)"),
        e => e.to_string(),
    })?;
    let kind = if members == 1 {
        "standalone server".to_owned()
    } else {
        format!("ensemble of {members}")
    };
    eprintln!(
        "zk-dev-server: ZooKeeper {kind} serving (tickTime {} ms, sessions {:?} to {:?}); Ctrl-C stops it",
        args.tick_ms,
        cluster.min_session_timeout(),
        cluster.max_session_timeout()
    );
    if let Some(dir) = &args.data_dir {
        eprintln!("zk-dev-server: data kept in {}", dir.display());
    }
    if let (Some(secure), Some(files)) = (cluster.secure_connect_string(), cluster.tls_files()) {
        eprintln!(
            "zk-dev-server: TLS only on {secure}: --tls-ca {} --tls-cert {} --tls-key {}",
            files.ca_pem.display(),
            files.client_cert_pem.display(),
            files.client_key_pem.display()
        );
    }
    println!("{}", cluster.connect_string());
    let exited = runtime.block_on(async {
        let mut check = tokio::time::interval(CHECK_EVERY);
        loop {
            tokio::select! {
                _ = interrupt.recv() => return None,
                _ = terminate.recv() => return None,
                _ = check.tick() => {
                    if let Some(i) = (0..cluster.members()).find(|&i| !cluster.is_running(i)) {
                        return Some(i);
                    }
                }
            }
        }
    });
    if let Some(i) = exited {
        // The log goes with the cluster's directory: show its end now.
        let log = std::fs::read_to_string(cluster.log_path(i)).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        return Err(format!(
            "ZooKeeper member {i} exited on its own; the end of its log:\n{}",
            lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n")
        ));
    }
    eprintln!("zk-dev-server: stopping");
    for i in 0..cluster.members() {
        cluster.stop(i).map_err(|e| e.to_string())?;
    }
    Ok(())
}
