"""Directory labels: the vectorized tokenizer equals the query module's, word for word."""
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.labels import content_words
from vdgr_core.labels import content_words_of, label_key, label_keys_of
from vdgr_core.tokens import stem

ALPHABET = "abcxyz0129+ -_./\n\tÉéü中C++S10"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.none(), st.text(alphabet=ALPHABET, max_size=40)), max_size=6))
def test_arrow_tokenizer_matches_the_query_tokenizer(texts):
    words, owner = content_words_of(pa.array(texts, pa.string()))
    words = words.to_pylist()
    for i, text in enumerate(texts):
        assert [w for w, o in zip(words, owner) if o == i] == content_words(text or "")


def test_label_keys_are_the_keys_of_the_stems():
    words = pa.array(["routers", "router", "galaxy", "s10+", "routers"])
    keys = label_keys_of(words)
    assert list(keys) == [label_key(stem(w)) for w in words.to_pylist()]
    assert keys[0] == keys[1] == keys[4] and keys[2] != keys[3]
    assert label_keys_of(pa.array([], pa.string())).size == 0
