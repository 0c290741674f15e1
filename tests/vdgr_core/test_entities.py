"""Tests for the offline technical-term extractor."""
import subprocess
import sys

import pytest

from schemas.records import Term
from vdgr_core.entities import (
    KIND_PRIORS,
    entity_importance,
    extract_terms,
    norm_tokens,
    normalize_term,
)

CHUNK = (
    "## Wireless PowerShare\n\n"
    "Wireless PowerShare lets you charge Galaxy Buds using the battery of your Galaxy S10 or "
    "Note 10+. Swipe down to open Quick Settings, then tap Wireless PowerShare. The battery "
    "saver must be off; if battery saver is on, the feature is disabled. Use SmartThings to "
    "check connected devices. NFC and LTE may be turned off. For USB-C accessories, remove the "
    "cable. The Always On Display shows the status. Firmware v2.1 added the Orbit X2 router and "
    "DL_MIMO_Mode over 5G NR. See section 5.3.5.4 and part SKU-90214-B. Wi-Fi stays on.\n"
)


def names(text, **kw):
    return {t.name for t in extract_terms(text, **kw)}


def norms(text, **kw):
    return {t.norm for t in extract_terms(text, **kw)}


@pytest.mark.parametrize("variants", [
    ("Wi-Fi", "wifi", "Wi Fi", "WIFI", "wi_fi"),
    ("USB-C", "USB C", "usbc"),
    ("e-SIM", "eSIM"),
    ("DL_MIMO_Mode", "dl-mimo-mode", "DL MIMO Mode", "  dl mimo mode. "),
])
def test_normalize_variants_are_equal(variants):
    assert len({normalize_term(v) for v in variants}) == 1


def test_normalize_examples():
    assert normalize_term("DL_MIMO_Mode") == "dl mimo mode"
    assert normalize_term("(Galaxy  Note 10+),") == "galaxy note 10+"
    assert normalize_term("v2.1") == "v2.1"
    assert normalize_term("SKU-90214-B") == "sku 90214 b"
    assert normalize_term("") == ""
    assert normalize_term("...") == ""
    # distinct products stay distinct
    assert normalize_term("Galaxy S10") != normalize_term("Galaxy S20")
    assert normalize_term("Note 10") != normalize_term("Note 10+")


def test_norm_tokens_keep_versions_and_split_separators():
    assert norm_tokens("Use v2.1 on Wi-Fi_6.") == ["use", "v2.1", "on", "wi", "fi", "6"]


def test_query_orbit_x2():
    terms = extract_terms("How do I reset the Orbit X2 router?")
    assert "Orbit X2" in {t.name for t in terms}
    kinds = {t.name: t.kind for t in terms}
    assert kinds["Orbit X2"] == "versioned"
    assert not {"How", "I", "How do", "reset"} & {t.name for t in terms}


def test_query_identifier_and_5g():
    found = names("What is DL_MIMO_Mode in 5G NR?")
    assert "DL_MIMO_Mode" in found
    assert "5G NR" in found or {"5G", "NR"} <= found
    assert "What" not in found


def test_chunk_finds_each_kind():
    terms = {t.name: t for t in extract_terms(CHUNK)}
    expected = {
        "Wireless PowerShare": "multiword", "PowerShare": "camel", "SmartThings": "camel",
        "Galaxy S10": "versioned", "Note 10+": "versioned", "Orbit X2": "versioned",
        "NFC": "acronym", "LTE": "acronym", "USB-C": "acronym", "5G": "acronym",
        "DL_MIMO_Mode": "identifier", "SKU-90214-B": "identifier", "Wi-Fi": "identifier",
        "Always On Display": "multiword", "battery saver": "phrase",
    }
    for name, kind in expected.items():
        assert name in terms, name
        assert terms[name].kind == kind, name


def test_non_entities():
    found = names(CHUNK)
    lowered = {n.lower() for n in found}
    for bad in ("5.3.5.4", "the", "tap", "swipe", "see", "for", "section 5.3.5.4", "step 3"):
        assert bad not in lowered
    assert not any("5.3.5.4" in n for n in found)
    assert names("Step 3: Press OK. The Tap.") == set()
    assert names("Charge it at 15 W for 5 minutes.") == set()


def test_sentence_initial_common_word_is_not_entity():
    assert "Reset" not in names("Reset the device. Then reset it again.")
    # but a capitalized word inside a sentence is kept (low prior) in a short text
    terms = extract_terms("How do I pair with Bluetooth?")
    assert [t.name for t in terms] == ["Bluetooth"]
    assert terms[0].kind == "phrase"


def test_lowercase_phrases_need_repetition_in_long_text():
    filler = " ".join(f"Item{i} is listed." for i in range(12))
    text = (filler + " Turn on battery saver now. The battery saver limits apps. "
            "A lonely rubber duck sits here.")
    found = norms(text)
    assert "battery saver" in found
    assert "rubber duck" not in found


def test_dedupe_on_norm_keeps_best_form():
    terms = extract_terms("Wi-Fi is fast. Turn on wifi. WiFi works. Wi-Fi again.")
    wifi = [t for t in terms if t.norm == "wifi"]
    assert len(wifi) == 1
    assert len({t.norm for t in terms}) == len(terms)


def test_sorted_scores_bounded_and_max_terms():
    terms = extract_terms(CHUNK)
    assert all(isinstance(t, Term) for t in terms)
    assert all(0.0 <= t.score <= 1.0 for t in terms)
    assert [(-t.score, t.norm) for t in terms] == sorted((-t.score, t.norm) for t in terms)
    assert len(extract_terms(CHUNK, max_terms=5)) == 5
    assert extract_terms(CHUNK, max_terms=5) == terms[:5]
    assert extract_terms(CHUNK, max_terms=0) == []
    assert extract_terms("") == []
    assert extract_terms("   \n ") == []


def test_frequency_raises_score():
    once = {t.norm: t.score for t in extract_terms("The SmartThings app. Other text here.")}
    thrice = {t.norm: t.score for t in extract_terms(
        "The SmartThings app. SmartThings hub. SmartThings cloud.")}
    assert thrice["smartthings"] > once["smartthings"]


def test_identifier_outranks_phrase():
    terms = {t.norm: t.score for t in extract_terms("Set DL_MIMO_Mode before using screen lock.")}
    assert terms["dl mimo mode"] > terms["screen lock"]


def test_deterministic():
    a = extract_terms(CHUNK)
    b = extract_terms(CHUNK)
    assert a == b
    assert extract_terms(CHUNK * 3) == extract_terms(CHUNK * 3)


def test_fast_enough():
    import time
    extract_terms(CHUNK)
    t0 = time.perf_counter()
    for _ in range(50):
        extract_terms(CHUNK + str(_))
    per_call = (time.perf_counter() - t0) / 50
    assert per_call < 0.01  # generous bound; ~0.3 ms locally


def test_entity_importance_bounds_and_monotonic():
    for kind in list(KIND_PRIORS) + ["unknown"]:
        for args in [(0, 0, 0), (1, 1, 1), (1000, 500, 500), (3, 1, 10_000), (5, 99, 10)]:
            v = entity_importance(kind, *args)
            assert 0.0 <= v <= 1.0
    rare = entity_importance("acronym", 5, 1, 1000)
    common = entity_importance("acronym", 5, 900, 1000)
    assert rare > common > 0
    assert entity_importance("acronym", 20, 5, 1000) > entity_importance("acronym", 1, 5, 1000)
    assert entity_importance("identifier", 3, 3, 100) > entity_importance("phrase", 3, 3, 100)


def test_no_beam_import():
    code = ("import sys, vdgr_core.entities, vdgr_core.cooccurrence, vdgr_core.summarize; "
            "assert 'apache_beam' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_title_terms_name_the_whole_short_title_first():
    from vdgr_core.entities import title_terms

    got = title_terms("It'll Be Me (Jerry Lee Lewis song)")
    assert [(t.name, t.kind) for t in got] == [("It'll Be Me", "title"), ("Jerry Lee Lewis", "multiword")]
    assert got[0].norm == normalize_term("It'll Be Me")
    # a heading longer than TITLE_MAX_WORDS is a phrase: only the terms inside it
    assert [t.kind for t in title_terms("How to connect your phone to a TV with a cable")] == ["acronym"]
    assert title_terms("") == [] and title_terms("   ") == []
    # no repeats: the whole title and an extracted term with the same key count once
    assert [t.norm for t in title_terms("Wi-Fi")] == ["wifi"]
    assert title_terms("Wi-Fi Direct") == title_terms("  Wi-Fi   Direct ")
