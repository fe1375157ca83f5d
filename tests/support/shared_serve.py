"""`escalate serve`s shared by every pytest process of a run, one per design.

A serve is four Python processes, about 6 s of CPU to start; the suite is CPU-bound on two
cores, and most tests that need a running service need a live one, not a fresh one. Those
tests share these: each is started by the first process that asks, under a lock in the run's
shared temp folder, and the others read where it answers from that folder. A shared serve
pages its own local inbox (no sink outlives the test process that made it), and a watchdog
stops it once the pytest process that ran the session is gone. Tests on a shared serve keep
to their own cases: a run id of their own (a repeat of an open question from the same run
would join another test's case), and nothing that counts every case.

Run as `python -m tests.support.shared_serve PID`: `escalate serve` until PID exits.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from api.serve import die_with_parent
from tests.api.test_serve import ESCALATE, Server, make_server


def run_folder(basetemp: Path) -> Path:
    """The temp folder every process of this run shares: an xdist worker's basetemp is a
    folder of the controller's."""
    return basetemp.parent if "PYTEST_XDIST_WORKER" in os.environ else basetemp


def session_pid() -> int:
    """The process whose end ends the run: the xdist controller, or this one."""
    return os.getppid() if "PYTEST_XDIST_WORKER" in os.environ else os.getpid()


def shared_server(run: Path, name: str, design_text: str, *, sweep: float = 0.5) -> Server:
    """The run's serve called `name` on this design, started now if no process has yet.
    `sweep`: seconds between sweeps, the serve's idle cost through the whole run (1 s: a
    quarter of 0.25 s's); half a second keeps seconds-long windows' defaults near due."""
    folder = run / "shared-serves" / name
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other processes wait here while one starts it
        started = folder / "server.json"
        if started.exists():
            saved = json.loads(started.read_text())
            return Server(Path(saved["home"]), saved["env"])
        design = folder / "design.yaml"
        design.write_text(design_text, encoding="utf-8")
        server = make_server(folder, None, design)
        server.env["ESCALATE_SWEEP_INTERVAL"] = str(sweep)
        watch = [sys.executable, "-m", "tests.support.shared_serve", str(session_pid())]
        server.start(watch)
        server.process = None  # not this process's to stop: the watchdog's
        started.write_text(json.dumps({"home": str(server.home), "env": server.env}))
        return server


def watch(session: int) -> int:
    """`escalate serve` until `session` exits (or serve does); then stop it as Ctrl-C does.
    Serve dies with this watchdog, however it ends."""
    serve = subprocess.Popen([ESCALATE, "serve"], preexec_fn=die_with_parent)
    while serve.poll() is None:
        try:
            os.kill(session, 0)
        except ProcessLookupError:
            serve.send_signal(signal.SIGINT)
            try:
                return serve.wait(timeout=20)
            except subprocess.TimeoutExpired:
                serve.kill()  # its children die with it
                return serve.wait()
        time.sleep(0.5)
    return serve.returncode


if __name__ == "__main__":
    sys.exit(watch(int(sys.argv[1])))
