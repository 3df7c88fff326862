//! Rendering helpers shared by the commands: aligned tables, byte sizes, times, and the
//! broken-pipe test that lets `hrr-playback ... | head` end quietly.

use std::io::{self, Write};

/// A left-aligned text table: every column is as wide as its widest cell (header included),
/// columns are separated by two spaces, the last column is never padded.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    indent: usize,
    max_width: Option<usize>,
}

impl Table {
    /// A table with these header words; the underline is one `-` per header character.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Indent every line by `n` spaces.
    pub fn indent(mut self, n: usize) -> Self {
        self.indent = n;
        self
    }

    /// Columns are never padded beyond `n` characters (a longer cell pushes its row only).
    pub fn max_width(mut self, n: usize) -> Self {
        self.max_width = Some(n);
        self
    }

    /// Add a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Write the header, its underline and the rows.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        if let Some(max) = self.max_width {
            for (i, w) in widths.iter_mut().enumerate() {
                *w = (*w).min(max.max(self.header[i].chars().count()));
            }
        }
        let underline: Vec<String> = self
            .header
            .iter()
            .map(|h| "-".repeat(h.chars().count()))
            .collect();
        self.line(out, &self.header, &widths)?;
        self.line(out, &underline, &widths)?;
        for row in &self.rows {
            self.line(out, row, &widths)?;
        }
        Ok(())
    }

    fn line(&self, out: &mut dyn Write, cells: &[String], widths: &[usize]) -> io::Result<()> {
        let mut s = " ".repeat(self.indent);
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(cell);
                let pad = widths[i].saturating_sub(cell.chars().count()) + 2;
                s.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", s.trim_end())
    }
}

/// `1234 bytes`, or `1.2 MiB (1234567 bytes)` from 1 KiB on.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {} ({n} bytes)", UNITS[unit])
}

/// Milliseconds with three decimals, from nanoseconds.
pub fn millis(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000, (ns / 1000) % 1000)
}

/// Signed milliseconds with three decimals and an explicit sign (`+1.250`, `-0.004`).
pub fn signed_millis(ns: i128) -> String {
    let sign = if ns < 0 { '-' } else { '+' };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1_000_000, (a / 1000) % 1000)
}

/// `YYYY-MM-DD HH:MM:SS.mmm UTC` of nanoseconds since the Unix epoch.
pub fn utc(ns: u64) -> String {
    let t = chrono::DateTime::from_timestamp_nanos(i64::try_from(ns).unwrap_or(i64::MAX));
    t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()
}

/// True when `err` (or anything it wraps) is a write to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_to_header_and_cells() {
        let mut t = Table::new(["PID", "Parent PID", "Path"]);
        t.row(["1180", "0", "a/pid-1180"]);
        t.row(["12345678", "1180", "a/pid-12345678"]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PID       Parent PID  Path\n\
             ---       ----------  ----\n\
             1180      0           a/pid-1180\n\
             12345678  1180        a/pid-12345678\n"
        );
    }

    #[test]
    fn sizes_and_times() {
        assert_eq!(bytes(12), "12 bytes");
        assert_eq!(bytes(1536), "1.5 KiB (1536 bytes)");
        assert_eq!(millis(1_234_567), "1.234");
        assert_eq!(signed_millis(-4_000), "-0.004");
        assert_eq!(signed_millis(1_250_000), "+1.250");
        assert_eq!(utc(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(
            utc(1_700_000_000_123_000_000),
            "2023-11-14 22:13:20.123 UTC"
        );
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29 00:00:00.000 UTC");
    }
}
