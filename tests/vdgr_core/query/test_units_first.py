"""The unit a question names, shown whole and from its beginning, comes first in its document."""
from types import SimpleNamespace

from vdgr_core.query.fusion import SectionHit
from vdgr_core.query.named import identifiers, named_first, names
from vdgr_core.query.passage import WHOLE_SECTION_CHUNKS, section_passage


def _view(sections: dict[int, list[str]]):
    texts, rows = [], {}
    for s, chunks in sections.items():
        rows[s] = list(range(len(texts), len(texts) + len(chunks)))
        texts += chunks
    return SimpleNamespace(contents=SimpleNamespace(text=texts), sections=SimpleNamespace(rows=rows))


def test_a_short_section_is_shown_whole_whatever_matched():
    view = _view({0: ["stale-answer-ttl\nSpecifies the TTL.", "The default is 30 seconds."]})
    assert WHOLE_SECTION_CHUNKS >= 2
    assert section_passage(view, 0, [1]).text == "stale-answer-ttl\nSpecifies the TTL.\nThe default is 30 seconds."


def test_a_long_section_starts_at_its_beginning_then_its_best_chunks():
    chunks = [f"Part {i} says {i}." for i in range(8)]
    view = _view({0: chunks})
    p = section_passage(view, 0, [6, 5], context=False)
    assert p.rows == (0, 5, 6)
    assert p.text.startswith("Part 0 says 0.") and "Part 5 says 5." in p.text and "Part 1" not in p.text


def test_identifiers_and_titles_the_question_names():
    assert identifiers("Is AUTO_CD or --all or gc.auto set?") == {"auto_cd", "--all", "gc.auto"}
    q = "When a DNS server serves stale answers, what TTL does it put on them?"
    assert names(q, "stale-answer-ttl")
    assert not names(q, "max-stale-ttl") and not names(q, "stale-answer-enable")
    assert names("What does --all do?", "-a, --all")
    assert not names("What does --all do?", "--allow-empty")
    assert not names("How do I check the configuration?", "Configuration")      # one word names nothing
    assert names("What is tune.bufsize?", "tune.bufsize <number>")
    # a one-letter flag keeps its case: -d and -D are two options
    assert identifiers("What does mapfile -d do, and -D?") == {"-d", "-D"}
    assert not names("What does the -d delimiter do?", "-D") and names("What does -d do?", "-d delim")


def test_named_sections_take_the_first_places_of_their_document_only():
    hits = [SectionHit(s, 1.0 / (i + 1), (s,), ("hybrid",)) for i, s in enumerate([10, 11, 20, 12])]
    doc = {10: 1, 11: 1, 12: 1, 20: 2}
    title = {10: "max-stale-ttl", 11: "stale-answer-enable", 12: "stale-answer-ttl", 20: "Caching"}
    q = "What TTL do stale answers get by default?"
    out = named_first(q, hits, doc, lambda h: title[h.section])
    assert [h.section for h in out] == [12, 10, 20, 11]      # document 2 keeps its place
    assert named_first("unrelated words", hits, doc, lambda h: title[h.section]) == hits


def test_a_heading_of_words_is_no_named_unit():
    q = "Which variable sets the maximum number of commands remembered on the history list?"
    assert not names(q, "Lists of Commands")
    assert not names("Which set option makes the shell exit on a non-zero status?", "Exit Status")
    assert names("What does the max sessions setting limit?", "MaxSessions")
