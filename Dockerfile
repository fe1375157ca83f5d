# One image for every service in docker-compose.yml: api, worker, beat, migrate, flower.
#   docker build -t agent-escalation .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# Flower is not a dependency of the project; it is installed here for the `flower` service.
ARG FLOWER_VERSION=2.2.0

# A non-root user whose home is the state folder (generated tokens, webhook key). The folder
# is created here, owned by that user, so a new named volume mounted on it inherits the owner.
RUN groupadd --system --gid 10001 escalate \
 && useradd --system --uid 10001 --gid escalate --home-dir /var/lib/escalate \
        --no-create-home --shell /usr/sbin/nologin escalate \
 && mkdir -p /var/lib/escalate \
 && chown escalate:escalate /var/lib/escalate \
 && chmod 700 /var/lib/escalate

WORKDIR /src

# Dependencies first, read from pyproject.toml, so editing the code does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt "flower==${FLOWER_VERSION}" \
 && rm /tmp/requirements.txt

# The project itself, as a regular (non-editable) install; the source is removed afterwards.
# The wheel carries the Alembic migrations (tests/test_packaging.py checks it).
COPY . ./
RUN pip install . \
 && cd / \
 && python -c "from models.migrate import MIGRATIONS as m; assert (m / 'env.py').is_file(), m" \
 && rm -rf /src

# The design and the example apprise config. The default design path is resolved relative
# to the installed package (site-packages), so ESCALATE_DESIGN points here explicitly.
WORKDIR /app
COPY examples/ ./examples/

ENV ESCALATE_HOME=/var/lib/escalate \
    ESCALATE_DESIGN=/app/examples/design.yaml

# Fail the build, not the first start, if the CLI or the design is broken. A throwaway home
# keeps anything a command might write out of the image (and so out of new volumes).
RUN ESCALATE_HOME=/tmp/build-check escalate --help > /dev/null \
 && ESCALATE_HOME=/tmp/build-check escalate design check "$ESCALATE_DESIGN" \
 && ESCALATE_HOME=/tmp/build-check python -c "import workers.celery_app, workers.beat_app, api.app" \
 && rm -rf /tmp/build-check

USER escalate
EXPOSE 8765 5555

CMD ["uvicorn", "--factory", "api.app:app_from_env", "--host", "0.0.0.0", "--port", "8765", "--no-proxy-headers"]
