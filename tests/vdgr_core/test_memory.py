"""Process memory settings: freed heap pages kept for the model's temporaries."""
import ctypes.util
import subprocess
import sys

import pytest

GLIBC = sys.platform.startswith("linux") and ctypes.util.find_library("c") is not None

_EMBED = """
import resource, sys
import vdgr_core.memory as memory
from schemas.config import EmbeddingConfig
from vdgr_core.embedding import MiniLMEmbedder
if sys.argv[1] == "default":
    memory.keep_freed_memory = lambda: False          # glibc's own behaviour
emb = MiniLMEmbedder(EmbeddingConfig(precision="fp32"))
texts = [f"Step {i}: hold the RESET key for {i} seconds until the status LED blinks amber. " * (1 + i % 5)
         for i in range(64)]
emb.embed(texts)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
emb.embed(texts)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.integration
@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_the_model_process_keeps_freed_pages_for_its_temporaries():
    """The same second embedding of 64 texts in two child processes: with glibc's defaults the
    pass's freed temporaries go back to the system and come back as fresh pages; the embedder
    keeps them (vdgr_core.memory.keep_freed_memory)."""
    faults = {mode: int(subprocess.run([sys.executable, "-c", _EMBED, mode], capture_output=True, text=True,
                                       check=True).stdout.strip().splitlines()[-1])
              for mode in ("default", "keep")}
    assert faults["keep"] * 5 < faults["default"], faults
