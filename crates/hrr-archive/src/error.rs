//! The error type of the archive library: every variant says which file, and where in it, went wrong.

use std::path::PathBuf;

/// Errors reading or writing an archive.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error on a path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The path does not exist.
    #[error("{}: no such file or directory", .0.display())]
    Missing(PathBuf),
    /// A path inside the archive is a symbolic link (never followed).
    #[error("{}: is a symbolic link; archives never follow links", .0.display())]
    Symlink(PathBuf),
    /// A path that must be a directory is not one.
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// A path that must be a regular file is not one.
    #[error("{}: not a regular file", .0.display())]
    NotAFile(PathBuf),
    /// A process folder whose name writes its pid non-canonically (`pid-02674`).
    #[error("{}: not a canonical process folder name ({why}); a process capture is `pid-<pid>` with the pid in plain decimal", path.display())]
    NonCanonicalPid {
        /// The folder.
        path: PathBuf,
        /// What is wrong with the name.
        why: String,
    },
    /// An `active` marker that is not what a writer writes (`<pid>\n`).
    #[error("{}: not a writer's `active` marker ({why}); hrr writes `<pid>` and a newline there, so this capture was altered: inspect it, and remove the file only if no capture is running", path.display())]
    BadMarker {
        /// The marker.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A blob or code object whose size differs from what the event that uses it recorded.
    #[error("{}: holds {found} bytes but the event that uses it recorded {expected} (truncated or altered object)", path.display())]
    SizeMismatch {
        /// The object file.
        path: PathBuf,
        /// Bytes the event recorded.
        expected: u64,
        /// Bytes in the file.
        found: u64,
    },
    /// The path is neither an archive root nor a process capture.
    #[error("{}: not an hrr archive (no manifest.json, events.bin or pid-*/ inside)", .0.display())]
    NotAnArchive(PathBuf),
    /// events.bin is shorter than its 8-byte header.
    #[error("{}: too short ({len} bytes; missing the 8-byte file header)", path.display())]
    TooShort {
        /// events.bin
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// events.bin does not start with the magic number.
    #[error("Bad magic 0x{found:08x} in {} (expected 0x{expected:08x})", path.display())]
    BadMagic {
        /// events.bin
        path: PathBuf,
        /// What was read.
        found: u32,
        /// `MAGIC`.
        expected: u32,
    },
    /// The file format version is not the one this library reads.
    #[error("Version mismatch in {}: file={file} reader={reader}", path.display())]
    VersionMismatch {
        /// events.bin
        path: PathBuf,
        /// The version in the file.
        file: u16,
        /// `FORMAT_VERSION`.
        reader: u16,
    },
    /// The schema record is missing or malformed.
    #[error("{}: bad schema record: {reason}", path.display())]
    BadSchema {
        /// events.bin
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A manifest could not be parsed.
    #[error("{}: invalid manifest: {source}", path.display())]
    BadManifest {
        /// manifest.json
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// An event payload does not match its schema entry.
    #[error("event seq {seq} ({call}): {reason}")]
    BadPayload {
        /// Sequence number of the event.
        seq: u64,
        /// Call name.
        call: String,
        /// What is wrong.
        reason: String,
    },
    /// A record or value is too large for the format.
    #[error("{what} is too large ({size} bytes, limit {limit})")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attach a path to an `io::Error`.
pub(crate) trait IoContext<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|source| {
            let path = path.into();
            if source.kind() == std::io::ErrorKind::NotFound {
                Error::Missing(path)
            } else if source.raw_os_error() == Some(libc::ELOOP) {
                Error::Symlink(path)
            } else {
                Error::Io { path, source }
            }
        })
    }
}
