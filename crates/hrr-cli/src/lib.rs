//! Conventions shared by `hrr-playback` and `hrr-pack` (`hrr-capture` has its own copy in
//! `launcher/fail.rs`, because its library half must stay free of clap):
//!
//! - one error line, `hrr-<tool>: error: <what>: <why>`, each cause printed once, OS errors
//!   without their `(os error N)` suffix, no internal temp path; then an optional `hint:` line
//!   ([`report`], [`Hint`]);
//! - with `--json`, the same error as one object on stdout ([`ErrorJson`]);
//! - exit codes: 0 ok, 1 failure, 2 usage; a tool's special codes ride on the error ([`Exit`]);
//! - shell completions and man pages generated from the clap definitions ([`completions`],
//!   [`man_pages`]);
//! - `-` for stdin/stdout ([`stdin`], [`refuse_binary_to_terminal`]);
//! - `-q/--quiet` ([`quiet`]).

use std::fmt;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub mod gen;
pub mod json;

pub use gen::{completions, man_pages, Shell};

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: a failure (an error, or a check that did not pass).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status: bad usage (clap's own code for a parse error).
pub const EXIT_USAGE: u8 = 2;

/// A hint for the user, attached to an error as context:
/// `Err(e).context(Hint::new("run --repair"))`. It is printed on its own `hint:` line, never in
/// the error line.
#[derive(Debug, Clone)]
pub struct Hint(pub String);

impl Hint {
    /// A hint with this text.
    pub fn new(s: impl Into<String>) -> Self {
        Hint(s.into())
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(()) // never part of the error line
    }
}

/// A special exit status carried by an error as context (`hrr-pack`: 3 secrets found, 4
/// credentials; `hrr-playback`: 2 a root that needs a process chosen).
#[derive(Debug, Clone, Copy)]
pub struct Exit(pub u8);

impl fmt::Display for Exit {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

/// An error, ready to print: what `hrr-<tool>: error:` is followed by, and the hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// `<what>: <why>`, one line, each cause once.
    pub message: String,
    /// The `hint:` line, if any.
    pub hint: Option<String>,
    /// The exit status.
    pub code: u8,
}

/// The JSON error object a tool prints on stdout under `--json` when it fails (schema
/// `hrr.error/1`; see `docs/json.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorJson {
    /// `hrr.error/1`.
    pub schema: String,
    /// Always false.
    pub ok: bool,
    /// The error line without the `hrr-<tool>: error: ` prefix.
    pub error: String,
    /// The hint line without `hint: `, or null.
    pub hint: Option<String>,
    /// The exit status the tool ends with.
    pub exit_code: u8,
}

static ALIASES: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Error messages name `shown` wherever they would name `internal` (a temp copy of stdin, a
/// private unpack folder): the user sees the path they gave.
pub fn alias_path(internal: &Path, shown: &str) {
    let mut a = ALIASES.lock().unwrap_or_else(|p| p.into_inner());
    a.push((internal.display().to_string(), shown.to_string()));
    // longest first, so a folder's alias never cuts a longer one short
    a.sort_by_key(|(i, _)| std::cmp::Reverse(i.len()));
}

/// `s` with every aliased path replaced.
pub fn unalias(s: &str) -> String {
    let a = ALIASES.lock().unwrap_or_else(|p| p.into_inner());
    let mut s = s.to_string();
    for (internal, shown) in a.iter() {
        s = s.replace(internal.as_str(), shown);
    }
    s
}

/// Render an error chain: causes joined by `: `, a cause already said (or one that repeats the
/// text before it) said once, OS error numbers and internal temp names taken out.
pub fn render(err: &anyhow::Error) -> Rendered {
    let hint = err.downcast_ref::<Hint>().map(|h| h.0.clone());
    let code = err.downcast_ref::<Exit>().map_or(EXIT_FAILURE, |e| e.0);
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let s = clean(&cause.to_string());
        if s.is_empty() {
            continue;
        }
        let said = parts.join(": ");
        if said.contains(&s) {
            continue;
        }
        // a cause that repeats its context (`x.hrr` then `x.hrr: no such file`) replaces it
        while parts.last().is_some_and(|last| s.contains(last.as_str())) {
            parts.pop();
        }
        parts.push(s);
    }
    Rendered {
        message: one_line(&parts.join(": ")),
        hint: hint.map(|h| one_line(&unalias(&h))),
        code,
    }
}

/// Print `hrr-<tool>: error: …` (and `hint: …`) on stderr; with `json`, the [`ErrorJson`] object
/// on stdout too. Returns the exit status.
pub fn report(tool: &str, err: &anyhow::Error, json: bool) -> u8 {
    let r = render(err);
    print_rendered(tool, &r, json);
    r.code
}

/// Print an already rendered error (see [`report`]).
pub fn print_rendered(tool: &str, r: &Rendered, json: bool) {
    {
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{tool}: error: {}", r.message);
        if let Some(h) = &r.hint {
            let _ = writeln!(e, "hint: {h}");
        }
    }
    if json {
        print_error_json(r);
    }
}

/// Print the [`ErrorJson`] object of `r` on stdout (one line).
pub fn print_error_json(r: &Rendered) {
    let v = ErrorJson {
        schema: "hrr.error/1".into(),
        ok: false,
        error: r.message.clone(),
        hint: r.hint.clone(),
        exit_code: r.code,
    };
    let mut o = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut o, &v);
    let _ = writeln!(o);
    let _ = o.flush();
}

/// A clap parse error: `--help`/`--version` print normally; a usage error prints clap's text on
/// stderr and, with `--json` on the command line, an [`ErrorJson`] on stdout. Returns the status.
pub fn clap_exit(tool: &str, e: &clap::Error) -> u8 {
    let _ = e.print();
    let code = e.exit_code().clamp(0, 255) as u8;
    if code != 0 && std::env::args_os().any(|a| a == "--json") {
        let text = e.to_string();
        let msg: Vec<&str> = text
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        let msg = msg.join(" ").trim_start_matches("error: ").to_string();
        print_error_json(&Rendered {
            message: msg,
            hint: Some(format!("{tool} --help lists the options")),
            code,
        });
    }
    code
}

fn one_line(s: &str) -> String {
    s.trim_end().replace('\n', " ")
}

/// One cause, cleaned: no `(os error N)`, no `at path "…"` (tempfile's), no internal temp
/// names, aliased paths shown as given.
fn clean(s: &str) -> String {
    let mut s = strip_os_error(s);
    if let Some(i) = s.find(" at path \"") {
        s.truncate(i);
    }
    s = strip_temp_names(&s);
    unalias(&s)
}

/// An OS error text without the `(os error N)` that `io::Error` appends, wherever it is.
pub fn strip_os_error(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" (os error ") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + " (os error ".len()..];
        match tail.find(')') {
            Some(j) if tail[..j].bytes().all(|b| b.is_ascii_digit()) => rest = &tail[j + 1..],
            _ => {
                out.push_str(" (os error ");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Internal temp names out of a message: `dir/.x.hrr.tar.zst.123.0.tmp` → `dir/x.hrr.tar.zst`
/// (the writer's temp file of `x.hrr.tar.zst`), `dir/.hrr-unpack-AbC123/…` → `dir/…`.
pub fn strip_temp_names(s: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for word in s.split(' ') {
        let mut comps: Vec<String> = Vec::new();
        for c in word.split('/') {
            if let Some(rest) = c.strip_prefix(".hrr-unpack-") {
                if !rest.is_empty() && rest.chars().all(|ch| ch.is_ascii_alphanumeric()) {
                    continue;
                }
            }
            comps.push(writer_temp_target(c).unwrap_or_else(|| c.to_string()));
        }
        out.push(comps.join("/"));
    }
    out.join(" ")
}

/// `.NAME.PID.N.tmp` → `NAME`.
fn writer_temp_target(c: &str) -> Option<String> {
    let inner = c.strip_prefix('.')?;
    let (inner, trail) = match inner.find(".tmp") {
        Some(i) => (&inner[..i], &inner[i + 4..]),
        None => return None,
    };
    let mut it = inner.rsplitn(3, '.');
    let n = it.next()?;
    let pid = it.next()?;
    let name = it.next()?;
    if n.is_empty() || pid.is_empty() || name.is_empty() {
        return None;
    }
    if !(n.bytes().all(|b| b.is_ascii_digit()) && pid.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some(format!("{name}{trail}"))
}

static QUIET: AtomicBool = AtomicBool::new(false);

/// Set by `-q/--quiet`: only errors (and the result a script asked for) are printed.
pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

/// `-q/--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Is this path argument `-` (stdin, or stdout for an output)?
pub fn is_dash(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Standard input, saved into a private temp file (`$TMPDIR`) so that tools that read a file
/// twice (index, then members) can read it; errors name it `-` (see [`alias_path`]). `suffix`
/// is the file name ending the readers look for (`.hrr.tar.zst`). The file goes when the
/// returned guard is dropped.
pub fn stdin(suffix: &str) -> anyhow::Result<(tempfile::TempPath, PathBuf)> {
    use anyhow::Context;
    if std::io::stdin().is_terminal() {
        return Err(anyhow::anyhow!("-: standard input is a terminal")).context(Hint::new(
            "pipe the data in (`cat run.hrr.tar.zst | …`), or name a file",
        ));
    }
    let mut f = tempfile::Builder::new()
        .prefix("hrr-stdin-")
        .suffix(suffix)
        .tempfile()
        .context("-: creating a temp file for standard input")?;
    std::io::copy(&mut std::io::stdin().lock(), f.as_file_mut()).context("-: reading")?;
    f.as_file_mut().flush().context("-: reading")?;
    let path = f.into_temp_path();
    let p = path.to_path_buf();
    alias_path(&p, "-");
    Ok((path, p))
}

/// A path argument where `-` stands for standard input: `path` is the file to read (standard
/// input saved by [`stdin`], kept as long as this lives), `shown` the path as the user gave it
/// (`-` for standard input), for messages and reports.
pub struct InputPath {
    /// The file to read.
    pub path: PathBuf,
    /// The path as given.
    pub shown: String,
    _stdin: Option<tempfile::TempPath>,
}

impl InputPath {
    /// `given` itself, or standard input saved to a temp file ending in `suffix` when `given`
    /// is `-`.
    pub fn new(given: &Path, suffix: &str) -> anyhow::Result<Self> {
        let (guard, path) = if is_dash(given) {
            let (guard, path) = stdin(suffix)?;
            (Some(guard), path)
        } else {
            (None, given.to_path_buf())
        };
        Ok(InputPath {
            shown: unalias(&path.display().to_string()),
            path,
            _stdin: guard,
        })
    }
}

/// Refuse to write binary data to a terminal (`-o -` on a tty).
pub fn refuse_binary_to_terminal(what: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    if std::io::stdout().is_terminal() {
        return Err(anyhow::anyhow!(
            "-o -: refusing to write {what} (binary) to a terminal"
        ))
        .context(Hint::new("redirect stdout to a file or a pipe (`-o - > run.hrr.tar.zst`, `-o - | ssh …`), or name a file"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::{anyhow, Context};

    #[test]
    fn each_cause_once() {
        let io = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(io).context("nosuch.hrr");
        assert_eq!(render(&e).message, "nosuch.hrr: No such file or directory");
        let e = anyhow!("incomplete frame")
            .context("x: damaged after `i`: incomplete frame")
            .context("unpacking x");
        assert_eq!(
            render(&e).message,
            "unpacking x: x: damaged after `i`: incomplete frame"
        );
        let e = anyhow!("x.hrr: no such file or directory").context("x.hrr");
        assert_eq!(render(&e).message, "x.hrr: no such file or directory");
    }

    #[test]
    fn hints_and_codes_ride_on_the_error() {
        let e = anyhow!("refused")
            .context(Hint::new("log in"))
            .context(Exit(4))
            .context("pushing r");
        let r = render(&e);
        assert_eq!(r.message, "pushing r: refused");
        assert_eq!(r.hint.as_deref(), Some("log in"));
        assert_eq!(r.code, 4);
        assert_eq!(render(&anyhow!("x")).code, 1);
    }

    #[test]
    fn os_numbers_and_temp_names_go() {
        assert_eq!(
            strip_os_error("a: Permission denied (os error 13): b"),
            "a: Permission denied: b"
        );
        assert_eq!(
            strip_temp_names("/nonexistent/dir/.x.hrr.tar.zst.23151.0.tmp: no such file"),
            "/nonexistent/dir/x.hrr.tar.zst: no such file"
        );
        assert_eq!(
            clean("/proc: No such file or directory (os error 2) at path \"/proc/.hrr-unpack-Bcc1tB\""),
            "/proc: No such file or directory"
        );
        assert_eq!(
            strip_temp_names("out/.hrr-unpack-6ZOtYi/run.hrr/pid-1: bad"),
            "out/run.hrr/pid-1: bad"
        );
        assert_eq!(strip_temp_names(".hidden.tmp x"), ".hidden.tmp x");
    }

    #[test]
    fn aliases() {
        alias_path(Path::new("/tmp/hrr-stdin-abc.hrr.tar.zst"), "-");
        assert_eq!(
            render(&anyhow!("/tmp/hrr-stdin-abc.hrr.tar.zst: damaged")).message,
            "-: damaged"
        );
    }

    #[test]
    fn error_json_round_trips() {
        let r = render(&anyhow!("x").context(Hint::new("h")));
        let v = ErrorJson {
            schema: "hrr.error/1".into(),
            ok: false,
            error: r.message,
            hint: r.hint,
            exit_code: r.code,
        };
        let s = serde_json::to_string(&v).unwrap();
        assert_eq!(serde_json::from_str::<ErrorJson>(&s).unwrap(), v);
        let _ = Context::context(Err::<(), _>(anyhow!("x")), "y");
    }
}
