//! The planted-secret corpus: a secret of every rule, in every context a process image holds
//! (plain C string, JSON, environment block, HTTP header, UTF-16LE, between random bytes, right
//! next to alphanumeric bytes, across a 1 MiB read boundary, base64-wrapped), written into the
//! blobs of real archives; `hrr-pack scan` must find 100% of them and, after `hrr-pack scrub`,
//! not one byte-window of any secret may be left anywhere in the archive.
//! Also: no false positive on the system's own binaries; the archive lock; a `kill -9` sweep
//! over scrub.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::{STANDARD as B64STD, URL_SAFE_NO_PAD as B64URL};
use base64::Engine;
use hrr_archive::blobs::CodeKind;
use hrr_archive::schema::{CallClass, CallDef, FieldDef, FieldType, PayloadBuilder, Schema};
use hrr_archive::writer::ProcessWriter;
use hrr_pack::scan::rules::{base62, crc32, ids};

mod common;
use common::{bin, openssh_binary, run, text, utf16};

// ---------------------------------------------------------------------------------------------
// Helpers

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn text(&mut self, n: usize, alphabet: &[u8]) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const HEX: &[u8] = b"0123456789abcdef";
const DIGITS: &[u8] = b"0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BECH32: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// One planted secret: the rule that must find it, its text as the program held it, and the
/// sensitive part of it (what must not survive scrub; prefixes like `ghp_` may).
#[derive(Clone)]
struct Plant {
    rule: &'static str,
    text: Vec<u8>,
    secret: Vec<u8>,
    /// Binary (DER, OpenSSH): only the binary contexts apply.
    binary: bool,
}

fn plant(rule: &'static str, before: &str, secret: &str, after: &str) -> Plant {
    Plant {
        rule,
        text: format!("{before}{secret}{after}").into_bytes(),
        secret: secret.as_bytes().to_vec(),
        binary: false,
    }
}

/// prefix + body: the body is the secret.
fn token(rule: &'static str, prefix: &str, body: String) -> Plant {
    plant(rule, prefix, &body, "")
}

/// 30 characters and their base62 CRC32, as GitHub and npm tokens carry.
fn github_style(r: &mut Rng) -> String {
    let body = r.text(30, ALNUM);
    let sum = base62(crc32(body.as_bytes()) as u64, 6);
    format!("{body}{sum}")
}

/// A secret of every text rule.
fn text_plants(r: &mut Rng) -> Vec<Plant> {
    let mut v = Vec::new();
    let pem: Vec<String> = (0..10).map(|_| r.text(64, B64)).collect();
    v.push(plant(
        "pem-private-key",
        "-----BEGIN RSA PRIVATE KEY-----",
        &format!("\n{}\n", pem.join("\n")),
        "-----END RSA PRIVATE KEY-----\n",
    ));
    let lines: Vec<String> = (0..2).map(|_| r.text(64, B64)).collect();
    v.push(plant(
        "putty-private-key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 2\n",
        &format!("{}\n", lines.join("\n")),
        "Private-MAC: 00\n",
    ));
    v.push(token(
        "age-secret-key",
        "AGE-SECRET-KEY-1",
        r.text(58, BECH32),
    ));
    v.push(token("aws-access-key-id", "AKIA", r.text(16, BASE32)));
    v.push(plant(
        "aws-secret-access-key",
        "aws_secret_access_key = ",
        &r.text(40, B64),
        "",
    ));
    v.push(plant(
        "aws-session-token",
        "AWS_SESSION_TOKEN=",
        &r.text(320, B64),
        "",
    ));
    v.push(token(
        "aws-bedrock-api-key",
        "ABSKQmVkcm9ja0FQSUtleS",
        r.text(110, B64),
    ));
    v.push(token("gcp-api-key", "AIza", r.text(35, URLSAFE)));
    v.push(token(
        "gcp-oauth-client-secret",
        "GOCSPX-",
        r.text(28, URLSAFE),
    ));
    v.push(token(
        "gcp-oauth-access-token",
        "ya29.",
        r.text(150, URLSAFE),
    ));
    v.push(plant(
        "azure-storage-account-key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=",
        &format!("{}==", r.text(86, B64)),
        ";EndpointSuffix=core.windows.net",
    ));
    v.push(plant(
        "azure-shared-access-key",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=",
        &format!("{}=", r.text(43, B64)),
        "",
    ));
    v.push(plant(
        "azure-sas-signature",
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sig=",
        &r.text(43, B64),
        "%3D",
    ));
    v.push(plant(
        "azure-ad-client-secret",
        "",
        &format!(
            "{}{}Q~{}",
            r.text(3, ALNUM),
            r.text(1, DIGITS),
            r.text(34, ALNUM)
        ),
        "",
    ));
    v.push(plant(
        "azure-devops-pat",
        "",
        &format!("{}AZDO{}", r.text(76, ALNUM), r.text(4, ALNUM)),
        "",
    ));
    v.push(token("alibaba-access-key-id", "LTAI", r.text(20, ALNUM)));
    v.push(token("tencent-secret-id", "AKID", r.text(32, ALNUM)));
    v.push(token("digitalocean-token", "dop_v1_", r.text(64, HEX)));
    v.push(token("heroku-api-key", "HRKU-", r.text(60, URLSAFE)));
    v.push(token(
        "cloudflare-origin-ca-key",
        "v1.0-",
        format!("{}-{}", r.text(24, HEX), r.text(146, HEX)),
    ));
    v.push(token("databricks-token", "dapi", r.text(32, HEX)));
    v.push(token("hashicorp-vault-token", "hvs.", r.text(100, ALNUM)));
    v.push(plant(
        "terraform-cloud-token",
        "",
        &format!("{}.atlasv1.{}", r.text(14, ALNUM), r.text(67, ALNUM)),
        "",
    ));
    v.push(token("doppler-token", "dp.pt.", r.text(43, ALNUM)));
    v.push(token("pulumi-token", "pul-", r.text(40, HEX)));
    v.push(token("flyio-token", "fo1_", r.text(43, URLSAFE)));
    v.push(token("supabase-token", "sbp_", r.text(40, HEX)));
    v.push(token("planetscale-token", "pscale_tkn_", r.text(43, ALNUM)));
    v.push(token("grafana-token", "glc_", r.text(60, B64)));
    v.push(token("newrelic-key", "NRAK-", r.text(27, UPNUM)));
    v.push(token("sentry-token", "sntryu_", r.text(64, HEX)));
    v.push(token(
        "dynatrace-token",
        "dt0c01.",
        format!("{}.{}", r.text(24, UPNUM), r.text(64, UPNUM)),
    ));
    v.push(token(
        "postman-api-key",
        "PMAK-",
        format!("{}-{}", r.text(24, HEX), r.text(34, HEX)),
    ));
    v.push(token("atlassian-api-token", "ATATT3", r.text(186, URLSAFE)));
    v.push(token("linear-api-key", "lin_api_", r.text(40, ALNUM)));
    v.push(token(
        "notion-token",
        "ntn_",
        format!("{}{}", r.text(11, DIGITS), r.text(35, ALNUM)),
    ));
    v.push(token("shopify-token", "shpat_", r.text(32, HEX)));
    v.push(plant(
        "airtable-token",
        "pat",
        &format!("{}.{}", r.text(14, ALNUM), r.text(64, HEX)),
        "",
    ));
    v.push(token("contentful-token", "CFPAT-", r.text(43, URLSAFE)));
    v.push(token("prefect-api-key", "pnu_", r.text(36, ALNUM)));
    v.push(token("readme-api-key", "rdme_", r.text(70, LOWNUM)));
    v.push(token("sourcegraph-token", "sgp_", r.text(40, HEX)));
    v.push(token(
        "harness-token",
        "pat.",
        format!(
            "{}.{}.{}",
            r.text(22, ALNUM),
            r.text(24, HEX),
            r.text(20, ALNUM)
        ),
    ));
    v.push(token(
        "onepassword-service-token",
        "ops_",
        format!("eyJ{}", r.text(300, B64)),
    ));
    v.push(token(
        "mapbox-secret-token",
        "sk.",
        format!("eyJ{}.{}", r.text(60, URLSAFE), r.text(22, URLSAFE)),
    ));
    v.push(token("dropbox-token", "sl.", r.text(140, URLSAFE)));
    v.push(token("github-token", "ghp_", github_style(r)));
    v.push(token(
        "github-fine-grained-pat",
        "github_pat_",
        format!("{}_{}", r.text(22, ALNUM), r.text(59, ALNUM)),
    ));
    v.push(token("gitlab-token", "glpat-", r.text(20, ALNUM)));
    v.push(token("stripe-secret-key", "sk_live_", r.text(99, ALNUM)));
    v.push(token("square-token", "sq0atp-", r.text(22, URLSAFE)));
    v.push(token(
        "facebook-access-token",
        "EAACEdEose0cBA",
        r.text(150, ALNUM),
    ));
    v.push(token(
        "braintree-access-token",
        "access_token$production$",
        format!("{}${}", r.text(16, LOWNUM), r.text(32, HEX)),
    ));
    v.push(token("razorpay-key", "rzp_live_", r.text(14, ALNUM)));
    v.push(plant("flutterwave-key", "FLWSECK-", &r.text(32, HEX), "-X"));
    v.push(token(
        "plaid-access-token",
        "access-production-",
        format!(
            "{}-{}-{}-{}-{}",
            r.text(8, HEX),
            r.text(4, HEX),
            r.text(4, HEX),
            r.text(4, HEX),
            r.text(12, HEX)
        ),
    ));
    v.push(token("shippo-token", "shippo_live_", r.text(40, HEX)));
    v.push(token("easypost-key", "EZAK", r.text(54, ALNUM)));
    v.push(token("duffel-token", "duffel_live_", r.text(43, URLSAFE)));
    v.push(token(
        "slack-token",
        "xoxb-",
        format!(
            "{}-{}-{}",
            r.text(12, DIGITS),
            r.text(13, DIGITS),
            r.text(24, ALNUM)
        ),
    ));
    v.push(plant(
        "slack-webhook",
        "https://hooks.slack.com/services/",
        &format!(
            "T{}/B{}/{}",
            r.text(10, UPNUM),
            r.text(10, UPNUM),
            r.text(24, ALNUM)
        ),
        "",
    ));
    v.push(plant(
        "discord-webhook",
        &format!("https://discord.com/api/webhooks/{}/", r.text(18, DIGITS)),
        &r.text(68, URLSAFE),
        "",
    ));
    v.push(plant(
        "teams-webhook",
        "https://acme.webhook.office.com/webhookb2/",
        &format!(
            "{}@{}/IncomingWebhook/{}",
            r.text(36, HEX),
            r.text(36, HEX),
            r.text(32, HEX)
        ),
        "",
    ));
    v.push(plant(
        "telegram-bot-token",
        &format!("{}:AA", r.text(10, DIGITS)),
        &r.text(33, URLSAFE),
        "",
    ));
    v.push(token("twilio-api-key", "SK", r.text(32, HEX)));
    v.push(token(
        "sendgrid-api-key",
        "SG.",
        format!("{}.{}", r.text(22, URLSAFE), r.text(43, URLSAFE)),
    ));
    v.push(token("mailgun-api-key", "key-", r.text(32, HEX)));
    v.push(plant("mailchimp-api-key", "", &r.text(32, HEX), "-us14"));
    v.push(token(
        "brevo-api-key",
        "xkeysib-",
        format!("{}-{}", r.text(64, HEX), r.text(16, ALNUM)),
    ));
    v.push(plant(
        "firebase-cloud-messaging-key",
        &format!("AAAA{}:APA91b", r.text(7, URLSAFE)),
        &r.text(134, URLSAFE),
        "",
    ));
    v.push(token("typeform-token", "tfp_", r.text(59, ALNUM)));
    v.push(token(
        "openai-api-key",
        "sk-proj-",
        format!("{}T3BlbkFJ{}", r.text(74, URLSAFE), r.text(74, URLSAFE)),
    ));
    v.push(token(
        "anthropic-api-key",
        "sk-ant-api03-",
        format!("{}AA", r.text(93, URLSAFE)),
    ));
    v.push(token("openrouter-api-key", "sk-or-v1-", r.text(64, HEX)));
    v.push(token("huggingface-token", "hf_", r.text(34, ALPHA)));
    v.push(token("groq-api-key", "gsk_", r.text(52, ALNUM)));
    v.push(token("replicate-api-token", "r8_", r.text(37, ALNUM)));
    v.push(token("perplexity-api-key", "pplx-", r.text(48, ALNUM)));
    v.push(token("xai-api-key", "xai-", r.text(80, ALNUM)));
    v.push(token("nvidia-api-key", "nvapi-", r.text(64, URLSAFE)));
    v.push(token(
        "langsmith-api-key",
        "lsv2_pt_",
        format!("{}_{}", r.text(32, HEX), r.text(10, HEX)),
    ));
    v.push(token(
        "pinecone-api-key",
        "pcsk_",
        format!("{}_{}", r.text(6, ALNUM), r.text(63, ALNUM)),
    ));
    v.push(token("npm-token", "npm_", github_style(r)));
    v.push(token(
        "pypi-token",
        "pypi-",
        format!("AgEIcHlwaS5vcmc{}", r.text(140, URLSAFE)),
    ));
    v.push(token("rubygems-api-key", "rubygems_", r.text(48, HEX)));
    v.push(token("nuget-api-key", "oy2", r.text(43, LOWNUM)));
    v.push(token("dockerhub-token", "dckr_pat_", r.text(27, URLSAFE)));
    v.push(token("crates-io-token", "cio", r.text(32, ALNUM)));
    v.push(token("artifactory-token", "AKCp", r.text(69, ALNUM)));
    v.push(token("clojars-token", "CLOJARS_", r.text(60, LOWNUM)));
    let payload = format!(
        "{{\"sub\":\"{}\",\"iss\":\"https://issuer\",\"iat\":1700000000}}",
        r.text(24, ALNUM)
    );
    let header = B64URL.encode("{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
    v.push(plant(
        "jwt",
        "",
        &format!(
            "{header}.{}.{}",
            B64URL.encode(payload),
            r.text(86, URLSAFE)
        ),
        "",
    ));
    v.push(plant(
        "docker-config-auth",
        "{\"auths\":{\"registry.example\":{\"auth\":\"",
        &B64STD.encode(format!("robot:{}", r.text(24, ALNUM))),
        "\"}}}",
    ));
    v.push(plant(
        "authorization-header",
        "Authorization: Bearer ",
        &r.text(48, URLSAFE),
        "",
    ));
    v.push(plant(
        "authorization-header",
        "Authorization: Basic ",
        &B64STD.encode(format!("admin:{}", r.text(20, ALNUM))),
        "",
    ));
    v.push(plant(
        "api-key-header",
        "X-Api-Key: ",
        &r.text(32, ALNUM),
        "",
    ));
    v.push(plant(
        "url-password",
        "postgres://admin:",
        &r.text(16, ALNUM),
        "@db.internal:5432/app",
    ));
    v.push(plant(
        "url-query-password",
        "jdbc:mysql://db.internal/app?user=admin&password=",
        &r.text(16, ALNUM),
        "",
    ));
    v.push(plant(
        "connection-string-password",
        "Server=db.internal;Database=app;User Id=sa;Password=",
        &r.text(16, ALNUM),
        ";",
    ));
    v.push(plant(
        "netrc-password",
        "machine api.example.com login bob password ",
        &r.text(20, ALNUM),
        "",
    ));
    v.push(plant(
        "generic-secret",
        "MY_SERVICE_SECRET=",
        &r.text(32, ALNUM),
        "",
    ));
    v.push(plant(
        "generic-secret",
        "DB_PASSWORD=",
        &format!("{}!{}", r.text(8, ALNUM), r.text(5, DIGITS)),
        "",
    ));
    v
}

fn der_len(n: usize) -> Vec<u8> {
    if n < 0x80 {
        vec![n as u8]
    } else if n < 0x100 {
        vec![0x81, n as u8]
    } else {
        vec![0x82, (n >> 8) as u8, n as u8]
    }
}

fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend(der_len(body.len()));
    v.extend_from_slice(body);
    v
}

fn rsa_body(r: &mut Rng) -> Vec<u8> {
    let mut body = der(0x02, &[0]);
    let mut n = vec![0];
    n.extend(r.bytes(256));
    body.extend(der(0x02, &n));
    body.extend(der(0x02, &[1, 0, 1]));
    for len in [256, 128, 128, 128, 128, 128] {
        let mut x = r.bytes(len);
        x[0] &= 0x7F;
        body.extend(der(0x02, &x));
    }
    body
}

fn ec_body(r: &mut Rng, params: bool) -> Vec<u8> {
    let mut body = der(0x02, &[1]);
    body.extend(der(0x04, &r.bytes(32)));
    if params {
        body.extend(der(
            0xA0,
            &der(0x06, &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]),
        ));
    }
    let mut pubkey = vec![0x00, 0x04];
    pubkey.extend(r.bytes(64));
    body.extend(der(0xA1, &der(0x03, &pubkey)));
    body
}

/// Binary keys: (rule, structure, secret part).
fn binary_plants(r: &mut Rng) -> Vec<Plant> {
    let mut v = Vec::new();
    let mut add = |rule: &'static str, whole: Vec<u8>, secret: Vec<u8>| {
        v.push(Plant {
            rule,
            text: whole,
            secret,
            binary: true,
        })
    };
    let body = rsa_body(r);
    add("der-rsa-private-key", der(0x30, &body), body);
    let rsa = der(0x30, &rsa_body(r));
    let mut p8 = der(0x02, &[0]);
    p8.extend_from_slice(&[
        0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00,
    ]);
    p8.extend(der(0x04, &rsa));
    add("der-pkcs8-private-key", der(0x30, &p8), p8);
    let mut p8ec = der(0x02, &[0]);
    p8ec.extend_from_slice(&[
        0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86,
        0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07,
    ]);
    p8ec.extend(der(0x04, &der(0x30, &ec_body(r, false))));
    add("der-pkcs8-private-key", der(0x30, &p8ec), p8ec);
    let ec = ec_body(r, true);
    add("der-ec-private-key", der(0x30, &ec), ec);
    let mut ed = vec![
        0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let key = r.bytes(32);
    ed.extend_from_slice(&key);
    add("der-ed25519-private-key", ed, key);
    // OpenSSH body
    let public = r.bytes(51);
    let private = r.bytes(150);
    add(
        "openssh-private-key",
        openssh_binary(&public, &private),
        private,
    );
    // PKCS#12: version 3, a ContentInfo (pkcs7-data) holding opaque bytes, a MAC
    let mut ci = der(
        0x06,
        &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01],
    );
    ci.extend(der(0xA0, &der(0x04, &r.bytes(300))));
    let mut pfx = der(0x02, &[3]);
    pfx.extend(der(0x30, &ci));
    pfx.extend(der(0x30, &der(0x04, &r.bytes(20))));
    add("pkcs12-container", der(0x30, &pfx), pfx);
    v
}

/// The contexts a plant is written in: (name, bytes, where the secret's bytes went, in which
/// form they are stored there).
enum Form {
    Raw,
    Utf16,
    Base64,
}

struct Placed {
    plant: usize,
    context: &'static str,
    blob: usize,
    /// Offset of the whole planted text in its blob.
    at: usize,
    form: Form,
}

fn alnum_byte(r: &mut Rng) -> u8 {
    ALNUM[(r.next() % ALNUM.len() as u64) as usize]
}

/// Build the blobs: one per context (the boundary blob holds one plant per MiB).
fn corpus(plants: &[Plant], r: &mut Rng) -> (Vec<Vec<u8>>, Vec<Placed>) {
    let mut blobs: Vec<Vec<u8>> = Vec::new();
    let mut placed = Vec::new();
    type Wrap = fn(&mut Rng, &[u8]) -> (Vec<u8>, Vec<u8>, Form);
    let contexts: Vec<(&'static str, bool, Wrap)> = vec![
        ("c-string", false, |_, t| {
            (b"\0\0".to_vec(), [t, b"\0"].concat(), Form::Raw)
        }),
        ("json", false, |_, t| {
            (
                b"{\"value\": \"".to_vec(),
                [t, b"\", \"n\": 1}\n"].concat(),
                Form::Raw,
            )
        }),
        ("env-block", false, |_, t| {
            (
                b"PATH=/usr/bin\0HRR_PLANT=".to_vec(),
                [t, b"\0HOME=/root\0"].concat(),
                Form::Raw,
            )
        }),
        ("http-header", false, |_, t| {
            (
                b"POST /v1/x HTTP/1.1\r\nHost: api.example\r\nX-Plant: ".to_vec(),
                [t, b"\r\nContent-Length: 0\r\n\r\n"].concat(),
                Form::Raw,
            )
        }),
        ("utf16le", false, |_, t| {
            (
                utf16(b"\"value\": \""),
                [utf16(t), utf16(b"\"\0")].concat(),
                Form::Utf16,
            )
        }),
        ("random-bytes", true, |r, t| {
            let mut a = r.bytes(64);
            a.extend_from_slice(t);
            (a, r.bytes(64), Form::Raw)
        }),
        ("alnum-neighbours", true, |r, t| {
            let mut a = r.bytes(63);
            a.push(alnum_byte(r));
            a.extend_from_slice(t);
            let mut b = vec![alnum_byte(r)];
            b.extend(r.bytes(63));
            (a, b, Form::Raw)
        }),
        ("base64-wrapped", true, |_, t| {
            (
                b"{\"blob\": \"".to_vec(),
                [B64STD.encode(t).as_bytes(), b"\"}"].concat(),
                Form::Base64,
            )
        }),
    ];
    for (name, binary_ok, wrap) in contexts {
        let mut blob = r.bytes(100);
        for (i, p) in plants.iter().enumerate() {
            if p.binary && !binary_ok {
                continue;
            }
            // the text is at the end of `head` (random contexts) or the start of `tail`
            let (head, tail, form) = wrap(r, &p.text);
            let at = if head.ends_with(&p.text) {
                blob.len() + head.len() - p.text.len()
            } else {
                blob.len() + head.len()
            };
            blob.extend(head);
            blob.extend(tail);
            blob.extend(r.bytes(16));
            placed.push(Placed {
                plant: i,
                context: name,
                blob: blobs.len(),
                at,
                form,
            });
        }
        blobs.push(blob);
    }
    // across a 1 MiB read boundary: plant i straddles offset (i + 1) MiB
    let mut big = Vec::new();
    for (i, p) in plants.iter().enumerate() {
        let boundary = (i + 1) << 20;
        let start = boundary - p.text.len() / 2;
        big.resize(start, 0);
        big.extend_from_slice(&p.text);
        placed.push(Placed {
            plant: i,
            context: "read-boundary",
            blob: blobs.len(),
            at: start,
            form: Form::Raw,
        });
    }
    big.resize(big.len() + 4096, 0);
    blobs.push(big);
    (blobs, placed)
}

fn schema() -> Schema {
    let f = |name: &str, ty| FieldDef {
        name: name.into(),
        ty,
    };
    Schema::new(
        "cuda-driver",
        13000,
        vec![
            CallDef {
                id: 1,
                name: "cuModuleLoadData".into(),
                class: CallClass::Other,
                fields: vec![
                    f("result", FieldType::Result),
                    f("module", FieldType::Handle),
                    f("code", FieldType::Code),
                ],
            },
            CallDef {
                id: 2,
                name: "cuMemcpyHtoD_v2".into(),
                class: CallClass::H2d,
                fields: vec![
                    f("result", FieldType::Result),
                    f("dst", FieldType::Ptr),
                    f("size", FieldType::U64),
                    f("h2d_blob", FieldType::Blob),
                ],
            },
        ],
    )
}

fn write_process(root: &Path, pid: u32, blobs: &[Vec<u8>], code: &[u8]) {
    let mut w = ProcessWriter::create(root, pid, 1, &schema()).unwrap();
    let co = w.put_code_object(code, CodeKind::Cubin).unwrap();
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(0x10).object(Some(co));
    w.events().append(1, 7, p.as_bytes()).unwrap();
    for (i, b) in blobs.iter().enumerate() {
        let id = w.put_blob(b).unwrap();
        let mut p = PayloadBuilder::new();
        p.i32(0)
            .u64(0x7000_0000 + i as u64 * 0x10000)
            .u64(b.len() as u64)
            .object(Some(id));
        w.events().append(2, 7, p.as_bytes()).unwrap();
    }
    w.finish().unwrap();
}

/// Every file below `dir` (the archive and anything beside it in `dir`).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// Byte windows of a secret in the form it was stored: any one left means residue.
fn residue_needles(p: &Plant, form: &Form) -> Vec<Vec<u8>> {
    let w = 10.min(p.secret.len());
    let mut out: Vec<Vec<u8>> = p.secret.windows(w).step_by(3).map(<[u8]>::to_vec).collect();
    match form {
        Form::Raw => {}
        Form::Utf16 => out = out.iter().map(|n| utf16(n)).collect(),
        Form::Base64 => {
            // the characters that depend on the secret's bytes only
            let enc = B64STD.encode(&p.text);
            let at = p
                .text
                .windows(p.secret.len())
                .position(|x| x == p.secret.as_slice())
                .unwrap();
            let first = at.div_ceil(3) * 4;
            let last = (at + p.secret.len()) / 3 * 4;
            let chars = &enc.as_bytes()[first..last.max(first)];
            out = chars
                .windows(12.min(chars.len()))
                .step_by(4)
                .map(<[u8]>::to_vec)
                .collect();
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Which of `needles` occur in `hay`: one pass per needle length, with a hash set.
fn occurring<'a>(hay: &[u8], needles: &'a [(String, Vec<u8>)]) -> Vec<&'a str> {
    use std::collections::{HashMap, HashSet};
    let mut by_len: HashMap<usize, HashMap<&[u8], &str>> = HashMap::new();
    for (label, n) in needles {
        by_len.entry(n.len()).or_default().insert(n, label);
    }
    let mut out = HashSet::new();
    for (len, set) in &by_len {
        if *len == 0 || hay.len() < *len {
            continue;
        }
        let firsts: HashSet<u8> = set.keys().map(|k| k[0]).collect();
        for i in 0..=hay.len() - len {
            if firsts.contains(&hay[i]) {
                if let Some(l) = set.get(&hay[i..i + len]) {
                    out.insert(*l);
                }
            }
        }
    }
    let mut v: Vec<&str> = out.into_iter().collect();
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------------
// Recall and residue

#[test]
fn every_rule_in_every_context_is_found_and_fully_scrubbed() {
    let mut r = Rng(0x5ec2e7);
    let mut plants = text_plants(&mut r);
    plants.extend(binary_plants(&mut r));
    // every rule has a plant
    for id in ids() {
        assert!(
            plants.iter().any(|p| p.rule == id),
            "no plant for rule {id}"
        );
    }
    let (blobs, placed) = corpus(&plants, &mut r);
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("corpus.hrr");
    write_process(&src, 4242, &blobs, b"\x7fELF code");
    let o = run(&[&"scan", &src, &"--json", &"--no-progress"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // findings by blob content hash (the file name's id): map blob index -> file
    let mut by_file: BTreeMap<String, Vec<(u64, u64, String)>> = BTreeMap::new();
    let raw_needles: Vec<(String, Vec<u8>)> = plants
        .iter()
        .flat_map(|p| {
            residue_needles(p, &Form::Raw)
                .into_iter()
                .map(move |n| (p.rule.to_string(), n))
        })
        .collect();
    let shown = occurring(&o.stdout, &raw_needles);
    assert!(shown.is_empty(), "scan output shows secrets of {shown:?}");
    for f in v["findings"].as_array().unwrap() {
        by_file
            .entry(f["file"].as_str().unwrap().to_string())
            .or_default()
            .push((
                f["offset"].as_u64().unwrap(),
                f["length"].as_u64().unwrap(),
                f["rule"].as_str().unwrap().to_string(),
            ));
    }
    let ids_of: Vec<String> = blobs
        .iter()
        .map(|b| {
            let h = blake3::hash(b);
            let hex = h.to_hex();
            format!("pid-4242/blobs/{}/{}.blob", &hex[..2], &hex[..32])
        })
        .collect();
    let mut missed = Vec::new();
    let mut wrong_rule = Vec::new();
    for pl in &placed {
        let p = &plants[pl.plant];
        let blob = &blobs[pl.blob];
        let (start, end) = match pl.form {
            Form::Raw => {
                let s = pl.at
                    + p.text
                        .windows(p.secret.len())
                        .position(|x| x == p.secret.as_slice())
                        .unwrap();
                (s, s + p.secret.len())
            }
            Form::Utf16 => {
                let s = pl.at
                    + 2 * p
                        .text
                        .windows(p.secret.len())
                        .position(|x| x == p.secret.as_slice())
                        .unwrap();
                (s, s + 2 * p.secret.len())
            }
            Form::Base64 => {
                let enc = B64STD.encode(&p.text);
                let a = p
                    .text
                    .windows(p.secret.len())
                    .position(|x| x == p.secret.as_slice())
                    .unwrap();
                let first = pl.at + a.div_ceil(3) * 4;
                let last = pl.at + (a + p.secret.len()) / 3 * 4;
                assert!(blob[pl.at..].starts_with(enc.as_bytes()));
                (first, last.max(first + 1))
            }
        };
        let file = &ids_of[pl.blob];
        let hit = by_file.get(file).and_then(|fs| {
            fs.iter()
                .find(|(o, l, _)| (*o as usize) <= start + 2 && (*o + *l) as usize + 2 >= end)
        });
        match hit {
            None => missed.push(format!(
                "{} in {}: {:?} in {:?}",
                p.rule,
                pl.context,
                String::from_utf8_lossy(&p.text),
                &blob[pl.at.saturating_sub(8)..(pl.at + p.text.len() + 8).min(blob.len())]
            )),
            Some((_, _, rule)) if rule != p.rule => {
                wrong_rule.push(format!("{} in {} found as {rule}", p.rule, pl.context))
            }
            _ => {}
        }
    }
    let total = placed.len();
    eprintln!(
        "recall: {}/{total} planted secrets ({} plants of {} rules); {} found under another rule",
        total - missed.len(),
        plants.len(),
        ids().len(),
        wrong_rule.len()
    );
    assert!(
        missed.is_empty(),
        "missed {}/{total}: {missed:#?}",
        missed.len()
    );
    assert!(wrong_rule.is_empty(), "{wrong_rule:#?}");

    // scrub in place: zero residue anywhere in the folder (archive and beside it)
    let o = run(&[&"scrub", &src, &"--no-progress"]);
    assert!(o.status.success(), "{}", text(&o));
    let mut needles: Vec<(String, Vec<u8>)> = Vec::new();
    for pl in &placed {
        let p = &plants[pl.plant];
        for n in residue_needles(p, &pl.form) {
            needles.push((format!("{} ({})", p.rule, pl.context), n));
        }
    }
    let mut residue = Vec::new();
    for (path, content) in files(t.path()) {
        for l in occurring(&content, &needles) {
            residue.push(format!("{l} left in {}", path.display()));
        }
    }
    assert!(residue.is_empty(), "{residue:#?}");
    // and the scrubbed archive is valid and clean
    let o = run(&[&"verify", &src]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&[&"scan", &src, &"--no-progress"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// ---------------------------------------------------------------------------------------------
// False positives on the system's own binaries

#[test]
fn no_false_positive_on_system_binaries_and_the_readme() {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in ["/usr/bin", "/bin"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                let p = e.path();
                if n.starts_with("python3") && !n.ends_with("-config") && p.is_file() {
                    candidates.push(p);
                }
            }
        }
    }
    for lib in ["libc.so.6", "libssl.so.3", "libcrypto.so.3"] {
        for dir in [
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib64",
            "/usr/lib64",
        ] {
            let p = Path::new(dir).join(lib);
            if p.exists() {
                candidates.push(p);
                break;
            }
        }
    }
    candidates.push(PathBuf::from(env!("CARGO_BIN_EXE_hrr-pack")));
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"));
    // a path that does not exist is skipped; links are resolved (scan opens no link)
    let mut seen = std::collections::HashSet::new();
    let candidates: Vec<PathBuf> = candidates
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| seen.insert(p.clone()))
        .collect();
    let system = candidates
        .iter()
        .filter(|p| !p.starts_with(env!("CARGO_MANIFEST_DIR")) && !p.ends_with("hrr-pack"))
        .count();
    assert!(
        system > 0,
        "none of the system binaries exist: {candidates:?}"
    );
    let mut found = Vec::new();
    for p in &candidates {
        let o = run(&[&"scan", p, &"--json", &"--no-progress"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}: {}", p.display(), text(&o)));
        eprintln!(
            "{}: {} findings in {} bytes",
            p.display(),
            v["found"],
            v["bytes_scanned"]
        );
        for f in v["findings"].as_array().unwrap() {
            found.push(format!("{}: {f}", p.display()));
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

// ---------------------------------------------------------------------------------------------
// Lock and crash safety

/// A capture with a few secrets and enough blobs that a scrub takes a while.
fn small_secret_archive(root: &Path, r: &mut Rng) -> Vec<Vec<u8>> {
    let mut secrets = Vec::new();
    let mut blobs = Vec::new();
    for i in 0..200 {
        let mut b = r.bytes(20_000);
        if i % 4 == 0 {
            let body = github_style(r);
            let tok = format!("\0GITHUB_TOKEN=ghp_{body}\0");
            b.splice(5000..5000, tok.bytes());
            secrets.push(body.into_bytes());
        }
        blobs.push(b);
    }
    write_process(root, 777, &blobs, b"code");
    secrets
}

fn leftovers(dir: &Path, secrets: &[Vec<u8>]) -> Vec<String> {
    let mut out = Vec::new();
    for (p, c) in files(dir) {
        for s in secrets {
            if contains(&c, s) {
                out.push(p.display().to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn a_second_scrub_or_pack_is_refused_while_one_holds_the_lock() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("locked.hrr");
    small_secret_archive(&src, &mut Rng(7));
    let held = hrr_archive::lock::exclusive(&src, "scrub").unwrap();
    for args in [
        vec!["scrub", "--no-progress"],
        vec!["pack", "--no-progress", "-o"],
    ] {
        let mut c = bin();
        c.args(&args);
        if args[0] == "pack" {
            c.arg(t.path().join("x.hrr.tar.zst"));
        }
        let o = c.arg(&src).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let msg = text(&o);
        assert!(
            msg.contains("in use by another hrr-pack") && msg.contains("scrub"),
            "{msg}"
        );
    }
    drop(held);
    let o = run(&[&"scrub", &src, &"--no-progress"]);
    assert!(o.status.success(), "{}", text(&o));
    // nothing left beside the archive: no lock file, no staging folder
    let names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["locked.hrr".to_string()]);
}

#[test]
fn kill_9_at_any_instant_of_scrub_never_loses_the_archive_nor_leaves_a_secret() {
    let mut r = Rng(0xdead);
    // how long one scrub takes here
    let t = tempfile::tempdir().unwrap();
    let probe = t.path().join("probe.hrr");
    small_secret_archive(&probe, &mut r);
    let t0 = std::time::Instant::now();
    let o = run(&[&"scrub", &probe, &"--no-progress"]);
    assert!(o.status.success(), "{}", text(&o));
    let full = t0.elapsed();
    let instants = 24u32;
    let mut killed_before_end = 0;
    for i in 0..instants {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("run.hrr");
        let secrets = small_secret_archive(&src, &mut r);
        let mut child = bin()
            .arg("scrub")
            .arg("--no-progress")
            .arg(&src)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(full.mul_f64(i as f64 / instants as f64 * 1.1));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        if !status.success() {
            killed_before_end += 1;
        }
        // the archive is at its name (or parked, which the next command puts back)
        let parked = t.path().join(".run.hrr.hrr-scrub-old");
        assert!(src.exists() || parked.exists(), "instant {i}: archive lost");
        // the next scrub finishes or rolls back, then completes: no secret anywhere
        let o = run(&[&"scrub", &src, &"--no-progress"]);
        assert!(o.status.success(), "instant {i}: {}", text(&o));
        let left = leftovers(t.path(), &secrets);
        assert!(left.is_empty(), "instant {i}: secrets left in {left:?}");
        let o = run(&[&"verify", &src]);
        assert!(o.status.success(), "instant {i}: {}", text(&o));
        let names: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["run.hrr".to_string()], "instant {i}");
    }
    eprintln!("kill -9 sweep: {instants} instants, {killed_before_end} killed before the end");
    // Instants are spread over the measured length of one scrub; on a loaded machine many may
    // land after the end, but the sweep must have killed scrubs in flight.
    assert!(
        killed_before_end >= 2,
        "the sweep killed no scrub in flight"
    );
}

#[test]
fn pack_completes_an_interrupted_scrub_before_packing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("p.hrr");
    let secrets = small_secret_archive(&src, &mut Rng(11));
    // leftovers of a scrub killed after its swap: the unscrubbed tree in the staging folder
    let o = run(&[
        &"scrub",
        &src,
        &"-o",
        &t.path().join("scrubbed.hrr"),
        &"--no-progress",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stage = t.path().join(".p.hrr.hrr-scrub");
    std::fs::rename(&src, &stage).unwrap();
    std::fs::rename(t.path().join("scrubbed.hrr"), &src).unwrap();
    std::fs::write(t.path().join(".p.hrr.hrr-scrub-ready"), b"").unwrap();
    let out = t.path().join("p.hrr.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &out, &"--no-progress"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("interrupted scrub"), "{}", text(&o));
    assert!(!stage.exists());
    let left = leftovers(t.path(), &secrets);
    assert!(left.is_empty(), "{left:?}");
    let o = run(&[&"scan", &out, &"--no-progress"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
