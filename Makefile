# Two commands for a newcomer: `make serve` runs the service, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint install clean chaos

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The local demo lets runs' webhooks and probes reach this machine's loopback (the service's
# own port excepted); set ESCALATE_OUTBOUND_ALLOW= (empty) for public addresses only.
serve: $(STAMP)
	ESCALATE_OUTBOUND_ALLOW="$${ESCALATE_OUTBOUND_ALLOW-127.0.0.1}" $(BIN)/escalate serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: $(STAMP) lint
	./scripts/ensure-services.sh
	./scripts/ensure-chromium.sh
	$(BIN)/python -m pytest

# The chaos suite at full size (docs/RELIABILITY.md): 1,000 cases under worker kills, Redis
# lost three times, PostgreSQL down 30 s, 10,000 raises; long, give it a quiet machine.
# `make test` runs the same faults small. Figures are appended to chaos-figures.jsonl.
chaos: $(STAMP)
	CHAOS=long CHAOS_FIGURES=$${CHAOS_FIGURES-chaos-figures.jsonl} $(BIN)/python -m pytest tests/chaos -s

clean:
	rm -rf $(VENV) .escalate .pytest_cache .mypy_cache .ruff_cache
