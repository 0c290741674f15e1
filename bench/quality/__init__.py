"""Retrieval and answer quality benchmarks: what the query side finds and answers, per set and
per development / test half."""
