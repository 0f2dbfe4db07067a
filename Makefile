# The two commands of the quick start: `make up` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

export STATE_ROOT ?= .state

help:
	@echo "make up     install what is missing, build, serve on 127.0.0.1:8080 (PGlite, local boxes)"
	@echo "make test   typecheck, lint, unused code, format, migrations, every test on PGlite and PostgreSQL"
	@echo "make bench  exec, cold start, density, a Cedar decision and measurement against the floor and the peers"
	@echo "make dev    the operator app's Vite server on 127.0.0.1:5173, proxying /api to a running server (WARREN_URL, default :8080)"

setup:
	@scripts/setup.sh

build: setup
	@npm run --silent build

# the CLIs of the harness kinds the operator enables (WARREN_HARNESS_KINDS=codex,claude-code,opencode)
harness: setup
	@scripts/harness.sh "$${WARREN_HARNESS_DIR:-$(STATE_ROOT)/harness}" $${WARREN_HARNESS_KINDS:-}

up: build harness
	@node dist/cli/main.js serve

test:
	@scripts/test.sh

dev: setup
	@npm run --silent dev:web

bench: build
	@node --import tsx bench/main.ts

clean:
	rm -rf dist

.PHONY: help setup build harness up test bench dev clean
