//! The planted secrets: one (or more) of every rule, as the program held it. Text secrets are
//! rows of [`PLANTS`] (a fixed text before, random parts, a fixed text after); the few whose
//! fixed text is itself random or encoded, and the binary keys, are built in code below it.

use base64::engine::general_purpose::{STANDARD as B64STD, URL_SAFE_NO_PAD as B64URL};
use base64::Engine;
use hrr_archive::testkit::Rng;
use hrr_pack::scan::rules::{base62, crc32};

use crate::common::{
    der, openssh_key, plant, plants, rsa_body, Part, Plant, PlantRow, ALNUM, ALPHA, B64, BASE32,
    BECH32, DIGITS, HEX, LOWNUM, UPNUM, URLSAFE,
};
use Part::{L, R};

/// Text secrets: (rule, text before, the secret's parts, text after). A table, one row a secret
/// (rustfmt would break most rows over five lines).
#[rustfmt::skip]
const PLANTS: &[PlantRow] = &[
    ("age-secret-key", "AGE-SECRET-KEY-1", &[R(58, BECH32)], ""),
    ("aws-access-key-id", "AKIA", &[R(16, BASE32)], ""),
    ("aws-secret-access-key", "aws_secret_access_key = ", &[R(40, B64)], ""),
    ("aws-session-token", "AWS_SESSION_TOKEN=", &[R(320, B64)], ""),
    ("aws-bedrock-api-key", "ABSKQmVkcm9ja0FQSUtleS", &[R(110, B64)], ""),
    ("gcp-api-key", "AIza", &[R(35, URLSAFE)], ""),
    ("gcp-oauth-client-secret", "GOCSPX-", &[R(28, URLSAFE)], ""),
    ("gcp-oauth-access-token", "ya29.", &[R(150, URLSAFE)], ""),
    (
        "azure-storage-account-key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=",
        &[R(86, B64), L("==")],
        ";EndpointSuffix=core.windows.net",
    ),
    (
        "azure-shared-access-key",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=",
        &[R(43, B64), L("=")],
        "",
    ),
    (
        "azure-sas-signature",
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sig=",
        &[R(43, B64)],
        "%3D",
    ),
    ("azure-ad-client-secret", "", &[R(3, ALNUM), R(1, DIGITS), L("Q~"), R(34, ALNUM)], ""),
    ("azure-devops-pat", "", &[R(76, ALNUM), L("AZDO"), R(4, ALNUM)], ""),
    ("alibaba-access-key-id", "LTAI", &[R(20, ALNUM)], ""),
    ("tencent-secret-id", "AKID", &[R(32, ALNUM)], ""),
    ("digitalocean-token", "dop_v1_", &[R(64, HEX)], ""),
    ("heroku-api-key", "HRKU-", &[R(60, URLSAFE)], ""),
    ("cloudflare-origin-ca-key", "v1.0-", &[R(24, HEX), L("-"), R(146, HEX)], ""),
    ("databricks-token", "dapi", &[R(32, HEX)], ""),
    ("hashicorp-vault-token", "hvs.", &[R(100, ALNUM)], ""),
    ("terraform-cloud-token", "", &[R(14, ALNUM), L(".atlasv1."), R(67, ALNUM)], ""),
    ("doppler-token", "dp.pt.", &[R(43, ALNUM)], ""),
    ("pulumi-token", "pul-", &[R(40, HEX)], ""),
    ("flyio-token", "fo1_", &[R(43, URLSAFE)], ""),
    ("supabase-token", "sbp_", &[R(40, HEX)], ""),
    ("planetscale-token", "pscale_tkn_", &[R(43, ALNUM)], ""),
    ("grafana-token", "glc_", &[R(60, B64)], ""),
    ("newrelic-key", "NRAK-", &[R(27, UPNUM)], ""),
    ("sentry-token", "sntryu_", &[R(64, HEX)], ""),
    ("dynatrace-token", "dt0c01.", &[R(24, UPNUM), L("."), R(64, UPNUM)], ""),
    ("postman-api-key", "PMAK-", &[R(24, HEX), L("-"), R(34, HEX)], ""),
    ("atlassian-api-token", "ATATT3", &[R(186, URLSAFE)], ""),
    ("linear-api-key", "lin_api_", &[R(40, ALNUM)], ""),
    ("notion-token", "ntn_", &[R(11, DIGITS), R(35, ALNUM)], ""),
    ("shopify-token", "shpat_", &[R(32, HEX)], ""),
    ("airtable-token", "pat", &[R(14, ALNUM), L("."), R(64, HEX)], ""),
    ("contentful-token", "CFPAT-", &[R(43, URLSAFE)], ""),
    ("prefect-api-key", "pnu_", &[R(36, ALNUM)], ""),
    ("readme-api-key", "rdme_", &[R(70, LOWNUM)], ""),
    ("sourcegraph-token", "sgp_", &[R(40, HEX)], ""),
    ("harness-token", "pat.", &[R(22, ALNUM), L("."), R(24, HEX), L("."), R(20, ALNUM)], ""),
    ("onepassword-service-token", "ops_", &[L("eyJ"), R(300, B64)], ""),
    ("mapbox-secret-token", "sk.", &[L("eyJ"), R(60, URLSAFE), L("."), R(22, URLSAFE)], ""),
    ("dropbox-token", "sl.", &[R(140, URLSAFE)], ""),
    ("github-fine-grained-pat", "github_pat_", &[R(22, ALNUM), L("_"), R(59, ALNUM)], ""),
    ("gitlab-token", "glpat-", &[R(20, ALNUM)], ""),
    ("stripe-secret-key", "sk_live_", &[R(99, ALNUM)], ""),
    ("square-token", "sq0atp-", &[R(22, URLSAFE)], ""),
    ("facebook-access-token", "EAACEdEose0cBA", &[R(150, ALNUM)], ""),
    (
        "braintree-access-token",
        "access_token$production$",
        &[R(16, LOWNUM), L("$"), R(32, HEX)],
        "",
    ),
    ("razorpay-key", "rzp_live_", &[R(14, ALNUM)], ""),
    ("flutterwave-key", "FLWSECK-", &[R(32, HEX)], "-X"),
    (
        "plaid-access-token",
        "access-production-",
        &[R(8, HEX), L("-"), R(4, HEX), L("-"), R(4, HEX), L("-"), R(4, HEX), L("-"), R(12, HEX)],
        "",
    ),
    ("shippo-token", "shippo_live_", &[R(40, HEX)], ""),
    ("easypost-key", "EZAK", &[R(54, ALNUM)], ""),
    ("duffel-token", "duffel_live_", &[R(43, URLSAFE)], ""),
    ("slack-token", "xoxb-", &[R(12, DIGITS), L("-"), R(13, DIGITS), L("-"), R(24, ALNUM)], ""),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/",
        &[L("T"), R(10, UPNUM), L("/B"), R(10, UPNUM), L("/"), R(24, ALNUM)],
        "",
    ),
    (
        "teams-webhook",
        "https://acme.webhook.office.com/webhookb2/",
        &[R(36, HEX), L("@"), R(36, HEX), L("/IncomingWebhook/"), R(32, HEX)],
        "",
    ),
    ("twilio-api-key", "SK", &[R(32, HEX)], ""),
    ("sendgrid-api-key", "SG.", &[R(22, URLSAFE), L("."), R(43, URLSAFE)], ""),
    ("mailgun-api-key", "key-", &[R(32, HEX)], ""),
    ("mailchimp-api-key", "", &[R(32, HEX)], "-us14"),
    ("brevo-api-key", "xkeysib-", &[R(64, HEX), L("-"), R(16, ALNUM)], ""),
    ("typeform-token", "tfp_", &[R(59, ALNUM)], ""),
    ("openai-api-key", "sk-proj-", &[R(74, URLSAFE), L("T3BlbkFJ"), R(74, URLSAFE)], ""),
    ("anthropic-api-key", "sk-ant-api03-", &[R(93, URLSAFE), L("AA")], ""),
    ("openrouter-api-key", "sk-or-v1-", &[R(64, HEX)], ""),
    ("huggingface-token", "hf_", &[R(34, ALPHA)], ""),
    ("groq-api-key", "gsk_", &[R(52, ALNUM)], ""),
    ("replicate-api-token", "r8_", &[R(37, ALNUM)], ""),
    ("perplexity-api-key", "pplx-", &[R(48, ALNUM)], ""),
    ("xai-api-key", "xai-", &[R(80, ALNUM)], ""),
    ("nvidia-api-key", "nvapi-", &[R(64, URLSAFE)], ""),
    ("langsmith-api-key", "lsv2_pt_", &[R(32, HEX), L("_"), R(10, HEX)], ""),
    ("pinecone-api-key", "pcsk_", &[R(6, ALNUM), L("_"), R(63, ALNUM)], ""),
    ("pypi-token", "pypi-", &[L("AgEIcHlwaS5vcmc"), R(140, URLSAFE)], ""),
    ("rubygems-api-key", "rubygems_", &[R(48, HEX)], ""),
    ("nuget-api-key", "oy2", &[R(43, LOWNUM)], ""),
    ("dockerhub-token", "dckr_pat_", &[R(27, URLSAFE)], ""),
    ("crates-io-token", "cio", &[R(32, ALNUM)], ""),
    ("artifactory-token", "AKCp", &[R(69, ALNUM)], ""),
    ("clojars-token", "CLOJARS_", &[R(60, LOWNUM)], ""),
    ("authorization-header", "Authorization: Bearer ", &[R(48, URLSAFE)], ""),
    ("api-key-header", "X-Api-Key: ", &[R(32, ALNUM)], ""),
    ("url-password", "postgres://admin:", &[R(16, ALNUM)], "@db.internal:5432/app"),
    (
        "url-query-password",
        "jdbc:mysql://db.internal/app?user=admin&password=",
        &[R(16, ALNUM)],
        "",
    ),
    (
        "connection-string-password",
        "Server=db.internal;Database=app;User Id=sa;Password=",
        &[R(16, ALNUM)],
        ";",
    ),
    ("netrc-password", "machine api.example.com login bob password ", &[R(20, ALNUM)], ""),
    ("generic-secret", "MY_SERVICE_SECRET=", &[R(32, ALNUM)], ""),
    ("generic-secret", "DB_PASSWORD=", &[R(8, ALNUM), L("!"), R(5, DIGITS)], ""),
];

/// 30 characters and their base62 CRC32, as GitHub and npm tokens carry.
pub fn github_style(r: &mut Rng) -> String {
    let body = r.text(30, ALNUM);
    let sum = base62(crc32(body.as_bytes()) as u64, 6);
    format!("{body}{sum}")
}

/// A secret of every text rule: the rows of [`PLANTS`], then those whose fixed text is random
/// or encoded, or whose body carries a checksum.
pub fn text_plants(r: &mut Rng) -> Vec<Plant> {
    let mut v = plants(PLANTS, r);
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
    v.push(plant("github-token", "ghp_", &github_style(r), ""));
    v.push(plant("npm-token", "npm_", &github_style(r), ""));
    let discord = format!("https://discord.com/api/webhooks/{}/", r.text(18, DIGITS));
    v.push(plant("discord-webhook", &discord, &r.text(68, URLSAFE), ""));
    let telegram = format!("{}:AA", r.text(10, DIGITS));
    v.push(plant(
        "telegram-bot-token",
        &telegram,
        &r.text(33, URLSAFE),
        "",
    ));
    let fcm = format!("AAAA{}:APA91b", r.text(7, URLSAFE));
    v.push(plant(
        "firebase-cloud-messaging-key",
        &fcm,
        &r.text(134, URLSAFE),
        "",
    ));
    let payload = format!(
        "{{\"sub\":\"{}\",\"iss\":\"https://issuer\",\"iat\":1700000000}}",
        r.text(24, ALNUM)
    );
    let header = B64URL.encode("{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
    let jwt = format!(
        "{header}.{}.{}",
        B64URL.encode(payload),
        r.text(86, URLSAFE)
    );
    v.push(plant("jwt", "", &jwt, ""));
    v.push(plant(
        "docker-config-auth",
        "{\"auths\":{\"registry.example\":{\"auth\":\"",
        &B64STD.encode(format!("robot:{}", r.text(24, ALNUM))),
        "\"}}}",
    ));
    v.push(plant(
        "authorization-header",
        "Authorization: Basic ",
        &B64STD.encode(format!("admin:{}", r.text(20, ALNUM))),
        "",
    ));
    v
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
pub fn binary_plants(r: &mut Rng) -> Vec<Plant> {
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
    let (ssh, private) = openssh_key(r);
    add("openssh-private-key", ssh, private);
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
