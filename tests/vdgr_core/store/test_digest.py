"""Incremental (order-independent) digests equal whole-table digests, however rows are split."""
import random

import numpy as np
import pyarrow as pa

from schemas import tables as T
from vdgr_core.store import digest as dg


def _edges(n, seed=0):
    rng = random.Random(seed)
    return pa.Table.from_pylist([{"edge_id": f"e{i}", "kind": rng.choice(["contains", "has_entity"]),
                                  "src": f"s{rng.randint(0, 50)}", "dst": f"d{i}", "domain": rng.choice("abc"),
                                  "weight": float(rng.randint(1, 5))} for i in range(n)], schema=T.edges_schema())


def test_digests_of_any_partition_add_up_to_the_whole_table():
    table = _edges(300)
    whole = dg.domain_digests(table)
    rng = random.Random(1)
    order = list(range(300))
    rng.shuffle(order)
    parts = [table.take(order[i:i + 37]) for i in range(0, 300, 37)]
    summed = {}
    for part in parts:
        summed = dg.add(summed, dg.domain_digests(part))
    assert summed == whole and set(whole) == {"a", "b", "c"}
    assert dg.table_digest("edges", table) == dg.table_digest("edges", table.take(order))
    # an update: minus the deleted rows, plus the added ones, equals the digest of the result
    deleted, added = table.slice(0, 40), _edges(10, seed=5).drop_columns(["edge_id"]).add_column(
        0, "edge_id", pa.array([f"n{i}" for i in range(10)]))
    after = pa.concat_tables([table.slice(40), added])
    assert dg.add(dg.add(whole, dg.domain_digests(deleted), -1), dg.domain_digests(added)) == dg.domain_digests(after)


def test_a_changed_value_changes_the_digest_and_values_do_not_run_together():
    table = _edges(20)
    changed = table.set_column(5, "weight", pa.array([1.0] * 19 + [7.0], pa.float32()))
    assert dg.table_digest("edges", table) != dg.table_digest("edges", changed)
    a = pa.table({"x": ["ab", "c"], "y": ["c", "ab"], "domain": ["d", "d"]})
    b = pa.table({"x": ["a", "c"], "y": ["bc", "ab"], "domain": ["d", "d"]})
    assert dg.row_hashes(a)[0] != dg.row_hashes(b)[0]


def test_vectors_and_nested_columns_are_digested():
    schema = T.contents_schema(4)
    row = {"chunk_id": "c", "doc_id": "d", "text": "t", "source": "s", "title": "T", "path": ["d"],
           "parent_id": "p", "domain": "d", "collection": "", "version": "", "acl": [], "acl_text": "",
           "public": True, "position": 0, "n_tokens": 1, "summary": "", "entities": ["x"],
           "terms": [{"norm": "x", "name": "X", "kind": "acronym", "score": 0.5, "mentions": 1}],
           "text_hash": "h", "vector": np.array([1, 0, 0, 0], np.float32)}
    one = pa.Table.from_pylist([row], schema=schema)
    other = pa.Table.from_pylist([{**row, "vector": np.array([0, 1, 0, 0], np.float32)}], schema=schema)
    terms = pa.Table.from_pylist([{**row, "terms": [{**row["terms"][0], "mentions": 2}]}], schema=schema)
    assert len({dg.table_digest("contents", t) for t in (one, other, terms)}) == 3


def test_a_row_hashes_the_same_whatever_its_neighbours():
    """A value's bytes depend on its type and value only: a row of a column holding nulls hashes
    like the same row in a subset without nulls (an update digests such subsets)."""
    import pyarrow as pa

    from vdgr_core.store.digest import row_hashes

    table = pa.table({
        "page": pa.array([None, 3, 7], pa.int32()),
        "flags": pa.array([None, ["a", "b"], []], pa.list_(pa.string())),
        "title": pa.array(["x", None, "z"], pa.string()),
        "vector": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float32(), 2)),
    })
    whole = row_hashes(table)
    for i in range(3):
        assert row_hashes(table.slice(i, 1)) == [whole[i]]
        assert row_hashes(table.take([i])) == [whole[i]]
    assert row_hashes(table.filter(pa.array([False, True, True]))) == whole[1:]
    # a null differs from every value, including the empty one
    assert len(set(row_hashes(pa.table({"t": pa.array([None, ""], pa.string())})))) == 2
    assert len(set(row_hashes(pa.table({"p": pa.array([None, 0], pa.int32())})))) == 2


def _every_kind_of_column():
    return pa.table({
        "s": pa.array(["é", None, "", "a\x1fb"], pa.string()),
        "ls": pa.array(["x", "y", None, "z"], pa.large_string()),
        "i": pa.array([1, None, -3, 2 ** 40], pa.int64()),
        "j": pa.array([7, 8, None, 0], pa.int32()),
        "f": pa.array([0.5, None, -0.0, 1e30], pa.float32()),
        "d": pa.array([None, 2.5, 3.0, float("inf")], pa.float64()),
        "b": pa.array([True, None, False, True]),
        "l": pa.array([["a", None], None, [], ["b", "c"]], pa.list_(pa.string())),
        "v": pa.array([[1, 2], [3, 4], [5, 6], [7, 8]], pa.list_(pa.float32(), 2)),
        "st": pa.array([[{"value": "k", "count": 2}], None, [], [{"value": None, "count": 1}]],
                       pa.list_(pa.struct([("value", pa.string()), ("count", pa.int64())]))),
    })


def test_row_hashes_are_pinned_so_stored_digests_stay_valid():
    """Indexes store these digests and updates add to them: the bytes of a row must not change
    (values from the per-value definitions in digest.py, one column of each kind)."""
    table = _every_kind_of_column()
    pinned = ["74f68fea971479101a461c6137f358f6de4dfe7fcdf612708d7f6321a7f478b1",
              "5e65f148ee1b4f9e2f89d1faf5651264159e86620685e8c4f99a1a24cc888d05",
              "c64c6ac390afc74491dd3bda8d494a134c9fed32f2d631e92b43744782845133",
              "fd2683001ef59ece9c4aff323ad0db556353533a3b7d23d30ab4681030cc6ffa"]
    assert [f"{h:064x}" for h in dg.row_hashes(table)] == pinned
    assert [f"{h:064x}" for i in range(4) for h in dg.row_hashes(table.slice(i, 1))] == pinned
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2)])
    assert [f"{h:064x}" for h in dg.row_hashes(chunked)] == pinned


def test_a_vector_column_with_nulls_is_digested_row_by_row():
    with_null = pa.table({"v": pa.array([[1, 2], None, [5, 6]], pa.list_(pa.int64(), 2))})
    without = pa.table({"v": pa.array([[1, 2], [5, 6]], pa.list_(pa.int64(), 2))})
    hashes = dg.row_hashes(with_null)
    assert [hashes[0], hashes[2]] == dg.row_hashes(without) and hashes[1] not in dg.row_hashes(without)
