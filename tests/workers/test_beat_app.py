"""Beat's own app sends the sweep by name and imports none of our task modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workers import names

PROBE = """
import json, sys
from workers.beat_app import app
app.loader.import_default_modules()  # what `celery beat` does before it ticks
loaded = sorted(m for m in sys.modules if m.startswith(("workers.", "api.")))
print(json.dumps({"loaded": loaded, "schedule": app.conf.beat_schedule["sweep"]["task"]}))
"""


def test_beat_sends_the_sweep_by_name_without_importing_any_task(tmp_path: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"ESCALATE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    seen = json.loads(probe.stdout)
    assert seen["schedule"] == names.SWEEP
    assert seen["loaded"] == ["workers.app", "workers.beat_app", "workers.names"]
