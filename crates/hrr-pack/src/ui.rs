//! Output and progress for the binary: results on stdout (`--json`: one object), logs and
//! progress bars on stderr (bars only on a terminal), a closed pipe is a clean exit.

use std::io::{IsTerminal, Write};

use hrr_archive::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How to talk to the user.
pub struct Ui {
    /// `--json`.
    pub json: bool,
    bars: bool,
}

impl Ui {
    pub fn new(json: bool, no_progress: bool) -> Self {
        Ui {
            json,
            bars: !json && !no_progress && std::io::stderr().is_terminal(),
        }
    }

    /// A progress sink: an indicatif bar on a terminal, nothing otherwise.
    pub fn progress(&self) -> Bar {
        let bar = if self.bars {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{msg:>10} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            Some(b)
        } else {
            None
        };
        Bar(bar)
    }

    /// Print a result (stdout); a closed pipe ends the program quietly.
    pub fn out(&self, text: &str) {
        // a temp copy of standard input is shown as `-`
        let text = hrr_cli::unalias(text);
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            eprintln!(
                "hrr-pack: error: writing to stdout: {}",
                hrr_cli::strip_os_error(&e.to_string())
            );
            std::process::exit(1);
        }
    }

    /// A notice on stderr (`hrr-pack: <text>`), left out under `-q/--quiet` and `--json`.
    pub fn note(&self, text: &str) {
        if !hrr_cli::quiet() && !self.json {
            eprintln!("hrr-pack: {text}");
        }
    }

    /// Print a JSON value as one line.
    pub fn json(&self, v: &impl serde::Serialize) {
        let line = serde_json::to_string(v).expect("JSON types serialize");
        self.out(&format!("{line}\n"));
    }
}

/// An optional indicatif bar behind the library's progress trait.
pub struct Bar(Option<ProgressBar>);

impl Progress for Bar {
    fn start(&self, phase: &str, total: u64) {
        if let Some(b) = &self.0 {
            b.reset();
            b.set_length(total);
            b.set_position(0);
            b.set_message(phase.to_string());
        }
    }
    fn advance(&self, bytes: u64) {
        if let Some(b) = &self.0 {
            b.inc(bytes);
        }
    }
    fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// `1.5 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// MB/s (10^6) of `n` bytes in `secs`.
pub fn rate(n: u64, secs: f64) -> String {
    if secs <= 0.0 {
        return "-".into();
    }
    format!("{:.0} MB/s", n as f64 / 1e6 / secs)
}
