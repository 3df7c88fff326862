//! `hrr-pack push` / `pull` / `list REF` against a real registry: Debian's `docker-registry`
//! (distribution 2.8) started here on 127.0.0.1 with a config of its own: plain HTTP in one
//! variant, htpasswd auth + a self-signed certificate in the other. Each test stops its
//! registry by pid. Without the registry binary (or htpasswd/openssl for the TLS variant) the
//! tests say they are skipped.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use hrr_archive::ObjectId;

use hrr_archive::testkit::assert_contains;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/h200-axpy.hrr");

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_hrr-pack")
}

fn tmpdir(name: &str) -> PathBuf {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("registry-tests");
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(&format!("{name}-"))
        .tempdir_in(base)
        .unwrap()
        .keep()
}

/// A test that cannot run here: prints `SKIPPED: <why>` and records `<test>\t<why>` in
/// `$HRR_TEST_SKIP_LOG` when that is set (scripts/test.sh counts them at the end).
fn skipped(why: &str) {
    eprintln!("SKIPPED: {why}");
    if let Some(log) = std::env::var_os("HRR_TEST_SKIP_LOG") {
        let test = std::thread::current().name().unwrap_or("?").to_string();
        let line = format!("registry::{test}\t{}\n", why.lines().next().unwrap_or(""));
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let _ = f.write_all(line.as_bytes()); // one O_APPEND write: lines never interleave
        }
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

struct Registry {
    child: Child,
    port: u16,
    dir: PathBuf,
    ca: Option<PathBuf>,
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Stopped by its pid.
        stop_pid(self.child.id());
        let _ = self.child.wait();
    }
}

fn stop_pid(pid: u32) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
}

impl Registry {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    fn reference(&self, repo_tag: &str) -> String {
        format!("{}/{repo_tag}", self.host())
    }
    fn storage(&self) -> PathBuf {
        self.dir.join("data/docker/registry/v2/blobs/sha256")
    }
}

/// Start a registry; `None` (with a message) when it cannot be installed or started here.
fn start_registry(name: &str, secure: bool) -> Option<Registry> {
    let Some(exe) = which("docker-registry").or_else(|| which("registry")) else {
        skipped("docker-registry is not installed (apt-get install docker-registry)");
        return None;
    };
    let dir = tmpdir(name);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut extra = String::new();
    let mut ca = None;
    if secure {
        if which("openssl").is_none() || which("htpasswd").is_none() {
            skipped("openssl and htpasswd (apache2-utils) are needed for the TLS variant");
            return None;
        }
        // A throw-away CA, and a server certificate for 127.0.0.1 signed by it.
        std::fs::write(
            dir.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        let d = dir.display();
        for cmd in [
            format!("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=hrr-test-ca -keyout {d}/ca.key -out {d}/ca.pem"),
            format!("req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout {d}/key.pem -out {d}/leaf.csr"),
            format!("x509 -req -in {d}/leaf.csr -CA {d}/ca.pem -CAkey {d}/ca.key -CAcreateserial -days 2 -extfile {d}/ext.cnf -out {d}/cert.pem"),
        ] {
            let ok = Command::new("openssl")
                .args(cmd.split(' '))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok, "openssl {cmd} failed");
        }
        let out = Command::new("htpasswd")
            .args(["-Bbn", "hrr", "s3cret-Pa55"])
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::write(dir.join("htpasswd"), &out.stdout).unwrap();
        extra = format!(
            "  tls:\n    certificate: {d}/cert.pem\n    key: {d}/key.pem\nauth:\n  htpasswd:\n    realm: hrr-test\n    path: {d}/htpasswd\n",
            d = dir.display()
        );
        ca = Some(dir.join("ca.pem"));
    }
    let config = format!(
        "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}/data\nhttp:\n  addr: 127.0.0.1:{port}\n{extra}",
        dir.display()
    );
    std::fs::write(dir.join("config.yml"), config).unwrap();
    let log = std::fs::File::create(dir.join("registry.log")).unwrap();
    let child = match Command::new(exe)
        .arg("serve")
        .arg(dir.join("config.yml"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            skipped(&format!("docker-registry could not be started: {e}"));
            return None;
        }
    };
    let reg = Registry {
        child,
        port,
        dir,
        ca,
    };
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if t0.elapsed() > Duration::from_secs(20) {
            skipped(&format!(
                "docker-registry did not listen within 20 s\n{}",
                std::fs::read_to_string(reg.dir.join("registry.log")).unwrap_or_default()
            ));
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(reg)
}

fn run(args: &[&str], stdin: Option<&str>, env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args)
        .env_remove("DOCKER_CONFIG")
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    {
        let mut si = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            si.write_all(s.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn ok(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

/// `hrr-pack pull REFERENCE -o OUT`.
fn pull(reference: &str, out: &Path) -> Output {
    run(&["pull", reference, "-o", out.to_str().unwrap()], None, &[])
}

/// `hrr-pack --json push SRC REFERENCE`, which must succeed: its JSON.
fn push_json(src: &Path, reference: &str) -> serde_json::Value {
    ok(&run(
        &["--json", "push", src.to_str().unwrap(), reference],
        None,
        &[],
    ))
}

/// Every file below `dir`: relative path → content; folders as `None`.
fn tree(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
        let ft = e.file_type();
        assert!(
            ft.is_dir() || ft.is_file(),
            "{rel} is neither file nor folder"
        );
        m.insert(rel, ft.is_file().then(|| std::fs::read(e.path()).unwrap()));
    }
    m
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let t = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&t).unwrap();
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

struct Rng(u64);
impl Rng {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            v.extend_from_slice(&self.0.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// Add content-addressed blobs (incompressible) to the capture's store (`blobs/<2 hex>/<32
/// hex>.blob`; its manifest's counts are left as they were, so `verify` would object).
fn add_blobs(archive: &Path, rng: &mut Rng, sizes: &[usize]) {
    let pid = archive.join("pid-1696/blobs");
    for &n in sizes {
        let data = rng.bytes(n);
        let id = ObjectId::of(&data).to_hex();
        let d = pid.join(&id[..2]);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("{id}.blob")), data).unwrap();
    }
}

/// A copy of the example capture with `extra` more blobs (a mix of small and large).
fn capture(name: &str, seed: u64, sizes: &[usize]) -> PathBuf {
    let dir = tmpdir(name).join("run.hrr");
    copy_dir(Path::new(EXAMPLE), &dir);
    add_blobs(&dir, &mut Rng(seed), sizes);
    dir
}

fn first_capture_sizes() -> Vec<usize> {
    // Buffers and code objects of a small training step: a few large, many small.
    let mut v = vec![3 << 20, 2 << 20, 5 << 19, 1 << 20, 1 << 20, 512 << 10];
    v.extend(std::iter::repeat_n(64 << 10, 48));
    v.extend(std::iter::repeat_n(4 << 10, 40));
    v
}

#[test]
fn plain_http_push_pull_list_by_tag_and_digest() {
    let Some(reg) = start_registry("plain", false) else {
        return;
    };
    let src = capture("plain-src", 1, &first_capture_sizes());
    // A first push into an empty repository uploads everything and says so, and nothing else.
    let first = run(
        &[
            "push",
            src.to_str().unwrap(),
            &reg.reference("team/first:v0"),
        ],
        None,
        &[],
    );
    let said = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(first.status.success(), "{said}");
    assert!(
        said.contains("uploaded all of them") && !said.contains("already in the registry"),
        "{said}"
    );
    let r = reg.reference("team/run:v1");
    let push = push_json(&src, &r);
    assert_eq!(push["scheme"], "http");
    let typed: hrr_cli::json::PushJson = serde_json::from_value(push.clone()).unwrap();
    assert_eq!(typed.schema, "hrr.push/1");
    let digest = push["digest"].as_str().unwrap().to_string();
    assert!(digest.starts_with("sha256:"));

    // Pull by tag into a folder: the identical tree.
    let out = tmpdir("plain-out");
    let pulled = ok(&run(
        &["--json", "pull", &r, "-o", out.to_str().unwrap()],
        None,
        &[],
    ));
    let typed: hrr_cli::json::PullJson = serde_json::from_value(pulled).unwrap();
    assert_eq!(
        (typed.schema.as_str(), typed.digest.as_str()),
        ("hrr.pull/1", digest.as_str())
    );
    assert_eq!(tree(&src), tree(&out.join("run.hrr")));
    // Pulling again refuses to overwrite.
    let again = pull(&r, &out);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    // Pull by digest into a pack; it unpacks to the same tree.
    let by_digest = format!("{}/team/run@{digest}", reg.host());
    let out2 = tmpdir("plain-out2");
    let packf = out2.join("run.hrr.tar.zst");
    let pulled = pull(&by_digest, &packf);
    let said = String::from_utf8_lossy(&pulled.stdout).into_owned();
    assert!(pulled.status.success(), "{said}");
    // The digest is named once.
    assert_eq!(said.matches(&digest).count(), 1, "{said}");

    ok(&run(
        &[
            "unpack",
            packf.to_str().unwrap(),
            "-C",
            out2.to_str().unwrap(),
        ],
        None,
        &[],
    ));
    assert_eq!(tree(&src), tree(&out2.join("run.hrr")));

    // list REF from the annotations.
    let list = ok(&run(&["--json", "list", &by_digest], None, &[]));
    assert_eq!(list["source"], "registry");
    assert_eq!(list["root"], "run.hrr");
    assert_eq!(list["totals"]["events"], 140);
    assert_eq!(list["processes"][0]["pid"], 1696);
    // One count for the files of a pulled archive: verify of the folder and of the pack (pulled
    // with -o FILE.hrr.tar.zst), and list --files of the reference (it said 4 for the folder,
    // counting only objects, where the pack has 7).
    let ax = reg.reference("team/axpy:v1");
    ok(&run(&["push", EXAMPLE, &ax], None, &[]));
    let axd = tmpdir("plain-axpy");
    ok(&pull(&ax, &axd));
    let axp = axd.join("axpy.hrr.tar.zst");
    ok(&pull(&ax, &axp));
    let vd = ok(&run(
        &[
            "--json",
            "verify",
            axd.join("h200-axpy.hrr").to_str().unwrap(),
        ],
        None,
        &[],
    ));
    let vp = ok(&run(
        &["--json", "verify", axp.to_str().unwrap()],
        None,
        &[],
    ));
    let lf = ok(&run(&["--json", "list", &ax, "--files"], None, &[]));
    let n = lf["files"].as_array().unwrap().len();
    assert_eq!(
        (vd["files_checked"].as_u64(), vp["files_checked"].as_u64()),
        (Some(n as u64), Some(n as u64))
    );
    assert_eq!(vd["objects_checked"], vp["objects_checked"]);
    let list = ok(&run(&["--json", "list", &r, "--files"], None, &[]));
    assert_eq!(
        list["files"].as_array().unwrap().len(),
        tree(&src).values().filter(|v| v.is_some()).count()
    );

    // A pack can be pushed too, and pulls back to the same tree.
    let r2 = reg.reference("team/run:from-pack");
    ok(&run(&["push", packf.to_str().unwrap(), &r2], None, &[]));
    let out3 = tmpdir("plain-out3");
    ok(&pull(&r2, &out3));
    assert_eq!(tree(&src), tree(&out3.join("run.hrr")));

    // An archive root with a crashed child (`active` marker, an empty file): refused unless
    // forced, then the same tree back.
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.hrr");
    let r3 = reg.reference("team/demo:v1");
    let refused = run(&["push", demo, &r3], None, &[]);
    assert_eq!(refused.status.code(), Some(1));
    ok(&run(&["push", "--force", demo, &r3], None, &[]));
    let out4 = tmpdir("plain-out4");
    ok(&pull(&r3, &out4));
    assert_eq!(tree(Path::new(demo)), tree(&out4.join("demo.hrr")));

    // A tag that is not there: a clear error, exit 1.
    let missing = pull(&reg.reference("team/run:nope"), &out3);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn second_overlapping_push_uploads_only_what_is_new() {
    let Some(reg) = start_registry("dedup", false) else {
        return;
    };
    let a = capture("dedup-a", 7, &first_capture_sizes());
    // The second capture: every object of the first, a few new ones, a different manifest.
    let b = tmpdir("dedup-b").join("run.hrr");
    copy_dir(&a, &b);
    add_blobs(&b, &mut Rng(99), &[64 << 10, 64 << 10, 4 << 10]);
    let m = b.join("pid-1696/manifest.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    v["note"] = "second capture".into();
    std::fs::write(&m, serde_json::to_vec_pretty(&v).unwrap()).unwrap();

    let first = push_json(&a, &reg.reference("t/run:a"));
    let second = push_json(&b, &reg.reference("t/run:b"));
    let up1 = first["bytes_uploaded"].as_u64().unwrap();
    let up2 = second["bytes_uploaded"].as_u64().unwrap();
    let frac = up2 as f64 / up1 as f64;
    eprintln!(
        "dedup: first push uploaded {up1} bytes in {} blobs; second (3 new objects, new manifest) uploaded {up2} bytes in {} of {} blobs = {:.2}% of the first",
        first["blobs_uploaded"], second["blobs_uploaded"], second["blobs"], frac * 100.0
    );
    assert!(frac < 0.10, "second push re-uploaded {:.1}%", frac * 100.0);
    // Pushing the same archive again uploads nothing but what the registry lacks: nothing.
    let third = push_json(&b, &reg.reference("t/run:b2"));
    assert_eq!(third["blobs_uploaded"], 0);
    let again = run(
        &["push", b.to_str().unwrap(), &reg.reference("t/run:b3")],
        None,
        &[],
    );
    let said = String::from_utf8_lossy(&again.stdout).into_owned();
    assert_contains(
        &said,
        "nothing uploaded, every blob already in the registry",
    );
    let out = tmpdir("dedup-out");
    ok(&pull(&reg.reference("t/run:b"), &out));
    assert_eq!(tree(&b), tree(&out.join("run.hrr")));
}

#[test]
fn tampered_blob_is_refused_and_nothing_is_written() {
    let Some(reg) = start_registry("tamper", false) else {
        return;
    };
    let src = capture("tamper-src", 3, &[2 << 20]);
    let r = reg.reference("t/run:v1");
    let push = push_json(&src, &r);
    assert!(push["blobs"].as_u64().unwrap() >= 3);
    // Flip one byte of the largest blob in the registry's own storage (a layer).
    let mut biggest: Option<(u64, PathBuf)> = None;
    for e in walkdir::WalkDir::new(reg.storage()) {
        let e = e.unwrap();
        if e.file_name() == "data" {
            let n = e.metadata().unwrap().len();
            if biggest.as_ref().is_none_or(|(m, _)| n > *m) {
                biggest = Some((n, e.path().to_path_buf()));
            }
        }
    }
    let (_, path) = biggest.unwrap();
    let mut data = std::fs::read(&path).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x55;
    std::fs::write(&path, data).unwrap();

    let out = tmpdir("tamper-out");
    let res = pull(&r, &out);
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is damaged") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "pull left files behind"
    );
    let packf = out.join("x.hrr.tar.zst");
    let res = pull(&r, &packf);
    assert_eq!(res.status.code(), Some(1));
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "pull left files behind"
    );
}

#[test]
fn interrupted_push_resumes() {
    let Some(reg) = start_registry("resume", false) else {
        return;
    };
    let src = capture("resume-src", 5, &first_capture_sizes());
    let r = reg.reference("t/run:v1");
    let stopped = Command::new(bin())
        .args(["push", src.to_str().unwrap(), &r])
        .env("HRR_PACK_TEST_STOP_AFTER", "4")
        .output()
        .unwrap();
    assert_eq!(stopped.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&stopped.stderr).contains("stopped after 4"));
    let full = ok(&run(
        &["--json", "push", src.to_str().unwrap(), &r],
        None,
        &[],
    ));
    let blobs = full["blobs"].as_u64().unwrap();
    assert_eq!(
        full["blobs_uploaded"].as_u64().unwrap(),
        blobs - 4,
        "{full}"
    );
    assert!(full["bytes_uploaded"].as_u64() < full["bytes_total"].as_u64());
    let out = tmpdir("resume-out");
    ok(&pull(&r, &out));
    assert_eq!(tree(&src), tree(&out.join("run.hrr")));
}

#[test]
fn tls_and_htpasswd_auth() {
    let Some(reg) = start_registry("tls", true) else {
        return;
    };
    let ca = reg.ca.clone().unwrap();
    let ca = ca.to_str().unwrap();
    let src = capture("tls-src", 11, &[1 << 20, 8 << 10]);
    let r = reg.reference("secure/run:v1");

    // --username/--password-stdin with --ca-file.
    let push = ok(&run(
        &[
            "--json",
            "push",
            src.to_str().unwrap(),
            &r,
            "--ca-file",
            ca,
            "--username",
            "hrr",
            "--password-stdin",
        ],
        Some("s3cret-Pa55\n"),
        &[],
    ));
    assert_eq!(push["scheme"], "https");

    // The docker config's auths (DOCKER_CONFIG).
    let cfg = tmpdir("tls-docker");
    std::fs::write(
        cfg.join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "aHJyOnMzY3JldC1QYTU1"}}}}}}"#,
            reg.host()
        ),
    )
    .unwrap();
    let out = tmpdir("tls-out");
    ok(&run(
        &["pull", &r, "-o", out.to_str().unwrap(), "--ca-file", ca],
        None,
        &[("DOCKER_CONFIG", &cfg)],
    ));
    assert_eq!(tree(&src), tree(&out.join("run.hrr")));
    let list = ok(&run(
        &["--json", "list", &r, "--ca-file", ca],
        None,
        &[("DOCKER_CONFIG", &cfg)],
    ));
    assert_eq!(list["totals"]["events"], 140);

    // A pull as `user`, the password on standard input: its exit code and what it printed.
    let pull_as = |user: &str, password: &str| {
        let args = [
            "pull",
            &r,
            "-o",
            out.to_str().unwrap(),
            "--ca-file",
            ca,
            "--username",
            user,
            "--password-stdin",
        ];
        let o = run(&args, Some(password), &[]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // Wrong password: a clear error, exit 4, the password never printed.
    let (code, err) = pull_as("hrr", "wrong-Pa55word\n");
    assert_eq!(code, Some(4), "{err}");
    // Named: the user, where the credentials came from, the repository; not the URL of the
    // probe request (a blob the archive does not hold).
    assert_contains(
        &err,
        "refused the credentials of user `hrr` (from --username) for repository secure/run",
    );
    assert!(
        !err.contains("wrong-Pa55word") && !err.contains("/blobs/"),
        "{err}"
    );
    // A wrong user: refused too, naming that user.
    let (code, err) = pull_as("nobody", "s3cret-Pa55\n");
    assert_eq!(code, Some(4), "{err}");
    assert_contains(&err, "credentials of user `nobody`");
    // No credentials at all: said so, with how to give them.
    let anon = run(
        &["pull", &r, "-o", out.to_str().unwrap(), "--ca-file", ca],
        None,
        &[],
    );
    let err = String::from_utf8_lossy(&anon.stderr).to_string();
    assert_eq!(anon.status.code(), Some(4), "{err}");
    assert!(
        err.contains("needs credentials for repository secure/run, and none were given")
            && err.contains("hint: pass --username USER --password-stdin")
            && !err.contains("/blobs/"),
        "{err}"
    );

    // Without the CA the self-signed certificate is refused (no silent fallback to HTTP: the
    // server speaks only TLS).
    let untrusted = run(
        &["pull", &r, "-o", out.to_str().unwrap()],
        None,
        &[("DOCKER_CONFIG", &cfg)],
    );
    assert_eq!(untrusted.status.code(), Some(1));
    let err = String::from_utf8_lossy(&untrusted.stderr);
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    // Nothing pulled by the failures.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}
