"""Performance benchmarks: time, throughput and memory of embedding, building, updating,
querying and serving, from one machine to worker pools."""
