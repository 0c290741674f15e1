"""Small corpora written into temp folders for pipeline tests."""
from __future__ import annotations

import os
from typing import Mapping

SHARED_PARAGRAPH = ("The SKU-90214-B chassis uses the DL_MIMO_Mode scheduler. "
                    "DL_MIMO_Mode and the SKU-90214-B fan tray are serviced together.")

BASIC: dict[str, str | bytes] = {
    "net/_meta.yaml": "description: Networking products\n",
    "net/routers/v1/_meta.yaml": "version: '1.0'\n",
    "net/routers/v2/_meta.yaml": "version: '2.0'\n",
    "net/routers/v1/orbit.md": (
        "# Orbit X2 Manual\n\nThe Orbit X2 router manual.\n\n"
        "## Factory reset\n\nHold RESET for 10 seconds until the LED blinks amber.\n\n"
        "## Chassis\n\n" + SHARED_PARAGRAPH + "\n"),
    "net/routers/v2/orbit.md": (
        "# Orbit X2 Manual\n\nThe Orbit X2 router manual.\n\n"
        "## Factory reset\n\nOpen the Orbit app, tap Settings, then Factory reset.\n\n"
        "## Chassis\n\n" + SHARED_PARAGRAPH + "\n"),
    "net/internal/_meta.yaml": "acl: [netops]\n",
    "net/internal/backdoor.md": (
        "# Orbit X2 service backdoor procedure\n\n"
        "Connect to port 2222 with the service key ZETA-77 to enter the maintenance shell.\n"),
    "hr/leave.html": ("<html><head><title>Leave policy</title></head><body><h1>Leave policy</h1>"
                      "<p>Employees get 25 days of annual leave.</p><h2>Sick leave</h2>"
                      "<p>Report sick leave to HR within one day. DL_MIMO_Mode is not an HR term.</p>"
                      "</body></html>"),
    "specs/radio.txt": ("5 Radio\n\n5.3 Scheduling\n\n5.3.5.4 MIMO layers\n\n"
                        "The DL_MIMO_Mode parameter selects up to 4 layers. " + SHARED_PARAGRAPH + "\n"),
    "net/routers/v1/empty.md": "",
    "net/routers/v1/blob.txt": b"\x00\x01\x02\x03 binary",
    "net/routers/v1/latin1.md": "# Caf\xe9\n\nna\xefve".encode("latin-1"),
    "net/routers/v1/photo.png": b"\x89PNG",
}

# two domains, one binary file: the command-line and cluster builds
SMALL: dict[str, str | bytes] = {
    "net/_meta.yaml": "description: Networking products\n",
    "net/routers/v1/_meta.yaml": "version: '1.0'\n",
    "net/routers/v1/orbit.md": ("# Orbit X2 Manual\n\n## Factory reset\n\nHold RESET for 10 seconds.\n\n"
                                "## Scheduler\n\nThe DL_MIMO_Mode scheduler drives the SKU-90214-B radio.\n"),
    "net/switches/nova.md": "# Nova Switch Guide\n\n## Ports\n\nThe Nova switch has a SKU-90214-B uplink.\n",
    "hr/leave.md": "# Leave policy\n\n## Annual leave\n\nEmployees get 25 days of annual leave.\n",
    "hr/blob.txt": b"\x00\x01\x02 binary",
}


def write_corpus(root: str, files: Mapping[str, str | bytes] = BASIC) -> str:
    for rel, content in files.items():
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
            f.write(content)
    return root
