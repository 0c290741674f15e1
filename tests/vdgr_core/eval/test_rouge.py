"""Unit tests of the ROUGE-L implementation."""
import pytest

from vdgr_core.eval.rouge import lcs_length, rouge_l_f1, tokenize


def test_tokenize_lowercases_words():
    assert tokenize("Turn ON Wi-Fi, then tap OK.") == ["turn", "on", "wi", "fi", "then", "tap", "ok"]
    assert tokenize("") == [] and tokenize(None) == []


def test_lcs():
    assert lcs_length("a b c d".split(), "a c d".split()) == 3
    assert lcs_length([], ["a"]) == 0


def test_rouge_l_values():
    assert rouge_l_f1("police killed the gunman", "police kill the gunman") == pytest.approx(0.75)
    assert rouge_l_f1("a b", "c d") == 0.0
    assert rouge_l_f1("", "a") == 0.0
    assert rouge_l_f1("Same Text", "same   text") == 1.0


def test_rouge_l_symmetric_f1():
    a, b = "the quick brown fox", "the fox jumped quick"
    assert rouge_l_f1(a, b) == pytest.approx(rouge_l_f1(b, a))
