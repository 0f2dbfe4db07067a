# The two commands of the quick start: `make up` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# the checkout's .env (scripts/env.sh writes an absolute STATE_ROOT there at the first `make up`)
-include .env
export STATE_ROOT ?= $(CURDIR)/.state

help:
	@echo "make up     install what is missing, build, serve on 127.0.0.1:8080 (PGlite, local boxes)"
	@echo "make test   typecheck, lint, unused code, format, migrations, every test on PGlite and PostgreSQL"
	@echo "make bench  exec, cold start, density, a Cedar decision and measurement against the floor and the peers"
	@echo "make dev    the server from src/ (restarted when src/ or drizzle/ change; a new migration applies at its boot) and the app's Vite server on 127.0.0.1:5173"
	@echo "make image  the server's image (Podman; a Debian root made with debootstrap, cached): WARREN_IMAGE, default warren:latest"

setup:
	@scripts/setup.sh

build: setup
	@npm run --silent build

# the CLIs of the harness kinds the operator enables (WARREN_HARNESS_KINDS=codex,claude-code,opencode)
harness: setup
	@scripts/harness.sh "$${WARREN_HARNESS_DIR:-$(STATE_ROOT)/harness}" $${WARREN_HARNESS_KINDS:-}

# STATE_ROOT made absolute once, in .env: every start, from any folder, finds the same state
env:
	@scripts/env.sh >/dev/null

up: env build harness
	@node dist/cli/main.js serve

test:
	@scripts/test.sh

# the server restarts when src/ changes (tsx watch) or a migration is added to drizzle/ (the
# store migrates at every boot); the app's Vite server proxies /api to it
dev: setup env
	@trap 'kill 0' EXIT; npx tsx watch --clear-screen=false --include 'drizzle/**' src/cli/main.ts serve & \
	  npm run --silent dev:web

image: build
	@scripts/image.sh "$${WARREN_IMAGE:-warren:latest}"

bench: build
	@node --import tsx bench/main.ts

clean:
	rm -rf dist

.PHONY: help setup build harness env up test bench dev image clean
