//! How snapshots are written on stdout: the text tables ([`super::table`])
//! or the JSON form, once or redrawn on every change.

use std::io::{self, IsTerminal, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use zk_rwlock::{ContenderState, Layout, Mode};
use zk_rwlock_cli::{exit, Failure};

use super::snapshot::{permit_tag, Leader, Snapshot};
use super::table::{age, table};

/// How snapshots are printed.
pub(super) struct Output {
    json: bool,
    watch: bool,
    /// Several paths: `{"locks": [...]}` in JSON, sections in text.
    several: bool,
    /// Redraw in place (a terminal in watch mode).
    pub(super) redraw: bool,
    /// Whether a snapshot was printed already.
    printed: std::cell::Cell<bool>,
    /// `--layout`: the layout whose blind spots the warnings name.
    layout: Option<Layout>,
}

impl Output {
    pub(super) fn new(json: bool, watch: bool, several: bool, layout: Option<Layout>) -> Output {
        Output {
            layout,
            json,
            watch,
            several,
            redraw: watch && !json && io::stdout().is_terminal(),
            printed: std::cell::Cell::new(false),
        }
    }

    pub(super) fn show(&self, snapshots: &[Snapshot]) -> io::Result<()> {
        let now = SystemTime::now();
        let mut text = String::new();
        if self.json {
            let encoded = if self.several {
                let value = JsonLocks {
                    locks: snapshots.iter().map(|s| json(s, now)).collect(),
                };
                if self.watch {
                    serde_json::to_string(&value)
                } else {
                    serde_json::to_string_pretty(&value)
                }
            } else {
                let value = json(&snapshots[0], now);
                if self.watch {
                    serde_json::to_string(&value)
                } else {
                    serde_json::to_string_pretty(&value)
                }
            };
            text.push_str(&encoded.map_err(io::Error::other)?);
            text.push('\n');
        } else {
            if self.redraw {
                text.push_str("\x1b[H\x1b[2J");
                let paths: Vec<&str> = snapshots.iter().map(|s| s.path.as_str()).collect();
                text.push_str(&format!("watching {} (Ctrl-C to quit)\n\n", paths.join(", ")));
            } else if self.watch && self.printed.get() {
                text.push('\n');
            }
            for (i, snapshot) in snapshots.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str(&table(snapshot, now, self.layout));
            }
        }
        self.printed.set(true);
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }
}

pub(super) fn write_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        // The reader went away (`| head`): nothing more to say.
        Failure::new(0, "output closed")
    } else {
        Failure::new(exit::SOFTWARE, format!("cannot write to stdout: {e}"))
    }
}

/// The JSON form with several paths.
#[derive(Serialize)]
pub(super) struct JsonLocks<'a> {
    locks: Vec<JsonStatus<'a>>,
}

/// The JSON form of one path.
#[derive(Serialize)]
pub(super) struct JsonStatus<'a> {
    path: &'a str,
    contenders: Vec<JsonContender>,
    foreign: &'a [String],
    /// Only for a semaphore's directory: the permit count its contenders
    /// carry (the first N contenders hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    permits: Option<u32>,
    /// Only when the directory is used for an election and someone leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    leader: Option<&'a Leader>,
}

#[derive(Serialize)]
pub(super) struct JsonContender {
    position: usize,
    node: String,
    path: String,
    identity: String,
    /// Which layout (so which library) the node's name is written in.
    layout: &'static str,
    token: Option<String>,
    mode: &'static str,
    seq: i32,
    /// Only for a semaphore's contender: the permit count its name carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    permits: Option<u32>,
    state: &'static str,
    waits_on: Option<String>,
    fencing_token: Option<i64>,
    session: Option<String>,
    /// False for a persistent node with a contender's name: it blocks the lock until deleted.
    ephemeral: Option<bool>,
    created_ms: Option<i64>,
    age_ms: Option<u64>,
    /// With several paths: the other given paths where this session has a contender.
    #[serde(skip_serializing_if = "Option::is_none")]
    also_in: Option<Vec<String>>,
}

pub(super) fn json(snapshot: &Snapshot, now: SystemTime) -> JsonStatus<'_> {
    let contenders = snapshot
        .contenders
        .iter()
        .enumerate()
        .map(|(i, c)| JsonContender {
            position: i + 1,
            node: c.name.to_string(),
            path: c.path.clone(),
            // A semaphore contender's without its permit count (`permits`).
            identity: permit_tag(&c.name)
                .map_or_else(|| c.name.identity(), |(identity, _)| identity)
                .to_owned(),
            layout: c.name.layout().name(),
            token: c.name.token().map(|t| t.simple().to_string()),
            mode: match c.name.mode() {
                Mode::Read => "read",
                Mode::Write => "write",
            },
            seq: c.name.seq(),
            permits: permit_tag(&c.name).map(|(_, permits)| permits),
            state: match c.state {
                ContenderState::Holds => "holds",
                ContenderState::WaitsOn(_) => "waits",
                _ => "exhausted",
            },
            waits_on: match &c.state {
                ContenderState::WaitsOn(node) => Some(node.clone()),
                _ => None,
            },
            fencing_token: c.fencing_token,
            session: c.session.map(|s| format!("{:#x}", s as u64)),
            ephemeral: c.session.map(|s| s != 0),
            created_ms: c
                .created
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64),
            age_ms: c.created.map(|t| age(t, now).as_millis() as u64),
            also_in: snapshot.also_in.as_ref().map(|a| a[i].clone()),
        })
        .collect();
    JsonStatus {
        path: &snapshot.path,
        contenders,
        foreign: &snapshot.foreign,
        permits: snapshot.permits(),
        leader: snapshot.leader.as_ref(),
    }
}
