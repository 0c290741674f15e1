"""bench/performance/bench_build_stages.py: py-spy stacks attributed to build stages."""
from bench.performance.bench_build_stages import BEAM, OTHER, stacks, stage_of

RAW = "\n".join([
    # the main thread in a library called from secret scanning, called from parsing
    "<module> (vdgr:6);main (runners/cli.py:33);process (apache_beam/runners/worker/operations.py:10);"
    "load_document (vdgr_core/indexing/document.py:40);mask_secrets (vdgr_core/safety/secrets.py:393);"
    "finditer (re/__init__.py:5) 7",
    # a helper file (ids) inherits its caller's stage; Beam's file systems count for the caller
    "<module> (vdgr:6);load_document (vdgr_core/indexing/document.py:40);doc_id (vdgr_core/ids.py:9) 2",
    "<module> (vdgr:6);load_document (vdgr_core/indexing/document.py:40);"
    "open (apache_beam/io/localfilesystem.py:3) 1",
    # Beam's coder under a stage's DoFn is Beam's own work
    "<module> (vdgr:6);process (transforms/write.py:80);encode (apache_beam/coders/coders.py:1) 3",
    "<module> (vdgr:6);_find_and_load (<frozen importlib._bootstrap>:1) 4",
])


def test_each_stack_goes_to_its_innermost_stage_or_beam():
    got = [(stage_of(files), n) for files, n in stacks(RAW)]
    assert got == [("secret scanning", 7), ("read and parse", 2), ("read and parse", 1), (BEAM, 3), (OTHER, 4)]


def test_stack_files_are_read_innermost_first():
    files, n = next(stacks("a (vdgr:1);b (vdgr_core/x.py:2) 5"))
    assert files == ["vdgr_core/x.py", "vdgr"] and n == 5
