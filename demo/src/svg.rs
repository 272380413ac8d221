//! The timeline as a standalone SVG document, written by hand.

use std::fmt::Write as _;

use zk_rwlock::Mode;

use super::timeline::{tick_step, Marker};
use super::verdict::{HoldEnd, MarkKind, Model};

/// What to draw.
#[derive(Debug, Clone)]
pub struct Picture<'a> {
    /// The intervals.
    pub model: &'a Model,
    /// Time 0 of the axis (µs, `CLOCK_MONOTONIC`).
    pub t0: u64,
    /// Length of the axis (µs).
    pub span_us: u64,
    /// Marked moments (the leader kill, a partition, a lease deadline), in time order.
    pub markers: Vec<Marker>,
    /// First line of the heading.
    pub title: String,
    /// Second line of the heading (the verdict).
    pub subtitle: String,
    /// Whether the verdict is OK (colours the subtitle).
    pub ok: bool,
}

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 76.0;
const ROW: f64 = 22.0;
const BAND: f64 = 44.0;

const WRITE_FILL: &str = "#d32f2f";
const READ_FILL: &str = "#43a047";
const WAIT_FILL: &str = "#9e9e9e";
const OFFLINE_FILL: &str = "#fbc02d";
const KILL_STROKE: &str = "#8e24aa";
const SUSPENDED_FILL: &str = "#ffb300";
const LEASE_STROKE: &str = "#e65100";

/// Escapes text for XML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn seconds(us: i64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

/// The SVG document.
pub fn render(p: &Picture) -> String {
    let model = p.model;
    let plot_w = WIDTH - LEFT - RIGHT;
    let span = p.span_us.max(1) as f64;
    let x = |t: u64| LEFT + ((t as f64 - p.t0 as f64) / span * plot_w).clamp(0.0, plot_w);
    let rel = |t: u64| t as i64 - p.t0 as i64;
    let rows = model.workers.len() as f64;
    let has_readers = model.has_band();
    // Room above the rows for one label per marker.
    let top = TOP + 13.0 * p.markers.len().saturating_sub(1) as f64;
    let band_top = top + rows * ROW + 8.0;
    let axis_y = band_top + if has_readers { BAND + 8.0 } else { 0.0 };
    let legend_y = axis_y + 40.0;
    let row_mid = |w: usize| top + w as f64 * ROW + ROW / 2.0;

    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="HEIGHT" viewBox="0 0 {WIDTH} HEIGHT" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        escape(&p.title)
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="44" fill="{}">{}</text>"#,
        if p.ok { "#2e7d32" } else { "#c62828" },
        escape(&p.subtitle)
    );

    // Row stripes and labels.
    let _ = writeln!(s, r#"<g id="rows">"#);
    for (w, worker) in model.workers.iter().enumerate() {
        let y = top + w as f64 * ROW;
        if w % 2 == 0 {
            let _ = writeln!(
                s,
                r##"<rect x="{LEFT}" y="{y:.1}" width="{plot_w:.1}" height="{ROW}" fill="#f4f4f4"/>"##
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            row_mid(w) + 4.0,
            escape(&worker.label)
        );
    }
    let _ = writeln!(s, "</g>");

    // Disconnections, waits, holds.
    let _ = writeln!(s, r#"<g id="offline" fill="{OFFLINE_FILL}" fill-opacity="0.45">"#);
    for o in &model.offline {
        let (x0, x1) = (x(o.start), x(o.end));
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="18"><title>{} disconnected {} to {}</title></rect>"#,
            row_mid(o.worker) - 9.0,
            (x1 - x0).max(0.5),
            escape(&model.workers[o.worker].label),
            seconds(rel(o.start)),
            seconds(rel(o.end)),
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g id="waits" fill="{WAIT_FILL}">"#);
    for wt in &model.waits {
        let (x0, x1) = (x(wt.start), x(wt.end));
        if x1 - x0 < 0.05 {
            continue;
        }
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="3"/>"#,
            row_mid(wt.worker) - 1.5,
            x1 - x0,
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r#"<g id="holds">"#);
    for h in &model.holds {
        let (x0, x1) = (x(h.start), x(h.end));
        let fill = match h.mode {
            Mode::Write => WRITE_FILL,
            Mode::Read => READ_FILL,
        };
        let how = match h.ended {
            HoldEnd::Released => "",
            HoldEnd::Lost => " (lost)",
            HoldEnd::Exited => " (its process exited holding it)",
            HoldEnd::Open => " (never released)",
        };
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="14" fill="{fill}"><title>{} {} {} to {}, token 0x{:x}{how}
{}</title></rect>"#,
            row_mid(h.worker) - 7.0,
            (x1 - x0).max(0.6),
            escape(&model.workers[h.worker].label),
            match h.mode {
                _ if model.counts_permits() => "permit",
                Mode::Write => "write",
                Mode::Read => "read",
            },
            seconds(rel(h.start)),
            seconds(rel(h.end)),
            h.token,
            escape(&h.node),
        );
    }
    let _ = writeln!(s, "</g>");
    // Holds without a connection: the work stopped, the lease running out.
    let _ = writeln!(s, r#"<g id="suspended">"#);
    for sp in &model.suspensions {
        let (x0, x1) = (x(sp.start), x(sp.end));
        let who = escape(&model.workers[sp.worker].label);
        let _ = writeln!(
            s,
            r##"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="14" fill="{SUSPENDED_FILL}" stroke="#6d4c41" stroke-width="0.5" stroke-dasharray="2,2"><title>{who} suspended {} to {}: connection lost, work stopped; lease deadline {}{}</title></rect>"##,
            row_mid(sp.worker) - 7.0,
            (x1 - x0).max(0.6),
            seconds(rel(sp.start)),
            seconds(rel(sp.end)),
            seconds(rel(sp.lease)),
            if sp.resumed { "; resumed" } else { "" },
        );
        let lx = x(sp.lease);
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.2}" y1="{:.1}" x2="{lx:.2}" y2="{:.1}" stroke="{LEASE_STROKE}" stroke-width="2"><title>{who}'s lease deadline {}: no one else can be granted the lock before it</title></line>"#,
            row_mid(sp.worker) - 10.0,
            row_mid(sp.worker) + 10.0,
            seconds(rel(sp.lease)),
        );
    }
    let _ = writeln!(s, "</g>");
    for m in &model.marks {
        let (glyph, fill, what) = match &m.kind {
            MarkKind::Lost => ("!", "#ef6c00", "lost the lock".to_owned()),
            MarkKind::Error(msg) => ("✗", "#c62828", msg.clone()),
            MarkKind::SessionEnded(state) => ("✗", "#c62828", format!("session {state}")),
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.2}" y="{:.1}" fill="{fill}" font-weight="bold" text-anchor="middle">{glyph}<title>{}: {}</title></text>"#,
            x(m.t),
            row_mid(m.worker) + 4.0,
            escape(&model.workers[m.worker].label),
            escape(&what)
        );
    }

    // Readers (or permit holders) holding at once: a step line.
    if has_readers {
        let mut points: Vec<(u64, i32)> = Vec::new();
        for h in model.holds.iter().filter(|h| model.in_band(h)) {
            points.push((h.start, 1));
            points.push((h.end, -1));
        }
        points.sort_unstable();
        let max = model.max_in_band().max(1) as f64;
        let base = band_top + BAND;
        let y = |n: i32| base - n as f64 / max * (BAND - 6.0);
        let mut path = format!("M{LEFT:.2},{base:.1}");
        let mut count = 0;
        for (t, d) in points {
            let _ = write!(path, " H{:.2}", x(t));
            count += d;
            let _ = write!(path, " V{:.1}", y(count));
        }
        let _ = write!(path, " H{:.2} V{base:.1} Z", LEFT + plot_w);
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{band_top:.1}" width="{plot_w:.1}" height="{BAND}" fill="#fafafa" stroke="#e0e0e0"/>"##
        );
        let _ = writeln!(
            s,
            r#"<path d="{path}" fill="{READ_FILL}" fill-opacity="0.35" stroke="{READ_FILL}" stroke-width="1"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text>"#,
            LEFT - 8.0,
            band_top + BAND / 2.0,
            if model.counts_permits() {
                "holders"
            } else {
                "readers"
            }
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">at once</text>"#,
            LEFT - 8.0,
            band_top + BAND / 2.0 + 12.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#616161">max {}</text>"##,
            LEFT + 4.0,
            band_top + 11.0,
            model.max_in_band()
        );
    }

    // Axis.
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#424242"/>"##,
        LEFT + plot_w
    );
    let step = tick_step(p.span_us, plot_w as usize, 80);
    let mut t = 0u64;
    while t <= p.span_us {
        let tx = x(p.t0 + t);
        let _ = writeln!(
            s,
            r##"<line x1="{tx:.2}" y1="{:.1}" x2="{tx:.2}" y2="{:.1}" stroke="#424242"/><line x1="{tx:.2}" y1="{top}" x2="{tx:.2}" y2="{:.1}" stroke="#000" stroke-opacity="0.07"/>"##,
            axis_y,
            axis_y + 5.0,
            top + rows * ROW
        );
        let label = if t.is_multiple_of(1_000_000) {
            format!("{} s", t / 1_000_000)
        } else {
            format!("{:.1} s", t as f64 / 1e6)
        };
        let _ = writeln!(
            s,
            r#"<text x="{tx:.2}" y="{:.1}" text-anchor="middle">{label}</text>"#,
            axis_y + 18.0
        );
        t += step;
    }

    // Marked moments: the leader kill, a partition; labels stacked upwards.
    for (i, m) in p.markers.iter().enumerate() {
        let kx = x(m.t);
        let label_y = top - 4.0 - 13.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{kx:.2}" y1="{:.1}" x2="{kx:.2}" y2="{axis_y:.1}" stroke="{KILL_STROKE}" stroke-width="2" stroke-dasharray="5,3"/>"#,
            label_y - 8.0
        );
        let anchor = if kx > LEFT + plot_w * 0.7 { "end" } else { "start" };
        let dx = if anchor == "end" { -4.0 } else { 4.0 };
        let _ = writeln!(
            s,
            r#"<text x="{:.2}" y="{label_y:.1}" fill="{KILL_STROKE}" text-anchor="{anchor}">▼ {}</text>"#,
            kx + dx,
            escape(&m.label)
        );
    }

    // Legend.
    // Where the next legend entry goes; entries wrap to a new line.
    let mut at = (LEFT, legend_y);
    if model.counts_permits() {
        legend_item(&mut s, &mut at, Swatch::Bar(WRITE_FILL, 14.0), "permit hold");
    } else {
        legend_item(&mut s, &mut at, Swatch::Bar(WRITE_FILL, 14.0), "write hold");
        legend_item(&mut s, &mut at, Swatch::Bar(READ_FILL, 14.0), "read hold");
    }
    legend_item(&mut s, &mut at, Swatch::Bar(WAIT_FILL, 3.0), "waiting");
    if !model.offline.is_empty() {
        legend_item(&mut s, &mut at, Swatch::Bar(OFFLINE_FILL, 14.0), "disconnected");
    }
    if !model.suspensions.is_empty() {
        legend_item(
            &mut s,
            &mut at,
            Swatch::Bar(SUSPENDED_FILL, 14.0),
            "suspended (cut off, lease running)",
        );
        legend_item(&mut s, &mut at, Swatch::Lease, "lease deadline");
    }
    let mut legends: Vec<&str> = Vec::new();
    for m in &p.markers {
        if !legends.contains(&m.legend) {
            legends.push(m.legend);
            legend_item(&mut s, &mut at, Swatch::Dashed, m.legend);
        }
    }
    if !model.marks.is_empty() {
        legend_item(&mut s, &mut at, Swatch::Marks, "lost / error");
    }
    let _ = writeln!(s, "</svg>");
    // The height is known once the legend is drawn.
    let height = format!("{:.0}", at.1 + 22.0);
    s.replacen("HEIGHT", &height, 2)
}

/// What a legend entry shows.
enum Swatch {
    Bar(&'static str, f64),
    Dashed,
    Lease,
    Marks,
}

/// Writes one legend entry at `*at` (on the next line if it does not fit)
/// and moves `*at` past it.
fn legend_item(s: &mut String, at: &mut (f64, f64), swatch: Swatch, what: &str) {
    let width = 22.0 + what.chars().count() as f64 * 7.5 + 18.0;
    if at.0 > LEFT && at.0 + width - 18.0 > WIDTH - RIGHT {
        *at = (LEFT, at.1 + 22.0);
    }
    let (x, y) = *at;
    let _ = match swatch {
        Swatch::Bar(fill, h) => writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="16" height="{h}" fill="{fill}"/>"#,
            y - h / 2.0
        ),
        Swatch::Dashed => writeln!(
            s,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{KILL_STROKE}" stroke-width="2" stroke-dasharray="5,3"/>"#,
            x + 8.0,
            y - 8.0,
            x + 8.0,
            y + 8.0
        ),
        Swatch::Lease => writeln!(
            s,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{LEASE_STROKE}" stroke-width="2"/>"#,
            x + 8.0,
            y - 8.0,
            x + 8.0,
            y + 8.0
        ),
        Swatch::Marks => writeln!(
            s,
            r##"<text x="{x:.1}" y="{:.1}" fill="#c62828" font-weight="bold">!✗</text>"##,
            y + 4.0
        ),
    };
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
        x + 22.0,
        y + 4.0,
        escape(what)
    );
    at.0 += width;
}

#[cfg(test)]
mod tests {
    use super::super::event::{Event, Kind};
    use super::super::verdict::Worker;
    use super::*;

    #[test]
    fn document_has_rows_bars_axis_and_marker() {
        let workers = vec![
            Worker {
                label: "W1".into(),
                mode: Mode::Write,
            },
            Worker {
                label: "R<1>".into(),
                mode: Mode::Read,
            },
        ];
        let ev = |worker, t_us, kind| Event { worker, t_us, kind };
        let events = vec![
            ev(0, 100, Kind::Want),
            ev(
                0,
                200,
                Kind::Grant {
                    token: 255,
                    node: "/l/a&b".into(),
                    lease_us: 4_000_200,
                    hold_us: 100,
                },
            ),
            ev(0, 1_500_000, Kind::Release { lease_us: 0 }),
        ];
        let model = Model::build(&workers, &events, 3_000_000);
        let svg = render(&Picture {
            model: &model,
            t0: 0,
            span_us: 3_000_000,
            markers: vec![Marker {
                t: 1_000_000,
                label: "leader killed at 1 s".into(),
                legend: "leader killed",
            }],
            title: "demo".into(),
            subtitle: "verdict: OK".into(),
            ok: true,
        });
        assert!(svg.starts_with("<?xml"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("R&lt;1&gt;"));
        assert!(svg.contains("/l/a&amp;b"));
        assert!(svg.contains("token 0xff"));
        assert!(svg.contains(WRITE_FILL));
        assert!(svg.contains(">0 s<") && svg.contains(">3 s<"), "{svg}");
        assert!(svg.contains("stroke-dasharray"));
        assert!(!svg.contains("NaN"));
        assert!(svg.contains(r#"height="242""#), "one legend line: {svg}");
    }

    #[test]
    fn a_suspension_and_its_lease_deadline() {
        let model = super::super::verdict::suspended_writer(10_000_000);
        let marker = |t, label: &str| Marker {
            t,
            label: label.into(),
            legend: "cut off / lease deadline",
        };
        let svg = render(&Picture {
            model: &model,
            t0: 0,
            span_us: 10_000_000,
            markers: vec![
                marker(1_000_000, "W1 cut off"),
                marker(5_000_000, "W1's lease deadline"),
            ],
            title: "demo".into(),
            subtitle: "verdict: OK".into(),
            ok: true,
        });
        assert!(svg.contains("W1 suspended 2.000 s to 5.000 s"), "{svg}");
        assert!(svg.contains("W1's lease deadline 5.000 s"), "{svg}");
        assert!(
            svg.contains("▼ W1 cut off") && svg.contains("▼ W1&apos;s lease deadline"),
            "{svg}"
        );
        assert_eq!(svg.matches(">cut off / lease deadline<").count(), 1, "{svg}");
        assert!(svg.contains("suspended (cut off, lease running)"));
    }
}
