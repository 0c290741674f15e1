import numpy as np
import pyarrow as pa

from schemas import tables as T
from vdgr_core.indexing.entity_vectors import entity_vectors


def _contents(vectors: dict) -> pa.Table:
    return pa.table({"chunk_id": list(vectors),
                     "vector": pa.array([list(v) for v in vectors.values()], pa.list_(pa.float32(), 2))})


def _edges(pairs) -> pa.Table:
    return pa.table({"kind": [k for k, _, _ in pairs], "src": [s for _, s, _ in pairs],
                     "dst": [d for _, _, d in pairs]})


def test_mean_of_mentioning_chunks_normalized_and_order_free():
    contents = _contents({"c1": (1.0, 0.0), "c2": (0.0, 1.0), "c3": (1.0, 1.0)})
    edges = _edges([(T.HAS_ENTITY, "c1", "e1"), (T.HAS_ENTITY, "c2", "e1"),
                    (T.CONTAINS, "c3", "e2"),           # not an existence edge: ignored
                    (T.HAS_ENTITY, "c3", "e3")])
    out = np.array(entity_vectors(pa.array(["e1", "e2", "e3"]), edges, contents, 2).to_pylist())
    np.testing.assert_allclose(out[0], [2 ** -0.5, 2 ** -0.5], rtol=1e-6)
    np.testing.assert_array_equal(out[1], [0.0, 0.0])
    np.testing.assert_allclose(out[2], [2 ** -0.5, 2 ** -0.5], rtol=1e-6)
    shuffled = np.array(entity_vectors(pa.array(["e3", "e2", "e1"]), edges.take([3, 2, 1, 0]),
                                       contents.take([2, 0, 1]), 2).to_pylist())
    np.testing.assert_array_equal(shuffled[::-1], out)
