"""Offline statistical technical-term extractor, shared by indexing and the query side.

Pure, deterministic functions (no randomness, no ``hash()``): the same text always yields
the same terms in the same order. No LLM and no model weights are needed.

Kinds of terms
--------------
acronym     upper-case tokens with at least two capitals or a digit: ``NFC``, ``LTE``, ``5G``,
            ``USB-C``, ``TCP/IP``.
identifier  tokens with underscores, or mixing letters and digits / separators: ``DL_MIMO_Mode``,
            ``SKU-90214-B``, ``Wi-Fi``, ``802.11ac``. Dotted numbers (``5.3.5.4``) are not terms.
camel       internal capitals: ``SmartThings``, ``PowerShare``, ``iPhone``, ``IPv6``.
versioned   one to three capitalized words followed by a version or model number
            (``Galaxy S10``, ``Note 10+``, ``Orbit X2``, ``Android 10``) and bare ``v2.1``.
multiword   runs of 2-4 capitalized words (``Always On Display``, ``Wireless PowerShare``),
            stopwords stripped from both ends.
phrase      lower prior: repeated lower-case bigrams/trigrams without stopwords
            (``screen lock``, ``battery saver``) and capitalized single words in mid-sentence
            (``Bluetooth``). In long texts they must occur at least twice.
title       a short section or document title as a whole (:func:`title_terms`): the name of
            what the section is about, whether or not its text repeats it.
"""
from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

from schemas.records import Term

__all__ = [
    "KIND_PRIORS",
    "STOPWORDS",
    "normalize_term",
    "norm_tokens",
    "extract_terms",
    "title_terms",
    "entity_importance",
]

# Prior importance of each kind of term (also used by ``entity_importance``).
KIND_PRIORS: dict[str, float] = {
    "identifier": 0.95,
    "versioned": 0.90,
    "acronym": 0.85,
    "camel": 0.85,
    "llm": 0.80,
    "multiword": 0.75,
    "title": 0.75,
    "phrase": 0.50,
}
_DEFAULT_PRIOR = 0.5

STOPWORDS: frozenset[str] = frozenset("""
a an the this that these those there here it its i me my mine we us our ours you your yours
he him his she her hers they them their theirs one ones someone something anything everything
who whom whose which what when where why how whether
is are was were be been being am do does did done doing have has had having get gets got
can could should would will shall may might must need needs ought
and or but nor so yet if then else because while although though unless until as than
of in on at to from by for with without about into onto over under between through during
before after up down out off via per within across along around near upon against toward towards
not no yes all any both each every either neither few more most less least other others some such
only own same too very just also again once further much many several
please ok okay etc eg ie e.g i.e vs
new first second third next last previous following below above
step steps figure fig table section chapter page pages appendix warning warnings
caution tip tips important example examples item items part parts see
tap taps press pressed select selected click open close go swipe turn enable enabled disable
disabled set use used using check make sure choose enter reset restart install installed
update download connect disconnect pair remove add delete edit change follow read keep hold
release insert contact visit learn find refer touch drag scroll type start stop save view show
allow wait return continue try ensure let lets like want
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
don doesn didn isn aren wasn weren won can't cannot s t ll ve re d m
""".split())

# Words after a number that make it a quantity, not a version ("Charge 15 W", "Wait 5 minutes").
_UNIT_WORDS = frozenset("""
w kw v mv a ma mah wh hz khz mhz ghz b kb mb gb tb kbps mbps gbps mm cm m km in inch inches ft
g kg lb lbs ms s sec secs second seconds min mins minute minutes h hr hrs hour hours day days
week weeks month months year years times time percent % degrees x px dpi fps nm
""".split())

_TOKEN = re.compile(r"[^\W_](?:[^\W_]|_+(?=[^\W_])|[-./](?=[^\W_]))*\+*")
_NORM_TOKEN = re.compile(r"[^\W_]+(?:\.[^\W_]+)*\+*")
_NUM = re.compile(r"\d+(?:[.\-]\d+)*\+*")
_VER = re.compile(r"[vV]\d+(?:\.\d+)*[a-z]?")
_MODEL = re.compile(r"[A-Z]{1,3}\d{1,4}[A-Za-z]?\+*")
_UNITNUM = re.compile(
    r"\d+(?:\.\d+)?(?:ghz|mhz|khz|hz|mah|kbps|mbps|gbps|kb|mb|gb|tb|kw|w|mv|ma|v|mm|cm|km|m|ms|s|"
    r"sec|h|hr|hrs|min|mins|nm|px|dpi|fps|p|x|st|nd|rd|th|am|pm|in|ft|lbs|lb|kg|%)",
    re.IGNORECASE,
)
_ACRONYM = re.compile(r"[0-9]*[A-Z][A-Z0-9]*(?:[-/][A-Z0-9]+)*\+*")
_SEP_SPLIT = re.compile(r"[-./]")

# Token categories. Strong ones are terms on their own; run-capable ones chain into names.
_STRONG = frozenset({"acronym", "identifier", "camel"})
_RUN = frozenset({"acronym", "identifier", "camel", "title", "model"})
_SHORT_TEXT_TOKENS = 24     # texts up to this many tokens (queries) accept phrases seen once
_MAX_NAME = 3               # name words before a version number
_MAX_RUN = 4                # longest multiword term


# --------------------------------------------------------------------------- normalization

def norm_tokens(text: str) -> list[str]:
    """Case-folded word tokens of ``text`` with separators dropped (no merging).

    ``-``, ``_``, ``/``, whitespace and punctuation separate tokens; dots between letters or
    digits (``v2.1``) and trailing ``+`` (``10+``) are kept. Co-occurrence counting matches
    normalized names against these tokens.
    """
    return _NORM_TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def normalize_term(name: str) -> str:
    """Normalize a term name into the key used to deduplicate and merge entities.

    Case-folds (after NFKC), turns ``-``, ``_``, ``/`` and whitespace into single spaces, strips
    surrounding punctuation, and joins adjacent alphabetic fragments when both have at most two
    letters or one has a single letter, so spelling variants collapse.

    Examples
    --------
    >>> normalize_term("DL_MIMO_Mode")
    'dl mimo mode'
    >>> normalize_term("Wi-Fi") == normalize_term("wifi") == normalize_term("Wi Fi")
    True
    >>> normalize_term("USB-C") == normalize_term("USB C") == normalize_term("usbc")
    True
    >>> normalize_term("  Galaxy Note 10+, ")
    'galaxy note 10+'
    """
    return _normalize_cached(name)


@lru_cache(maxsize=65536)
def _normalize_cached(name: str) -> str:
    parts = norm_tokens(name)
    if len(parts) < 2:
        return parts[0] if parts else ""
    out = [parts[0]]
    for p in parts[1:]:
        prev = out[-1]
        if prev.isalpha() and p.isalpha() and (
            (len(prev) <= 2 and len(p) <= 2) or min(len(prev), len(p)) == 1
        ):
            out[-1] = prev + p
        else:
            out.append(p)
    return " ".join(out)


# --------------------------------------------------------------------------- token classes

@lru_cache(maxsize=65536)
def _category(tok: str) -> str:
    """Shape category of one raw token (see module docstring); 'stop' and 'other' are inert."""
    low = tok.lower()
    if _NUM.fullmatch(tok):
        return "num"
    if _VER.fullmatch(tok):
        return "ver"
    if _UNITNUM.fullmatch(tok):
        return "other"
    has_digit = any(c.isdigit() for c in tok)
    has_alpha = any(c.isalpha() for c in tok)
    if not has_alpha:
        return "other"
    if "_" in tok:
        return "identifier" if len(tok) >= 3 else "other"
    if _MODEL.fullmatch(tok):
        return "model"
    if _ACRONYM.fullmatch(tok):
        letters = sum(c.isalpha() for c in tok)
        digits = sum(c.isdigit() for c in tok)
        pieces = len(_SEP_SPLIT.split(tok))
        if len(tok) < 2 or low in STOPWORDS or low.rstrip("+") in STOPWORDS:
            return "stop"
        if pieces >= 3 or digits > 2:
            return "identifier"
        if digits == 0 and pieces == 1 and (letters < 2 or letters > 5):
            return "other" if letters > 5 else "stop"
        return "acronym"
    if any(c in "-./" for c in tok):
        pieces = [p for p in _SEP_SPLIT.split(tok) if p]
        if has_digit:
            return "identifier"
        if all(p.islower() for p in pieces):
            return "other"
        if pieces[0][:1].isupper() and pieces[0][1:].islower() and all(p.islower() for p in pieces[1:]):
            return "title"           # "Bluetooth-enabled", "Plug-in"
        return "identifier"          # "Wi-Fi", "e-SIM"
    if has_digit:
        if tok[0].isdigit() and tok.rstrip("+")[-1].isalpha() and len(tok) <= 4:
            return "other"           # "2nd", "4k" in prose, unit-like leftovers
        return "identifier"          # "mp3", "S10e", "x86"
    if tok.islower():
        return "stop" if low in STOPWORDS else "lower"
    if tok[0].isupper() and tok[1:].islower():
        return "stop" if low in STOPWORDS else "title"
    if any(c.isupper() for c in tok[1:]) and any(c.islower() for c in tok):
        return "camel"
    return "other"


# --------------------------------------------------------------------------- extraction

def _freq_saturation(freq: int) -> float:
    return min(1.0, math.log2(1 + freq) / math.log2(5)) if freq > 0 else 0.0


def extract_terms(text: str, max_terms: int = 24) -> list[Term]:
    """Find technical terms in ``text`` (a chunk, a title or a query).

    Parameters
    ----------
    text:
        Any text; headings and list markers are fine.
    max_terms:
        Maximum number of terms returned.

    Returns
    -------
    list[Term]
        At most ``max_terms`` terms, deduplicated on ``norm`` (the best-scoring surface form is
        kept; ties go to the lexicographically smallest name), sorted by ``(-score, norm)``.
        ``score = prior(kind) * (0.65 + 0.35 * min(1, log2(1 + freq) / log2(5)))
        * (1 - 0.1 * first_position)``, where ``freq`` counts the mentions of the norm in the
        text (all kinds together) and ``first_position`` is the relative token offset in [0, 1]
        of the surface form's first mention.

    Examples
    --------
    >>> [t.name for t in extract_terms("How do I reset the Orbit X2 router?")]
    ['Orbit X2']
    """
    if max_terms <= 0 or not text:
        return []
    scan = _TermScan(text)
    if scan.n == 0:
        return []
    scan.capitalized_terms()
    min_phrase = 1 if scan.n <= _SHORT_TEXT_TOKENS else 2
    scan.lower_case_phrases(min_phrase)
    return _ranked_terms(scan.mentions, scan.n, min_phrase, max_terms)


class _TermScan:
    """The tokens of one text, their categories and boundaries, and the term mentions found in
    them, in the order found: ``(surface, kind, first token index)``."""

    def __init__(self, text: str):
        self.text = text
        self.spans = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
        self.n = len(self.spans)
        self.toks = [s[0] for s in self.spans]
        self.cats = [_category(t) for t in self.toks]
        self.lower_seen = {t for t, c in zip(self.toks, self.cats) if c == "lower" or c == "stop" and t.islower()}
        self.joined, self.initial = self._boundaries()
        self.mentions: list[tuple[str, str, int]] = []

    def _boundaries(self) -> tuple[list[bool], list[bool]]:
        """joined[i]: token i follows token i-1 on the same line with only spaces between.
        initial[i]: token i starts a sentence, a line or a clause after ':' / ';'."""
        n, spans = self.n, self.spans
        joined = [False] * n
        initial = [True] * n
        for i in range(1, n):
            gap = self.text[spans[i - 1][2]:spans[i][1]]
            if gap == " ":
                joined[i] = True
                initial[i] = False
            elif "\n" in gap or any(c in gap for c in ".!?:;"):
                initial[i] = True
            else:
                initial[i] = False
                joined[i] = gap.isspace()
        return joined, initial

    def _emit(self, surface: str, kind: str, k: int) -> None:
        self.mentions.append((surface, kind, k))

    def _skippable_lead(self, k: int) -> bool:
        """Token k cannot start a name: a stop word, or a sentence's capitalized first word
        that the text also writes in lower case."""
        return self.cats[k] == "stop" or (
            self.initial[k] and self.cats[k] == "title" and self.toks[k].lower() in self.lower_seen)

    def _strong_parts(self, lo: int, hi: int) -> None:
        for k in range(lo, hi):
            if self.cats[k] in _STRONG:
                self._emit(self.toks[k], self.cats[k], k)

    def _name_run(self, lo: int, hi: int) -> None:
        """Emit terms for capitalized tokens lo..hi-1 (no version number)."""
        while lo < hi and self._skippable_lead(lo):
            lo += 1
        while hi > lo and self.cats[hi - 1] == "stop":
            hi -= 1
        size = hi - lo
        if size <= 0:
            return
        if size == 1:
            self._single_name(lo)
            return
        if size <= _MAX_RUN:
            self._emit(self.text[self.spans[lo][1]:self.spans[hi - 1][2]], "multiword", lo)
            self._strong_parts(lo, hi)
            return
        start = lo
        for k in range(lo, hi + 1):
            if k == hi or self.cats[k] == "stop":
                if k > start:
                    if k - start <= _MAX_RUN and (k - start) < size:
                        self._name_run(start, k)
                    else:
                        self._strong_parts(start, k)
                start = k + 1

    def _single_name(self, k: int) -> None:
        c, tok = self.cats[k], self.toks[k]
        if c in _STRONG:
            self._emit(tok, c, k)
        elif c == "model":
            self._emit(tok, "acronym" if len(tok) <= 3 else "identifier", k)
        elif c == "title" and not self.initial[k]:
            self._emit(tok, "phrase1", k)

    def capitalized_terms(self) -> None:
        """Runs of capitalized tokens (names), each maybe ended by a version or model number,
        and versioned tokens."""
        i = 0
        while i < self.n:
            c = self.cats[i]
            if c == "ver":
                self._emit(self.toks[i], "versioned", i)
                i += 1
                continue
            if c not in _RUN and c != "stop" or c == "stop" and not self.toks[i][:1].isupper():
                i += 1
                continue
            j, version_at = self._run_end(i)
            if version_at < 0:
                self._name_run(i, j)
                i = j
                continue
            i = self._versioned_name(i, version_at)

    def _run_end(self, i: int) -> tuple[int, int]:
        """(end of the run of capitalized tokens from i, index of the version or model number
        that ends it or -1)."""
        cats, toks, joined, n = self.cats, self.toks, self.joined, self.n
        j = i + 1
        version_at = -1
        while j < n and joined[j]:
            cj = cats[j]
            if cj in ("num", "ver") or (cj == "model" and j > i):
                version_at = j
                break
            if cj in _RUN or (cj == "stop" and toks[j][:1].isupper()):
                j += 1
                continue
            break
        if version_at >= 0 and cats[version_at] == "num" and version_at + 1 < n \
                and joined[version_at + 1] and toks[version_at + 1].lower() in _UNIT_WORDS:
            version_at = -1          # "Charge 15 W": a quantity, not a version
        return j, version_at

    def _versioned_name(self, i: int, version_at: int) -> int:
        """Emit the name from i ended by the number at ``version_at``; the next token to scan."""
        lo = i
        while lo < version_at and self._skippable_lead(lo):
            lo += 1
        if lo == version_at:
            if self.cats[version_at] == "model":
                self._name_run(version_at, version_at + 1)
            return version_at + 1
        name_lo = max(lo, version_at - _MAX_NAME)
        if name_lo > lo:
            self._name_run(lo, name_lo)
        self._emit(self.text[self.spans[name_lo][1]:self.spans[version_at][2]], "versioned", name_lo)
        self._strong_parts(name_lo, version_at)
        return version_at + 1

    def _lower_case_grams(self) -> dict[str, list]:
        """Lower-case noun-like 2- and 3-grams inside clauses: gram -> [count, first index, size]."""
        cats, toks, joined, n = self.cats, self.toks, self.joined, self.n
        grams: dict[str, list] = {}
        seg: list[int] = []
        for k in range(n + 1):
            ok = k < n and cats[k] == "lower" and len(toks[k]) >= 3
            if ok and seg and joined[k]:
                seg.append(k)
                continue
            if len(seg) >= 2:
                for size in (2, 3):
                    for s in range(len(seg) - size + 1):
                        key = " ".join(toks[seg[s + q]] for q in range(size))
                        rec = grams.get(key)
                        if rec is None:
                            grams[key] = [1, seg[s], size]
                        else:
                            rec[0] += 1
            seg = [k] if ok else []
        return grams

    def lower_case_phrases(self, min_phrase: int) -> None:
        """Emit each lower-case phrase seen at least ``min_phrase`` times once per mention; a
        bigram never seen outside a kept trigram is left out."""
        kept = {g: r for g, r in self._lower_case_grams().items() if r[0] >= min_phrase}
        covered: dict[str, int] = {}      # bigram -> largest count of a kept trigram containing it
        for g, (cnt, _, size) in kept.items():
            if size == 3:
                a, b, c = g.split(" ")
                for bigram in (a + " " + b, b + " " + c):
                    covered[bigram] = max(covered.get(bigram, 0), cnt)
        for g in sorted(kept):
            cnt, first, size = kept[g]
            if size == 2 and covered.get(g, 0) >= cnt:
                continue              # never seen outside a longer phrase
            for _ in range(cnt):
                self._emit(g, "phrase", first)


def _ranked_terms(mentions: list[tuple[str, str, int]], n: int, min_phrase: int, max_terms: int) -> list[Term]:
    """Aggregate ``mentions`` per norm, score each surface form, keep the best per norm."""
    freq: dict[str, int] = {}
    forms: dict[tuple[str, str], list] = {}     # (norm, surface) -> [kind, first index]
    for surface, kind, k in mentions:
        norm = normalize_term(surface)
        if not norm or _NUM.fullmatch(norm):
            continue
        freq[norm] = freq.get(norm, 0) + 1
        key = (norm, surface)
        rec = forms.get(key)
        if rec is None:
            forms[key] = [kind, k]
        elif _kind_prior(kind) > _kind_prior(rec[0]):
            rec[0] = kind
    best: dict[str, tuple[float, str, str]] = {}
    for (norm, surface), (kind, k) in forms.items():
        f = freq[norm]
        if kind == "phrase1" and f < min_phrase:
            continue
        score = _kind_prior(kind) * (0.65 + 0.35 * _freq_saturation(f)) * (1.0 - 0.1 * k / n)
        score = round(min(1.0, max(0.0, score)), 6)
        cur = best.get(norm)
        if cur is None or score > cur[0] or (score == cur[0] and surface < cur[1]):
            best[norm] = (score, surface, "phrase" if kind == "phrase1" else kind)
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:max_terms]
    return [Term(name=s, norm=norm, kind=kind, score=sc) for norm, (sc, s, kind) in ranked]


def _kind_prior(kind: str) -> float:
    if kind == "phrase1":                 # a single capitalized word: weakest evidence
        return KIND_PRIORS["phrase"] * 0.9
    return KIND_PRIORS.get(kind, _DEFAULT_PRIOR)


# --------------------------------------------------------------------------- corpus level

TITLE_MAX_WORDS = 6            # a longer heading is a phrase about its subject, not its name
TITLE_MAX_TERMS = 4            # terms extracted from inside a title
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def title_terms(title: str) -> list[Term]:
    """The entities a section's title names: the title as a whole, then the terms inside it.

    A section is about its title (a Wikipedia passage about "Waylon Payne", a manual section
    "Wi-Fi Direct"), yet its text often names the subject by pronoun or not at all, so the
    text's own terms leave it out. Linking the section (its opening chunk, see
    :func:`vdgr_core.indexing.annotate.section_heads`) to its title makes it reachable from any
    other passage that names the title (the bridge of a multi-hop question) and lets a question
    that names the title seed the graph walk there.

    The whole title is one term of kind ``title`` when, without a trailing parenthesised
    qualifier (``It'll Be Me (Jerry Lee Lewis song)`` -> ``It'll Be Me``), it has at most
    :data:`TITLE_MAX_WORDS` words; then come up to :data:`TITLE_MAX_TERMS` terms that
    :func:`extract_terms` finds in the title (``Jerry Lee Lewis``), without repeats.

    Examples
    --------
    >>> [(t.name, t.kind) for t in title_terms("It'll Be Me (Jerry Lee Lewis song)")]
    [("It'll Be Me", 'title'), ('Jerry Lee Lewis', 'multiword')]
    >>> [t.name for t in title_terms("How to connect your phone to a TV with a cable")]
    ['TV']
    """
    title = " ".join((title or "").split())
    if not title:
        return []
    out: list[Term] = []
    name = _QUALIFIER.sub("", title).strip() or title
    norm = normalize_term(name)
    if norm and len(name.split()) <= TITLE_MAX_WORDS:
        out.append(Term(name=name, norm=norm, kind="title", score=KIND_PRIORS["title"]))
    seen = {t.norm for t in out}
    for t in extract_terms(title, max_terms=TITLE_MAX_TERMS):
        if t.norm not in seen:
            seen.add(t.norm)
            out.append(t)
    return out


def entity_importance(kind: str, frequency: int, chunk_frequency: int, n_chunks: int) -> float:
    """Importance in [0, 1] of an entity node across a domain.

    ``importance = prior(kind) * idf * tf`` with

    - ``prior``: ``KIND_PRIORS[kind]`` (0.5 for unknown kinds);
    - ``idf = 0.25 + 0.75 * log((N + 1) / (df + 0.5)) / log((N + 1) / 0.5)`` with ``N`` =
      ``n_chunks`` and ``df`` = ``chunk_frequency`` clamped to ``[1, N]`` (1.0 when ``N <= 0``): a
      term found in every chunk keeps about a quarter of its weight;
    - ``tf = 0.6 + 0.4 * min(1, log(1 + frequency) / log(21))``: mentions beyond twenty add
      nothing.

    Parameters
    ----------
    kind:
        Term kind (acronym, identifier, camel, versioned, multiword, title, phrase, llm).
    frequency:
        Total mentions of the entity in the domain.
    chunk_frequency:
        Number of chunks that mention it.
    n_chunks:
        Number of chunks in the domain.
    """
    prior = KIND_PRIORS.get(kind, _DEFAULT_PRIOR)
    if n_chunks <= 0:
        idf = 1.0
    else:
        df = min(max(chunk_frequency, 1), n_chunks)
        idf = 0.25 + 0.75 * math.log((n_chunks + 1) / (df + 0.5)) / math.log((n_chunks + 1) / 0.5)
    tf = 0.6 + 0.4 * min(1.0, math.log1p(max(frequency, 0)) / math.log(21))
    return round(min(1.0, max(0.0, prior * idf * tf)), 6)

