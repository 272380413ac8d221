//! The terminal timeline: one row per worker, time compressed so the whole
//! run fits the width; ANSI colours when asked for.

use std::fmt::Write as _;

use zk_rwlock::Mode;

use super::verdict::{HoldEnd, MarkKind, Model, WaitEnd};

/// A moment drawn as a column through every row's idle cells and named
/// under the axis: the leader kill, a partition, a lease deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// When (µs, `CLOCK_MONOTONIC`).
    pub t: u64,
    /// What to say under the axis.
    pub label: String,
    /// What the legend calls this kind of marker.
    pub legend: &'static str,
}

/// What to draw.
#[derive(Debug, Clone)]
pub struct Frame<'a> {
    /// The intervals.
    pub model: &'a Model,
    /// Time 0 of the axis (µs, `CLOCK_MONOTONIC`).
    pub t0: u64,
    /// Length of the axis (µs).
    pub span_us: u64,
    /// While the run goes on: the present (nothing is drawn after it).
    pub now: Option<u64>,
    /// Marked moments, in time order.
    pub markers: Vec<Marker>,
    /// Terminal width in columns.
    pub width: usize,
    /// Whether to use ANSI colours.
    pub color: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Write,
    Read,
    Wait,
    Offline,
    Lost,
    Error,
    Kill,
    Dim,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Plain => "0",
            Style::Write => "31",
            Style::Read => "32",
            Style::Wait | Style::Dim => "2",
            Style::Offline => "33",
            Style::Lost => "1;33",
            Style::Error => "1;31",
            Style::Kill => "35",
        }
    }
}

/// Glyphs (all one column wide).
pub const WRITE: char = '█';
/// A read hold.
pub const READ: char = '▒';
/// Waiting for the lock.
pub const WAIT: char = '·';
/// Disconnected from ZooKeeper.
pub const OFFLINE: char = '~';
/// Held without a connection: suspended, the work stopped, the lease running.
pub const SUSPENDED: char = '░';
/// The lock was lost.
pub const LOST: char = '!';
/// The session expired.
pub const SESSION_ENDED: char = 'X';
/// The worker failed.
pub const ERROR: char = 'E';
/// A marked moment (a column through idle cells): the leader killed, a
/// worker cut off, its lease deadline.
pub const KILL: char = '┊';

/// A line being built: styled characters.
#[derive(Default)]
struct Styled(Vec<(Style, char)>);

impl Styled {
    fn push(&mut self, style: Style, c: char) {
        self.0.push((style, c));
    }

    fn text(&mut self, style: Style, s: &str) {
        for c in s.chars() {
            self.push(style, c);
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn render(mut self, width: usize, color: bool) -> String {
        self.0.truncate(width);
        while self.0.last().is_some_and(|&(_, c)| c == ' ') {
            self.0.pop();
        }
        let mut out = String::new();
        let mut current = Style::Plain;
        for (style, c) in self.0 {
            if color && style != current {
                // Reset first so that bold or dim do not stick.
                if current != Style::Plain {
                    out.push_str("\x1b[0m");
                }
                if style != Style::Plain {
                    let _ = write!(out, "\x1b[{}m", style.code());
                }
                current = style;
            }
            out.push(c);
        }
        if color && current != Style::Plain {
            out.push_str("\x1b[0m");
        }
        out
    }
}

/// Adds the part of `[x0, x1)` (in cells) that falls into each cell.
fn spread(cov: &mut [f64], x0: f64, x1: f64) {
    let n = cov.len() as f64;
    let (x0, x1) = (x0.max(0.0), x1.min(n));
    if x1 <= x0 {
        return;
    }
    let mut k = x0.floor() as usize;
    while k < cov.len() && (k as f64) < x1 {
        let lo = (k as f64).max(x0);
        let hi = ((k + 1) as f64).min(x1);
        cov[k] += (hi - lo).max(0.0);
        k += 1;
    }
}

/// Milliseconds from microseconds, compactly: `0.4 ms`, `12 ms`.
pub fn ms(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// Seconds, compactly: `0.35s`, `4.2s`, `12s`, `2m05s`.
pub fn secs(us: i64) -> String {
    let s = us as f64 / 1e6;
    if s.abs() < 1.0 {
        format!("{s:.2}s")
    } else if s.abs() < 10.0 {
        format!("{s:.1}s")
    } else if s.abs() < 120.0 {
        format!("{s:.0}s")
    } else {
        let s = s.round() as i64;
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// A tick label: `0s`, `0.5s`, `12s`, `2m`, `2m30s`.
pub fn axis_label(t_us: u64) -> String {
    if !t_us.is_multiple_of(1_000_000) {
        format!("{:.1}s", t_us as f64 / 1e6)
    } else if t_us < 120_000_000 {
        format!("{}s", t_us / 1_000_000)
    } else if t_us.is_multiple_of(60_000_000) {
        format!("{}m", t_us / 60_000_000)
    } else {
        format!("{}m{:02}s", t_us / 60_000_000, t_us / 1_000_000 % 60)
    }
}

/// A tick step (µs) that puts ticks at least `min_cols` apart.
pub fn tick_step(span_us: u64, cells: usize, min_cols: usize) -> u64 {
    const STEPS_MS: [u64; 16] = [
        100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
        900_000, 1_800_000, 3_600_000,
    ];
    let us_per_col = span_us as f64 / cells.max(1) as f64;
    STEPS_MS
        .iter()
        .map(|ms| ms * 1_000)
        .find(|&step| step as f64 / us_per_col >= min_cols as f64)
        .unwrap_or(3_600_000_000)
}

/// Draws the frame: worker rows, the readers row, the axis, the leader kill, a legend.
pub fn render(f: &Frame) -> Vec<String> {
    let model = f.model;
    let label_w = model
        .workers
        .iter()
        .map(|w| w.label.len())
        .max()
        .unwrap_or(2)
        .max(2)
        + 2;
    let width = f.width.max(label_w + 20);
    let cells = width - label_w - 1;
    let span = f.span_us.max(1) as f64;
    let x = |t: u64| (t as f64 - f.t0 as f64) / span * cells as f64;
    // Cells at or after `limit` are in the future.
    let limit = match f.now {
        Some(now) => x(now).ceil().clamp(0.0, cells as f64) as usize,
        None => cells,
    };
    let marker_cols: Vec<(usize, &Marker)> = f
        .markers
        .iter()
        .map(|m| (x(m.t).floor(), m))
        .filter(|&(c, _)| c >= 0.0 && c < cells as f64)
        .map(|(c, m)| (c as usize, m))
        .collect();
    let mut lines = Vec::new();

    // Header: time and counts.
    let mut header = Styled::default();
    let elapsed = f.now.unwrap_or(f.t0 + f.span_us).saturating_sub(f.t0) as i64;
    let grants = |mode: Mode| model.holds.iter().filter(|h| h.mode == mode).count();
    let mut head = format!(
        "{:>width$}{} / {}   grants {} ({})",
        "",
        secs(elapsed),
        secs(f.span_us as i64),
        model.holds.len(),
        match model.permits {
            Some(n) => format!("{n} permits"),
            None => format!("write {}, read {}", grants(Mode::Write), grants(Mode::Read)),
        },
        width = label_w
    );
    if f.now.is_some() {
        let holding: Vec<&str> = model
            .holds
            .iter()
            .filter(|h| h.ended == HoldEnd::Open)
            .map(|h| model.workers[h.worker].label.as_str())
            .collect();
        let waiting = model.waits.iter().filter(|w| w.ended == WaitEnd::Open).count();
        let _ = write!(
            head,
            "   holding: {}   waiting: {waiting}",
            if holding.is_empty() {
                "-".to_owned()
            } else {
                holding.join(" ")
            }
        );
    }
    header.text(Style::Plain, &head);
    lines.push(header.render(width - 1, f.color));

    for (w, worker) in model.workers.iter().enumerate() {
        let (mut hold, mut wait, mut off) = (vec![0.0; cells], vec![0.0; cells], vec![0.0; cells]);
        let mut cut_off = vec![0.0; cells];
        for s in model.suspensions.iter().filter(|s| s.worker == w) {
            spread(&mut cut_off, x(s.start), x(s.end));
        }
        for h in model.holds.iter().filter(|h| h.worker == w) {
            spread(&mut hold, x(h.start), x(h.end));
        }
        for wt in model.waits.iter().filter(|wt| wt.worker == w) {
            spread(&mut wait, x(wt.start), x(wt.end));
        }
        for s in model.offline.iter().filter(|s| s.worker == w) {
            spread(&mut off, x(s.start), x(s.end));
        }
        let (held_style, held_char) = match worker.mode {
            Mode::Write => (Style::Write, WRITE),
            Mode::Read => (Style::Read, READ),
        };
        let mut row: Vec<(Style, char)> = (0..cells)
            .map(|k| {
                if k >= limit {
                    return (Style::Plain, ' ');
                }
                let idle = (1.0 - hold[k] - wait[k]).max(0.0);
                if hold[k] > 0.0 && hold[k] >= wait[k] && hold[k] >= idle {
                    if cut_off[k] >= 0.5 {
                        (Style::Offline, SUSPENDED)
                    } else {
                        (held_style, held_char)
                    }
                } else if off[k] >= 0.5 {
                    (Style::Offline, OFFLINE)
                } else if wait[k] > 0.0 && wait[k] >= idle {
                    (Style::Wait, WAIT)
                } else if marker_cols.iter().any(|&(c, _)| c == k) {
                    (Style::Kill, KILL)
                } else {
                    (Style::Plain, ' ')
                }
            })
            .collect();
        for m in model.marks.iter().filter(|m| m.worker == w) {
            let k = x(m.t).floor();
            if k >= 0.0 && (k as usize) < cells {
                row[k as usize] = match m.kind {
                    MarkKind::Lost => (Style::Lost, LOST),
                    MarkKind::Error(_) => (Style::Error, ERROR),
                    MarkKind::SessionEnded(_) => (Style::Error, SESSION_ENDED),
                };
            }
        }
        let mut line = Styled::default();
        line.text(Style::Plain, &format!("{:<label_w$}", worker.label));
        line.0.extend(row);
        lines.push(line.render(width - 1, f.color));
    }

    // How many readers (or permit holders) held at once, per cell.
    if model.has_band() {
        let mut points: Vec<(u64, i32)> = Vec::new();
        for h in model.holds.iter().filter(|h| model.in_band(h)) {
            points.push((h.start, 1));
            points.push((h.end, -1));
        }
        points.sort_unstable();
        let mut most = vec![0i32; cells];
        let mut count = 0;
        let mut prev = 0u64;
        for (t, d) in points {
            if count > 0 && t > prev {
                let (a, b) = (x(prev).max(0.0), x(t).min(cells as f64));
                if b > a {
                    let (a, b) = (a.floor() as usize, (b.ceil() as usize).min(cells));
                    for m in &mut most[a..b] {
                        *m = (*m).max(count);
                    }
                }
            }
            count += d;
            prev = t;
        }
        let mut line = Styled::default();
        let band = if model.counts_permits() { "P#" } else { "R#" };
        line.text(Style::Dim, &format!("{band:<label_w$}"));
        for (k, m) in most.iter().enumerate() {
            let c = match m {
                _ if k >= limit => ' ',
                0 => ' ',
                1..=9 => char::from(b'0' + *m as u8),
                _ => '+',
            };
            line.push(Style::Dim, c);
        }
        lines.push(line.render(width - 1, f.color));
    }

    // Axis: ticks and labels.
    let step = tick_step(f.span_us, cells, 8);
    let mut axis = Styled::default();
    let mut labels = Styled::default();
    axis.text(Style::Plain, &" ".repeat(label_w));
    labels.text(Style::Plain, &" ".repeat(label_w));
    let mut tick_cols = Vec::new();
    let mut t = 0u64;
    while t <= f.span_us {
        let k = x(f.t0 + t).round() as usize;
        if k < cells {
            tick_cols.push((k, t));
        }
        t += step;
    }
    for k in 0..cells {
        let c = if tick_cols.iter().any(|&(c, _)| c == k) {
            '┬'
        } else {
            '─'
        };
        axis.push(Style::Dim, c);
    }
    for (k, t) in tick_cols {
        let col = label_w + k;
        let text = axis_label(t);
        if labels.len() <= col && col + text.len() < width {
            while labels.len() < col {
                labels.push(Style::Plain, ' ');
            }
            labels.text(Style::Plain, &text);
        }
    }
    lines.push(axis.render(width - 1, f.color));
    lines.push(labels.render(width - 1, f.color));

    for &(k, marker) in &marker_cols {
        let text = &marker.label;
        let mut line = Styled::default();
        let col = label_w + k;
        if col + 2 + text.chars().count() < width {
            line.text(Style::Plain, &" ".repeat(col));
            line.push(Style::Kill, '▲');
            line.text(Style::Kill, &format!(" {text}"));
        } else {
            let text = format!("{text} ");
            let start = (col + 1).saturating_sub(text.chars().count() + 1);
            line.text(Style::Plain, &" ".repeat(start));
            line.text(Style::Kill, &text);
            line.push(Style::Kill, '▲');
        }
        lines.push(line.render(width - 1, f.color));
    }

    // The legend, on as many lines as it takes.
    let mut legend_lines: Vec<Styled> = Vec::new();
    let mut legend = Styled::default();
    legend.text(Style::Plain, &" ".repeat(label_w));
    let mut item = |style: Style, c: char, what: &str| {
        let text = format!(" {what}   ");
        if legend.len() > label_w && legend.len() + 1 + text.trim_end().chars().count() >= width {
            legend_lines.push(std::mem::take(&mut legend));
            legend.text(Style::Plain, &" ".repeat(label_w));
        }
        legend.push(style, c);
        legend.text(Style::Plain, &text);
    };
    if model.counts_permits() {
        item(Style::Write, WRITE, "permit hold");
    } else {
        item(Style::Write, WRITE, "write hold");
        item(Style::Read, READ, "read hold");
    }
    item(Style::Wait, WAIT, "waiting");
    if !model.offline.is_empty() {
        item(Style::Offline, OFFLINE, "disconnected");
    }
    if !model.suspensions.is_empty() {
        item(Style::Offline, SUSPENDED, "held, cut off (lease running)");
    }
    if model.marks.iter().any(|m| m.kind == MarkKind::Lost) {
        item(Style::Lost, LOST, "lost");
    }
    if model
        .marks
        .iter()
        .any(|m| matches!(m.kind, MarkKind::SessionEnded(_)))
    {
        item(Style::Error, SESSION_ENDED, "session expired");
    }
    if model.marks.iter().any(|m| matches!(m.kind, MarkKind::Error(_))) {
        item(Style::Error, ERROR, "error");
    }
    let mut legends: Vec<&str> = Vec::new();
    for (_, m) in &marker_cols {
        if !legends.contains(&m.legend) {
            legends.push(m.legend);
        }
    }
    for legend in legends {
        item(Style::Kill, KILL, legend);
    }
    if model.has_band() {
        let text = if model.counts_permits() {
            "P# holders at once"
        } else {
            "R# readers at once"
        };
        if legend.len() + text.len() >= width {
            legend_lines.push(std::mem::take(&mut legend));
            legend.text(Style::Plain, &" ".repeat(label_w));
        }
        legend.text(Style::Dim, text);
    }
    legend_lines.push(legend);
    for line in legend_lines {
        lines.push(line.render(width - 1, f.color));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::super::event::{Event, Kind};
    use super::super::verdict::Worker;
    use super::*;

    fn model() -> Model {
        let workers = vec![
            Worker {
                label: "W1".into(),
                mode: Mode::Write,
            },
            Worker {
                label: "R1".into(),
                mode: Mode::Read,
            },
        ];
        let ev = |worker, t_us, kind| Event { worker, t_us, kind };
        let grant = |token| Kind::Grant {
            token,
            node: "/l/n".into(),
            lease_us: 0,
            hold_us: 0,
        };
        let events = vec![
            ev(0, 1_000_000, Kind::Want),
            ev(0, 1_000_000, grant(1)),
            ev(0, 3_000_000, Kind::Release { lease_us: 0 }),
            ev(1, 2_000_000, Kind::Want),
            ev(1, 3_000_000, grant(2)),
            ev(1, 5_000_000, Kind::Release { lease_us: 0 }),
        ];
        Model::build(&workers, &events, 10_000_000)
    }

    #[test]
    fn rows_show_holds_and_waits() {
        let m = model();
        let lines = render(&Frame {
            model: &m,
            t0: 1_000_000,
            span_us: 10_000_000,
            now: None,
            markers: vec![Marker {
                t: 6_000_000,
                label: "leader killed".into(),
                legend: "leader killed",
            }],
            width: 4 + 20 + 1,
            color: false,
        });
        // 20 cells of 0.5 s each.
        assert_eq!(lines[1], "W1  ████      ┊");
        assert_eq!(lines[2], "R1    ··▒▒▒▒  ┊");
        assert_eq!(lines[3], "R#      1111");
        assert!(lines[4].starts_with("    ┬"), "{lines:?}");
        assert!(lines[5].starts_with("    0s"), "{lines:?}");
        assert!(lines[6].contains("▲"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("write hold")), "{lines:?}");
        for line in &lines {
            assert!(line.chars().count() < 25, "{line:?} is too wide");
        }
    }

    #[test]
    fn a_suspended_hold_and_its_lease_deadline() {
        let m = super::super::verdict::suspended_writer(10_000_000);
        let lines = render(&Frame {
            model: &m,
            t0: 0,
            span_us: 10_000_000,
            now: None,
            markers: vec![
                Marker {
                    t: 1_000_000,
                    label: "W1 cut off".into(),
                    legend: "cut/lease",
                },
                Marker {
                    t: 5_000_000,
                    label: "W1's lease deadline".into(),
                    legend: "cut/lease",
                },
            ],
            width: 4 + 20 + 1,
            color: false,
        });
        assert_eq!(lines[1], "W1  ████░░░░░░!", "{lines:?}");
        let text = lines.join("\n");
        assert!(
            text.contains("▲ W1 cut off") && text.contains("W1's lease deadline"),
            "{text}"
        );
        assert!(text.contains("░ held, cut off"), "{text}");
        assert_eq!(text.matches("┊ cut/lease").count(), 1, "{text}");
    }

    #[test]
    fn colours_only_when_asked() {
        let m = model();
        let mut f = Frame {
            model: &m,
            t0: 1_000_000,
            span_us: 10_000_000,
            now: Some(4_000_000),
            markers: Vec::new(),
            width: 60,
            color: true,
        };
        let coloured = render(&f).join("\n");
        assert!(coloured.contains("\x1b[31m█"));
        f.color = false;
        assert!(!render(&f).join("\n").contains('\x1b'));
    }

    #[test]
    fn ticks_and_seconds() {
        assert_eq!(tick_step(10_000_000, 90, 8), 1_000_000);
        assert_eq!(tick_step(3_000_000, 90, 8), 500_000);
        assert_eq!(tick_step(600_000_000, 90, 8), 60_000_000);
        assert_eq!(axis_label(0), "0s");
        assert_eq!(axis_label(500_000), "0.5s");
        assert_eq!(axis_label(180_000_000), "3m");
        assert_eq!(axis_label(150_000_000), "2m30s");
        assert_eq!(secs(350_000), "0.35s");
        assert_eq!(secs(4_250_000), "4.2s");
        assert_eq!(secs(12_000_000), "12s");
        assert_eq!(secs(125_000_000), "2m05s");
    }
}
