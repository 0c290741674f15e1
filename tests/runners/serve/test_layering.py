"""The query module never pulls in the HTTP stack (the `serve` extra is for runners/serve only)."""
import subprocess
import sys

HTTP_STACK = ("fastapi", "starlette", "uvicorn", "jwt", "prometheus_client", "limits")


def test_vdgr_core_query_does_not_import_the_http_stack():
    code = ("import sys, vdgr_core.query, vdgr_core.query.stream_check, vdgr_core.query.compress, "
            "vdgr_core.query.confidence, vdgr_core.llm.client; "
            f"print([m for m in {HTTP_STACK!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
