# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck browser clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/kgroups serve --override listeners=PLAINTEXT://127.0.0.1:9092 --override log.dirs=./data

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy --strict src/

test: lint typecheck browser
	$(BIN)/pytest -q -n 2 --dist loadfile  # two workers, a test file stays on one

# The analytics report's page test drives Debian's chromium, headless.
browser:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
		|| echo "chromium not installed: the report page test will be skipped"

clean:
	rm -rf $(VENV) data .mypy_cache .pytest_cache .ruff_cache
