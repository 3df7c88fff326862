//! The one way the launcher reports an error: `hrr-capture: error: <what>: <why>`, then an
//! optional `hint: <what to do>` line, and an exit status.

use std::fmt::Display;
use std::io::Write;

/// Exit status: a failure of hrr-capture itself, before the program started.
pub const EXIT_FAILURE: u8 = 1;
/// Exit status: bad usage, including an `-o` that names the archive of an earlier run.
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the program was found but could not be executed (as a shell reports it).
pub const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit status: the program was not found (as a shell reports it).
pub const EXIT_NOT_FOUND: u8 = 127;

/// An error of the launcher, ready to print.
#[derive(Debug)]
pub struct Fail {
    /// Exit status.
    pub code: u8,
    /// `<what>: <why>`, on one line.
    pub message: String,
    /// What the user can do about it.
    pub hint: Option<String>,
}

impl Fail {
    /// `what: why` with exit status `code`.
    pub fn new(code: u8, what: impl Display, why: impl Display) -> Self {
        Fail {
            code,
            message: format!("{what}: {why}"),
            hint: None,
        }
    }

    /// Adds a `hint:` line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Prints the error (and the hint) on stderr.
    pub fn print(&self) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "hrr-capture: error: {}", one_line(&self.message));
        if let Some(h) = &self.hint {
            let _ = writeln!(err, "hint: {}", one_line(h));
        }
    }
}

fn one_line(s: &str) -> String {
    s.trim_end().replace('\n', " ")
}

/// An OS error without the `(os error N)` suffix that `io::Error` appends.
pub fn why(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_lose_their_number_suffix() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(why(&e), "No such file or directory");
        let e = std::io::Error::other("plain");
        assert_eq!(why(&e), "plain");
    }

    #[test]
    fn messages_are_one_line() {
        let f = Fail::new(EXIT_USAGE, "run.hrr", "two\nlines").hint("do this");
        assert_eq!(one_line(&f.message), "run.hrr: two lines");
        assert_eq!(f.hint.as_deref(), Some("do this"));
    }
}
