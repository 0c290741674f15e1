"""Credentials in text: found with detect-secrets plugins, masked deterministically.

The detector is the maintained ``detect-secrets`` plugin set, used line by line through each
plugin's ``analyze_string`` (no baseline, no verification, so nothing is sent anywhere), plus a
few patterns for what those plugins do not cover. Every match becomes a span of the text; the
masked text replaces each span with ``[REDACTED:<kind>]``.

Rules (tests/vdgr_core/safety/test_secrets.py holds the corpus that pins them):

* detect-secrets plugins used: AWS keys, Azure storage keys, basic-auth credentials in URLs
  (connection strings such as ``postgres://user:pass@host``), Discord, GitHub, GitLab, JWT,
  Mailchimp, npm, OpenAI, private keys, PyPI, SendGrid, Slack, Square, Stripe, Telegram, Twilio,
  and the keyword detector (``password=...``, ``api_key: ...``, ``secret := ...``) in its
  config-file mode.
* Not used: the high-entropy string plugins (checksums, hashes and ids in documentation are
  high-entropy look-alikes), the public-IP plugin (addresses are not credentials), the
  Artifactory plugin (its password pattern ``AP[0-9A-F]...`` matches part numbers), and the
  Cloudant, IBM Cloud IAM, IBM COS HMAC and SoftLayer plugins (case-insensitive keyword
  assignments that cost more than all the others together on every text; their
  ``*_password=`` / ``*_secret...=`` forms are caught by the keyword detector).
* Added patterns, where detect-secrets has none: the whole private-key block (the plugin only
  sees the ``BEGIN ... PRIVATE KEY`` line; the block runs to its ``END`` line, or to the end of
  the paragraph), Google API keys (``AIza...``), GitHub fine-grained tokens (``github_pat_...``),
  ``sk-`` / ``rk-`` API keys (OpenAI project keys and the like), ``Bearer`` tokens, ``AWS_SECRET_ACCESS_KEY=...``
  without quotes, and prose: "the password is X", "token: X".
* A value named by a keyword (``password=``, "password is") is one token (cut at whitespace,
  ``;``, ``&`` or ``,``; quotes and trailing ``.,;:`` removed, and a trailing ``)``, ``]`` or
  ``}`` only when the value has no opening bracket to match it (``secrets-3``: "(password:
  abc123)" gives ``abc123``, the secret ``p4ss(w0rd)`` is masked whole). Placeholders stay:
  ``<...>``, ``{...}``, ``${...}``, ``$VAR``, a word in brackets (``[password]``,
  ``(optional)``; ``(x9y8z7)`` is a secret), runs of one character (``****``), values shorter
  than four characters, and already masked values. In prose ("password is X", ``password: X``) an unquoted
  value must also look like a secret (at least six characters with a digit or a symbol), so "the
  password is stored in the vault" stays; with ``=`` any value counts.
* A keyword-named value that names no credential stays (``secrets-2``; counted on the
  benchmark corpora by ``python -m bench.quality.bench_secrets``). detect-secrets' baseline filters used
  (``detect_secrets.filters.heuristic``): ``is_templated_secret`` (``<...>``, ``{...}``,
  ``${...}``), ``is_prefixed_with_dollar_sign`` (``$VAR``), ``is_indirect_reference`` (an
  unquoted ``get_secret()``, ``os.environ["DB"]``). Not used: ``is_sequential_string`` (a
  manual's ``password = 12345678`` is a real, weak default), ``is_potential_uuid`` (UUID-shaped
  API keys exist), ``is_likely_id_string`` (it looks anywhere before the value on the line, so
  ``key_id=...;password=X`` would pass), and the file-name filters (we mask text, not files).
  Added: a file path of two or more parts (``/etc/postfix/sasl_passwd``, ``~/.pgpass``,
  ``C:\\keys\\db.txt``), a ``type:path`` reference (Postfix lookup tables ``hash:``,
  ``regexp:``, ``lmdb:``, ``ldap:/etc/...``; ``file:///...``), and placeholder words
  (``changeme``, ``your_api_key_here``, ``placeholder``, ``xxxx-xxxx``). A credential in a
  URL is still found by the basic-auth plugin, whatever the keyword names.
* Documentation examples are masked like real credentials (``AKIAIOSFODNN7EXAMPLE`` is
  credential-shaped, and a reader cannot tell an example from a live key).
* Look-alikes that stay: dates, amounts, versions, part numbers, UUIDs, hashes, URLs without a
  password, e-mail addresses and phone numbers (personal data is the answer screen's concern,
  :mod:`vdgr_core.safety.personal`).
* Documentation is not a leaked configuration file (``secrets-4``): a keyword-named value, or
  the password of a URL, that is a boolean or setting word (``false``, ``unset``), a number
  (``10240000``, ``30s``), an example word (``secret``, ``secr3t``, ``pass``: compared with
  digits read as letters), a descriptive placeholder (``passwd-on-proxy``), a file name
  (``dkim.private``, ``ca-key.pem``), a macro name (``DKIM_PRIVATE_KEY``) or a path with
  variables (``/etc/exim4/$domain.pem``) is no credential (:func:`is_example_value`). In raw
  HTML (``markup``) a value ends at the next tag. Key material, tokens of a known shape and
  real connection strings are still masked.
* A private-key block without key material (``-----BEGIN RSA PRIVATE KEY-----`` over "...
  (private key in base64 encoding) ...", Python's ssl manual) is a placeholder; a block with a
  base64 run of 16 characters or more, even cut short, is masked (``secrets-5``). In prose, a
  quote that does not close after the value opens a phrase, not a quoted token: 'the porter
  tokenizer extracts the following tokens: "right now thei veri frustrat"' keeps its words.
* Any other occurrence of a found value is masked too (on its line; elsewhere in the text when
  it has eight characters or more), where it stands as a token of its own, not inside a longer
  word (``secrets-6``: the example password ``syslog`` leaves ``$rsyslogd_source`` alone).
  Masking is idempotent: a masked text has no finding.
"""
from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

from detect_secrets.__version__ import VERSION as _DETECT_SECRETS_VERSION
from detect_secrets.filters.heuristic import is_indirect_reference, is_prefixed_with_dollar_sign, is_templated_secret
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import (FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX, FOLLOWED_BY_COLON_REGEX,
                                            FOLLOWED_BY_EQUAL_SIGNS_REGEX, KeywordDetector)
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from vdgr_core.safety.casefold import fold_lower

# Part of the build settings recorded in the manifest: a change of these rules (or of the
# detect-secrets release) makes the next update rebuild every domain.
RULES_VERSION = f"secrets-6/detect-secrets-{_DETECT_SECRETS_VERSION}"

PRIVATE_KEY = "private_key"
_MASK = "[REDACTED:{kind}]"
_MASKED = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def mask_token(kind: str) -> str:
    """What a credential of ``kind`` is replaced with: ``[REDACTED:<kind>]``."""
    return _MASK.format(kind=kind)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


# Plugins in priority order: when spans overlap, the first plugin's kind names the finding.
_PLUGINS = tuple((_slug(p.secret_type), p) for p in (
    PrivateKeyDetector(), AWSKeyDetector(), AzureStorageKeyDetector(), GitHubTokenDetector(),
    GitLabTokenDetector(), SlackDetector(), JwtTokenDetector(), OpenAIDetector(), StripeDetector(),
    SendGridDetector(), PypiTokenDetector(), NpmDetector(), TwilioKeyDetector(), MailchimpDetector(),
    DiscordBotTokenDetector(), TelegramBotTokenDetector(), SquareOAuthDetector(), BasicAuthDetector(),
))
_JWT = _slug(JwtTokenDetector.secret_type)
_BASIC_AUTH = _slug(BasicAuthDetector.secret_type)
_KEYWORD = KeywordDetector()
_KEYWORD_KIND = _slug(KeywordDetector.secret_type)          # "secret_keyword"
# the keyword detector's config-file regexes: ``=`` / ``:=`` assignments, and ``key: value``
_ASSIGNMENT_GROUPS = {FOLLOWED_BY_EQUAL_SIGNS_REGEX: 5, FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX: 4}
_COLON_GROUPS = {FOLLOWED_BY_COLON_REGEX: 4}

# Patterns detect-secrets 1.5 has no plugin for: (kind, regex whose group 1 or ``value`` is the
# secret, whether it is prose (an unquoted value must look like a secret), trigger: literals of
# the lower-cased text, one of which every match contains)
_EXTRA = (
    ("gcp_api_key", re.compile(r"\b(AIza[0-9A-Za-z_\-]{35})(?![0-9A-Za-z_\-])"), False, "aiza"),
    ("github_token", re.compile(r"\b(github_pat_[0-9A-Za-z_]{22,255})\b"), False, "github_pat_"),
    ("api_key", re.compile(r"\b((?:sk|rk)-(?:proj-|svcacct-|admin-|live-|test-)?[0-9A-Za-z][0-9A-Za-z_\-]{19,})"),
     False, "sk-|rk-"),
    ("bearer_token", re.compile(r"\bBearer\s+([0-9A-Za-z\-._~+/]{20,}=*)"), False, "bearer"),
    ("aws_secret_access_key", re.compile(
        r"(?i)\baws_?secret_?(?:access_?)?key\s*[=:]\s*[\"']?([0-9A-Za-z/+]{40})(?![0-9A-Za-z/+])"), False,
     "aws_?secret"),
    # prose: "the staging database password is X", "API token: X", "secret was set to X"
    ("password", re.compile(
        r"(?i)\b(?P<key>password|passphrase|passcode|passwd|secret|api[ _-]?key|access[ _-]?key|"
        r"(?:auth|access|api|bearer)?[ _-]?token)s?"
        r"(?:\s+(?:is|was|are|will\s+be|has\s+been|reads)(?:\s+set\s+to)?\s*[:=]?|\s+set\s+to|(?P<sep>\s*[:=]))\s*"
        r"(?P<value>[\"'`]?[^\s\"'`]+[\"'`]?)"), True, r"pass|secret|api[ _-]?key|access[ _-]?key|token"),
)
_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d+:")
_PRIVATE_KEY_END = re.compile(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{16,}")     # a base64 run: a key's body, even cut short
_VALUE_CUT = re.compile(r"[\s;&,]")      # an assigned value ends there (connection strings, URLs)
_WORD_CUT = re.compile(r"\s")
# in raw HTML a value also ends at the next tag: a literal "<" in HTML text is written "&lt;"
_MARKUP_CUTS = {_VALUE_CUT: re.compile(r"[\s;&,<]"), _WORD_CUT: re.compile(r"[\s<]")}
_NAMED_VALUE = re.compile(r"[A-Za-z]+=")        # used with match(): anchored at the start
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")
_JWT_TAIL = re.compile(r"[A-Za-z0-9\-_.+/=]*")
_QUOTES = "\"'`"
_TRAILING = ".,;:"                                  # prose punctuation after a value
_CLOSERS = {")": "(", "]": "[", "}": "{"}          # stripped when unmatched in the value
_BRACKETED_WORD = re.compile(r"[A-Za-z_.\- ]*")     # "(optional)", "[your-password]": no secret
_SYMBOLS = frozenset("!@#$%^&*+=?~/\\|")
_REPEAT_MIN = 8          # other occurrences of a found value this long are masked too


@dataclass(frozen=True)
class SecretSpan:
    """One credential in a text: ``text[start:end]`` is the secret, ``kind`` what it is."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class SecretFinding:
    """A credential found in a document (never the secret itself).

    ``line`` is 1-based in the decoded document, or 0 when the secret only appeared once the
    markup was decoded (an HTML entity, inline markup around a keyword) and is not in the raw
    text verbatim. ``fingerprint`` is a digest of the secret, for an owner to tell whether two
    findings are the same credential.
    """

    line: int
    kind: str
    fingerprint: str


@dataclass(frozen=True)
class MaskedText:
    """A text with every credential replaced by ``[REDACTED:<kind>]``, and what was found."""

    text: str
    findings: tuple[SecretFinding, ...]


def fingerprint(secret: str) -> str:
    """16 hex digits of sha256 over a domain-separated secret (the findings-table column).

    A digest of a weak password can be guessed offline, so the findings table is for the index
    owners (the query side never reads it).
    """
    return hashlib.sha256(b"vdgr-secret\x00" + secret.encode("utf-8")).hexdigest()[:16]


def _strip_trailing(value: str) -> str:
    """``value`` without the punctuation prose puts after it: trailing ``.,;:``, and a closing
    bracket only when the value has no opening one left to match it ("(password: abc123)" ->
    ``abc123``; the secret ``p4ss(w0rd)`` keeps its bracket)."""
    while value:
        last = value[-1]
        if last in _TRAILING:
            value = value[:-1]
        elif last in _CLOSERS and value.count(last) > value.count(_CLOSERS[last]):
            value = value[:-1]
        else:
            break
    return value


def _clean_value(raw: str, cut: re.Pattern = _VALUE_CUT, line: str = "") -> tuple[str, bool]:
    """The secret token of a keyword-named value and whether it was quoted.

    A token written between quotes on ``line`` (the keyword detector hands it over without
    them) is whole: nothing at its end is prose punctuation.
    """
    value = raw.strip()
    quoted = bool(value) and value[0] in _QUOTES
    token = cut.split(value.strip(_QUOTES), 1)[0].strip(_QUOTES)
    value = _strip_trailing(token)
    if value != token and any(f"{q}{token}{q}" in line for q in _QUOTES):
        return token, True
    return value, quoted


def _prose_kind(key: str) -> str:
    key = key.lower()
    return "password" if key.startswith("pass") else "token" if "token" in key else "secret"


def _is_placeholder(value: str) -> bool:
    if len(value) < 4 or "REDACTED" in value or len(set(value)) == 1:
        return True
    if value[0] == "$" or value.startswith("%("):
        return True
    if any(value.startswith(a) and value.endswith(b) for a, b in (("<", ">"), ("{", "}"))):
        return True                                  # a template, as detect-secrets reads it
    if any(value.startswith(a) and value.endswith(b) for a, b in (("[", "]"), ("(", ")"))):
        return bool(_BRACKETED_WORD.fullmatch(value[1:-1]))   # "[password]", not "(x9y8z7)"
    return value.startswith("${")


#: what a keyword can name that is not a credential (a value named by ``password=``, "token:")
#: a file path of two or more parts (``/etc/postfix/sasl_passwd``, ``~/.pgpass``, ``C:\\keys\\a.pem``)
_PATH = re.compile(r"(?:~|\.{1,2}|\$\{?\w+\}?)?/[\w.@%+~${}-]+(?:/[\w.@%+~${}-]*)+|~/[\w.@%+~${}-]+"
                   r"|[A-Za-z]:\\[\w .@%+~-]+(?:\\[\w .@%+~-]*)*")
#: a lookup-table or resource reference ``type:path`` (Postfix ``hash:/etc/...``, ``regexp:``,
#: ``lmdb:``, ``ldap:/etc/postfix/ldap.cf``; ``file:///...``; a URL without a password)
_TYPED_PATH = re.compile(r"[a-z][a-z0-9+_-]*:(?:/|~/|\.{1,2}/)\S*")
#: placeholder words and masks (``changeme``, ``your_password``, ``xxx``, ``****``, ``...``)
_PLACEHOLDER_WORD = re.compile(
    r"(?i)(?:change[_-]?me|change[_-]?it|placeholder|redacted|none|null|nil|empty|dummy|sample|example|"
    r"foobar|todo|tbd|secret|password|passwd|passphrase|token|api[_-]?key|"
    r"(?:your|my|the|some|a)[_-]?(?:own[_-]?|new[_-]?|secret[_-]?)?"
    r"(?:password|passwd|pass|passphrase|pw|pwd|secret|token|api[_-]?key|key|credentials?)(?:[_-]?here)?)")
_MASK_CHARACTERS = frozenset("xX*.#_-0")
#: what a setting's value is when it is no secret: a boolean or keyword, a number with an
#: optional unit (``10240000``, ``30s``, ``0644``)
_SETTING_WORD = re.compile(r"(?i)true|false|yes|no|on|off|none|null|nil|unset|empty|default|required|optional|"
                           r"enabled?|disabled?|auto|any|all|never|always|blank|unlimited|\d+(?:\.\d+)?[a-z%]{0,3}")
#: example words a manual writes for a password, compared after undoing digit-for-letter spelling
#: (``secr3t``, ``p@ssw0rd``)
_EXAMPLE_WORDS = frozenset({"pass", "passwd", "password", "pw", "pwd", "secret", "user", "username", "login", "foo",
                            "bar", "baz", "qux", "test", "testing", "demo", "example", "sample", "value", "string",
                            "text", "mypass", "mypassword", "mysecret", "yourpassword", "yoursecret",
                            "passphrase", "token", "mytoken", "key", "mykey", "abc", "xyz"})
_WORD_AND_DIGITS = re.compile(r"([a-z]+)\d+")
_UNLEET = str.maketrans("0134578@$!|", "oieastbasil")
#: a descriptive placeholder: lower-case words joined by ``-`` or ``_``, one of them naming a
#: credential (``passwd-on-proxy``, ``your_secret_here``)
_DESCRIPTIVE = re.compile(r"[a-z]+(?:[-_][a-z]+)+")
_CREDENTIAL_WORD = re.compile(r"pass|secret|token|key|pwd|credential")
#: a file name with an extension naming what it holds (``dkim.private``, ``server.key``, ``ca-key.pem``)
_FILE_NAME = re.compile(r"(?i)(?:[\w.@%+~${}-]+/)*[\w.@%+~-]*\w\.(?:pem|key|crt|cer|csr|der|p12|pfx|jks|pub|priv|private|secret|"
                        r"pass|passwd|password|txt|conf|cfg|cnf|ini|json|ya?ml|toml|db|asc|gpg|kdbx|keytab|env)")
#: a macro or environment variable name (``DKIM_PRIVATE_KEY``)
_MACRO = re.compile(r"[A-Z]+(?:_[A-Z]+)+")


def is_example_value(value: str) -> bool:
    """A value a manual writes where a credential goes, which is no credential: a setting word
    or number, an example word (``secr3t``: compared with digits read as letters), a
    descriptive placeholder (``passwd-on-proxy``), a file name (``dkim.private``) or a macro
    name (``DKIM_PRIVATE_KEY``).

    Examples
    --------
    >>> [is_example_value(v) for v in ("false", "10240000", "secr3t", "passwd-on-proxy", "dkim.private", "test1234")]
    [True, True, True, True, True, True]
    >>> [is_example_value(v) for v in ("postgres", "S3cr3tPassw0rd", "Tr0ub4dor&3", "your-key-9f8e7d6c5b4a",
    ...                                "P@ssw0rd2026")]
    [False, False, False, False, False]
    """
    v = value.strip(_QUOTES)
    if _SETTING_WORD.fullmatch(v) or _FILE_NAME.fullmatch(v) or _MACRO.fullmatch(v):
        return True
    if v.lower().translate(_UNLEET) in _EXAMPLE_WORDS:
        return True
    word = _WORD_AND_DIGITS.fullmatch(v)          # "test1234", "password123"
    if word and word.group(1) in _EXAMPLE_WORDS:
        return True
    return bool(_DESCRIPTIVE.fullmatch(v) and _CREDENTIAL_WORD.search(v))


def _names_no_secret(value: str, line: str) -> bool:
    """A keyword-named ``value`` on ``line`` that is not a credential: detect-secrets' baseline
    heuristics (templates, ``$`` references, indirect references such as ``get_secret()`` or
    ``os.environ["DB"]``: the unquoted word of the line that starts with the value) plus paths, typed paths
    and placeholder words (the module notes list them)."""
    if is_templated_secret(value) or is_prefixed_with_dollar_sign(value):
        return True
    at = line.find(value)
    quoted = at > 0 and line[at - 1] in _QUOTES          # a string literal is no reference
    if at >= 0 and not quoted and is_indirect_reference("value = " + line[at:].split(None, 1)[0].rstrip(",;")):
        return True
    if _PATH.fullmatch(value) or _TYPED_PATH.fullmatch(value) or is_example_value(value):
        return True
    return bool(_PLACEHOLDER_WORD.fullmatch(value)) or set(value) <= _MASK_CHARACTERS


def _looks_secret(value: str) -> bool:
    """An unquoted value in prose: at least six characters with a digit or a symbol."""
    return len(value) >= 6 and (any(ch.isdigit() for ch in value) or any(ch in _SYMBOLS for ch in value))


def _cut(cut: re.Pattern, markup: bool) -> re.Pattern:
    return _MARKUP_CUTS[cut] if markup else cut


def _keyword_values(line: str, markup: bool = False) -> Iterator[tuple[str, bool]]:
    """(value, prose) pairs the keyword detector finds on ``line`` (``markup``: raw HTML)."""
    for groups, prose in ((_ASSIGNMENT_GROUPS, False), (_COLON_GROUPS, True)):
        for raw in _KEYWORD.analyze_string(line, denylist_regex_to_group=groups):
            value, quoted = _clean_value(raw, _cut(_VALUE_CUT, markup), line=line)
            if (_is_placeholder(value) or _names_no_secret(value, line)
                    or (prose and not quoted and not _looks_secret(value))):
                continue
            yield value, prose


def _spans_of_value(line: str, offset: int, value: str, kind: str) -> Iterator[SecretSpan]:
    """Every occurrence of ``value`` in ``line`` that stands as a token of its own: one inside a
    longer word is another word (the example password ``syslog`` is no part of ``rsyslogd``)."""
    start = line.find(value)
    while start >= 0 and value:
        end = start + len(value)
        inside = (value[0].isalnum() and start > 0 and line[start - 1].isalnum()) or \
            (value[-1].isalnum() and end < len(line) and line[end].isalnum())
        if not inside:
            yield SecretSpan(kind, offset + start, offset + end)
        start = line.find(value, end)


def _private_key_span(text: str, line_start: int, line_end: int) -> Optional[SecretSpan]:
    """The private-key block whose ``-----BEGIN ...-----`` marker is on ``text[line_start:line_end]``.

    To the matching ``END`` marker (within 20,000 characters: an encrypted PEM has a blank line
    inside), else to the end of the paragraph; None for a mention without the dashed marker.
    """
    begin = _PRIVATE_KEY_BEGIN.search(text, line_start, line_end)
    if begin is None:
        return None
    start = begin.start()
    end = _PRIVATE_KEY_END.search(text, begin.end(), begin.end() + 20_000)
    if end is not None:
        body_end, span_end = end.start(), end.end()
    else:
        stop = _PARAGRAPH_END.search(text, start)
        body_end = span_end = stop.start() if stop else len(text)
    if not _KEY_MATERIAL.search(text, begin.end(), body_end):
        return None         # "... (private key in base64 encoding) ...": a placeholder, no key
    return SecretSpan(PRIVATE_KEY, start, span_end)


def _secret_part(m: re.Match) -> tuple[int, int]:
    """The secret inside a plugin's match: its first group of 8+ characters (the AWS secret,
    the basic-auth password, the npm token), else the whole match (a group that is only a
    prefix, like GitHub's ``ghp``, does not count)."""
    for i in range(1, (m.lastindex or 0) + 1):
        g = m.group(i)
        if g and len(g) >= 8:
            return m.start(i), m.end(i)
    return m.start(), m.end()


def _line_spans(line: str, offset: int, text: str, which: set[int], markup: bool = False) -> Iterator[SecretSpan]:
    for n in sorted(which - {_KEYWORDS}):
        kind, plugin = _PLUGINS[n]
        if kind == PRIVATE_KEY:       # the block, when the line has its dashed marker
            span = _private_key_span(text, offset, offset + len(line))
            if span is not None:
                yield span
            continue
        # the plugin's own patterns, for positions (analyze_string yields values only)
        for pattern in plugin.denylist:
            for m in pattern.finditer(line):
                start, end = _secret_part(m)
                if kind == _BASIC_AUTH and m.lastindex:     # the password, however short
                    start, end = m.start(m.lastindex), m.end(m.lastindex)
                named = _NAMED_VALUE.match(line, start, end)     # "AccountKey=..." -> the key
                if named:
                    start = named.end()
                value = line[start:end]
                if not value or _MASKED.search(value):
                    continue
                if kind == _BASIC_AUTH and (_is_placeholder(value) or _names_no_secret(value, line)):
                    continue        # "https://user:pass@example.com": a manual's example
                if kind == _JWT:
                    if not JwtTokenDetector.is_formally_valid(value):
                        continue
                    end = _JWT_TAIL.match(line, end).end()        # the pattern stops before the signature
                else:
                    end = _TOKEN_TAIL.match(line, end).end()      # a token runs on: mask all of it
                yield SecretSpan(kind, offset + start, offset + end)
    if _KEYWORDS not in which:
        return
    for kind, pattern, prose, _ in _EXTRA:
        for m in pattern.finditer(line):
            if prose:
                # "password=X;..." ends like an assignment, "the password is X" at whitespace
                value, quoted = _clean_value(m.group("value"),
                                             _cut(_VALUE_CUT if m.group("sep") else _WORD_CUT, markup), line)
                # a quote that does not close after the value opens a phrase ('tokens: "right now
                # thei veri frustrat"'), not a quoted token
                quoted = quoted and any(f"{q}{value}{q}" in line for q in _QUOTES)
                if (_is_placeholder(value) or _names_no_secret(value, line)
                        or (not quoted and not _looks_secret(value))):
                    continue
                kind, at = _prose_kind(m.group("key")), m.start("value")
            else:
                value, at = m.group(1), m.start(1)
                if _is_placeholder(value):
                    continue
            yield from _spans_of_value(line[at:], offset + at, value, kind)
    for value, _prose in _keyword_values(line, markup):
        yield from _spans_of_value(line, offset, value, _KEYWORD_KIND)


_PRIORITY = {kind: n for n, kind in enumerate([k for k, _ in _PLUGINS] + [k for k, _, _, _ in _EXTRA]
                                              + ["token", "secret", _KEYWORD_KIND])}
# kinds whose values are shaped by their detector (not just named by a keyword)
_SHAPED = frozenset(_PRIORITY) - {"password", "token", "secret", _KEYWORD_KIND, PRIVATE_KEY}


def _triggers() -> tuple[tuple[tuple[int, re.Pattern, str], ...], re.Pattern]:
    """Patterns that can start a finding, run over the whole text to pick candidate lines.

    A whole-text match is a superset of the per-line matches (a pattern that runs across a
    line break only adds candidates), so only the lines it touches are analysed line by line:
    typical documentation has none. The detect-secrets patterns run as they are, each after a
    literal it cannot match without (:data:`_GATES`; ``in`` is ~100x faster than a pattern with
    no literal prefix). The keyword detector's words and the added patterns' triggers are
    reduced to the literals every match contains, looked for in the lower-cased text
    (case-insensitive matching is ~20x slower; an alternation of literals, each starting with
    a plain character, lets ``re`` skip to candidate first characters): every finding of the
    keyword detector or an added pattern on a line holds one of them on that line.
    """
    plugin_patterns = tuple((n, p, _GATES.get(p.pattern, "")) for n, (_, plugin) in enumerate(_PLUGINS)
                            for p in plugin.denylist)
    return plugin_patterns, re.compile("|".join(_KEYWORD_LITERALS + [t for _, _, _, t in _EXTRA]))


#: detect-secrets patterns without a literal prefix -> a literal each of their matches holds
#: (keyed by the exact pattern: a changed pattern in a new release simply runs ungated)
_GATES = {"[0-9a-z]{32}-us[0-9]{1,2}": "-us", "(?:r|s)k_live_[0-9a-zA-Z]{24}": "k_live_"}
#: every match of detect-secrets' keyword ``DENYLIST_REGEX`` holds one of these (lower case);
#: tests/vdgr_core/safety/test_secrets.py checks them against that pattern's alternatives
_KEYWORD_LITERALS = ["pass", "pwd", "secret", "contraseña", "contrasena", "api_?key", "auth_?key",
                     "service_?key", "account_?key", "db_?key", "database_?key", "priv_?key", "private_?key",
                     "client_?key"]
_TRIGGERS, _LOWER_TRIGGER = _triggers()
_LOWER_TRIGGER_ANY_CASE = re.compile(_LOWER_TRIGGER.pattern, re.IGNORECASE)
_KEYWORDS = -1          # candidate for the keyword detector and the added patterns


def _lower_trigger(text: str) -> tuple[re.Pattern, str]:
    """The lower-case trigger and the text to run it on (the text itself, case-insensitively,
    when lower-casing changes its length and so its offsets)."""
    low = fold_lower(text)
    if low is not None:
        return _LOWER_TRIGGER, low
    return _LOWER_TRIGGER_ANY_CASE, text


def _candidate_lines(text: str, starts: list[int]) -> dict[int, set[int]]:
    """Line number -> which plugins (their index, or ``_KEYWORDS``) may find something there."""
    lines: dict[int, set[int]] = {}
    runs = [(n, p, text) for n, p, gate in _TRIGGERS if gate in text] + [(_KEYWORDS, *_lower_trigger(text))]
    for n, pattern, where in runs:
        for m in pattern.finditer(where):
            first = bisect.bisect_right(starts, m.start()) - 1
            last = bisect.bisect_right(starts, max(m.start(), m.end() - 1)) - 1
            for line in range(first, last + 1):
                lines.setdefault(line, set()).add(n)
    return lines


def may_hold_secrets(text: str) -> bool:
    """False when no detector can find anything in ``text`` (a quick test: no trigger matches).

    Joining strings with line breaks keeps every match of each one (no trigger pattern is
    anchored), so one call can clear many short strings at once.
    """
    if not text:
        return False
    if any(gate in text and p.search(text) for _, p, gate in _TRIGGERS):
        return True
    pattern, where = _lower_trigger(text)
    return pattern.search(where) is not None


def find_secrets(text: str, markup: bool = False) -> list[SecretSpan]:
    """Credential spans of ``text``, sorted, overlapping spans merged.

    The kind of a merged span is that of its highest-priority detector (specific plugins
    first, the keyword and prose patterns last). With ``markup`` (raw HTML) a keyword-named
    value ends at the next tag.
    """
    if not text:
        return []
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    spans: list[SecretSpan] = []
    for n, which in sorted(_candidate_lines(text, starts).items()):
        spans.extend(_line_spans(lines[n], starts[n], text, which, markup))
    if not spans:
        return []
    # other occurrences of a found value elsewhere in the text
    seen = {text[s.start:s.end]: s.kind for s in spans if s.kind != PRIVATE_KEY}
    for value, kind in seen.items():
        if len(value) >= _REPEAT_MIN and (kind in _SHAPED or _looks_secret(value)):
            spans.extend(_spans_of_value(text, 0, value, kind))
    return _merge(spans)


def _merge(spans: list[SecretSpan]) -> list[SecretSpan]:
    spans.sort(key=lambda s: (s.start, -s.end))
    out: list[SecretSpan] = []
    for s in spans:
        if out and s.start < out[-1].end:
            last = out[-1]
            kind = min((last.kind, s.kind), key=lambda k: _PRIORITY.get(k, len(_PRIORITY)))
            out[-1] = SecretSpan(kind, last.start, max(last.end, s.end))
        else:
            out.append(s)
    return out


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def mask_secrets(text: str, *, lines_in: Optional[str] = None, markup: bool = False) -> MaskedText:
    """Replace every credential of ``text`` with ``[REDACTED:<kind>]``.

    Parameters
    ----------
    text : str
        The text to mask.
    lines_in : str, optional
        Where line numbers are counted: by default ``text`` itself; for text derived from a
        document (a parsed section), the document's raw text, in which the secret is looked up
        verbatim (line 0 when it is not there).
    markup : bool
        ``text`` is raw HTML: a keyword-named value also ends at the next tag (``<``).

    Returns
    -------
    MaskedText
        The masked text and one finding per masked span (line, kind, fingerprint).
    """
    spans = find_secrets(text, markup)
    if not spans:
        return MaskedText(text, ())
    parts, findings, pos = [], [], 0
    for s in spans:
        secret = text[s.start:s.end]
        parts.append(text[pos:s.start])
        parts.append(mask_token(s.kind))
        pos = s.end
        if lines_in is None:
            line = _line_of(text, s.start)
        else:
            at = lines_in.find(secret)
            line = _line_of(lines_in, at) if at >= 0 else 0
        findings.append(SecretFinding(line, s.kind, fingerprint(secret)))
    parts.append(text[pos:])
    return MaskedText("".join(parts), tuple(findings))


@lru_cache(maxsize=4096)
def mask_short(text: str) -> str:
    """``mask_secrets(text).text`` for short repeated strings (titles, path parts)."""
    return mask_secrets(text).text


__all__ = ["MaskedText", "SecretFinding", "SecretSpan", "RULES_VERSION", "find_secrets", "fingerprint",
           "is_example_value", "mask_secrets", "mask_short", "mask_token", "may_hold_secrets"]
