"""Answers with citations ``[n]`` referring to the evidence order (1 = best).

Offline: an extractive answer quoting the evidence units (sentences, procedures, table rows,
commands) sharing most words with the question, one part per product version. When the
*anchor* (the first evidence item, unless another holds a clearly better unit; for a question
asking for an option or a default, the first reference entry of the top three) is a reference
entry, the answer quotes it: its defining lines (term, fields, the first sentence of its
description; a short entry whole), then its best units and the sentence that follows them,
then a unit of another item holding question words the quote lacks; units next to each other
form one run with one citation. Otherwise the best units of the top items are quoted as they
score (prose evidence: measured on the ablation sets, focusing on one item lost MuSiQue and DCD
answers), a how-to's best sentence with the block its paragraph leads into ("... as follows."
then the commands); a quoted sentence that goes on from the block before it (it starts in
lower case: ``ls -ld -- **/bar`` then "does a recursive directory search ...") is quoted with
that block's paragraph, cited once. With an LLM: a prompt in which every evidence text is wrapped as untrusted data.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional, Sequence

from schemas.errors import LLMError
from vdgr_core.query.answer_units import Unit, answer_units
from vdgr_core.query.result import Evidence
from vdgr_core.query.textutil import missing_terms, overlap, terms

# a question asking for a procedure: a block is scored whole with the sentence leading it
_HOW = re.compile(r"\bhow\s+(?:do|can|should|would|to|does|is|are)\b|\bsteps?\b|\bprocedure\b"
                  r"|\binstructions?\b|^\s*(?:reset|install|configure|set up|enable|disable|change|update)\b",
                  re.I)
# a question asking for a command, a statement or a call: a block is scored with its lead-in too
# ("Creation of virtual environments is done by executing the command venv:" over the command)
_COMMAND_Q = re.compile(r"\b(?:what|which)\s+(?:\w+\s+){0,2}?(?:command|invocation|statement|call)s?\b"
                        r"|\bcommand[- ]line\b", re.I)
# a question asking what happens when a setting is left alone: sentences naming the default count
# (not a "non-default value": that sentence is about changing it)
_DEFAULT_Q = re.compile(r"\bdefaults?\b|\bunless\b|\bif (?:i|you|we) (?:do not|don't|never)\b|\bwithout (?:setting|"
                        r"specifying|changing|configuring)\b|\bif (?:it is |it's )?(?:not set|unset|left unspecified)\b"
                        r"|\bout of the box\b"
                        r"|\b(?:has|have|is|are|was)\s+(?:never|not)\s+(?:been\s+)?(?:set|given|specified|configured)\b"
                        r"|\bif\s+no\s+\S+(?:\s+\S+)?\s+(?:is|are|has|have)\s+(?:ever\s+)?(?:been\s+)?(?:set|given|specified)\b"
                        r"|\bwithout\s+(?:an?|any)\s+\S+\s+(?:argument|option|value|setting)\b|\bwhen\s+omitted\b", re.I)
_DEFAULT_S = re.compile(r"(?<!non-)(?<!non )\bdefaults?\b|\b(?:if|when) (?:it is )?(?:not set|unset|not specified|unspecified|left unspecified|"
                        r"omitted)\b|\bunless\b", re.I)
# a sentence that leans on the one before it ("Use of this algorithm is recommended ...", "The
# HEAD in such a state is called detached")
_ANAPHOR = re.compile(r"^(?:this|these|that|those|it|they|such|use of this|in this case|in that case)\b"
                      r"|^(?:\S+\s+){1,5}such\s+an?\b", re.I)
DEFAULT_BONUS = 0.25     # added to a sentence naming a default, for a question about one
# a sentence that states what a setting is when left alone ("The default value is 1232.",
# "defaults to 2000 ms", "When not set, the "OPTIONS" method is used"), not one that only
# mentions a default ("a useful default ... would be 1432")
_DEFAULT_STATED = re.compile(r"(?<!non-)(?<!non )\bdefaults?\s+(?:value\s+|setting\s+|mode\s+)?(?:is|are|was|of|to)\b"
                             r"|\bdefault\s*[:=]|\b(?:if|when)\s+(?:it\s+is\s+|this\s+is\s+)?(?:not\s+set|unset|"
                             r"not\s+specified|unspecified|left\s+unspecified|omitted|not\s+given)\b|\bby\s+default\b", re.I)
# "By default, ..." often tells a behaviour ("By default, server health checks only consist in
# ..."), the forms above a value: a value's statement goes first
_BY_DEFAULT_WORDS = re.compile(r"\bby\s+default\b", re.I)
# a sentence leading into the block after it ("... as follows.", "Run the following:")
_LEADS_IN = re.compile(r"(?::|\b(?:as\s+follows|the\s+following|below|like\s+this)\s*\.)[\"'`)\]]*$", re.I)
# a question asking for an option, a parameter or a command by what it does: an entry answers it
_ENTRY_Q = re.compile(r"\bwhich\s+(?:\w+\s+){0,3}?(?:option|parameter|setting|directive|flag|variable|keyword|"
                      r"command|builtin|function|algorithm)s?\b", re.I)
# a question asking what something is or means ("What is a catalog zone in BIND?", "What does a
# fast-forward merge mean?"): its subject, up to a qualifier ("in BIND") or a second question
_WHAT_IS_Q = re.compile(r"^\s*what\s+(?:is|are|does|do)\s+(?:an?\s+|the\s+)?(?P<subject>.+?)"
                        r"(?:\s+(?:mean|stand\s+for)|\s+(?:in|of|for)\s+[\w.-]+|\s*,|\s+and\s+|\s*\?|\s*$)", re.I)
# a sentence defining its subject: the subject's words, then "is" / "are" / "means" / "refers to" within
# its first words ('A "catalog zone" is a special DNS zone ...', "A fast-forward is a special type ...")
_COPULA = re.compile(r"\b(?:is|are|means|refers\s+to|denotes)\s+(?:an?|the|any|one|used|called)\b", re.I)
DEFINITION_WORDS = 12    # the copula of a defining sentence comes within this many words
DEFINITION_BONUS = 0.25  # added to a sentence defining the subject, for a question asking what it is
ENTRY_ANCHOR_ITEMS = 3   # an option question's anchor: a reference entry among this many items
LEAN_SENTENCES = 2       # sentences before a "this ..." sentence quoted with it
SUBJECT_UNITS = 6        # units of the block paragraph a continuing sentence is quoted with
WHOLE_ENTRY_CHARS = 700  # a reference entry this short is quoted whole
# a line that ends a sentence (prose that starts with its title is no term line)
_CLOSED_LINE = re.compile(r"[.!?]$")
# a field of an entry (``Grammar: max-cache-size ...;``, ``Default: unset``): a block, not its first sentence
_FIELD_LINE = re.compile(r"^[A-Z][A-Za-z -]{1,24}:\s")
# a table of fields opening a section (``type | default | mandatory``, ``Syntax: ... Default: ...``)
_FIELD_HEAD = re.compile(r"^(?=.*(?:\||:)).*\bdefault\b", re.I)
NO_ANSWER = "No answer was found in the indexed documentation you can access."
MAX_SENTENCES = 3        # an answer's budget, in sentences (a block costs one per line)
TOP_EVIDENCE = 5
PER_VERSION = 2          # the budget of each part when the answer is split by version
FOLLOW_SHARE = 0.3       # a unit after the best one must score above this share of the best
RANK_BONUS = 0.05        # a unit's bonus for its evidence rank n: RANK_BONUS / n
ONE_UNIT_RANK_BONUS = 0.2   # the same for a how-to or an entry question, answered by one unit
LOOSE_LIST_ITEMS = 12    # a how-to's list item is quoted with at most this many items of its list
FLOOR = RANK_BONUS       # a unit scoring only the first item's rank bonus answers nothing
VERSION_SHARE = 0.5      # a version gets a part when one of its units scores >= this share of the best
ANCHOR_SHARE = 0.4       # the first evidence is the anchor while its best unit scores >= this share of the best
OTHER_SENTENCES = 1      # the budget of the units quoted from items other than the anchor
HEAD_MAX_CHARS = 500     # an entry's defining lines (term, fields) quoted before its first sentence
# a title that is a keyword's syntax (``set weight <backend>/<server> <weight>[%]``, ``-f <file>``)
_SYNTAX_TITLE = re.compile(r"[<\[{]|^[-+]{1,2}\w")
# a title that is an identifier (an option, a parameter): words joined by "_-.:", camelCase or CAPITALS
_IDENTIFIER_TITLE = re.compile(r"^(?:\S*[_.:-]\S*|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z][A-Z0-9]{3,})$")


class _Scored(NamedTuple):
    score: float
    n: int               # 1-based evidence number
    unit: Unit
    version: str


def extractive_answer(question: str, evidence: Sequence[Evidence]) -> str:
    """The best units of the top evidence, each followed by its citation ``[n]``.

    The units (:func:`vdgr_core.query.answer_units.answer_units`) are sentences split on
    sentence boundaries, and procedures, table rows and command lines quoted whole; headings
    are never quoted. A unit is scored by the share of the question's words it holds, plus a
    bonus for better evidence (:data:`RANK_BONUS` over the evidence rank; for a how-to or an
    entry question, which one unit answers, :data:`ONE_UNIT_RANK_BONUS`). A table row is
    scored with its header; a block, for a how-to question or one asking for a command
    (:data:`_COMMAND_Q`), with the sentence leading it (then quoted with it), else by its best
    line. A sentence naming a default gets
    :data:`DEFAULT_BONUS` for a question about one; a sentence defining what a "what is X"
    question names gets :data:`DEFINITION_BONUS` (:func:`defines`). The
    best unit is always quoted, with the sentence after it when that adds a question word; the
    next ones while they fit :data:`MAX_SENTENCES` (a block costs one per line) and score above
    :data:`FOLLOW_SHARE` of the best (:func:`_pick`).

    When units of more than one product version score at least :data:`VERSION_SHARE` of the
    best and the question names none of them (a caller's version filter leaves one version in
    the evidence), the answer has one labelled part per version, best version first
    ("For v2.0: ...\\n\\nFor v1.0: ..."), after any unversioned units; a question naming
    one of the versions is answered from that version (and unversioned evidence) only.
    """
    if not evidence:
        return NO_ANSWER
    qterms = terms(question)
    how = bool(_HOW.search(question) or _COMMAND_Q.search(question))
    top = list(enumerate(evidence[:TOP_EVIDENCE], 1))
    named = named_versions(question, {ev.version for _, ev in top if ev.version})
    if named:
        top = [(n, ev) for n, ev in top if not ev.version or ev.version in named]
    default_q = bool(_DEFAULT_Q.search(question))
    subject = defined_subject(question)
    # a procedure or an entry answers a how-to or an entry question whole, and the section
    # retrieval ranked first holds it more often than a unit's share of the question's words
    # says; other questions may need a fact from each of several items (a bridge)
    rank_bonus = ONE_UNIT_RANK_BONUS if how or _ENTRY_Q.search(question) else RANK_BONUS
    scored = [_Scored(_score(qterms, u, how) + rank_bonus / n + (DEFAULT_BONUS if default_q and _DEFAULT_S.search(u.text) else 0.0)
                      + (DEFINITION_BONUS if subject and defines(u, subject) else 0.0),
                      n, u, ev.version)
              for n, ev in top for u in answer_units(ev.text, [ev.title, *ev.path]) if len(u.text) >= 3]
    if not scored:
        return NO_ANSWER
    scored.sort(key=lambda x: (-x.score, x.n, x.unit.pos))
    best = _pick(scored, MAX_SENTENCES, qterms, how, rank_bonus)
    floor = max(rank_bonus, VERSION_SHARE * best[0].score)
    versions = list(dict.fromkeys(s.version for s in scored if s.version and s.score >= floor))
    if len(versions) < 2:
        return _focused(scored, dict(top), how, qterms, bool(default_q or _ENTRY_Q.search(question)), default_q,
                        rank_bonus)
    parts = [_join([s for s in best if not s.version], how)]
    for v in versions:
        mine = _pick([s for s in scored if s.version == v and s.score >= floor], PER_VERSION, qterms, how, rank_bonus)
        parts.append(f"For {version_label(v)}: " + _join(mine, how))
    return "\n\n".join(p for p in parts if p)


def defined_subject(question: str) -> tuple[str, ...]:
    """The content words of what ``question`` asks to be defined ("What is a catalog zone in
    BIND?" -> ``("catalog", "zone")``); () when it asks no such thing.

    Examples
    --------
    >>> defined_subject("What is a catalog zone in BIND?")
    ('catalog', 'zone')
    >>> defined_subject("What does a fast-forward merge mean, and does it create a merge commit?")
    ('fast', 'forward', 'merge')
    >>> defined_subject("How do I sign a zone?")
    ()
    """
    m = _WHAT_IS_Q.match(question)
    return tuple(terms(m.group("subject"))) if m else ()


def defines(u: Unit, subject: Sequence[str]) -> bool:
    """Whether unit ``u`` is a sentence defining ``subject``: one of its words, then a copula
    (:data:`_COPULA`), within the first :data:`DEFINITION_WORDS` words."""
    if u.kind != "sentence":
        return False
    head = " ".join(u.text.split()[:DEFINITION_WORDS])
    m = _COPULA.search(head)
    return bool(m) and overlap(subject, head[: m.start()]) > 0


def asks_for_entry(question: str) -> bool:
    """Whether ``question`` asks for an option, a parameter or a command by what it does, or
    what a setting is when left alone: a reference entry answers it."""
    return bool(_ENTRY_Q.search(question) or _DEFAULT_Q.search(question))


def _first_line(text: str) -> str:
    return " ".join(next((ln for ln in text.splitlines() if ln.strip()), "").split())


def is_definition(ev: Evidence) -> bool:
    """Whether ``ev`` is a reference entry: its text opens with a term line (its title, perhaps
    with arguments, not a sentence: the line a parser gives an entry), or with its title when
    that is a keyword's syntax (the description may run on in the same line), or with a table
    of fields naming a default, or its title is an identifier (``PollingInterval``,
    ``max-cache-size``)."""
    title = " ".join(ev.title.split()).split(", ")[0]      # a group of forms: its first one
    if not title or len(title) > 100:
        return False
    first = _first_line(ev.text)
    opens = first.casefold().startswith(title.casefold())
    term_line = opens and ((len(first) <= len(title) + 40 and not _CLOSED_LINE.search(first))
                           or bool(_SYNTAX_TITLE.search(title)))
    return term_line or bool(_FIELD_HEAD.match(first)) or bool(_IDENTIFIER_TITLE.match(title))


def _names(line: str, title: str) -> bool:
    """Whether an entry's first line is its term line: it opens with the title, or ends with it
    after a keyword (``PRAGMA cache_size`` under the title ``cache_size``)."""
    line, title = line.casefold(), title.casefold()
    return line.startswith(title) or (line.endswith(" " + title) and len(line) <= len(title) + 20)


def _head(ev: Evidence, units: Sequence[Unit]) -> tuple[str, int]:
    """An entry's defining lines, and the position of the last unit they hold (-1: none).

    The term line (the text's first line, or the title when the text does not open with it),
    then the blocks before the first sentence (fields, a table under its header row) when they
    fit :data:`HEAD_MAX_CHARS`, then that first sentence.
    """
    first, title = _first_line(ev.text), " ".join(ev.title.split())
    term = first if _names(first, title) and len(first) <= len(title) + 20 else title
    sentence = next((u for u in units if u.kind == "sentence" and not _FIELD_LINE.match(u.text)), None)
    if sentence is None:
        return term, -1
    blocks: list[str] = []
    for u in units[: sentence.pos]:
        if u.kind == "row" and u.lead and (not blocks or blocks[-1] != u.lead) and u.lead not in blocks:
            blocks.append(u.lead)
        blocks.append(u.text)
    lines = [term] + (blocks if sum(len(b) for b in blocks) <= HEAD_MAX_CHARS else []) + [sentence.text]
    if not blocks and " ".join(sentence.text.split()).casefold().startswith(" ".join(term.split()).casefold()):
        lines = [sentence.text]          # the term runs on into the first sentence
    return "\n".join(lines), sentence.pos


def _whole(ev: Evidence) -> str:
    """A short entry as an answer quotes it: its lines, wrapped lines joined."""
    first, title = _first_line(ev.text), " ".join(ev.title.split())
    lines = [ln.strip() for ln in ev.text.splitlines() if ln.strip()]
    if not _names(first, title):
        lines.insert(0, title)
    return "\n".join(lines)


def _focused(scored: Sequence[_Scored], evidence: dict, how: bool, qterms: Sequence[str] = (),
             entry_q: bool = False, default_q: bool = False, least: float = FLOOR) -> str:
    """The answer from one anchor evidence item (see the module docstring), then units of the
    other items that hold question words (``qterms``) the anchor's quote lacks. For a question
    asking for an option or a default (``entry_q``), a reference entry among the first
    :data:`ENTRY_ANCHOR_ITEMS` items is the anchor when the first item is not one. For a
    question about a default (``default_q``), an entry's quote holds the sentence stating its
    default (:func:`_default_statement`). A unit scoring ``least`` or less (the first item's
    rank bonus alone) answers nothing."""
    best = scored[0]
    first = [s for s in scored if s.n == 1]
    anchor = 1 if first and first[0].score >= ANCHOR_SHARE * best.score else best.n
    if entry_q and not is_definition(evidence[anchor]):
        anchor = next((n for n in range(1, ENTRY_ANCHOR_ITEMS + 1) if n in evidence and is_definition(evidence[n])
                       and any(s.n == n and s.score >= ANCHOR_SHARE * best.score for s in scored)), anchor)
    ev = evidence[anchor]
    mine = sorted((s for s in scored if s.n == anchor), key=lambda s: s.unit.pos)
    ranked = sorted(mine, key=lambda s: (-s.score, s.unit.pos))
    by_pos = {s.unit.pos: s for s in mine}
    if not is_definition(ev):       # prose: the best units of the top items, as they score
        return _join(_with_subjects(_pick(scored, MAX_SENTENCES, qterms, how, least), scored), how)
    if len(ev.text) <= WHOLE_ENTRY_CHARS and mine:
        return _runs(_whole(ev), mine[-1].unit.pos, [], anchor, how)
    head, covered = _head(ev, [s.unit for s in mine])
    chosen: dict[int, _Scored] = {}
    left = MAX_SENTENCES
    stated = _default_statement(head, covered, mine, qterms) if default_q else None
    if stated is not None:
        chosen[stated.unit.pos] = stated
        left -= 1
    floor = max(least, FOLLOW_SHARE * ranked[0].score)
    for s in ranked:
        if left <= 0 or (chosen and s.score <= floor):
            break
        if s.unit.pos <= covered or s.unit.pos in chosen:
            continue
        chosen[s.unit.pos] = s
        left -= min(MAX_SENTENCES, s.unit.text.count("\n") + 1) if s.unit.block else 1
        if _ANAPHOR.match(s.unit.text):       # the sentences a "this ..." sentence leans on
            for lean in _leaned_on(s, by_pos):
                if lean.unit.pos > covered and lean.unit.pos not in chosen:
                    chosen[lean.unit.pos] = lean
                    left -= 1
        nxt = by_pos.get(s.unit.pos + 1)       # the sentence that follows the best one
        if nxt is not None and left > 0 and nxt.score > least and nxt.unit.pos not in chosen:
            chosen[nxt.unit.pos] = nxt
            left -= 1
    picks = sorted(chosen.values(), key=lambda s: s.unit.pos)
    # then, from the other items, units holding question words the anchor's quote lacks (a
    # multi-hop question's second fact is elsewhere), best first, within their own budget
    text = _runs(head, covered, picks, anchor, how)
    missing = set(missing_terms(qterms, [text]))
    others: list[_Scored] = []
    top = max(least, FOLLOW_SHARE * best.score)
    left = OTHER_SENTENCES
    for s in scored:
        if left <= 0 or not missing:
            break
        if s.n == anchor or s.score <= top:
            continue
        covers = {t for t in missing if not missing_terms([t], [s.unit.text])}
        if covers:
            others.append(s)
            missing -= covers
            left -= min(MAX_SENTENCES, s.unit.text.count("\n") + 1) if s.unit.block else 1
    if not others:
        return text
    return text + ("\n" if head or any(p.unit.block for p in picks) else " ") + _join(others, how)


def _default_statement(head: str, covered: int, mine: Sequence[_Scored], qterms: Sequence[str]) -> Optional[_Scored]:
    """The sentence of an entry (``mine``, after its head) that states the default the question
    (``qterms``) asks about (:data:`_DEFAULT_STATED`); None when the head states a default or
    no sentence does.

    An entry often states several defaults, one per argument (``<method> ... When not set, the
    "OPTIONS" method is used.``, then ``<uri> ... It defaults to "/"``): a statement of a value
    goes before a "By default, ..." one (often a behaviour), then the statement whose paragraph
    holds most of the question's words, then the better-scoring sentence.

    Examples
    --------
    >>> from vdgr_core.query.answer_units import answer_units
    >>> units = answer_units("edns-udp-size\\nSets the advertised buffer size. A useful default "
    ...                      "would be 1432. The default value is 1232.", ["edns-udp-size"])
    >>> mine = [_Scored(0.1, 1, u, "") for u in units]
    >>> _default_statement("edns-udp-size", 1, mine, ["buffer", "size"]).unit.text
    'The default value is 1232.'
    """
    if _DEFAULT_STATED.search(head):
        return None
    found = [s for s in mine if s.unit.pos > covered and s.unit.kind == "sentence" and _DEFAULT_STATED.search(s.unit.text)]
    if not found:
        return None
    paras: dict[int, list[str]] = {}
    for s in mine:
        paras.setdefault(s.unit.para, []).append(s.unit.text)

    def value_stated(s: _Scored) -> bool:       # a form other than "by default" states it
        return bool(_DEFAULT_STATED.search(_BY_DEFAULT_WORDS.sub(" ", s.unit.text)))

    def about(s: _Scored) -> float:             # the paragraph's words, less the statement's own ("not set")
        return overlap(qterms, _DEFAULT_STATED.sub(" ", " ".join(paras[s.unit.para])))

    return max(found, key=lambda s: (value_stated(s), about(s), s.score, -s.unit.pos))


def _continues(u: Unit) -> bool:
    """A sentence that goes on from the block before it: it starts in lower case (``ls -ld --
    **/bar`` on its own line, then "does a recursive directory search ..."): the block is its
    subject."""
    return u.kind == "sentence" and u.text[:1].islower()


def _with_subjects(picks: Sequence[_Scored], scored: Sequence[_Scored]) -> list[_Scored]:
    """``picks`` with the block paragraph (at most :data:`SUBJECT_UNITS` units) each continuing
    sentence (:func:`_continues`) goes on from."""
    at = {(s.n, s.unit.pos): s for s in scored}
    out = list(picks)
    have = {(s.n, s.unit.pos) for s in picks}
    for s in picks:
        prev = at.get((s.n, s.unit.pos - 1))
        if not _continues(s.unit) or prev is None:
            continue
        # the paragraph before it, when it holds a block: a long block is quoted in parts, and
        # a line of it may read as a sentence (``$outchannel log_rotation,...`` between comments)
        para, pos = [], prev.unit.pos
        while len(para) < SUBJECT_UNITS and (u := at.get((s.n, pos))) is not None and u.unit.para == prev.unit.para:
            para.append(u)
            pos -= 1
        if any(u.unit.block for u in para):
            for u in para:
                if (u.n, u.unit.pos) not in have:
                    out.append(u)
                    have.add((u.n, u.unit.pos))
    return out


def _leaned_on(s: _Scored, by_pos: dict[int, _Scored]) -> list[_Scored]:
    """The sentences a "this ..." sentence ``s`` leans on: up to :data:`LEAN_SENTENCES` before
    it in its paragraph, where what "this algorithm" is was named (``leastconn The server with
    the lowest number of connections ...``, then a sentence, then "Use of this algorithm ...")."""
    out: list[_Scored] = []
    pos = s.unit.pos - 1
    while len(out) < LEAN_SENTENCES and (p := by_pos.get(pos)) is not None \
            and p.unit.para == s.unit.para and p.unit.kind == "sentence":
        out.insert(0, p)
        pos -= 1
    return out


def _runs(head: str, covered: int, picks: Sequence[_Scored], n: int, how: bool) -> str:
    """The anchor's head and picked units in reading order; units next to each other form one
    run, cited once at its end. A block stands on its own lines; sentences run on."""
    runs: list[list[tuple[str, bool]]] = [[(head, False)]] if head else []
    last = covered if head else None
    for s in picks:
        piece = (s.unit.quoted(how).rstrip(), s.unit.block)
        if runs and last is not None and s.unit.pos == last + 1:
            runs[-1].append(piece)
        else:
            runs.append([piece])
        last = s.unit.pos
    out: list[tuple[str, bool]] = []
    for run in runs:
        text, prev_block = run[0]
        for piece, block in run[1:]:
            text += ("\n" if block or prev_block else " ") + piece
            prev_block = block
        out.append((f"{text} [{n}]", "\n" in text))
    return ("\n" if any(multi for _, multi in out) else " ").join(t for t, _ in out)


def _leads_into(s: _Scored, at: dict) -> list[_Scored]:
    """For a sentence ``s``: the block its paragraph leads into ("... we need to reset it as
    follows." then the commands), with that lead-in sentence when it is the one after ``s``;
    [] when ``s`` and the sentence after it lead into no block. The block is its whole
    paragraph: a terminal session is cut into its command lines and their output, and the
    procedure is all of them (``# modinfo -p loop``, its output, ``# rmmod loop``,
    ``# modprobe loop max_part=16``)."""
    if s.unit.kind != "sentence":
        return []
    lead = s
    nxt = at.get((s.n, s.unit.pos + 1))
    if nxt is not None and nxt.unit.kind == "sentence" and nxt.unit.para == s.unit.para:
        lead, nxt = nxt, at.get((s.n, s.unit.pos + 2))
    if nxt is None or not nxt.unit.block or nxt.unit.kind == "row" or nxt.unit.lead != lead.unit.text \
            or not _LEADS_IN.search(lead.unit.text):
        return []
    block = [nxt]
    while (more := at.get((s.n, block[-1].unit.pos + 1))) is not None and more.unit.para == nxt.unit.para:
        block.append(more)
    return [lead, *block] if lead is not s else block


def _loose_list(s: _Scored, at: dict) -> list[_Scored]:
    """For a list item ``s``, the other items of its list when the list is loose (its items
    paragraphs of their own, HTML ``<li><p>``): the list units in the paragraphs right before
    and after it, at most :data:`LOOSE_LIST_ITEMS` in all with ``s``; [] for anything else."""
    if s.unit.kind != "steps":
        return []
    run = [s]
    for step in (-1, 1):
        cur = s
        while len(run) < LOOSE_LIST_ITEMS:
            nxt = at.get((s.n, cur.unit.pos + step))
            if nxt is None or nxt.unit.kind != "steps" or nxt.unit.para != cur.unit.para + step:
                break
            run.append(nxt)
            cur = nxt
    return sorted((u for u in run if u is not s), key=lambda u: u.unit.pos)


def _pick(scored: Sequence[_Scored], budget: int, qterms: Sequence[str] = (), how: bool = False,
          least: float = FLOOR) -> list[_Scored]:
    """The best units (``scored`` is best first) while they fit ``budget`` sentences (a block
    costs one per line, at most ``budget``) and score above :data:`FOLLOW_SHARE` of the best
    and ``least`` (the first item's rank bonus, :data:`FLOOR`); the best unit is always taken,
    with the sentence after it in its paragraph when that holds a question word (``qterms``)
    the best one lacks (a point made in two sentences: "ACLs are built on the same core as the
    maps ... The only real difference is that ... they only return "found""; a next sentence
    that only repeats the best one's words would take the place of another item's fact). A text
    quoted once is not quoted again (two items may repeat a sentence). For a how-to question
    (``how``), a best sentence that leads into a block, or whose next sentence does
    (:func:`_leads_into`), is quoted with that block and its lead-in, whatever the budget: the
    procedure is the answer; else the first step taken of a loose list brings the other steps
    of its list (:func:`_loose_list`), whatever the budget too."""
    out, left = [], budget
    floor = max(least, FOLLOW_SHARE * scored[0].score) if scored else least
    at = {(s.n, s.unit.pos): s for s in scored}
    quoted: set[str] = set()
    listed: list[_Scored] = []

    def take(s: _Scored, cost: int) -> None:
        nonlocal left
        out.append(s)
        quoted.add(" ".join(s.unit.text.split()).casefold())
        left -= cost

    for s in scored:
        cost = min(budget, s.unit.text.count("\n") + 1) if s.unit.block else 1
        if " ".join(s.unit.text.split()).casefold() in quoted:
            continue
        if out and (s.score <= floor or cost > left):
            continue
        take(s, cost)
        procedure = _leads_into(s, at) if how and len(out) == 1 else []
        if how and not procedure and not listed:
            procedure = listed = [u for u in _loose_list(s, at)
                                  if " ".join(u.unit.text.split()).casefold() not in quoted]
        for u in procedure:
            take(u, min(budget, u.unit.text.count("\n") + 1) if u.unit.block else 1)
        nxt = at.get((s.n, s.unit.pos + 1))
        if len(out) == 1 and left > 0 and nxt is not None and nxt.unit.kind == "sentence" \
                and nxt.unit.para == s.unit.para and _adds_terms(qterms, s.unit.text, nxt.unit.text):
            take(nxt, 1)
        if left <= 0:
            break
    return out


def _adds_terms(qterms: Sequence[str], have: str, more: str) -> bool:
    """Whether ``more`` holds a question word that ``have`` lacks."""
    lacking = missing_terms(qterms, [have])
    return len(missing_terms(lacking, [more])) < len(lacking)


def _score(qterms, u: Unit, how: bool) -> float:
    """The share of the question's words in unit ``u`` (see :func:`extractive_answer`)."""
    if u.kind == "sentence":
        return overlap(qterms, u.text)
    if u.kind == "row":
        return overlap(qterms, f"{u.lead} {u.text}") if overlap(qterms, u.text) else 0.0
    if how:
        return overlap(qterms, f"{u.lead} {u.text}")
    return max(overlap(qterms, line) for line in u.text.split("\n"))


def _join(chosen: Sequence[_Scored], how: bool = False) -> str:
    """Units in evidence and reading order, each quote cited once (a unit alone, or a block's
    paragraph with the sentence that goes on from it); a block on its own lines, after its
    lead when that ends with a colon or (``how``) was scored with it."""
    chosen = sorted(chosen, key=lambda x: (x.n, x.unit.pos))
    leads = {(s.n, s.unit.lead) for s in chosen if s.unit.quoted(how) != s.unit.text}
    out, prev_block, prev_para = "", False, None
    for i, s in enumerate(chosen):
        u = s.unit
        if not u.block and (s.n, u.text) in leads:
            continue            # quoted with its block
        nxt = chosen[i + 1] if i + 1 < len(chosen) else None
        # a block's paragraph and the sentence that goes on from it are one quote, cited once
        goes_on = nxt is not None and nxt.n == s.n and nxt.unit.pos == u.pos + 1 and (
            _continues(nxt.unit) or (nxt.unit.para == u.para and (u.block or nxt.unit.block)))
        piece = u.quoted(how).rstrip() if goes_on else f"{u.quoted(how).rstrip()} [{s.n}]"
        # within one quote, a new paragraph starts a new line
        newline = u.block or prev_block or (prev_para is not None and prev_para != u.para)
        out = piece if not out else out + ("\n" if newline else " ") + piece
        prev_block, prev_para = u.block, (u.para if goes_on else None)
    return out


def version_label(version: str) -> str:
    """``"2.0"`` -> ``"v2.0"`` (a version already starting with ``v`` is kept)."""
    return version if version[:1] in "vV" else f"v{version}"


def named_versions(question: str, versions) -> set[str]:
    """The ``versions`` the question names: ``v2``, ``v2.0``, ``version 2`` or ``2.0`` for
    version ``"2.0"`` (a trailing ``.0`` may be left out)."""
    out = set()
    q = question.casefold()
    for v in versions:
        core = v.casefold().lstrip("v").strip()
        if not core:
            continue
        short = re.sub(r"(\.0)+$", "", core)
        forms = {re.escape(core), re.escape(short)}
        alt = "|".join(sorted(forms, key=len, reverse=True))
        pat = rf"(?<![\w.])(?:v|version\s*)(?:{alt})(?![\w]|\.\d)"
        if "." in core:
            pat += rf"|(?<![\w.]){re.escape(core)}(?![\w]|\.\d)"
        if re.search(pat, q):
            out.add(v)
    return out


def answer_messages(question: str, evidence: Sequence[Evidence]) -> list[dict]:
    """The chat messages of an LLM answer; evidence is numbered ``[n]`` and wrapped as data.

    An item with an empty text (dropped by context compression) is left out; the numbers of
    the others stay those of the evidence list.
    """
    from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

    # the path and source are corpus text as well: inside the delimiters with the passage
    blocks = "\n\n".join(
        f"[{n}]\n" + wrap_untrusted(f"{' > '.join(ev.path)} ({ev.source})\n{ev.text}", "EVIDENCE")
        for n, ev in enumerate(evidence, 1) if ev.text)
    system = ("Answer the question using only the numbered evidence. Cite every claim with the "
              "evidence number in square brackets, like [1]. If the evidence does not contain the "
              "answer, say so. " + UNTRUSTED_NOTICE)
    user = f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nEvidence:\n{blocks}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def llm_answer(llm, question: str, evidence: Sequence[Evidence]) -> str:
    """Ask the LLM for an answer citing the evidence as ``[n]``; evidence is wrapped as data.

    Raises
    ------
    LLMError
        When the endpoint fails (the caller falls back to the extractive answer).
    """
    if not evidence:
        return NO_ANSWER
    text = llm.chat("answer", answer_messages(question, evidence))
    if not text.strip():
        raise LLMError("[answer] empty reply")
    return text.strip()
