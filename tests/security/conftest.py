"""The security suite drives the real worker harness of tests/workers."""

from tests.workers.conftest import (  # noqa: F401  (fixtures, registered by name)
    api,
    backend,
    beat,
    celery_app,
    service,
    settings,
    woken,
    worker,
)
