# Two commands for a newcomer: `make serve` runs the service, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint install clean fuzz chaos

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

LINT := $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy && $(BIN)/lint-imports

lint: $(STAMP)
	$(LINT)

# Six processes on 2 cores: most of a test's time is waiting on live workers; an idle process
# takes queued tests from a busy one. A run starts hundreds of Python processes, so they keep
# compiled bytecode (and pytest its rewritten tests) even where the shell says not to write it.
# Lint runs beside the tests, its output shown after theirs: a clean clone's first mypy run
# (no cache) is 20 s of one core, which the tests' first seconds (collection) leave idle.
test: $(STAMP)
	./scripts/ensure-services.sh
	./scripts/ensure-chromium.sh
	( $(LINT) ) > $(VENV)/lint.log 2>&1 & linting=$$!; trap 'kill $$linting 2>/dev/null' INT TERM; \
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 6 --dist worksteal; tested=$$?; \
	wait $$linting; linted=$$?; cat $(VENV)/lint.log; \
	test $$tested -eq 0 && test $$linted -eq 0

# A deep schemathesis run (the suite's is bounded): ESCALATE_FUZZ_EXAMPLES per operation and
# mode, ESCALATE_FUZZ_SCENARIOS stateful scenarios per token kind.
fuzz: $(STAMP)
	ESCALATE_FUZZ_EXAMPLES=$${ESCALATE_FUZZ_EXAMPLES-200} ESCALATE_FUZZ_SCENARIOS=$${ESCALATE_FUZZ_SCENARIOS-100} \
		$(BIN)/python -m pytest tests/security/test_schemathesis.py -p no:xdist -o timeout=0

# The chaos suite at full size (docs/RELIABILITY.md): 1,000 cases under worker kills, Redis
# lost three times, PostgreSQL down 30 s, 10,000 raises; long, give it a quiet machine.
# `make test` runs the same faults small. Figures are appended to chaos-figures.jsonl.
chaos: $(STAMP)
	CHAOS=long CHAOS_FIGURES=$${CHAOS_FIGURES-chaos-figures.jsonl} $(BIN)/python -m pytest tests/chaos -s

clean:
	rm -rf $(VENV) .escalate .pytest_cache .mypy_cache .ruff_cache
