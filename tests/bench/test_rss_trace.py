"""bench/performance/rss_trace.py: a command's output and its RSS on one time axis."""
import io
import sys

from bench.performance.rss_trace import trace


def test_trace_prints_output_and_the_memory_a_process_takes():
    out = io.StringIO()
    code = ("import sys; print('before', flush=True); b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
            "print('after', flush=True); sys.exit(3)")
    assert trace([sys.executable, "-c", code], step_mb=100, out=out) == 3
    text = out.getvalue()
    assert "| before" in text and "| after" in text
    assert text.index("| before") < text.index("| after")
    peak = int(text.rsplit("peak RSS ", 1)[1].split()[0])
    assert peak >= 290
    assert "exit 3" in text
