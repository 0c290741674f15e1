"""Tiny reference entries go together: a run of one-line options is one section, each term still
a title in its path, and an entry with a real description stays a section of its own."""
from vdgr_core.parsing import parse_document
from vdgr_core.parsing.toc import GROUP_MAX_CHARS, TINY_ENTRY_CHARS, build_sections, entry_level, nonspace_len
from vdgr_core.query.named import names

MAN_PAGE = """NAME
       ls - list directory contents

DESCRIPTION
       -a, --all
              do not ignore entries starting with .

       -A, --almost-all
              do not list implied . and ..

       --block-size=SIZE
              with -l, scale sizes by SIZE when printing them; e.g., '--block-size=M'; see SIZE
              format below; the units are K, M, G, T, P, E, Z, Y (powers of 1024) or KB, MB, ...

       -B, --ignore-backups
              do not list implied entries ending with ~
"""

BUILTINS = """<html><body><h1>zsh</h1><h2>Shell Builtin Commands</h2><dl>
<dt>hash</dt><dd><p>hash can be used to directly modify the contents of the command hash table, and the
named directory hash table. Normally one would modify these tables by modifying one's PATH.</p></dd>
<dt>history</dt><dd><p>Same as fc -l.</p></dd>
<dt>integer</dt><dd><p>Equivalent to typeset -i.</p></dd>
</dl><h2>Other</h2><dl><dt>r</dt><dd><p>Same as fc -e -.</p></dd><dt>jobs</dt><dd><p>Lists the jobs.</p></dd></dl>
</body></html>"""


def _paths(doc):
    return [s.heading_path for s in doc.sections]


def test_a_run_of_tiny_options_is_one_section_and_a_described_option_stays_alone():
    doc = parse_document(MAN_PAGE, "text", "ls")
    assert _paths(doc) == [("NAME",), ("DESCRIPTION",), ("DESCRIPTION", "-a, --all, -A, --almost-all"),
                           ("DESCRIPTION", "--block-size=SIZE"), ("DESCRIPTION", "-B, --ignore-backups")]
    group = doc.sections[2]
    # both entries whole, in order, each from its term
    assert group.text.index("-a, --all") < group.text.index("do not ignore") < group.text.index("-A, --almost-all")
    assert "do not list implied . and .." in group.text
    # each term is still a unit a question can name
    assert names("What does ls --almost-all do?", group.title) and names("What does -a do?", group.title)
    assert not names("What does -B do?", group.title)


def test_tiny_entries_of_an_html_definition_list_group_within_their_own_heading_only():
    doc = parse_document(BUILTINS, "html", "zsh")
    assert [p for p in _paths(doc) if len(p) == 2] == [
        ("Shell Builtin Commands", "hash"), ("Shell Builtin Commands", "history, integer"), ("Other", "r, jobs")]
    assert doc.sections[2].text.split() == "history Same as fc -l. integer Equivalent to typeset -i.".split()


def test_a_long_run_is_cut_into_groups_under_the_size_bound():
    lvl = entry_level(1)
    entries = [(1, "Flags", "")] + [(lvl, f"-{c}", f"-{c}  sets the {c} flag of the shell") for c in "abcdefghijklmnop"]
    sections = build_sections(entries)
    groups = sections[1:]
    assert len(groups) > 1
    assert all(nonspace_len(s.text) <= GROUP_MAX_CHARS for s in groups)
    # every flag is in exactly one group title, in order
    assert [t for s in groups for t in s.title.split(", ")] == [f"-{c}" for c in "abcdefghijklmnop"]


def test_a_group_keeps_its_pages_and_a_lone_tiny_entry_stays_as_it_is():
    lvl = entry_level(1)
    sections = build_sections([
        (1, "OPTIONS", "", ((0, 1),)),
        (lvl, "-i", "-i  the shell is interactive.", ((0, 1),)),
        (lvl, "-l", "-l  act as a login shell.", ((0, 2),)),
        (lvl, "-s", "-s " + "reads commands from the standard input " * 4, ((0, 2),)),
        (lvl, "-v", "-v  verbose.", ((0, 3),)),
    ])
    by_title = {s.title: s for s in sections}
    assert set(by_title) == {"OPTIONS", "-i, -l", "-s", "-v"}
    group = by_title["-i, -l"]
    assert group.pages == ((0, 1), (nonspace_len("-i  the shell is interactive."), 2))
    assert nonspace_len("-v  verbose.") < TINY_ENTRY_CHARS and by_title["-v"].heading_path == ("OPTIONS", "-v")
