# The two commands a newcomer needs: `make demo` runs a whole job end to end (then serves the dashboard until
# Ctrl-C), `make test` runs the tests. `make lint` runs ruff and mypy; `make lock` recompiles requirements.lock.
VENV ?= .venv
PYTHON ?= python3
# The lock covers Python 3.11+ on every platform uv knows (universal mode), with every extra and the build backend.
LOCK_FLAGS = --universal --python-version 3.11 --all-extras --generate-hashes --custom-compile-command 'make lock'

.PHONY: demo test install lint lock

# Every package comes from the hashed lock; the project itself is installed on top without resolving anything.
$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) scripts/lockfile.py check requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# uv (the lock compiler) is pinned and hashed in requirements-tools.lock; only `make lock` needs it.
$(VENV)/.tools: requirements-tools.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements-tools.lock
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/copydesk demo --serve

test: install
	$(VENV)/bin/python -m pytest -q

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# Versions already in the lock are kept where they still fit; `make lock UPGRADE=1` takes the newest instead.
lock: $(VENV)/.tools
	$(PYTHON) scripts/lockfile.py build-requires \
	  | $(VENV)/bin/uv pip compile $(LOCK_FLAGS) $(if $(UPGRADE),--upgrade) --quiet pyproject.toml - -o requirements.lock
	$(PYTHON) scripts/lockfile.py stamp requirements.lock
