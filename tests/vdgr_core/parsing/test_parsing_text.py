from vdgr_core.parsing import parse_document


def txt(text, fallback="file"):
    return parse_document(text, "text", fallback)


def test_numbered_clauses_depth_from_number_count():
    doc = txt("Preamble.\n\n1 Scope\n\nThis standard.\n\n2 Terms\n\n2.1 Router\nA device.\n\n"
              "5 Design\n\n5.3.5.4 Deep Clause\nDeep text.\n")
    assert doc.title == "file"
    assert [(s.title, s.level, s.heading_path) for s in doc.sections] == [
        ("", 0, ()),
        ("1 Scope", 1, ("1 Scope",)),
        ("2 Terms", 1, ("2 Terms",)),
        ("2.1 Router", 2, ("2 Terms", "2.1 Router")),
        ("5 Design", 1, ("5 Design",)),
        ("5.3.5.4 Deep Clause", 2, ("5 Design", "5.3.5.4 Deep Clause")),
    ]
    assert doc.sections[3].text == "A device."


def test_hash_and_bold_headings():
    doc = txt("# Manual\n\nintro\n\n## Safety\n\n**Warning**\nHot surface.\n\n**Notice**\nRead it.\n")
    assert doc.title == "Manual"
    assert [s.heading_path for s in doc.sections] == [
        (), ("Safety",), ("Safety", "Warning"), ("Safety", "Notice")]
    assert doc.sections[2].text == "Hot surface."


def test_title_case_line_and_list_like_lines_are_not_headings():
    doc = txt("Getting Started Quickly\n\nSome text.\n1. Open the lid.\n2 Remove Cover\n"
              "3 items were found. more\n")
    assert len(doc.sections) == 1
    assert doc.sections[0].level == 0
    assert "Getting Started Quickly" in doc.sections[0].text
    assert doc.sections[0].text.endswith("3 items were found. more")
