"""Helpers that turn an index's layouts into what an older version wrote."""
import json
import os


def strip_layout_vectors(index: str) -> None:
    """Remove the vectors from every layout of ``index`` (format 1 layouts held none): the
    format 2 matrices and the format 3 block names (the blocks themselves stay, unnamed)."""
    for folder, _, files in os.walk(os.path.join(index, "layout")):
        for name in ("content_vectors.npy", "dir_vectors.npy"):
            if name in files:
                os.remove(os.path.join(folder, name))
        if "meta.json" in files:
            path = os.path.join(folder, "meta.json")
            with open(path, encoding="utf-8") as f:
                meta = json.load(f)
            meta.pop("vector_blocks", None)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(meta, f, sort_keys=True)
