# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck browser store-ha kcat clean

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

# Compiled once here: the tests start hundreds of broker processes, and each
# would compile every module again where PYTHONDONTWRITEBYTECODE is set.
# Three workers on two cores: most tests wait (on sessions, timeouts, child
# processes) far more than they compute; a test file stays on one worker.
test: lint typecheck browser store-ha kcat
	$(BIN)/python -m compileall -q src >/dev/null
	$(BIN)/pytest -q -n 3 --dist loadfile

# The analytics report's page test drives Debian's chromium, headless.
browser:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
		|| echo "chromium not installed: the report page test will be skipped"

# The store's failover tests and `kgroups dev-cluster --ha` run Debian's
# PostgreSQL under Patroni, on etcd.
store-ha:
	@test -x /usr/bin/patroni -a -x /usr/bin/etcd -a -d /usr/lib/postgresql || { apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		postgresql patroni etcd-server >/dev/null; } \
		|| echo "patroni, etcd or postgresql not installed: the store failover tests will be skipped"

# The kcat interop tests drive the broker with Debian's kcat.
kcat:
	@test -x /usr/bin/kcat || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends kcat >/dev/null; } \
		|| echo "kcat not installed: the kcat interop tests will be skipped"

clean:
	rm -rf $(VENV) data .mypy_cache .pytest_cache .ruff_cache
