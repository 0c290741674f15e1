"""Tests for extractive and directory summaries."""
from vdgr_core.summarize import directory_summary, extractive_summary, trim_to

TEXT = (
    "## Battery saver\n"
    "Battery saver extends battery life by limiting background apps. "
    "The weather today is sunny and warm. "
    "You can turn on battery saver from Quick Settings. "
    "Battery saver also dims the screen to save battery. "
    "Our office is closed on holidays."
)


def test_short_text_returned_as_is():
    assert extractive_summary("Tap OK.  Done.") == "Tap OK. Done."
    assert extractive_summary("") == ""
    assert extractive_summary("One sentence only.", max_sentences=1) == "One sentence only."


def test_picks_central_sentences_in_order():
    s = extractive_summary(TEXT, title="Battery saver", max_sentences=2)
    assert "weather" not in s and "office" not in s and "##" not in s
    assert s.startswith("Battery saver extends battery life")
    assert s.count(".") == 2
    # chosen sentences keep their original order
    parts = [p.strip() for p in s.split(". ") if p]
    assert all(p.rstrip(".") in TEXT for p in parts)


def test_title_overlap_matters():
    text = ("Apples are red fruit. Pears are green fruit. Routers forward packets fast. "
            "Fruit grows on trees.")
    assert "Routers" in extractive_summary(text, title="Routers packets", max_sentences=1)
    assert "Routers" not in extractive_summary(text, title="", max_sentences=1)


def test_max_chars_respected_at_word_boundary():
    for limit in (10, 30, 57, 100, 400):
        s = extractive_summary(TEXT * 3, title="Battery saver", max_chars=limit)
        assert len(s) <= limit
        assert s
    s = extractive_summary("word " * 500, max_chars=60)
    assert len(s) <= 60 and s.endswith("...") and "wor..." not in s


def test_trim_to():
    assert trim_to("alpha beta gamma", 100) == "alpha beta gamma"
    assert trim_to("alpha beta gamma", 13) == "alpha beta..."
    assert trim_to("alpha beta gamma", 0) == ""
    assert len(trim_to("x" * 50, 10)) == 10


def test_deterministic():
    assert extractive_summary(TEXT, "Battery saver") == extractive_summary(TEXT, "Battery saver")
    kids = [("A", "Alpha covers routers. Routers forward packets."), ("B", "Beta covers NFC.")]
    assert directory_summary("Net", kids, "Own.") == directory_summary("Net", kids, "Own.")


def test_directory_summary_layout():
    kids = [
        ("Wireless PowerShare", "Wireless PowerShare charges other devices."),
        ("Fast charging", "Fast charging uses 25 W adapters. Charging stops at 100%."),
        ("Battery saver", "Battery saver limits background apps and charging heat."),
        ("Fast charging", "Duplicate title appears once."),
    ]
    s = directory_summary("Charging", kids, own_summary="This chapter explains charging.")
    assert s.startswith("This chapter explains charging. Covers: Wireless PowerShare; "
                        "Fast charging; Battery saver.")
    assert s.count("Fast charging;") == 1
    assert "charging heat" in s or "25 W" in s
    assert len(s) <= 600


def test_directory_summary_bounds():
    kids = [(f"Child {i}", f"Child {i} explains feature number {i} in detail. " * 3)
            for i in range(40)]
    for limit in (50, 120, 600):
        s = directory_summary("Parent", kids, own_summary="Parent text. " * 20, max_chars=limit)
        assert 0 < len(s) <= limit
    assert directory_summary("Empty", [], own_summary="Only own text.") == "Only own text."
    assert directory_summary("Empty", []) == ""
    s = directory_summary("Parent", kids, max_chars=200)
    assert s.startswith("Covers: Child 0; Child 1;") and len(s) <= 200
