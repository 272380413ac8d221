//! The terminal: the live timeline's redraws.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

/// The terminal: live redraws when it is one.
pub(super) struct Screen {
    pub(super) live: bool,
    pub(super) color: bool,
    fixed_width: Option<usize>,
    drawn: usize,
    cursor_hidden: bool,
}

impl Screen {
    pub(super) fn new() -> Screen {
        let tty = std::io::stdout().is_terminal();
        let fixed_width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok());
        Screen {
            live: tty,
            color: tty && std::env::var_os("NO_COLOR").is_none(),
            fixed_width,
            drawn: 0,
            cursor_hidden: false,
        }
    }

    /// Width and height of the terminal, if stdout is one.
    pub(super) fn size(&self) -> (usize, Option<usize>) {
        let term = if self.live { terminal_size() } else { None };
        let width = self.fixed_width.or(term.map(|t| t.0)).unwrap_or(100);
        (width.clamp(40, 400), term.map(|t| t.1))
    }

    /// Draws `lines` over the previous frame.
    pub(super) fn draw(&mut self, lines: &[String]) {
        let mut out = String::new();
        if self.drawn > 0 {
            let _ = write!(out, "\x1b[{}A\r", self.drawn);
        } else if self.live && !self.cursor_hidden {
            out.push_str("\x1b[?25l");
            self.cursor_hidden = true;
        }
        for line in lines {
            if self.live {
                out.push_str("\x1b[2K");
            }
            out.push_str(line);
            out.push('\n');
        }
        if self.live && lines.len() < self.drawn {
            out.push_str("\x1b[J");
        }
        self.drawn = if self.live { lines.len() } else { 0 };
        print_now(&out);
    }

    /// Stops redrawing: what was drawn stays.
    pub(super) fn finish(&mut self) {
        self.drawn = 0;
        if self.cursor_hidden {
            print_now("\x1b[?25h");
            self.cursor_hidden = false;
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.finish();
    }
}

pub(super) fn print_now(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// Columns and rows of the terminal on stdout.
fn terminal_size() -> Option<(usize, usize)> {
    let ws = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (ws.ws_col > 0).then_some((usize::from(ws.ws_col), usize::from(ws.ws_row)))
}
