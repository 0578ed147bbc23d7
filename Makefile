# The two commands a newcomer needs: `make demo` runs a whole job end to end, `make test` runs the tests.
VENV ?= .venv
PYTHON ?= python3

.PHONY: demo test install

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/copydesk demo

test: install
	$(VENV)/bin/python -m pytest -q
