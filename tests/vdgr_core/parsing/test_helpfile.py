"""Help files in Vim's tagged format: sections and entries by their tags (plain text and <pre>)."""
from vdgr_core.parsing.helpfile import help_parts, is_help_file
from vdgr_core.parsing.html import parse_html

SEP = "=" * 78
HELP = f"""*tool.txt*\tFor Tool version 2.1.  Last change: 2026 Jan 01

\t\tTOOL REFERENCE MANUAL

{SEP}
1. Arguments\t\t\t\t\t*tool-arguments*

The tool takes these arguments.

\t\t\t\t\t\t\t*--fresh* *-F*
--fresh\t\tStart without reading the user's settings file.
\t\t\tPlugins are not loaded either, and no history is
\t\t\tread or written: a clean start to tell a fault apart.

\t\t\t\t\t\t\t*-w*
-w {{width}}\tSet the width of the window to {{width}} columns. A width
\t\t\tbelow twenty columns is taken as twenty; the height
\t\t\tfollows from the terminal.

{SEP}
2. Settings\t\t\t\t\t*tool-settings*

Settings summary ~

\t\t\t\t\t\t\t*'margin'* *'mg'*
'margin' 'mg'\t\tnumber\t(default 4)
\t\t\tColumns kept free at the left.

  *g:tool_wrap*\t\tWrap long lines when set (default: 1). A wrapped line
\t\t\tis shown on as many screen lines as it takes, and the
\t\t\tcursor moves by screen lines.
  *g:tool_keep*\t\tKeep the previous buffer open.
\t\t\t\t\t\t\t*tool-prose*
The settings file is read once at start and again when you ask for it.
"""


def test_sections_and_tagged_entries_are_read_from_the_tags():
    parts = help_parts(HELP.split("\n"))
    got = [(p.kind, p.title) for p in parts if p.kind != "text"]
    assert got == [("heading", "1. Arguments"), ("entry", "--fresh"), ("entry", "-w {width}"),
                   ("heading", "2. Settings"), ("heading", "Settings summary"), ("entry", "'margin' 'mg'"),
                   ("entry", "g:tool_wrap"), ("entry", "g:tool_keep"), ("entry", "tool-prose")]
    fresh = next(p for p in parts if p.title == "--fresh")
    assert fresh.lines[0].strip() == "*--fresh* *-F*"              # the tags stay in the text
    assert "a clean start to tell a fault apart." in "\n".join(fresh.lines)
    assert "-w {width}" not in "\n".join(fresh.lines)              # an entry ends at the next one
    assert next(p for p in parts if p.title == "1. Arguments").depth == 1
    assert next(p for p in parts if p.title == "Settings summary").depth == 2


def test_ordinary_text_with_stars_is_no_help_file():
    text = ["Use *bold* words sparingly.", "", "*Note* the file is read once.", "=" * 60, "Done *here*."]
    assert not is_help_file(text) and help_parts(text) is None


def test_a_rest_definition_list_of_emphasis_is_no_help_file():
    # reST: a term in emphasis alone on an indented line, a long "=" underline (the Python
    # and rsyslog sources shipped beside their HTML)
    rst = ["Options", "=" * 50, "", ".. option:: x", "",
           *[ln for name in ("screenName", "baseName", "className", "useTk", "sync")
             for ln in (f"   *{name}*", f"      The {name} value.", "")]]
    assert not is_help_file(rst)


def test_a_help_file_in_a_pre_becomes_sections_and_entries():
    body = HELP.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    doc = parse_html(f"<html><head><title>Tool: help</title></head><body><h1>Tool: help</h1>"
                     f"<pre>{body}</pre></body></html>", "tool")
    titles = [s.title for s in doc.sections]
    assert {"1. Arguments", "--fresh", "-w {width}", "'margin' 'mg'", "g:tool_wrap"} <= set(titles)
    fresh = next(s for s in doc.sections if s.title == "--fresh")
    assert "Start without reading the user's settings file." in fresh.text
    assert "Set the width" not in fresh.text


def test_fold_markers_are_no_part_of_titles_or_tag_lines():
    folded = HELP.replace("*tool-arguments*", "*tool-arguments* {{{1").replace("*-w*", "*-w*  {{{2")
    parts = help_parts(folded.split("\n"))
    titles = [p.title for p in parts if p.kind != "text"]
    assert titles[:3] == ["1. Arguments", "--fresh", "-w {width}"]
    heading = next(p for p in parts if p.title == "1. Arguments")
    assert heading.lines[0].endswith("{{{1")                      # the text keeps what was written


def test_a_plain_text_help_file_becomes_sections_and_entries():
    from vdgr_core.parsing.text import parse_text

    doc = parse_text(HELP, "tool")
    by_title = {s.title: s for s in doc.sections}
    assert {"1. Arguments", "2. Settings", "--fresh", "-w {width}", "'margin' 'mg'", "g:tool_wrap"} <= set(by_title)
    assert "Start without reading the user's settings file." in by_title["--fresh"].text
    assert "Set the width" not in by_title["--fresh"].text
    # an entry sits under the section it is written in
    assert by_title["--fresh"].heading_path[-2:] == ("1. Arguments", "--fresh")
    assert by_title["g:tool_wrap"].heading_path[-2:] == ("Settings summary", "g:tool_wrap")
    assert doc.title == "tool"                     # the file's name, as its header line names it
