//! Structured tokens and credentials written in text (URLs, connection strings, config).

use super::*;

/// The structured tokens and credentials in text rules, in rule order.
pub(super) fn in_text() -> Vec<Rule> {
    use Check::*;
    vec![
        text(
            "jwt",
            &["eyJ"],
            4_200,
            8_400,
            r"(?P<s>ey[A-Za-z0-9_-]{17,4096}\.ey[A-Za-z0-9_-]{17,4096}\.(?:[A-Za-z0-9_-]{10,4096}={0,2})?)",
            Jwt,
        ),
        text(
            "docker-config-auth",
            &["\"auth\""],
            0,
            600,
            &format!(r#"(?P<k>"auth")\s{{0,3}}:\s{{0,3}}"(?P<s>[{B64}]{{8,512}}={{0,2}})""#),
            AuthHeader,
        ),
        text(
            "authorization-header",
            &["authorization"],
            8,
            4_200,
            r#"(?i)(?:proxy-)?authorization["']?\s{0,5}[:=]\s{0,5}["']?(?P<k>(?:basic|bearer|token|digest|negotiate|apikey|aws4-hmac-sha256|sso-key|key)\s+)?(?P<s>[A-Za-z0-9._~+/=:,-]{12,4096})"#,
            AuthHeader,
        ),
        text(
            "api-key-header",
            &[
                "x-api-key",
                "api-key:",
                "x-auth-token",
                "private-token",
                "x-access-token",
                "x-goog-api-key",
            ],
            0,
            600,
            r#"(?i)(?P<k>x-api-key|api-key|x-auth-token|private-token|x-access-token|x-goog-api-key)["']?\s{0,3}:\s{0,3}["']?(?P<s>[A-Za-z0-9._~+/=-]{20,512})"#,
            Mixed(3.5),
        ),
        text(
            "url-password",
            &["://"],
            40,
            600,
            r#"(?i)[a-z][a-z0-9+.-]{1,30}://[\x21-\x7e&&[^/:@"'<>]]{0,256}:(?P<s>[\x21-\x7e&&[^/@"'<>]]{1,256})@[\x21-\x7e&&[^/"'<>@]]"#,
            Password,
        ),
        text(
            "connection-string-password",
            &["password=", "pwd=", "password =", "pwd ="],
            400,
            200,
            r#"(?i)(?:server|data source|host|address|addr|hostname|uid|user id|username)\s*=[^\x00\r\n"]{0,300}?;\s*(?P<k>password|pwd)\s*=\s*(?P<s>[\x21-\x7e&&[^;"']]{1,128})"#,
            Password,
        ),
        text(
            "url-query-password",
            &["password=", "passwd=", "pwd="],
            1,
            200,
            r#"(?i)[?&;](?P<k>password|passwd|pwd)=(?P<s>[\x21-\x7e&&[^&;"'<>]]{1,128})"#,
            Password,
        ),
        text(
            "netrc-password",
            &["machine"],
            0,
            400,
            r"machine\s+[^\s\x00]{1,200}\s+login\s+[^\s\x00]{1,200}\s+password\s+(?P<s>[\x21-\x7e]{1,200})",
            Password,
        ),
    ]
}
