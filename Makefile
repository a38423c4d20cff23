# commcheck: `make run` runs the suite on this machine and writes a report; `make test` tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: setup run test report clean

setup: $(VENV)/.commcheck-installed

$(VENV)/.commcheck-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/commcheck setup-mpi
	touch $@

run: setup
	$(BIN)/commcheck run -- $(RFM_ARGS)

report: setup
	$(BIN)/commcheck report

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf .state
