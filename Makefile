# VDGR developer commands. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test install bench fuzz clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first, pinned: the pin takes the local CPU wheel; an unpinned torch pulls a CUDA build.
$(STAMP): $(BIN)/python setup.py
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[pipeline,local-model,test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	rm -rf demo-index
	$(BIN)/vdgr index examples/corpus --index demo-index
	$(BIN)/vdgr query --index demo-index "How do I reset the Orbit X2 router to factory settings?" --explain

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# Every benchmark, then BENCHMARKS.md (about 15 minutes on 2 cores; needs ../shared/bench).
bench: $(STAMP)
	$(BIN)/python -m bench.bench_build
	$(BIN)/python -m bench.bench_update
	for d in emanual emanual_all musique dcd; do $(BIN)/python -m bench.run_eval $$d || exit 1; done
	$(BIN)/python -m bench.bench_query
	$(BIN)/python -m bench.update_benchmarks_md
	VDGR_UPDATE_EXAMPLES=200 $(BIN)/python -m pytest -q -p no:cacheprovider tests/pipelines/test_update_property.py

# The fuzzers with a large budget (CI runs them with a small one).
fuzz: $(STAMP)
	VDGR_FUZZ_EXAMPLES=3000 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/vdgr_core/test_fuzz_parsers.py tests/vdgr_core/query/test_questions.py

clean:
	rm -rf demo-index .pytest_cache
