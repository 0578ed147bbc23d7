# The two commands a newcomer needs: `make demo` runs a whole job end to end (then serves the dashboard until
# Ctrl-C), `make test` runs the tests. `make lint` runs ruff (lint and format check), mypy and hadolint; `make lock` recompiles the locks.
VENV ?= .venv
PYTHON ?= python3
# The locks cover Python 3.11+ on every platform uv knows (universal mode), with the build backend: the image builds
# the wheel from the runtime lock alone.
LOCK_FLAGS = --universal --python-version 3.11 --generate-hashes --custom-compile-command 'make lock' \
  $(if $(UPGRADE),--upgrade) --quiet

.PHONY: demo test install lint lock

# Every package comes from the hashed development lock; the project itself is installed on top without resolving
# anything.
$(VENV)/.installed: pyproject.toml requirements.lock requirements-dev.lock
	@echo "Installing Copydesk, its dependencies and its test and lint tools into $(VENV) (a minute or two the first time)..."
	$(PYTHON) scripts/lockfile.py check requirements.lock
	$(PYTHON) scripts/lockfile.py check requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --require-hashes -r requirements-dev.lock
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
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/hadolint Dockerfile

# requirements.lock: what Copydesk needs to run (the image installs it). requirements-dev.lock: that plus the test
# and lint tools, compiled within the runtime lock's versions so both agree. Versions already locked are kept where
# they still fit; `make lock UPGRADE=1` takes the newest instead.
lock: $(VENV)/.tools
	$(PYTHON) scripts/lockfile.py build-requires \
	  | $(VENV)/bin/uv pip compile $(LOCK_FLAGS) pyproject.toml - -o requirements.lock
	$(PYTHON) scripts/lockfile.py build-requires \
	  | $(VENV)/bin/uv pip compile $(LOCK_FLAGS) --all-extras pyproject.toml - -c requirements.lock \
	      -o requirements-dev.lock
	$(PYTHON) scripts/lockfile.py stamp requirements.lock
	$(PYTHON) scripts/lockfile.py stamp requirements-dev.lock
