"""`escalate check` imports nothing heavy: a shell loop pays its start on every pass (#16.5).

Not a timed test: what it checks is the set of modules the command has loaded when it exits,
which stays the same on a busy machine. bench/check_cli.py prints the times.
"""

from __future__ import annotations

import json
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pytest

from workflows.examples import valid_packet

# The service's stack and what detect-secrets drags in for checks a packet check never makes
# (verifying secrets online, scanning files with git in parallel). pydantic_core is not here:
# it runs the packet's schema (workflows/packet_schema.py); the pydantic package is.
HEAVY = (
    "fastapi",
    "starlette",
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "psycopg",
    "celery",
    "kombu",
    "redis",
    "apprise",
    "pydantic",
    "pydantic_settings",
    "typer",
    "click",
    "rich",
    "httpx",
    "jinja2",
    "yaml",
    "itsdangerous",
    "tenacity",
    "requests",
    "urllib3",
    "ssl",
    "http",
    "email",
    "multiprocessing",
    "subprocess",
    "models",
    "workers",
)

# Runs the console script's entry as `escalate check ...` and, at exit, writes the modules
# really loaded (a stand-in for a deferred module is not one) to the file named first.
_DRIVER = """\
import atexit, json, sys
out = sys.argv[1]
def dump():
    loaded = [n for n, m in sys.modules.items() if type(m).__name__ != "Deferred"]
    open(out, "w").write(json.dumps(sorted(loaded)))
atexit.register(dump)
sys.argv = ["escalate", "check", *sys.argv[2:]]
from api.entry import main
main()
"""


def loaded_by_check(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(out), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, set(json.loads(out.read_text()))


@pytest.mark.parametrize("kind", ["valid file", "secret in a file", "--make-fixture --json"])
def test_given_a_check_when_it_exits_then_no_heavy_package_was_imported(
    tmp_path: Path, kind: str
) -> None:
    # Given: a packet file (one holding an AWS-key-shaped value makes every scanner rule run)
    packet = valid_packet()
    if kind == "secret in a file":
        key = "AKIA" + "".join(secrets.choice(string.ascii_uppercase) for _ in range(16))
        packet["trigger_detail"] = f"The upload used {key} and failed."  # made up now
    path = tmp_path / "packet.json"
    path.write_text(json.dumps(packet), encoding="utf-8")
    args = ["--make-fixture", "--json"] if kind.startswith("--") else [str(path)]
    # When
    code, modules = loaded_by_check(tmp_path, *args)
    # Then: it checked (the secret was found), and nothing heavy came in to do it
    assert code == (0 if kind == "valid file" else 1)
    # the scan ran, so the test is not vacuous (its package is a stand-in: its plugins load)
    assert "detect_secrets.plugins.base" in modules
    assert "detect_secrets.core.secrets_collection" not in modules  # the file scanner did not
    # and a plugin's module loaded only for text that could hold its secret
    assert ("detect_secrets.plugins.aws" in modules) == (kind == "secret in a file")
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []
    assert "pydantic_core._pydantic_core" in modules  # the packet's schema ran...
    assert "pydantic_core.core_schema" not in modules  # ...on the compiled core alone


def test_given_a_deferred_module_when_used_then_it_is_the_real_one(tmp_path: Path) -> None:
    # Given: the check's stand-ins, in a fresh interpreter
    code = (
        "import sys; from api.check_imports import defer_unused_imports; defer_unused_imports();"
        "import subprocess, hashlib;"
        "print(subprocess.run(['true']).returncode, hashlib.sha256(b'x').hexdigest()[:8],"
        " type(sys.modules['subprocess']).__name__);"
        "from workflows.secrets import scan_text; scan_text('AKIAQ7ZK2M4N6P8R3T5V');"
        "from detect_secrets import SecretsCollection;"
        "from detect_secrets.filters import gibberish;"
        "c = SecretsCollection(); c.scan_file('/dev/null');"
        "print(type(sys.modules['detect_secrets']).__name__, len(c.files), gibberish.__name__)"
    )
    # When
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Then
    assert done.stdout.split() == [
        "0",
        "2d711642",
        "module",
        "module",
        "0",
        "detect_secrets.filters.gibberish",
    ]


def test_given_the_stand_ins_when_pydantic_is_imported_then_it_works_whole() -> None:
    # Given: the check's stand-ins and the packet schema on the compiled core alone
    code = (
        "from api.check_imports import defer_unused_imports; defer_unused_imports();"
        "from workflows.packet_checks import check_packet;"
        "from pydantic import BaseModel, ValidationError\n"
        "class M(BaseModel):\n    x: int\n"
        "try:\n    M(x='no')\nexcept ValidationError as e:\n    print(e.error_count())\n"
        "print(check_packet({}).passed)"
    )
    # When
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Then
    assert done.stdout.split() == ["1", "False"]
