//! OCI registries: references, credentials, TLS and the distribution client (`oci-client`) for
//! `hrr-pack push`, `pull` and `list REF`. The artifact layout is in [`layout`] (FORMAT.md §11).

pub mod layout;
pub mod transfer;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

/// Exit code when the registry refuses the credentials (or asks for some and none were given).
pub const EXIT_AUTH: i32 = 4;

/// Connection flags shared by push, pull and list.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ConnectArgs {
    /// User name for the registry (with --password-stdin). Default: ~/.docker/config.json
    /// (or $DOCKER_CONFIG/config.json) `auths`.
    #[arg(long, requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the password (or token) from the first line of standard input.
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
    /// Allow plain HTTP to a registry that is not on loopback (loopback may always use it).
    #[arg(long)]
    pub insecure: bool,
    /// PEM file of extra CA certificates to trust (besides the system roots).
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
}

/// An error whose exit code is not 1.
#[derive(Debug)]
pub struct Coded(pub i32, pub String);

impl std::fmt::Display for Coded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}
impl std::error::Error for Coded {}

/// Whether `s` reads as a registry reference (`host[:port]/repo[:tag|@sha256:…]`) rather than
/// a path: it has a `/`, its first component names a host (has a `.` or `:`, or is
/// `localhost`), and it is not an existing path.
pub fn looks_like_reference(s: &str) -> bool {
    if Path::new(s).exists() || s.starts_with('/') || s.starts_with('.') {
        return false;
    }
    let Some((host, rest)) = s.split_once('/') else {
        return false;
    };
    !rest.is_empty() && (host.contains('.') || host.contains(':') || host == "localhost")
}

/// Parse `registry/repo:tag` or `registry/repo@sha256:…`.
pub fn parse_reference(s: &str) -> Result<Reference> {
    let r: Reference = s.parse().map_err(|e| {
        anyhow!(
            "`{s}` is not a registry reference (registry/repo:tag or registry/repo@sha256:…): {e}"
        )
    })?;
    if !s.contains('/') {
        bail!("`{s}`: name the registry (registry/repo:tag); there is no default registry");
    }
    Ok(r)
}

/// Host part of a registry (`127.0.0.1:5000` → `127.0.0.1`, `[::1]:5000` → `::1`).
fn host_of(registry: &str) -> &str {
    if let Some(rest) = registry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    registry.rsplit_once(':').map_or(registry, |(h, _)| h)
}

/// Whether the registry is on this machine's loopback interface.
pub fn is_loopback(registry: &str) -> bool {
    let host = host_of(registry);
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What an error about access names: the registry, the repository, and whose credentials were
/// offered (never the password).
#[derive(Debug, Clone)]
pub struct Access {
    /// host[:port].
    pub registry: String,
    /// The repository (`team/run`).
    pub repository: String,
    /// The user and where the credentials came from (`--username`, a docker config file);
    /// `None`: none were given.
    pub user: Option<(String, String)>,
}

/// Credentials: the flags, else the docker config's `auths` entry, else anonymous. The
/// password is never printed and never stored anywhere by hrr-pack. Also says whose they are
/// and where they came from.
fn credentials(
    args: &ConnectArgs,
    registry: &str,
) -> Result<(RegistryAuth, Option<(String, String)>)> {
    let (auth, source) = credentials_from(args, registry)?;
    let user = match (&auth, source) {
        (RegistryAuth::Basic(u, _), Some(src)) => Some((u.clone(), src)),
        _ => None,
    };
    Ok((auth, user))
}

fn credentials_from(args: &ConnectArgs, registry: &str) -> Result<(RegistryAuth, Option<String>)> {
    if let Some(user) = &args.username {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        let pass = line.trim_end_matches(['\n', '\r']).to_string();
        if pass.is_empty() {
            bail!("--password-stdin: standard input held no password");
        }
        return Ok((
            RegistryAuth::Basic(user.clone(), pass),
            Some("--username".into()),
        ));
    }
    let dir = match std::env::var_os("DOCKER_CONFIG") {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".docker"),
            None => return Ok((RegistryAuth::Anonymous, None)),
        },
    };
    let path = dir.join("config.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((RegistryAuth::Anonymous, None))
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let auths = v.get("auths").and_then(|a| a.as_object());
    let entry = auths.and_then(|a| {
        a.iter()
            .find(|(k, _)| {
                let k = k
                    .trim_start_matches("https://")
                    .trim_start_matches("http://");
                k.split('/').next() == Some(registry)
            })
            .map(|(_, e)| e)
    });
    let Some(entry) = entry else {
        return Ok((RegistryAuth::Anonymous, None));
    };
    let source = Some(path.display().to_string());
    if let Some(enc) = entry.get("auth").and_then(|a| a.as_str()) {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(enc.trim())
            .map_err(|_| anyhow!("{}: `auths.{registry}.auth` is not base64", path.display()))?;
        let raw = String::from_utf8(raw)
            .map_err(|_| anyhow!("{}: `auths.{registry}.auth` is not UTF-8", path.display()))?;
        let (u, p) = raw.split_once(':').ok_or_else(|| {
            anyhow!(
                "{}: `auths.{registry}.auth` is not user:password",
                path.display()
            )
        })?;
        return Ok((RegistryAuth::Basic(u.to_string(), p.to_string()), source));
    }
    match (
        entry.get("username").and_then(|u| u.as_str()),
        entry.get("password").and_then(|p| p.as_str()),
    ) {
        (Some(u), Some(p)) => Ok((RegistryAuth::Basic(u.into(), p.into()), source)),
        _ => Ok((RegistryAuth::Anonymous, None)),
    }
}

/// A connected, authenticated client for one reference.
pub struct Session {
    /// The client.
    pub client: Client,
    /// The reference it serves.
    pub reference: Reference,
    /// The credentials (never printed).
    pub auth: RegistryAuth,
    /// Registry, repository and user, for errors.
    pub access: Access,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// Single-threaded runtime driving the client.
    pub rt: tokio::runtime::Runtime,
}

fn build_client(args: &ConnectArgs, registry: &str, plain: bool) -> Result<Client> {
    let mut cfg = ClientConfig {
        protocol: if plain {
            ClientProtocol::HttpsExcept(vec![registry.to_string()])
        } else {
            ClientProtocol::Https
        },
        max_concurrent_upload: 1,
        max_concurrent_download: 1,
        user_agent: concat!("hrr-pack/", env!("CARGO_PKG_VERSION")),
        connect_timeout: Some(std::time::Duration::from_secs(30)),
        read_timeout: Some(std::time::Duration::from_secs(300)),
        ..Default::default()
    };
    if let Some(ca) = &args.ca_file {
        let data = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
        cfg.extra_root_certificates.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data,
        });
    }
    Client::try_from(cfg).map_err(|e| anyhow!("setting up the registry client: {e}"))
}

/// Whether an error is the registry refusing credentials (401/403).
pub fn is_auth_error(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => true,
        OciDistributionError::RequestError(r) => r
            .status()
            .is_some_and(|s| s.as_u16() == 401 || s.as_u16() == 403),
        OciDistributionError::ServerError { code, .. } => *code == 401 || *code == 403,
        _ => false,
    }
}

/// Map a client error to an anyhow error, with exit code [`EXIT_AUTH`] for refused (or
/// missing) credentials. Those name the repository and the user, not the URL of the request
/// that was refused (a probe blob the archive does not hold), and tell "none given" from
/// "refused".
pub fn oci_err(e: OciDistributionError, what: &str, access: &Access) -> anyhow::Error {
    if !is_auth_error(&e) {
        return anyhow!("{what}: {e}");
    }
    let Access {
        registry,
        repository,
        user,
    } = access;
    let (msg, hint) = match user {
        None => (
            format!("{what}: registry {registry} needs credentials for repository {repository}, and none were given"),
            format!("pass --username USER --password-stdin, or add an `auths` entry for {registry} to $DOCKER_CONFIG/config.json or ~/.docker/config.json (`docker login {registry}` writes one)"),
        ),
        Some((u, source)) => (
            format!("{what}: registry {registry} refused the credentials of user `{u}` (from {source}) for repository {repository}: wrong user name or password, or no access to this repository"),
            format!("check the user name and password for {registry}, and that `{u}` may access {repository}"),
        ),
    };
    anyhow::Error::new(Coded(EXIT_AUTH, msg)).context(hrr_cli::Hint::new(hint))
}

/// Full chain of an error as one line (reqwest hides the cause behind "error sending request").
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// The empty-JSON blob digest; a HEAD on it checks that the credentials work.
const PROBE_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

impl Session {
    /// Connect to the registry of `reference` for `op`: HTTPS first (system roots, plus
    /// `--ca-file`); plain HTTP only when that fails and the registry is on loopback or
    /// `--insecure` was given. The credentials are checked before anything is transferred.
    pub fn connect(args: &ConnectArgs, reference: &str, op: RegistryOperation) -> Result<Session> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let reference = parse_reference(reference)?;
        let registry = reference.resolve_registry().to_string();
        let (auth, user) = credentials(args, &registry)?;
        let access = Access {
            registry: registry.clone(),
            repository: reference.repository().to_string(),
            user,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the I/O runtime")?;
        let may_plain = is_loopback(&registry) || args.insecure;
        let try_one = |plain: bool| -> std::result::Result<Client, OciDistributionError> {
            let client = build_client(args, &registry, plain)
                .map_err(|e| OciDistributionError::GenericError(Some(format!("{e:#}"))))?;
            rt.block_on(async {
                client.auth(&reference, &auth, op).await?;
                client.blob_exists(&reference, PROBE_DIGEST).await?;
                Ok(client)
            })
        };
        let (client, scheme) = match try_one(false) {
            Ok(c) => (c, "https"),
            Err(e) if is_auth_error(&e) => return Err(oci_err(e, "connecting", &access)),
            Err(tls) => {
                let why = chain(&tls);
                if why.contains("certificate") {
                    bail!(
                        "connecting to https://{registry}: {why} (trust its CA with --ca-file PEM)"
                    );
                }
                if !may_plain {
                    bail!(
                        "connecting to https://{registry}: {} (plain HTTP is only tried for loopback registries or with --insecure)",
                        chain(&tls)
                    );
                }
                match try_one(true) {
                    Ok(c) => (c, "http"),
                    Err(e) if is_auth_error(&e) => return Err(oci_err(e, "connecting", &access)),
                    Err(e) => bail!(
                        "connecting to {registry}: over HTTPS: {}; over HTTP: {}",
                        chain(&tls),
                        chain(&e)
                    ),
                }
            }
        };
        Ok(Session {
            client,
            reference,
            auth,
            access,
            scheme,
            rt,
        })
    }

    /// What access errors name.
    pub fn access(&self) -> Access {
        self.access.clone()
    }
}

/// Print an error the way every command does (`hrr-pack: error: …`, `hint: …`, under `--json`
/// the error object on stdout); returns its exit code ([`Coded`] errors carry their own).
pub fn report(err: &anyhow::Error, json: bool) -> i32 {
    let mut r = hrr_cli::render(err);
    if let Some(c) = err.downcast_ref::<Coded>() {
        r.code = c.0.clamp(0, 255) as u8;
    }
    hrr_cli::print_rendered("hrr-pack", &r, json);
    r.code.into()
}

/// Print an error (see [`report`]) and give its code, for commands that return their own exit
/// code; `None` (nothing printed) when it carries no special code.
pub fn report_coded(err: &anyhow::Error, json: bool) -> Option<i32> {
    err.downcast_ref::<Coded>()?;
    Some(report(err, json))
}

/// A command's outcome, a registry error that carries its own code reported and turned into that
/// exit code (see [`report_coded`]); any other error is passed on.
pub fn coded(outcome: anyhow::Result<i32>, json: bool) -> anyhow::Result<i32> {
    outcome.or_else(|e| report_coded(&e, json).ok_or(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_loopback() {
        assert!(looks_like_reference("127.0.0.1:5000/hrr/demo:v1"));
        assert!(looks_like_reference("ghcr.io/org/run@sha256:abc"));
        assert!(looks_like_reference("localhost/x:1"));
        assert!(!looks_like_reference("run.hrr.tar.zst"));
        assert!(!looks_like_reference("dir/run.hrr"));
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("ghcr.io"));
        assert!(!is_loopback("10.0.0.1:5000"));
        let r = parse_reference("127.0.0.1:5000/hrr/demo:v1").unwrap();
        assert_eq!(r.resolve_registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "hrr/demo");
        assert_eq!(r.tag(), Some("v1"));
    }
}
