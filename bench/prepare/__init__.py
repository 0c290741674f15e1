"""Benchmark data preparation: converters of the shared data into corpus folders and question
files, the data-set registry, the grown scale corpus and the development / test split."""
