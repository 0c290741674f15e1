"""A corpus of realistic credentials that must be masked, and look-alikes that must stay."""
import pytest

from vdgr_core.safety.secrets import find_secrets, fingerprint, mask_secrets

# (line of a document, the secret in it, the kind reported)
CREDENTIALS = [
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key"),
    ('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY"',
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY", "aws_access_key"),
    ("Maps use key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY in the app.",
     "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "gcp_api_key"),
    ("Clone with ghp_R2d2C3poX4wingY5tieZ6falcon7Luke8ABc as the token.",
     "ghp_R2d2C3poX4wingY5tieZ6falcon7Luke8ABc", "github_token"),
    ("GH_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456", "github_token"),
    ("The bot posts with xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1.",
     "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1", "slack_token"),
    ("Alerts go to https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/aBcDeFgHiJkLmNoPqRsTuVwX now.",
     "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/aBcDeFgHiJkLmNoPqRsTuVwX", "slack_token"),
    ("Send the header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c with each call.",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "json_web_token"),
    ("Authorization: Bearer 7f3c9a1b2d4e6f8091a2b3c4d5e6f708", "7f3c9a1b2d4e6f8091a2b3c4d5e6f708", "bearer_token"),
    ("OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "api_key"),
    ("Charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc today.", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_access_key"),
    ("The staging database password is Tr0ub4dor&3.", "Tr0ub4dor&3", "password"),
    ('The admin passphrase was set to "correcthorsebatterystaple".', "correcthorsebatterystaple", "password"),
    ("The API token: 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c", "token"),
    ("DB_PASSWORD=postgres", "postgres", "secret_keyword"),
    ("db:\n  password: 'Sup3r-S3cret!'", "Sup3r-S3cret!", "password"),
    ("DATABASE_URL=postgres://app_user:S3cr3tPassw0rd@db.internal:5432/app",
     "S3cr3tPassw0rd", "basic_auth_credentials"),
    ("mongodb+srv://reporting:hunter2hunter2@cluster0.example.net/prod",
     "hunter2hunter2", "basic_auth_credentials"),
    ("Server=sql01;Database=Payroll;User Id=sa;Password=P@ssw0rd2026;Encrypt=true",
     "P@ssw0rd2026", "password"),
    ("jdbc:postgresql://db:5432/app?user=app&password=Qw3rty!x&ssl=true", "Qw3rty!x", "password"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
     "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
     "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
     "azure_storage_account_access_key"),
]

PRIVATE_KEY = """Install this key on the jump host:

-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEA7bq98tJ2kqCXF1o3hcgMmlOn7HeuFC1LkZ4oAm0oW7v3nJ0T
q8VbYxZqv0rS9nYfKz3Wm6QwWl1nJ4d2Zk5Ybq8yG4eM3o2PqS0r9tFqz1kQJ7mA
-----END RSA PRIVATE KEY-----

Then restart the agent."""

GCP_SERVICE_ACCOUNT = ('{"type": "service_account", "project_id": "demo", "private_key_id": "abc", '
                       '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
                       '-----END PRIVATE KEY-----\\n", "client_email": "svc@demo.iam.gserviceaccount.com"}')

LOOK_ALIKES = [
    "Released 2026-11-29 (29.11.2026) for 4 100 000 RUB or 4,100,000.00 USD.",
    "Firmware 2.0.1, build 10.0.19045.3803, part SM-G973F, SKU-90214-B, P/N 0411-2345-678.",
    "Ticket 123e4567-e89b-12d3-a456-426614174000, commit 9fceb02d0ae598e95dc970b74767f19372d61af8.",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "The password is stored in the vault and rotated every 90 days.",
    "Password: required. Secret: see the operator handbook.",
    "Your new token is valid for 15 minutes.",
    "Set password=<your-password> and api_key=${API_KEY} in the environment; token = {{ token }}.",
    "pwd: $DB_PASS",
    "Open https://docs.example.com/setup?lang=en or ftp://mirror.example.org/pub/.",
    "Write to jane.doe@example.com or call +1 650-253-0000.",
    "Press the KEY button; the secret menu opens after 10 seconds.",
    "A PEM file starts with a BEGIN PRIVATE KEY line.",
    "Galaxy S10 (SM-G973F/DS) and router Orbit X2, reset with RESET for 10 s.",
]

# config-key lines whose value is a path, a map type, a placeholder or a reference (issue 30)
CONFIG_LOOK_ALIKES = [
    "$ sudo postconf -e 'smtp_sasl_password_maps = hash:/etc/postfix/sasl_passwd'",
    "smtp_sasl_password_maps = lmdb:/etc/postfix/sasl_passwd",
    "smtpd_sasl_password_maps = regexp:/etc/postfix/sasl_regexp",
    "password_maps = ldap:/etc/postfix/ldap-passwords.cf",
    "passdb_file = /etc/dovecot/users.passwd",
    "ssl_key_password_file: ~/.config/app/key.pass",
    r"PasswordFile=C:\ProgramData\App\secret.txt",
    "secret_url = file:///run/secrets/db",
    "DB_PASSWORD=changeme",
    "api_key: your_api_key_here",
    "ADMIN_PASSWORD=xxxx-xxxx-xxxx",
    "token = placeholder",
    "client_secret = get_client_secret()",
    "password = os.environ['DB_PASSWORD']",
    "password=%(db_password)s and secret: ${SECRET}",
]

# near misses of those filters that are credentials and stay masked
CONFIG_CREDENTIALS = [
    ("password = /Xy7#kq!2", "/Xy7#kq!2"),               # one slash: not a path
    ("DB_PASSWORD=hash_Xy7!pq9Lm2", "hash_Xy7!pq9Lm2"),     # no "type:" before a path
    ('password = "changeme2026!"', "changeme2026!"),       # a placeholder word and more
    ("api_key: 'your-key-9f8e7d6c5b4a'", "your-key-9f8e7d6c5b4a"),
    ('secret = "S3cr3t(1x"', "S3cr3t(1x"),                 # quoted: a literal, not a call
]


@pytest.mark.parametrize("line,secret,kind", CREDENTIALS, ids=[c[2] + str(i) for i, c in enumerate(CREDENTIALS)])
def test_credentials_are_masked_with_their_kind_and_line(line, secret, kind):
    doc = f"# Setup\n\nSome text first.\n{line}\nMore text."
    masked = mask_secrets(doc)
    assert secret not in masked.text
    assert f"[REDACTED:{kind}]" in masked.text
    first = 4 + line.count("\n")
    assert [(f.line, f.kind) for f in masked.findings] == [(first, kind)]
    assert masked.findings[0].fingerprint == fingerprint(secret)
    assert secret not in repr(masked.findings)
    assert mask_secrets(masked.text).findings == ()       # idempotent
    assert masked.text.startswith("# Setup\n\nSome text first.\n") and masked.text.endswith("\nMore text.")


def test_whole_private_key_block_is_masked():
    masked = mask_secrets(PRIVATE_KEY)
    assert "MIIEowIBAAKCAQEA" not in masked.text and "q8VbYxZqv0" not in masked.text
    assert masked.text == ("Install this key on the jump host:\n\n[REDACTED:private_key]\n\n"
                           "Then restart the agent.")
    assert [(f.line, f.kind) for f in masked.findings] == [(3, "private_key")]


def test_gcp_service_account_key_in_json_is_masked():
    masked = mask_secrets(GCP_SERVICE_ACCOUNT)
    assert "MIIEvQIBADANBgkq" not in masked.text and "[REDACTED:private_key]" in masked.text
    assert '"client_email": "svc@demo.iam.gserviceaccount.com"' in masked.text


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_stay(text):
    assert find_secrets(text) == []
    assert mask_secrets(text).text == text


@pytest.mark.parametrize("text", CONFIG_LOOK_ALIKES)
def test_paths_map_types_placeholders_and_references_are_not_credentials(text):
    assert find_secrets(text) == []


@pytest.mark.parametrize("line,secret", CONFIG_CREDENTIALS)
def test_credentials_next_to_the_filters_stay_masked(line, secret):
    assert secret not in mask_secrets(line).text


def test_a_found_value_is_masked_wherever_it_recurs():
    doc = "DB_PASSWORD=Xy7!pq9Lm2\nIf login fails, type Xy7!pq9Lm2 again."
    masked = mask_secrets(doc)
    assert "Xy7!pq9Lm2" not in masked.text
    assert [f.line for f in masked.findings] == [1, 2]


def test_lines_can_be_counted_in_the_raw_document():
    raw = "intro\n\n**password**: Zq8!vLm3pX\n"
    parsed_text = "password: Zq8!vLm3pX"           # what a parser makes of the line
    masked = mask_secrets(parsed_text, lines_in=raw)
    assert masked.text == "password: [REDACTED:password]"
    assert masked.findings[0].line == 3
    assert mask_secrets("password: Zq8!vLm3pX", lines_in="elsewhere").findings[0].line == 0


def _every_line_analysed(text: str):
    """find_secrets with every line a candidate of every detector: the triggers' reference."""
    from vdgr_core.safety import secrets as S

    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    which = set(range(len(S._PLUGINS))) | {S._KEYWORDS}
    spans = [s for n, line in enumerate(lines) for s in S._line_spans(line, starts[n], text, which)]
    seen = {text[s.start:s.end]: s.kind for s in spans if s.kind != S.PRIVATE_KEY}
    for value, kind in seen.items():
        if len(value) >= S._REPEAT_MIN and (kind in S._SHAPED or S._looks_secret(value)):
            spans.extend(S._spans_of_value(text, 0, value, kind))
    return S._merge(spans)


TRIGGER_CASES = ([c[0] for c in CREDENTIALS] + LOOK_ALIKES + CONFIG_LOOK_ALIKES + [GCP_SERVICE_ACCOUNT]
                 + ["Intro line.\n" + c[0].upper() + "\nOutro with a KEY." for c in CREDENTIALS]
                 + ["The Paſſword is Zq8!vLm3pX", "CONTRASEÑA=Xy7!pq9Lm2", "İ api-key: Zq8!vLm3pX"])


@pytest.mark.parametrize("text", TRIGGER_CASES)
def test_triggers_lose_no_finding(text):
    """Candidate lines come from literals and gates; analysing every line finds nothing more."""
    from vdgr_core.safety.secrets import may_hold_secrets

    assert find_secrets(text) == _every_line_analysed(text)
    if find_secrets(text):
        assert may_hold_secrets(text)
        assert may_hold_secrets("Some title\n" + text + "\nA heading")


def test_keyword_literals_cover_the_keyword_detector_words():
    import re

    from detect_secrets.plugins.keyword import DENYLIST_REGEX

    from vdgr_core.safety.secrets import _KEYWORD_LITERALS

    words = DENYLIST_REGEX[DENYLIST_REGEX.index("(") + 1:DENYLIST_REGEX.index(")")].split("|")
    literal = re.compile("|".join(_KEYWORD_LITERALS))
    for word in words:          # each alternative, with its optional underscore taken and not
        for form in {word.replace("_?", "_"), word.replace("_?", "")}:
            assert literal.search(form), form


def test_text_without_triggers_is_cleared():
    from vdgr_core.safety.secrets import may_hold_secrets

    assert not may_hold_secrets("Press the Power button.\nThe LED blinks amber for 10 s.")
    assert not may_hold_secrets("")


# (line, what the masked line must read): a closing bracket is the secret's own when the value
# opens it or quotes hold it, and prose punctuation when it closes a bracket the value never opened
BRACKETED = [
    ('password = "p4ss(w0rd)"', 'password = "[REDACTED:password]"'),
    ("password = 'x9y8z7)'", "password = '[REDACTED:password]'"),
    ('password: "Xk9!)"', 'password: "[REDACTED:password]"'),
    ("password = ((x9y8z7))", "password = [REDACTED:password]"),
    ('passphrase: "[]{}()!9"', 'passphrase: "[REDACTED:password]"'),
    ('password = "(x9y8z7)"', 'password = "[REDACTED:password]"'),
    ("The admin password was set to 'Xy!9)'.", "The admin password was set to '[REDACTED:password]'."),
    ("Log in (password: abc123!x) first.", "Log in (password: [REDACTED:password]) first."),
    ("Use [password: Tr0ub4dor!3] here.", "Use [password: [REDACTED:password]] here."),
    ("Set it (the password is Tr0ub4dor&3).", "Set it (the password is [REDACTED:password])."),
    ("(token = ab12cd34}).", "(token = [REDACTED:token]})."),
]


@pytest.mark.parametrize("line,masked", BRACKETED)
def test_a_closing_bracket_is_stripped_only_when_the_value_never_opened_it(line, masked):
    assert mask_secrets(line).text == masked


def test_a_word_in_brackets_is_a_placeholder():
    for line in ("password: [optional]", 'password = "[your-password]"', "secret = (see_vault)"):
        assert find_secrets(line) == [], line


def test_the_bracket_rule_is_a_new_rules_version():
    from vdgr_core.safety.secrets import RULES_VERSION

    assert int(RULES_VERSION.split("/")[0].split("-")[1]) >= 3


# manuals are not leaked configuration files (secrets-4): settings, examples, files and macros
DOCUMENTATION_LOOK_ALIKES = [
    "password_required = false",
    "smtpd_sasl_auth_enable: yes",
    "password_encryption = 256",
    "passwd_timeout = 30s",
    "password=secr3t",
    "client_password = example",
    "Use https://user:pass@example.com to log in.",
    "http://login-on-proxy:passwd-on-proxy@proxy-host.com:port",
    "in the form <protocol>://<user>:<password>@<domain>/<path>",
    "dkim_private_key = dkim.private",
    "dkim_private_key = /etc/exim4/${dkim_domain}.pem",
    "tls.myprivkey=\"tls-certs/key.pem\"",
    "dkim_private_key = DKIM_PRIVATE_KEY",
    "user=\"rsyslog\" pass=\"test1234\"",
]


@pytest.mark.parametrize("text", DOCUMENTATION_LOOK_ALIKES)
def test_documentation_values_are_not_credentials(text):
    assert mask_secrets(text).findings == ()


def test_the_real_credentials_beside_the_documentation_rules_stay_masked():
    for line, secret in [("password = Zq8!vLm3pX", "Zq8!vLm3pX"), ("client_password = hunter2hunter2", "hunter2hunter2"),
                         ("https://deploy:S3cr3tPassw0rd@git.internal/repo", "S3cr3tPassw0rd"),
                         ("password=P@ssw0rd2026", "P@ssw0rd2026")]:
        assert secret not in mask_secrets(line).text, line


def test_in_raw_html_a_value_ends_at_the_next_tag():
    raw = "<pre><code>token: value</code></pre> and <tt>${PWD:h}</tt>&rsquo;"
    assert mask_secrets(raw, markup=True).findings == ()
    assert mask_secrets("<code>password: Zq8!vLm3pX</code>", markup=True).text == \
        "<code>password: [REDACTED:password]</code>"


# secrets-5: a key block with no key in it, a quoted phrase after "tokens:"
PLACEHOLDER_KEY = """If the private key is stored with the certificate, it should come first:

-----BEGIN RSA PRIVATE KEY-----
... (private key in base64 encoding) ...
-----END RSA PRIVATE KEY-----
-----BEGIN CERTIFICATE-----
... (certificate in base64 PEM encoding) ...
-----END CERTIFICATE-----"""


def test_a_private_key_block_without_key_material_is_a_placeholder():
    assert mask_secrets(PLACEHOLDER_KEY).findings == ()
    # a real block, and one cut short after its first base64 run, stay masked
    assert "MIIEowIBAAKCAQEA7bq98tJ2" not in mask_secrets(PRIVATE_KEY).text
    cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----"
    assert [f.kind for f in mask_secrets(cut).findings] == ["private_key"]


def test_a_quoted_phrase_after_a_keyword_is_no_token():
    text = 'the porter tokenizer extracts the following tokens: "right now thei veri frustrat".'
    assert mask_secrets(text).findings == ()
    for line, secret in [('The API token: "x9Lq2mZ7pW".', "x9Lq2mZ7pW"),
                         ("the password is 'Zq8!vLm3pX' for now", "Zq8!vLm3pX")]:
        assert secret not in mask_secrets(line).text, line


def test_a_found_value_recurs_only_as_a_token_of_its_own():
    line = 'username = password = syslog = "syslog" ... see $rsyslogd_source/plugins for more'
    masked = mask_secrets(line).text
    assert "$rsyslogd_source" in masked and "password = [REDACTED:" in masked
    doc = "DB_PASSWORD=Xy7!pq9Lm2\nretry with Xy7!pq9Lm2, not with Xy7!pq9Lm2x."
    text = mask_secrets(doc).text
    assert text.count("Xy7!pq9Lm2") == 1 and "Xy7!pq9Lm2x" in text
