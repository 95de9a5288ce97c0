# The two commands a newcomer needs: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PYDEPS := $(VENV)/.deps-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)
NPMDEPS := node_modules/.deps-$(shell cat package.json package-lock.json 2>/dev/null | sha1sum | cut -c1-12)
PGDIR ?= /tmp/lab-test-pg
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: run demo test setup system lint typecheck check pytest login-link bench compat-check clean

run: setup
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py serve

# lab with the real agent CLI pointed at the project's scripted local model: no account needed.
demo: setup
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py demo

setup: system $(PYDEPS) $(NPMDEPS)

system:
	@scripts/ensure-system $(if $(filter test pytest,$(MAKECMDGOALS)),test,run)

$(PYDEPS):
	@test -x $(PY) || "$$(scripts/ensure-python)" -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	@rm -f $(VENV)/.deps-* && touch $@

# npm ci first empties node_modules: through a symlink it would empty another checkout's.
$(NPMDEPS): package.json
	@if [ -L node_modules ]; then echo "node_modules is a symlink ($$(readlink node_modules)); npm ci would empty what it points to. Replace it with a directory of its own." >&2; exit 1; fi
	npm ci --no-audit --no-fund --loglevel=error
	@rm -f node_modules/.deps-* && touch $@

test: setup lint typecheck check pytest

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck:
	$(VENV)/bin/mypy .

# Production-like settings for the deploy check: a real key, https origin, HSTS.
check:
	$(PY) manage.py makemigrations --check --dry-run
	SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))')" \
	LAB_ORIGIN=https://lab.example.com SECURE_SSL_REDIRECT=true SECURE_HSTS_SECONDS=31536000 \
	SECURE_HSTS_INCLUDE_SUBDOMAINS=true SECURE_HSTS_PRELOAD=true \
	  $(PY) manage.py check --deploy --fail-level WARNING

# The whole suite on a real PostgreSQL server (started here unless DATABASE_URL is set), then
# the SQLite default for the database-facing tests. The first pass refuses to run on anything
# but PostgreSQL: a server that failed to start once let it run on SQLite, where the two-worker
# scale-out test skipped and nobody noticed (LAB_TEST_REQUIRE_POSTGRES makes it fail instead).
pytest:
	@set -e; \
	if [ -z "$$DATABASE_URL" ]; then \
	  trap 'scripts/test-postgres stop $(PGDIR)' EXIT; \
	  url="$$(scripts/test-postgres start $(PGDIR))"; eval "$$url"; \
	fi; \
	case "$$DATABASE_URL" in postgres://*|postgresql://*) ;; \
	  *) echo "the PostgreSQL pass needs a postgres:// DATABASE_URL, got '$$DATABASE_URL'" >&2; exit 1;; esac; \
	echo "== pytest on PostgreSQL ($$DATABASE_URL)"; \
	LAB_TEST_REQUIRE_POSTGRES=1 $(PY) -m pytest -q $(PYTEST_ARGS); \
	echo "== pytest on SQLite (the embedded default)"; \
	env -u DATABASE_URL $(PY) -m pytest -q -m "not live and not browser" tests live terminal push runs accounts hosts

login-link: setup
	$(PY) manage.py login_link

bench: setup
	$(PY) -m bench

# What a CLI version breaks, before the pin moves: installs VERSION (x.y.z or latest) of
# PROVIDER's CLI (its package under compat/, claude_code by default) into
# var/compat-check/<package>/<version>/ (never the pin or node_modules), runs its live suite on it and
# prints COMPAT section -> pass/fail. PYTEST_ARGS narrows it (e.g. PYTEST_ARGS="-k login").
PROVIDER ?= claude_code
compat-check: system $(PYDEPS)
	@test -n "$(VERSION)" || { echo "usage: make compat-check VERSION=<x.y.z|latest> [PROVIDER=<package>]" >&2; exit 2; }
	@test -f "compat/$(PROVIDER)/check.py" || { echo "compat/$(PROVIDER)/check.py does not exist" >&2; exit 2; }
	$(PY) -m compat.$(PROVIDER).check $(VERSION) -- $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) node_modules
