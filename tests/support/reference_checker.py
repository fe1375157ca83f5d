"""The design document's reference checker (packet_check.py), taken from the seed at run time.

The seed (agent-escalation-design.txt, the founding design document) is reference material
we may read but not copy, so no copy is committed: the script is cut out of the seed's text
into a temporary folder by whoever needs it (the parity test, bench/check_cli.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.services import missing

SEED_NAME = "agent-escalation-design.txt"
SEEDS = Path(os.environ.get("ESCALATE_SEEDS_DIR", "/work/shared/seeds"))
# The script is the one fenced python block after this sentence in the seed.
MARKER = "Save this code as packet_check.py:"

# Runs the reference's own main() once per packet file in one process: the reference is
# stdlib only and keeps no state between calls, so one interpreter start serves every case.
_BATCH = """\
import contextlib, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("packet_check", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
results = []
for path in sys.argv[2:]:
    sys.argv = ["packet_check.py", path]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = module.main()
    except Exception as exc:  # the reference has crashes of its own (unhashable values)
        code = "crash: " + type(exc).__name__
    results.append([out.getvalue(), code])
json.dump(results, sys.stdout)
"""


def extract_reference(seed_text: str) -> str:
    """The packet_check.py source the seed inlines; ValueError when the seed has none."""
    start = seed_text.find(MARKER)
    fence = seed_text.find("```python\n", start)
    end = seed_text.find("\n```", fence + 1)
    if start < 0 or fence < 0 or end < 0:
        raise ValueError(f"{SEED_NAME}: no packet_check.py block after {MARKER!r}")
    return seed_text[fence + len("```python\n") : end + 1]


def reference_script(folder: Path) -> Path:
    """Write the reference checker into `folder`; a missing seed fails in CI, else skips."""
    seed = SEEDS / SEED_NAME
    if not seed.is_file():
        missing(f"{seed} not found (set ESCALATE_SEEDS_DIR to the founding documents)")
    script = folder / "packet_check.py"
    script.write_text(extract_reference(seed.read_text(encoding="utf-8")), encoding="utf-8")
    return script


def run_reference(script: Path, paths: list[Path]) -> list[tuple[str, int | str]]:
    """(stdout, exit code or 'crash: Error') of the reference on each packet file, in order."""
    batch = script.parent / "batch.py"
    batch.write_text(_BATCH, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", str(batch), str(script), *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [(out, code) for out, code in json.loads(done.stdout)]
