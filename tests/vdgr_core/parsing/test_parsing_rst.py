from vdgr_core.parsing import parse_document

DOC = """\
==========
User Guide
==========

Intro paragraph.

.. This is a comment
   spanning lines.

Installation
============

Run ``pip install orbit``. See :ref:`the setup <setup>` and `site <http://x>`_.

.. note:: Needs **root**.

.. code-block:: bash
   :linenos:

   sudo make install

From source
-----------

Clone it::

    git clone repo

Usage
=====

Use *it*.

Advanced
--------

Details.

----------

After transition.
"""


def test_over_and_underline_title_and_levels_in_order_of_appearance():
    doc = parse_document(DOC, "rst", "fb")
    assert doc.title == "User Guide"
    assert [(s.title, s.level, s.heading_path) for s in doc.sections] == [
        ("", 0, ()),
        ("Installation", 1, ("Installation",)),
        ("From source", 2, ("Installation", "From source")),
        ("Usage", 1, ("Usage",)),
        ("Advanced", 2, ("Usage", "Advanced")),
    ]


def test_body_markup_comments_and_directives():
    doc = parse_document(DOC, "rst", "fb")
    s = {x.title: x for x in doc.sections}
    assert doc.sections[0].text == "Intro paragraph."
    assert s["Installation"].text == (
        "Run pip install orbit. See the setup and site.\n\nNeeds root.\n\nsudo make install")
    assert s["From source"].text == "Clone it:\n\ngit clone repo"
    assert s["Usage"].text == "Use it."
    assert s["Advanced"].text == "Details.\n\nAfter transition."


def test_underline_only_multiple_top_sections_and_fallback():
    doc = parse_document("Alpha\n*****\n\na\n\nBeta\n*****\n\nb\n", "rst", "file")
    assert doc.title == "Alpha"
    assert [s.heading_path for s in doc.sections] == [("Alpha",), ("Beta",)]


def test_short_underline_under_long_text_is_not_a_title():
    doc = parse_document("A long paragraph line\n--\n\ntext\n", "rst", "file")
    assert doc.title == "file"
    assert all(s.level == 0 for s in doc.sections)


REFERENCE = """\
Orbit CLI
=========

Command line options
--------------------

.. option:: -v, --verbose

   Print every request the client sends and every answer it gets, with its headers, its
   status line and the time it took, to the standard error stream.

.. option:: --timeout <seconds>

   How long to wait for the router to answer a request before the client gives up and
   reports a timeout. The default is 30.

Settings
--------

cache_size
    Pages kept in memory for each open database; a negative number is read as kibibytes
    of memory instead. The default is 2000.

journal_mode
    How the rollback journal is kept between transactions: ``delete`` removes it after
    each commit, ``wal`` keeps a write-ahead log next to the database.

Notes
-----

- a wrapped bullet item that
  goes on here
- another wrapped item that
  goes on too

Example::

    retry loop
        sleep 1
    backoff step
        sleep 2
"""


def test_object_directives_and_definition_lists_become_entries():
    doc = parse_document(REFERENCE, "rst", "fb")
    paths = [s.heading_path for s in doc.sections]
    assert ("Command line options", "-v, --verbose") in paths
    assert ("Command line options", "--timeout <seconds>") in paths
    assert ("Settings", "cache_size") in paths and ("Settings", "journal_mode") in paths
    s = {x.heading_path[-1]: x for x in doc.sections}
    assert s["--timeout <seconds>"].text.endswith("reports a timeout. The default is 30.")
    assert s["cache_size"].text.endswith("of memory instead. The default is 2000.")
    assert "2000" not in s["journal_mode"].text


def test_wrapped_bullets_and_literal_blocks_are_not_entries():
    doc = parse_document(REFERENCE, "rst", "fb")
    notes = [x for x in doc.sections if x.heading_path[0] == "Notes"]
    assert [x.heading_path for x in notes] == [("Notes",)]
    assert "retry loop\nsleep 1\nbackoff step\nsleep 2" in notes[0].text
    assert "a wrapped bullet item that\ngoes on here" in notes[0].text


def test_the_rst_rules_are_part_of_the_content_rules():
    from vdgr_core.parsing.rst import PARSER_VERSION
    from vdgr_core.safety import content_rules

    assert PARSER_VERSION in content_rules().split("/")
