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
