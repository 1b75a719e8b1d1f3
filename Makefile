# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501

.PHONY: run test lint install install-dev browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installs are stamped so repeated runs are fast; editing requirements re-installs.
$(VENV)/.installed: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt -e .
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# Chromium for the browser tests: Debian's package (Playwright cannot download its own here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; }

run: install
	$(BIN)/streamlit run app.py --server.port $(PORT)

lint: install-dev
	$(BIN)/ruff check jaxcompare tests pages app.py ui.py benchmarks

test: install-dev browser lint
	JAX_PLATFORMS=cpu $(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
