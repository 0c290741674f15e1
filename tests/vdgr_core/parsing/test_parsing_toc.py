"""Page offsets through the shared table-of-contents builder."""
from vdgr_core.parsing.toc import build_document, nonspace_len


def test_pages_follow_bodies_that_are_joined():
    doc = build_document([
        (0, "", "ab cd", ((0, 1),)),
        (1, "Manual", "ef\n\n\n\ngh", ((0, 1), (2, 2))),   # the single leading h1: joins the preamble
        (2, "Part", "ij", ((0, 3),)),
        (2, "", "kl", ((0, 4),)),                           # untitled heading: joins "Part"
        (2, "Plain", "mn"),
    ], "fb")
    assert doc.title == "Manual"
    assert [(s.title, s.text, s.pages) for s in doc.sections] == [
        ("", "ab cd\n\nef\n\ngh", ((0, 1), (6, 2))),
        ("Part", "ij\n\nkl", ((0, 3), (2, 4))),
        ("Plain", "mn", ()),
    ]
    preamble = doc.sections[0]
    assert [preamble.page_at(i) for i in range(nonspace_len(preamble.text))] == [1, 1, 1, 1, 1, 1, 2, 2]


def test_blank_bodies_drop_their_pages():
    doc = build_document([(1, "A", " \n ", ((0, 7),)), (1, "B", "x", ((0, 8),))], "fb")
    assert [(s.title, s.pages) for s in doc.sections] == [("A", ()), ("B", ((0, 8),))]
