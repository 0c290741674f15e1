"""Tests for sentence-level co-occurrence counting."""
from vdgr_core.cooccurrence import (mention_counts, mention_statistics, sentence_cooccurrences,
                                     sentence_mentions)
from vdgr_core.entities import extract_terms

TEXT = (
    "Enable NFC before using Wi-Fi Direct. "
    "NFC and Wi-Fi Direct both drain the battery. "
    "Only LTE is needed here. "
    "When wifi direct and NFC are on, LTE stays idle.\n"
    "Reset the DL_MIMO_Mode flag."
)


def test_pair_counts_hand_checked():
    counts = sentence_cooccurrences(TEXT, ["nfc", "wifi direct", "lte", "dl mimo mode"])
    assert counts == {
        ("lte", "nfc"): 1,
        ("lte", "wifi direct"): 1,
        ("nfc", "wifi direct"): 3,
    }
    assert all(a < b for a, b in counts)


def test_pairs_counted_once_per_sentence():
    counts = sentence_cooccurrences("NFC NFC LTE LTE NFC. LTE.", ["nfc", "lte"])
    assert counts == {("lte", "nfc"): 1}


def test_word_boundaries():
    text = "The 5GHz band. Use usb charging. LTE-Advanced works with 5G."
    found = sentence_mentions(text, ["5g", "us", "lte", "advanced"])
    assert found == [(), (), ("5g", "advanced", "lte")]


def test_separator_variants_match():
    counts = mention_counts("Wi-Fi, Wi Fi and WIFI. Set dl_mimo_mode or DL-MIMO Mode.",
                            ["wifi", "dl mimo mode", "mode"])
    assert counts == {"dl mimo mode": 2, "mode": 2, "wifi": 3}


def test_mention_counts_absent_and_empty():
    assert mention_counts(TEXT, ["nfc", "bluetooth", "", "nfc"]) == {"bluetooth": 0, "nfc": 3}
    assert mention_counts("", ["nfc"]) == {"nfc": 0}
    assert sentence_cooccurrences("", ["a", "b"]) == {}
    assert sentence_cooccurrences(TEXT, []) == {}


def test_versioned_norms_match():
    text = "The Galaxy Note 10+ and Note 10 differ. Android 10 runs on the Note 10+."
    counts = sentence_cooccurrences(text, ["note 10+", "note 10", "android 10"])
    assert counts == {("note 10", "note 10+"): 1, ("android 10", "note 10+"): 1}


def test_with_extracted_terms_deterministic_and_generator_input():
    norms = [t.norm for t in extract_terms(TEXT)]
    a = sentence_cooccurrences(TEXT, norms)
    b = sentence_cooccurrences(TEXT, iter(reversed(norms)))
    assert a == b
    assert list(a) == sorted(a)
    assert a.get(("nfc", "wifi direct")) == 3


def test_mention_statistics_is_both_counts_in_one_pass():
    norms = ["nfc", "wifi direct", "lte", "dl mimo mode", "bluetooth", ""]
    counts, pairs = mention_statistics(TEXT, norms)
    assert counts == mention_counts(TEXT, norms)
    assert pairs == sentence_cooccurrences(TEXT, norms)
    assert list(pairs) == sorted(pairs)
    assert mention_statistics("", ["nfc"]) == ({"nfc": 0}, {})
    assert mention_statistics(TEXT, []) == ({}, {})
