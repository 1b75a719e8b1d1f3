# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
# Where `make serve` listens: every interface (a hosted demo); `make run` listens on 127.0.0.1 only.
ADDRESS ?= 0.0.0.0

.PHONY: run serve test lint install install-dev install-plan browser postgres translations clean

# JAX for this machine's accelerator: jax, jax[cuda12], jax[cuda13] or jax[tpu] (ACCEL= overrides).
# ACCEL is passed by hand: make gives $(shell) the environment, not the command line's variables,
# so `make run ACCEL=cuda12` would otherwise detect instead (an ACCEL in the environment arrives too).
ACCEL_SET := ACCEL='$(ACCEL)'
JAX_REQ := $(shell $(ACCEL_SET) $(PYTHON) tools/accelerator.py choose 2>/dev/null)
JAX_STAMP := $(subst ],,$(subst [,-,$(JAX_REQ)))
COMMA := ,
# With a CUDA build the `cuda` extra too: NVML, through which a run reads the GPU's clocks and heat.
EXTRAS := app$(if $(findstring cuda,$(JAX_REQ)),$(COMMA)cuda)
# uv installs into the venv (pip only fetches uv itself): it downloads and unpacks in parallel, and
# keeps one wheel cache, so a fresh clone's install took 24 s here against pip's 53 s. Bytecode is
# compiled at install, as pip does: where Python may not write it (PYTHONDONTWRITEBYTECODE, a
# read-only venv) every process would compile JAX's modules again (import jax 1.42 s, not 0.95 s).
UV := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python
PIP_INSTALL := $(UV) -e '.[$(EXTRAS)]' '$(JAX_REQ)'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# A venv made before uv did the installs gains it here.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv

# Installs are stamped so repeated runs are fast; editing pyproject.toml re-installs.
# The dependency lists live in pyproject.toml: the engine's, then the extras `app`, `dev` and `cluster`
# (the tests run jobs on Ray local clusters).
# The stamp names the JAX build, so a machine that gains a GPU (or ACCEL=) installs again.
$(VENV)/.installed-$(JAX_STAMP): pyproject.toml requirements.txt tools/accelerator.py | $(BIN)/uv
	@$(ACCEL_SET) $(PYTHON) tools/accelerator.py choose >/dev/null
	$(PIP_INSTALL)
	$(ACCEL_SET) $(BIN)/python tools/accelerator.py verify
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed-$(JAX_STAMP)
	$(UV) -e '.[app,dev,cluster]'
	touch $@

install: $(VENV)/.installed-$(JAX_STAMP)
install-dev: $(VENV)/.installed-dev

# What `make install` would run on this machine, without running it.
install-plan:
	@$(ACCEL_SET) $(PYTHON) tools/accelerator.py choose >/dev/null
	@echo "$(PIP_INSTALL)"

# Debian packages for the tests: Chromium's headless shell for the browser tests (Playwright cannot
# download its own here; a full `chromium` or JAXCOMPARE_CHROMIUM does as well) and fonts-noto-cjk,
# the Chinese glyphs the chart PNGs are drawn with (docs/translating.md).
# As root, or with password-less sudo, the missing ones are installed; otherwise make stops and says how.
SYSTEM_HELP := The tests need Chromium and a font with Chinese glyphs, and they could not be installed \
without a password. Install them once with 'sudo apt-get install chromium-headless-shell fonts-noto-cjk' (Debian/Ubuntu), \
or point JAXCOMPARE_CHROMIUM at a Chromium or Chrome binary and install any CJK font, then run 'make test' again.
browser:
	@missing=""; have_chromium() { [ -n "$$JAXCOMPARE_CHROMIUM" ] && [ -x "$$JAXCOMPARE_CHROMIUM" ] || \
	  command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1; }; \
	have_chromium || missing="chromium-headless-shell"; \
	command -v fc-list >/dev/null 2>&1 || missing="$$missing fontconfig"; \
	fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-noto-cjk"; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	  sudo -n apt-get update -qq && sudo -n apt-get install -y -qq $$missing >/dev/null; \
	else echo "make: $(SYSTEM_HELP)" >&2; exit 1; fi; \
	have_chromium && fc-list :lang=zh | grep -q . || { echo "make: $(SYSTEM_HELP)" >&2; exit 1; }

# The PostgreSQL server the history tests start in a temporary folder (tests/postgres_support.py):
# Debian's `postgresql` puts initdb and pg_ctl in /usr/lib/postgresql/<version>/bin. Installed as above.
PG_HELP := The history tests need a PostgreSQL server (initdb, pg_ctl) and it could not be installed without a \
password. Install it once with 'sudo apt-get install postgresql' (Debian/Ubuntu), or put PostgreSQL's bin folder \
on PATH, then run 'make test' again.
PG_FOUND = command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
postgres:
	@$(PG_FOUND) && exit 0; \
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	  sudo -n apt-get update -qq && sudo -n apt-get install -y -qq postgresql >/dev/null; \
	else echo "make: $(PG_HELP)" >&2; exit 1; fi; \
	$(PG_FOUND) || { echo "make: $(PG_HELP)" >&2; exit 1; }

# Streamlit serves through uvicorn, which by default takes a client's address from X-Forwarded-For
# when the connection comes from loopback: anyone could pick their own. Empty: it never does; the app
# reads the header only when JAXCOMPARE_TRUSTED_PROXY_HEADER names it (docs/hosting.md).
NO_PROXY_TRUST := FORWARDED_ALLOW_IPS=

# Local use: loopback only, so your own case files load (docs/hosting.md: safe by default).
run: install
	$(NO_PROXY_TRUST) $(BIN)/streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT)

# The hosted demo (docs/hosting.md): hosted limits, every interface, generic error messages.
# JAXCOMPARE_* variables (the database, devices, the operator token...) pass through.
# The settings are checked first: a bad value is one line and a failed start, not an error at the first visit.
serve: install
	JAXCOMPARE_MODE=hosted $(BIN)/python -m jaxcompare.engine.server.settings
	$(NO_PROXY_TRUST) JAXCOMPARE_MODE=hosted $(BIN)/streamlit run app.py --server.address $(ADDRESS) --server.port $(PORT) \
	  --server.headless true --client.showErrorDetails none

# Style, then the architecture contracts in pyproject.toml ([tool.importlinter]).
lint: install-dev
	$(BIN)/ruff check jaxcompare tests pages app.py benchmarks tools examples
	$(BIN)/lint-imports

# Three test processes by default (pytest-xdist, a module each) for all but the `serial` tests (those
# comparing times measured here, and the load test: tests/conftest.py), then the serial ones alone.
# A third process fills the moments the other two wait on a server, a browser or a child process:
# the parallel part took 400 s in two clean-clone runs, against 415-429 s with two processes
# (benchmarks/RESULTS.md). TEST_WORKERS=0: one process.
# A failure in the first part still runs the second, and fails the target.
TEST_WORKERS ?= 3
PYTEST = JAX_PLATFORMS=cpu $(BIN)/python -m pytest -q
# Bytecode kept where the environment says not to write it (PYTHONDONTWRITEBYTECODE): else each of the
# run's ~140 processes compiles jaxcompare again (85 ms) and each pytest process rewrites every test
# module's asserts (collecting the serial part: 7.4 s, against 3.9 s from the kept bytecode).
test: export PYTHONDONTWRITEBYTECODE :=
# The CPU ceilings are measured first, on a quiet machine, into one file both parts read: measured
# beside the test processes, each of the five read busy and was measured again up to three more
# times (a subset of the parallel tests took 95 s, 76 s with them measured first; RESULTS.md).
# Best effort: a ceiling not measured here is measured by the first test that needs it.
CEILINGS = peaks=$$(mktemp -d) && trap 'rm -rf "$$peaks"' EXIT && trap 'exit 130' INT && trap 'exit 143' TERM HUP && \
	export JAXCOMPARE_TEST_CPU_PEAKS="$${JAXCOMPARE_TEST_CPU_PEAKS:-$$peaks/cpu_peaks.json}" && \
	{ JAX_PLATFORMS=cpu $(BIN)/python tests/quiet_ceilings.py "$$JAXCOMPARE_TEST_CPU_PEAKS" || \
	  echo "make: the CPU ceilings were not measured first; the tests measure them" >&2; }
test: install-dev browser postgres lint
ifeq ($(TEST_WORKERS),0)
	$(CEILINGS) && $(PYTEST) -n 0
else
	$(CEILINGS) && { $(PYTEST) -n $(TEST_WORKERS) --dist loadscope -m "not serial"; parallel=$$?; \
	$(PYTEST) -n 0 -m serial && exit $$parallel; }
endif

# On a GPU or TPU box: devices, self-check, the JAX docs' example beside its Colab numbers, the
# pitfalls (TF32 too), a matmul sweep and the GPU clocks around each run; writes benchmarks/DEVICE.md and
# device-check.json.
# Under 7 minutes on one GPU; without an accelerator it runs small and says so.
# DEVICE_CHECK_ARGS passes options through (`--small`, `--budget S`: benchmarks/device_check.py --help).
DEVICE_CHECK_ARGS ?=
.PHONY: device-check
device-check: install
	$(BIN)/python benchmarks/device_check.py $(DEVICE_CHECK_ARGS)

# Rewrites docs/compare.png (the README's screenshot) from a real comparison in Chromium.
.PHONY: screenshots
screenshots: install-dev browser
	JAX_PLATFORMS=cpu JAXCOMPARE_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/test_screenshot.py tests/test_atlas_picture.py

# After changing a message in the code: merge the catalog with the code (Babel), then translate
# what is new (docs/translating.md); `make test` fails while anything is untranslated.
translations: install-dev
	$(BIN)/python tools/translations.py update

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
