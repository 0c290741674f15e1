"""Reference entries: the options, parameters and directives of a reference page are sections.

A page with many entries under one heading (a definition list, keyword blocks, field tables, a
manual page's option list) gives each entry a section of its own, titled with its term, one
level under the heading; the text after the entries continues the heading's section.
"""
import pytest

from schemas.errors import DeadLetterReason, DocumentError
from vdgr_core.parsing import parse_document, toc
from vdgr_core.parsing.toc import RESUME, build_sections, entry_level


@pytest.fixture(autouse=True)
def _entries_one_by_one(monkeypatch):
    """These tests look at how entries are found, one section each: tiny entries are not grouped
    here (tests/vdgr_core/parsing/test_tiny_entries.py tests the grouping)."""
    monkeypatch.setattr(toc, "TINY_ENTRY_CHARS", 0)


PARAMETERS = """<html><body><h1>Postfix manual</h1>
<h2>Parameters</h2><p>Each parameter below.</p>
<dl>
<dt><b><a name="message_size_limit">message_size_limit</a> (default: 10240000)</b></dt>
<dd><p>The maximal size in bytes of a message.</p><dl><dt>nested</dt><dd>stays text</dd><dt>x</dt><dd>y</dd></dl></dd>
<dt>-a</dt><dt>--all</dt><dd>Show all.</dd>
</dl>
<p>Text after the list.</p>
<h3>Next topic</h3><p>Under the heading.</p>
</body></html>"""


def _sections(html):
    return [(s.heading_path, s.text) for s in parse_document(html, "html", "fb").sections]


def test_definition_list_terms_are_entry_sections_and_the_section_resumes():
    got = _sections(PARAMETERS)
    assert [path for path, _ in got] == [
        ("Parameters",),
        ("Parameters", "message_size_limit (default: 10240000)"),
        ("Parameters", "-a, --all"),
        ("Parameters",),
        ("Parameters", "Next topic"),
    ]
    entry = dict(got[1:3])
    assert entry[("Parameters", "message_size_limit (default: 10240000)")] == (
        "message_size_limit (default: 10240000)\n\nThe maximal size in bytes of a message.\n\nnested\nstays text\nx\ny")
    assert entry[("Parameters", "-a, --all")] == "-a\n--all\nShow all."
    assert got[3][1] == "Text after the list."


def test_field_labels_and_long_terms_are_not_entries():
    fields = "<h2>F</h2><dl><dt>Parameters:</dt><dd>a</dd><dt>Returns:</dt><dd>b</dd></dl>"
    assert [p for p, _ in _sections(fields)] == [("F",)]
    prose = "<h2>F</h2><dl><dt>" + "word " * 60 + "</dt><dd>a</dd><dt>b</dt><dd>c</dd></dl>"
    assert [p for p, _ in _sections(prose)] == [("F",)]
    single = "<h2>F</h2><dl><dt>only one</dt><dd>a</dd></dl>"
    assert [p for p, _ in _sections(single)] == [("F",)]
    anchored = '<h2>F</h2><dl class="std option"><dt id="opt-x">max-cache-size</dt><dd>a</dd></dl>'
    assert [p for p, _ in _sections(anchored)] == [("F",), ("F", "max-cache-size")]


def test_keyword_blocks_named_by_their_anchor_are_entries_and_bare_forms_join():
    html = ("<h2>Server options</h2>"
            '<div class="keyword"><b><a class="anchor" name="inter"></a><a href="#i">inter</a></b> <span>&lt;delay&gt;</span></div>'
            '<div class="keyword"><b><a class="anchor" name="fastinter"></a><a href="#f">fastinter</a></b> <span>&lt;delay&gt;</span></div>'
            '<pre>The "inter" parameter sets the interval. It defaults to 2000 ms.</pre>'
            '<div class="keyword"><b><a class="anchor" name="rise"></a><a href="#r">rise</a></b> <span>&lt;count&gt;</span></div>'
            '<pre>Consecutive successful checks.</pre>'
            '<div><b>Not a term</b> without an anchor</div>')
    got = _sections(html)
    assert [p for p, _ in got] == [("Server options",), ("Server options", "inter <delay>, fastinter <delay>"),
                                   ("Server options", "rise <count>")]
    assert got[1][1].startswith("inter <delay>\n\nfastinter <delay>\n\nThe \"inter\" parameter")
    assert "Not a term without an anchor" in got[2][1]


def test_field_tables_open_entries_unless_the_heading_names_the_term():
    exim = ("<h2>Main options</h2><p>Alphabetical list.</p>"
            "<table><tr><td><b>accept_8bitmime</b></td><td>Use: <em>main</em></td><td>Type: <em>boolean</em></td>"
            "<td>Default: <em>true</em></td></tr></table><p>Accepts 8-bit MIME.</p>"
            "<table><tr><td><b>acl_not_smtp</b></td><td>Use: main</td><td>Type: string</td><td>Default: unset</td></tr>"
            "</table><p>The ACL for non-SMTP messages.</p>")
    got = _sections(exim)
    assert [p[-1] for p, _ in got] == ["Main options", "accept_8bitmime", "acl_not_smtp"]
    assert got[1][1] == "accept_8bitmime | Use: main | Type: boolean | Default: true\n\nAccepts 8-bit MIME."
    nginx = ("<h2>Module</h2><table><tr><th>Syntax:</th><td><code><strong>listen</strong> address;</code></td></tr>"
             "<tr><th>Default:</th><td>listen *:80;</td></tr><tr><th>Context:</th><td>server</td></tr></table>"
             "<p>Sets the address.</p>")
    assert [p for p, _ in _sections(nginx)] == [("Module",), ("Module", "listen")]
    apache = ("<h2>AllowOverride Directive</h2><table><tr><th>Syntax:</th><td>AllowOverride All</td></tr>"
              "<tr><th>Default:</th><td>None</td></tr></table><p>Text.</p>")
    assert [p for p, _ in _sections(apache)] == [("AllowOverride Directive",)]


def test_entries_under_the_single_h1_stay_under_the_document():
    doc = parse_document("<h1>Manual</h1><p>Intro.</p><dl><dt>a</dt><dd>one</dd><dt>b</dt><dd>two</dd></dl>"
                         "<p>Tail.</p>", "html", "fb")
    assert doc.title == "Manual"
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        ((), "Intro."), (("a",), "a\none"), (("b",), "b\ntwo"), ((), "Tail.")]


def test_a_redirect_page_is_a_dead_letter_and_an_unclosed_html_with_a_closed_body_parses():
    stub = ('<html><head><meta http-equiv="Refresh" content="0; url=Shell-Grammar.html#Aliasing"></head>'
            '<body><p>The node you are looking for is at <a href="x">Aliasing</a>.</p></body>')
    with pytest.raises(DocumentError) as e:
        parse_document(stub, "html", "fb")
    assert e.value.reason == DeadLetterReason.REDIRECT and "Shell-Grammar.html" in str(e.value)
    page = "<html><body><h1>T</h1><p>" + "Real text. " * 60 + "</p></body>"
    assert parse_document(page, "html", "fb").sections[0].text.startswith("Real text.")
    with pytest.raises(DocumentError) as e:
        parse_document("<html><body><h1>x</h1><p>cut in the mid", "html", "fb")
    assert e.value.reason == DeadLetterReason.TRUNCATED


def test_toc_entries_nest_half_a_level_down_and_resume_closes_them():
    sections = build_sections([(2, "Options", "intro"), (entry_level(2), "-a", "all"), (entry_level(2), "-b", "b"),
                               (2, RESUME, "after"), (3, "Sub", "s"), (entry_level(3), "x", "xx"), (2, "Next", "n")])
    assert [(s.heading_path, s.text) for s in sections] == [
        (("Options",), "intro"), (("Options", "-a"), "all"), (("Options", "-b"), "b"), (("Options",), "after"),
        (("Options", "Sub"), "s"), (("Options", "Sub", "x"), "xx"), (("Next",), "n")]


MAN_PAGE = """LS(1)                            User Commands                           LS(1)

NAME
       ls - list directory contents

DESCRIPTION
       List information about the FILEs.

       -a, --all
              do not ignore entries starting with .

       -A, --almost-all
              do not list implied . and ..

       --color[=WHEN]  colorize the output; WHEN can be 'always'
              or 'never'

   Exit status:
       0      if OK,

GNU coreutils 9.1                 September 2022                         LS(1)
"""


def test_a_manual_page_in_text_has_its_sections_and_option_entries():
    doc = parse_document(MAN_PAGE, "text", "ls")
    got = [(s.heading_path, s.text) for s in doc.sections]
    assert [p for p, _ in got] == [("NAME",), ("DESCRIPTION",), ("DESCRIPTION", "-a, --all"),
                                   ("DESCRIPTION", "-A, --almost-all"), ("DESCRIPTION", "--color[=WHEN]"),
                                   ("DESCRIPTION",)]
    assert got[0][1] == "ls - list directory contents"
    assert got[2][1] == "-a, --all\n       do not ignore entries starting with ."
    assert got[4][1].startswith("--color[=WHEN]  colorize the output")
    assert "LS(1)" not in " ".join(t for _, t in got)


def test_plain_text_parameters_over_indented_descriptions_are_entries_but_one_code_block_is_not():
    text = ("# Manual\n\n## Parameters\n\nmessage_size_limit (default: 10240000)\n    The maximal size of a message.\n\n"
            "queue_directory (default: /var/spool/postfix)\n    Where the queue lives.\n")
    doc = parse_document(text, "text", "fb")
    assert [s.heading_path for s in doc.sections][-2:] == [
        ("Parameters", "message_size_limit (default: 10240000)"), ("Parameters", "queue_directory (default: /var/spool/postfix)")]
    code = "# Manual\n\n## Setup\n\nRun this\n    make install\n\nThen restart.\n"
    assert [s.heading_path for s in parse_document(code, "text", "fb").sections] == [("Setup",)]


OPTIONS_IN_PRE = """<h2>Starting the proxy</h2>
<div class="keyword"><b><a name="where"></a><a href="#w">where</a></b> [&lt;options&gt;]* is any number of options. An option always starts with '-'</div>
<pre class="text">followed by letters. The current list of options is :

  -f &lt;cfgfile&gt; : adds &lt;cfgfile&gt; to the list of configuration files to be
    loaded, in their declaration order.

  -c : only performs a check of the configuration files and exits before trying
    to bind. The exit status is zero if everything is OK.

  -q : set "quiet" mode: this disables the output messages.

A few options may be combined.
</pre>
<p>Signals are described below.</p>"""


def test_an_option_list_in_a_preformatted_block_gives_each_option_an_entry():
    """A manual kept in ``<pre>`` (haproxy's management guide): ``-c : only performs ...`` over
    its indented lines is an entry; the prose around the options stays in the section, and a
    keyword line that reads as a sentence opens nothing."""
    got = _sections(OPTIONS_IN_PRE)
    assert [p for p, _ in got] == [("Starting the proxy",), ("Starting the proxy", "-f <cfgfile>"),
                                   ("Starting the proxy", "-c"), ("Starting the proxy", "-q"),
                                   ("Starting the proxy",)]
    assert got[0][1].startswith("where [<options>]* is any number of options.")
    assert got[2][1] == ("-c : only performs a check of the configuration files and exits before trying\n"
                         "to bind. The exit status is zero if everything is OK.")
    assert got[4][1] == "A few options may be combined.\n\nSignals are described below."


@pytest.mark.parametrize("pre", [
    # a configuration example: words over indented lines are no options
    "global\n    daemon\n    maxconn 256\n\ndefaults\n    mode http\n",
    # a table whose rows start with options
    "  A  B  C  D  --soft   A  B  D\n               --mixed  A  D  D\n               --hard   D  D  D\n",
    # a shell case statement and a function
    "case $1 in\n  --prefix)\n    echo /usr;;\n  --libs)\n    echo -lfoo;;\nesac\n",
    # numbers and a patch
    "  -1, -1, -1,\n    -1, -1\n  -1, -1, -1,\n    -1, -1\n",
    "+#if 0\n+   code\n+#endif\n+   more\n",
])
def test_code_and_tables_in_a_preformatted_block_are_no_entries(pre):
    html = f"<h2>Example</h2><pre>{pre}</pre>"
    assert [p for p, _ in _sections(html)] == [("Example",)]


def test_plain_text_options_over_a_colon_are_entries():
    text = ("# Tool\n\n## Options\n\nThe options are :\n\n  -c : only checks the configuration and exits.\n"
            "    Nothing is started.\n\n  -q : quiet mode, no messages.\n")
    doc = parse_document(text, "text", "fb")
    assert [s.heading_path for s in doc.sections] == [("Options",), ("Options", "-c"), ("Options", "-q")]
    assert doc.sections[1].text == "-c : only checks the configuration and exits.\n  Nothing is started."


PARAMETER_LIST = """<h2>global() object</h2><p>The following parameters can be set:</p>
<ul>
<li><p><strong>workDirectory</strong></p><p>Sets the directory that rsyslog uses for work files.</p></li>
<li><p><strong>localHostname</strong> Permits to overwrite the local host hostname of the system.</p></li>
<li><p><strong>preserveFQDN</strong></p></li>
<li><p><strong>maxMessageSize</strong></p><p>Configures the maximum message size allowed for all inputs.
Default is 8K.</p><p>Note: some modules override this.</p></li>
</ul>
<ul><li><p><strong>janitor.interval</strong> [minutes], available 8.3.3+</p><p>Sets the janitor's interval.</p></li>
<li><p><strong>net.enableDNS</strong> [on/off]</p><p>Can be used to turn DNS name resolution on or off.</p></li></ul>
<p>Text after the lists.</p>"""


def test_a_bulleted_list_of_parameters_gives_each_parameter_an_entry():
    """rsyslog's ``global()`` page: items opening with a bold identifier are entries titled by
    their term line (a description that starts in that line is left out of the title)."""
    got = _sections(PARAMETER_LIST)
    head = ("global() object",)
    assert [p for p, _ in got] == [head, head + ("workDirectory",), head + ("localHostname",),
                                   head + ("preserveFQDN",), head + ("maxMessageSize",),
                                   head + ("janitor.interval [minutes], available 8.3.3+",),
                                   head + ("net.enableDNS [on/off]",), head]
    assert got[4][1] == ("maxMessageSize\n\nConfigures the maximum message size allowed for all inputs. Default is 8K."
                         "\n\nNote: some modules override this.")
    assert got[-1][1] == "Text after the lists."


@pytest.mark.parametrize("items", [
    # bold lead-ins of prose, not parameters
    "<li><p><strong>Note</strong> this is important to know.</p></li><li><p><strong>Warning</strong> do not.</p></li>",
    # a list of plain items
    "<li>first item with words</li><li>second item with words</li>",
    # one item only
    "<li><p><strong>maxMessageSize</strong></p><p>Configures the size.</p></li>",
    # identifiers, but nothing said about them: a list of names
    "<li><strong>net.enableDNS</strong></li><li><strong>net.ipprotocol</strong></li>",
])
def test_other_bulleted_lists_are_no_entries(items):
    assert [p for p, _ in _sections(f"<h2>Topic</h2><ul>{items}</ul>")] == [("Topic",)]


def _pragma(name, desc):
    # SQLite's pragma.html: an empty linked anchor, a hidden non-standard <h>, a rule, paragraphs left open
    return (f'<a name="pragma_{name}"></a>\n<h _id=pragma_{name} style="display:none"> PRAGMA {name}</h><hr>'
            f"<p><b>PRAGMA {name};<br>PRAGMA {name} = </b><i>N</i><b>;</b></p><p>{desc}\n<p>More on {name}.\n")


def test_a_run_of_linked_anchors_under_one_heading_opens_entries():
    page = ("<html><body><h1>Pragma statements</h1><h2>List Of PRAGMAs</h2><ul>"
            + "".join(f"<li><a href='pragma.html#pragma_{n}'>{n}</a>" for n in ("busy_timeout", "cache_size", "encoding"))
            + "</ul>" + _pragma("busy_timeout", "Query or change the setting of the busy timeout.")
            + _pragma("cache_size", "The default suggested cache size is -2000.")
            + _pragma("encoding", "Set the text encoding.") + "</body></html>")
    got = _sections(page)
    assert [p for p, _ in got] == [("List Of PRAGMAs",), ("List Of PRAGMAs", "busy_timeout"),
                                   ("List Of PRAGMAs", "cache_size"), ("List Of PRAGMAs", "encoding")]
    assert got[2][1].startswith("PRAGMA cache_size\n\nPRAGMA cache_size;\nPRAGMA cache_size = N;\n\nThe default")
    assert got[2][1].endswith("More on cache_size.") and "busy" not in got[2][1]


@pytest.mark.parametrize("page", [
    # two anchors under a heading: figures here and there, not a list of entries
    "<h2>Lookup</h2><p>See <a href='#f1'>figure 1</a>, <a href='#f2'>figure 2</a>, <a href='#f3'>3</a>.</p>"
    "<a name=f1></a><p>Figure 1: a scan.</p><a name=f2></a><p>Figure 2: a lookup.</p>"
    "<h2>Sorting</h2><a name=f3></a><p>Figure 3: a sort.</p>",
    # anchors not linked from the page, and anchors that label headings
    "<h2>Options</h2><a name=a></a><p>A.</p><a name=b></a><p>B.</p><a name=c></a><p>C.</p>",
    "<p><a href='#1'>1</a> <a href='#2'>2</a> <a href='#3'>3</a></p>"
    "<a name=1></a><h2>One</h2><p>A.</p><a name=2></a><h2>Two</h2><p>B.</p><h2>Three</h2><a name=3></a><p>C.</p>",
])
def test_anchors_here_and_there_open_no_entries(page):
    assert all(len(p) <= 1 for p, _ in _sections(f"<html><body><h1>Page</h1>{page}</body></html>"))


def test_linked_anchors_inside_a_list_open_no_entries_and_keep_the_list_whole():
    # SQLite's capi3ref.html: linked anchors in paragraphs inside the items of a list
    items = "".join(f"<li><p><a name='{n}'></a>\n<b>{n}()</b></p><p>Step {i}: call {n}() here.</p></li>"
                    for i, n in enumerate(("backup_init", "backup_step", "backup_finish"), 1))
    links = " ".join(f"<a href='#{n}'>{n}</a>" for n in ("backup_init", "backup_step", "backup_finish"))
    got = _sections(f"<html><body><h1>Backup</h1><h2>Online backup</h2><p>{links}</p><ol>{items}</ol></body></html>")
    assert [p for p, _ in got] == [("Online backup",)]
    assert "backup_init()\n\n  Step 1: call backup_init() here.\n\n2. backup_step()" in got[0][1]


def test_keyword_anchors_before_term_blocks_keep_the_term_blocks():
    # HAProxy: a run of anchors before each keyword's own term block, all linked from the page
    keyword = ('<a class="anchor" name="{k}"></a><a class="anchor" name="4-{k}"></a>'
               '<div class="keyword"><b><a class="anchor" name="{k}"></a><a href="#4-{k}">{k}</a></b> <span>&lt;n&gt;</span></div>'
               '<pre class="text">What {k} does, at some length so that it is no tiny entry of the kind grouped.</pre>')
    links = "".join(f'<a href="#{k}">{k}</a> ' for k in ("rise", "fall", "inter"))
    page = f"<html><body><h1>Config</h1><h2>Server options</h2><p>{links}</p>" + "".join(
        keyword.format(k=k) for k in ("rise", "fall", "inter")) + "</body></html>"
    assert [p for p, _ in _sections(page)] == [("Server options",), ("Server options", "rise <n>"),
                                               ("Server options", "fall <n>"), ("Server options", "inter <n>")]


def test_a_bold_term_paragraph_named_by_the_anchor_before_it_is_an_entry():
    # SQLite's compile-time options: <a name>, a paragraph of one bold term, its description quoted
    option = ('<a name="default_{a}"></a>\n<p><b>SQLITE_DEFAULT_{t}=<i>N</i></b></p><blockquote><p>\n'
              "  The default {a} for new database files under unix, at some length so it is no tiny entry.</p></blockquote>")
    page = ("<html><body><h1>Compile-time Options</h1><h2>Defaults</h2><p>Options that set defaults.</p>"
            + option.format(a="file_permissions", t="FILE_PERMISSIONS") + option.format(a="cache_size", t="CACHE_SIZE")
            + '<a name="unrelated"></a><p><b>SQLITE_OTHER</b></p><p>Not named by its anchor.</p></body></html>')
    got = _sections(page)
    assert [p for p, _ in got] == [("Defaults",), ("Defaults", "SQLITE_DEFAULT_FILE_PERMISSIONS=N"),
                                   ("Defaults", "SQLITE_DEFAULT_CACHE_SIZE=N")]
    assert got[1][1].startswith("SQLITE_DEFAULT_FILE_PERMISSIONS=N\n\nThe default file_permissions")
    assert "SQLITE_OTHER" in got[2][1]


def test_term_forms_on_lines_of_their_own_are_joined_with_commas():
    # DocBook (PostgreSQL's pg_dump): <dt><code>-c</code><br><code>--clean</code></dt>
    page = ('<h2>Options</h2><div class="variablelist"><dl class="variablelist">'
            '<dt><span class="term"><code class="option">-c</code><br><code class="option">--clean</code></span></dt>'
            '<dd><p>Output commands to DROP all the dumped database objects.</p></dd>'
            '<dt><span class="term"><code class="option">-a</code><br><code class="option">--data-only</code></span></dt>'
            '<dd><p>Dump only the data, not the schema.</p></dd></dl></div>')
    got = _sections(page)
    assert [p for p, _ in got] == [("Options",), ("Options", "-c, --clean"), ("Options", "-a, --data-only")]
    assert got[1][1].startswith("-c\n--clean\n")


def test_a_note_box_heading_labels_the_box_and_opens_no_section():
    # DocBook: <div class="note"><h3 class="title">Note</h3>...</div> between two lists of entries
    entry = '<dt>{t}</dt><dd><p>What {t} does. ' + "It is described at some length for the reader. " * 3 + '</p></dd>'
    page = ('<h2>Options</h2><dl>' + entry.format(t="--data-only") + entry.format(t="--schema") + '</dl>'
            '<div class="note"><h3 class="title">Note</h3><p>When -n is given, nothing else is dumped.</p></div>'
            '<dl>' + entry.format(t="--table") + entry.format(t="--jobs") + '</dl>')
    got = _sections(page)
    assert [p for p, _ in got] == [("Options",), ("Options", "--data-only"), ("Options", "--schema"), ("Options",),
                                   ("Options", "--table"), ("Options", "--jobs")]
    assert got[3][1] == "Note\n\nWhen -n is given, nothing else is dumped."


def test_a_navigation_bar_marked_by_its_class_is_page_furniture():
    # Exim's chapters: <ul id="nav_flow" class="nav"> of site links above every chapter
    page = ('<h1>30. The smtp transport</h1><ul class="nav"><li><a href="/">Home</a></li>'
            '<li><a href="/sec">Security</a></li></ul><p>The smtp transport delivers messages over TCP/IP.</p>')
    got = _sections(page)
    assert "Security" not in " ".join(t for _, t in got) and "delivers messages" in got[0][1]


def test_a_table_of_contents_in_a_definition_list_opens_no_entries():
    # DocBook and AsciiDoc: <div class="toc"><dl class="toc"><dt><a>1. Chapter</a></dt><dd><dl>...</dl></dd>
    toc = ('<dl class="toc"><dt><span><a href="#intro">Introduction</a></span></dt>'
           '<dt><span><a href="#branches">1. Repositories and Branches</a></span></dt>'
           '<dd><dl><dt><a href="#get">How to get a Git repository</a></dt></dl></dd>'
           '<dt><span><a href="#history">2. Exploring Git history</a></span></dt></dl>')
    got = _sections(f"<h1>Git User Manual</h1><div class='toc'><p>Table of Contents</p>{toc}</div>")
    assert [p for p, _ in got] == [()] and "1. Repositories and Branches\n\nHow to get a Git repository" in got[0][1]
    # a list of links, each with a sentence about it, is a list of entries
    commands = ('<dl><dt><a href="git-add.html">git-add(1)</a></dt><dd><p>Add file contents to the index.</p></dd>'
                '<dt><a href="git-am.html">git-am(1)</a></dt><dd><p>Apply a series of patches from a mailbox.</p></dd></dl>')
    assert [p for p, _ in _sections(f"<h2>Main commands</h2>{commands}")][1:] == [("Main commands", "git-add(1)"), ("Main commands", "git-am(1)")]
