"""A celery-only Python for the agent's side, made in a second: a venv without pip whose
site-packages links exactly celery[redis] and what it requires, from this venv (so the
versions are ours, as tests/support/agent_venv.py pins them), and nothing of ours."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

from tests.support.agent_venv import clean_env


def requirement_closure(root: str, extras: tuple[str, ...] = ("redis",)) -> list[Distribution]:
    """`root` and every distribution it requires (with `extras`), installed here."""
    found: dict[str, Distribution] = {}
    pending: list[tuple[str, tuple[str, ...]]] = [(root, extras)]
    while pending:
        name, wanted = pending.pop()
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower()
        if key in found and not wanted:
            continue
        found[key] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            environment = [{"extra": extra} for extra in (*wanted, "")]
            if requirement.marker is None or any(
                requirement.marker.evaluate(env) for env in environment
            ):
                pending.append((requirement.name, tuple(requirement.extras)))
    return list(found.values())


def make_celery_only_python(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    target = folder / "lib" / version / "site-packages"
    source = Path(sysconfig.get_paths()["purelib"])
    for dist in requirement_closure("celery"):
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        tops.discard("__pycache__")
        for top in tops:
            link = target / top
            if (source / top).exists() and not link.exists():
                link.symlink_to(source / top)
    probe = subprocess.run(
        [str(python), "-c", "import celery, kombu, redis, workers"],
        cwd=folder,
        env=clean_env(),
        capture_output=True,
        timeout=60,
    )
    assert probe.returncode != 0 and b"No module named 'workers'" in probe.stderr, probe
    return python
