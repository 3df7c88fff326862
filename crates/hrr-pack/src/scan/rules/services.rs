//! Version control, payment, messaging, LLM and AI providers, and package registries.

use super::*;

/// The version control rules, in rule order.
pub(super) fn version_control() -> Vec<Rule> {
    use Check::*;
    vec![
        tok(
            "github-token",
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            45,
            r"(?P<s>gh[pousr]_(?P<r>[0-9A-Za-z]{36}))",
            Crc32Base62,
        ),
        tok(
            "github-fine-grained-pat",
            &["github_pat_"],
            100,
            r"(?P<s>github_pat_(?P<r>[0-9A-Za-z_]{82}))",
            Entropy(3.0),
        ),
        tok(
            "gitlab-token",
            &[
                "glpat-",
                "gldt-",
                "glrt-",
                "gloas-",
                "glsoat-",
                "glft-",
                "glimt-",
                "glagent-",
                "glcbt-",
                "glffct-",
                "glwt-",
                "glptt-",
                "GR1348941",
            ],
            120,
            r"(?P<s>(?:gl(?:pat|dt|rt|oas|soat|ft|imt|agent|cbt|ffct|wt|ptt)-|GR1348941)(?P<r>[0-9A-Za-z_-]{20,80}(?:\.[0-9a-z]{2}\.[0-9a-z]{9})?))",
            Mixed(3.0),
        ),
    ]
}

/// The payment rules, in rule order.
pub(super) fn payment() -> Vec<Rule> {
    use Check::*;
    vec![
        tok(
            "stripe-secret-key",
            &["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"],
            260,
            r"(?P<s>(?:[sr]k_(?:live|test)_|whsec_)(?P<r>[0-9A-Za-z]{24,247}))",
            Mixed(3.5),
        ),
        tok(
            "square-token",
            &["sq0atp-", "sq0csp-", "EAAA"],
            80,
            r"(?P<s>(?:sq0atp-(?P<r>[0-9A-Za-z_-]{22})|sq0csp-[0-9A-Za-z_-]{43}|EAAA[0-9A-Za-z_-]{60}))",
            Mixed(3.5),
        ),
        tok(
            "facebook-access-token",
            &["EAACEdEose0cBA", "EAAG", "EAAB", "EAAJ"],
            260,
            r"(?P<s>EAA(?:CEdEose0cBA|G|B|J)(?P<r>[0-9A-Za-z]{90,240}))",
            Mixed(4.0),
        ),
        tok(
            "braintree-access-token",
            &["access_token$"],
            80,
            r"(?P<s>access_token\$(?:production|sandbox)\$(?P<r>[0-9a-z]{16}\$[0-9a-f]{32}))",
            Entropy(3.0),
        ),
        tok(
            "razorpay-key",
            &["rzp_live_", "rzp_test_"],
            40,
            r"(?P<s>rzp_(?:live|test)_(?P<r>[A-Za-z0-9]{14}))",
            Mixed(3.0),
        ),
        tok(
            "flutterwave-key",
            &["FLWSECK-", "FLWSECK_TEST-"],
            60,
            r"(?P<s>FLWSECK(?:_TEST)?-(?P<r>[a-f0-9]{32})-X)",
            Entropy(3.0),
        ),
        tok(
            "plaid-access-token",
            &[
                "access-sandbox-",
                "access-development-",
                "access-production-",
            ],
            60,
            r"(?P<s>access-(?:sandbox|development|production)-(?P<r>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}))",
            Entropy(3.0),
        ),
        tok(
            "shippo-token",
            &["shippo_live_", "shippo_test_"],
            60,
            r"(?P<s>shippo_(?:live|test)_(?P<r>[a-f0-9]{40}))",
            Entropy(3.0),
        ),
        tok(
            "easypost-key",
            &["EZAK", "EZTK"],
            60,
            r"(?P<s>EZ[AT]K(?P<r>[A-Za-z0-9]{54}))",
            Mixed(3.5),
        ),
        tok(
            "duffel-token",
            &["duffel_live_", "duffel_test_"],
            60,
            r"(?P<s>duffel_(?:live|test)_(?P<r>[A-Za-z0-9_=-]{43}))",
            Entropy(3.5),
        ),
    ]
}

/// The messaging rules, in rule order.
pub(super) fn messaging() -> Vec<Rule> {
    use Check::*;
    vec![
        tok(
            "slack-token",
            &[
                "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xapp-", "xoxe.",
            ],
            260,
            r"(?P<s>(?:xox[baprseo]|xapp|xoxe\.xox[bp])-(?P<r>[0-9A-Za-z-]{10,250}))",
            Mixed(3.0),
        ),
        text(
            "slack-webhook",
            &["hooks.slack.com"],
            12,
            160,
            r"(?P<s>https?://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<r>[A-Za-z0-9+/_-]{20,120}))",
            Entropy(3.0),
        ),
        text(
            "discord-webhook",
            &["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"],
            20,
            120,
            r"(?P<s>discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<r>[A-Za-z0-9_-]{60,68}))",
            Entropy(3.5),
        ),
        text(
            "teams-webhook",
            &[".webhook.office.com/"],
            40,
            300,
            r"(?P<s>[a-z0-9-]{1,40}\.webhook\.office\.com/webhookb2/(?P<r>[A-Za-z0-9@/_-]{40,250}))",
            Entropy(3.5),
        ),
        text(
            "telegram-bot-token",
            &[":AA"],
            10,
            40,
            r"(?P<s>[0-9]{8,10}:AA(?P<r>[0-9A-Za-z_-]{33}))",
            Entropy(3.5),
        ),
        tok(
            "twilio-api-key",
            &["SK"],
            40,
            r"(?P<s>SK(?P<r>[0-9a-fA-F]{32}))",
            Mixed(3.0),
        ),
        tok(
            "sendgrid-api-key",
            &["SG."],
            75,
            r"(?P<s>SG\.(?P<r>[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}))",
            Entropy(3.5),
        ),
        tok(
            "mailgun-api-key",
            &["key-"],
            40,
            r"(?P<s>key-(?P<r>[0-9a-f]{32}))",
            Mixed(3.0),
        ),
        text(
            "mailchimp-api-key",
            &["-us"],
            32,
            8,
            r"(?P<s>[0-9a-f]{32}-us[0-9]{1,2})",
            Mixed(3.0),
        ),
        tok(
            "brevo-api-key",
            &["xkeysib-", "xsmtpsib-"],
            100,
            r"(?P<s>x(?:keysib|smtpsib)-(?P<r>[a-f0-9]{64}-[A-Za-z0-9]{16}))",
            Entropy(3.5),
        ),
        text(
            "firebase-cloud-messaging-key",
            &[":APA91b"],
            12,
            150,
            r"(?P<s>AAAA[A-Za-z0-9_-]{7}:APA91b(?P<r>[A-Za-z0-9_-]{134}))",
            Entropy(4.0),
        ),
        tok(
            "typeform-token",
            &["tfp_"],
            70,
            r"(?P<s>tfp_(?P<r>[A-Za-z0-9_.=-]{59}))",
            Mixed(3.5),
        ),
    ]
}

/// The LLM and AI providers rules, in rule order.
pub(super) fn ai_providers() -> Vec<Rule> {
    use Check::*;
    vec![
        text(
            "openai-api-key",
            &["T3BlbkFJ"],
            100,
            100,
            r"(?P<s>sk-(?:(?:proj|svcacct|admin)-)?(?P<r>[A-Za-z0-9_-]{20,80}T3BlbkFJ[A-Za-z0-9_-]{20,80}))",
            Entropy(3.0),
        ),
        tok(
            "openai-api-key",
            &["sk-proj-", "sk-svcacct-", "sk-admin-"],
            220,
            r"(?P<s>sk-(?:proj|svcacct|admin)-(?P<r>[A-Za-z0-9_-]{40,200}))",
            Entropy(3.5),
        ),
        tok(
            "anthropic-api-key",
            &["sk-ant-"],
            140,
            r"(?P<s>sk-ant-(?:api|admin|sid|oat|ort)[0-9]{2}-(?P<r>[A-Za-z0-9_-]{80,120}))",
            Entropy(3.5),
        ),
        tok(
            "openrouter-api-key",
            &["sk-or-v1-"],
            80,
            r"(?P<s>sk-or-v1-(?P<r>[a-f0-9]{64}))",
            Entropy(3.0),
        ),
        tok(
            "huggingface-token",
            &["hf_", "api_org_"],
            45,
            r"(?P<s>(?:hf_|api_org_)(?P<r>[A-Za-z]{34}))",
            Entropy(3.5),
        ),
        tok(
            "groq-api-key",
            &["gsk_"],
            60,
            r"(?P<s>gsk_(?P<r>[A-Za-z0-9]{52}))",
            Mixed(3.5),
        ),
        tok(
            "replicate-api-token",
            &["r8_"],
            45,
            r"(?P<s>r8_(?P<r>[A-Za-z0-9]{37}))",
            Mixed(3.5),
        ),
        tok(
            "perplexity-api-key",
            &["pplx-"],
            60,
            r"(?P<s>pplx-(?P<r>[A-Za-z0-9]{48}))",
            Mixed(3.5),
        ),
        tok(
            "xai-api-key",
            &["xai-"],
            90,
            r"(?P<s>xai-(?P<r>[A-Za-z0-9]{80}))",
            Mixed(4.0),
        ),
        tok(
            "nvidia-api-key",
            &["nvapi-"],
            75,
            r"(?P<s>nvapi-(?P<r>[A-Za-z0-9_-]{64}))",
            Entropy(3.5),
        ),
        tok(
            "langsmith-api-key",
            &["lsv2_pt_", "lsv2_sk_"],
            60,
            r"(?P<s>lsv2_(?:pt|sk)_(?P<r>[a-f0-9]{32}_[a-f0-9]{10}))",
            Entropy(3.0),
        ),
        tok(
            "pinecone-api-key",
            &["pcsk_"],
            90,
            r"(?P<s>pcsk_(?P<r>[A-Za-z0-9]{4,8}_[A-Za-z0-9]{55,75}))",
            Mixed(3.5),
        ),
    ]
}

/// The package registries rules, in rule order.
pub(super) fn package_registries() -> Vec<Rule> {
    use Check::*;
    vec![
        tok(
            "npm-token",
            &["npm_"],
            45,
            r"(?P<s>npm_(?P<r>[A-Za-z0-9]{36}))",
            Crc32Base62,
        ),
        tok(
            "pypi-token",
            &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
            420,
            r"(?P<s>pypi-(?P<r>AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,400}))",
            Entropy(3.5),
        ),
        tok(
            "rubygems-api-key",
            &["rubygems_"],
            60,
            r"(?P<s>rubygems_(?P<r>[a-f0-9]{48}))",
            Entropy(3.0),
        ),
        tok(
            "nuget-api-key",
            &["oy2"],
            50,
            r"(?P<s>oy2(?P<r>[a-z0-9]{43}))",
            Entropy(4.0),
        ),
        tok(
            "dockerhub-token",
            &["dckr_pat_", "dckr_oat_"],
            50,
            r"(?P<s>dckr_(?:pat|oat)_(?P<r>[A-Za-z0-9_-]{27,32}))",
            Entropy(3.5),
        ),
        tok(
            "crates-io-token",
            &["cio"],
            40,
            r"(?P<s>cio(?P<r>[A-Za-z0-9]{32}))",
            Mixed(4.0),
        ),
        tok(
            "artifactory-token",
            &["AKCp", "cmVmd"],
            80,
            r"(?P<s>(?:AKCp(?P<r>[A-Za-z0-9]{69})|cmVmd[A-Za-z0-9]{59}))",
            Mixed(4.0),
        ),
        tok(
            "clojars-token",
            &["CLOJARS_"],
            70,
            r"(?P<s>CLOJARS_(?P<r>[a-z0-9]{60}))",
            Entropy(4.0),
        ),
    ]
}
