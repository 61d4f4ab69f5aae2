#!/bin/sh
# The test command of README.md and docs/testing.md, and what CI runs (.ci/run).
#
# It installs what the tests need, then checks formatting, vets and runs every
# test with the race detector:
#   - Go 1.26 (on PATH);
#   - Node.js and npm, for the real MCP servers the integration tests start
#     (@modelcontextprotocol/server-filesystem and server-everything, pinned in
#     mcptool/testdata/npm/package-lock.json and installed there with npm ci);
#   - the MCP conformance suite (@modelcontextprotocol/conformance) and the
#     Node.js 22 it needs (npm package node), pinned in
#     mcptool/testdata/conformance/package-lock.json and installed there
#     with npm ci, for internal/cmd/mcpconformance;
#   - the Claude Code CLI that `tollgate claude-code hook` governs in its
#     tests (@anthropic-ai/claude-code, pinned in
#     cmd/tollgate/testdata/claudecode/package-lock.json);
#   - the Codex CLI that `tollgate codex hook` governs in its tests
#     (@openai/codex, pinned in cmd/tollgate/testdata/codex/package-lock.json);
#   - jq and python3, which the Claude Code hook fixtures are written in;
#   - gcc and libc6-dev, for the shim the sandbox's tests build;
#   - PostgreSQL (Debian packages), started privately on 127.0.0.1 by
#     scripts/postgres.sh for the PostgreSQL store and durable-run tests, and
#     stopped by its PID when the tests end;
#   - Chromium, which the approvals page's tests (internal/web) drive with
#     chromedp, headless, as root, with no network beyond the loopback.
#
# It needs root and apt-get to install; docs/testing.md says what it leaves
# changed on the machine (no configuration file, no running service), and how
# to run the tests without root and without the services:
#   TOLLGATE_TEST_POSTGRES=skip TOLLGATE_TEST_BROWSER=skip go test -short ./...
# (-short skips the tests on Node.js: the MCP servers, the conformance suite,
# the Claude Code and Codex CLIs).
#
# Usage: sh scripts/test.sh [extra go test flags, e.g. -run TestDemo]
set -eu
cd "$(dirname "$0")/.."

# The Debian packages the tests need, installed together: one apt-get update
# and one apt-get install at most, for the whole command (scripts/postgres.sh
# does not update the lists again when this did: TOLLGATE_APT_UPDATED).
need() { command -v "$1" >/dev/null 2>&1; }
missing=""
# Node.js and npm run the real MCP servers of the integration tests.
if ! need node || ! need npm; then missing="$missing nodejs npm"; fi
# The Claude Code hook fixtures (hooks/claudecode/testdata) are sh + jq and
# python3 scripts, as such hooks are written.
if ! need jq || ! need python3; then missing="$missing jq python3"; fi
# The sandbox's tests build an LD_PRELOAD shim (an attacker's MPTCP one).
if ! need gcc; then missing="$missing gcc libc6-dev"; fi
# The approvals page (internal/web) is tested in a real browser: Debian's
# Chromium, found on PATH (or at $TOLLGATE_CHROMIUM) by the tests.
if [ -z "${TOLLGATE_CHROMIUM:-}" ] && ! need chromium && ! need chromium-browser; then missing="$missing chromium"; fi
if [ -n "$missing" ]; then
  echo "== installing$missing (Debian packages)"
  if ! need apt-get; then
    echo "the tests need these Debian packages (or their equivalents):$missing" >&2
    exit 1
  fi
  apt-get update -qq
  # $missing is a list of words.
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  TOLLGATE_APT_UPDATED=1
  export TOLLGATE_APT_UPDATED
fi

echo "== installing the MCP servers used by the tests (npm ci)"
npm ci --prefix mcptool/testdata/npm --no-audit --no-fund --loglevel=error
echo "== installing the MCP conformance suite and Node.js 22 (npm ci)"
npm ci --prefix mcptool/testdata/conformance --no-audit --no-fund --loglevel=error
echo "== installing the Claude Code CLI used by the tests (npm ci)"
# Pinned in cmd/tollgate/testdata/claudecode/package-lock.json; its native
# binary comes in its platform package. The tests run it offline against a
# local mock of the Messages API, with tollgate's hook deciding its calls.
npm ci --prefix cmd/tollgate/testdata/claudecode --no-audit --no-fund --loglevel=error
echo "== installing the Codex CLI used by the tests (npm ci)"
# Pinned in cmd/tollgate/testdata/codex/package-lock.json; its native binary
# comes in its platform package. The tests run it offline against a local
# mock of the Responses API, with tollgate's hook deciding its calls.
npm ci --prefix cmd/tollgate/testdata/codex --no-audit --no-fund --loglevel=error

echo "== starting PostgreSQL"
pgdir=$(mktemp -d /tmp/tollgate-pg.XXXXXX)
trap 'sh scripts/postgres.sh stop "$pgdir"; rm -rf "$pgdir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TOLLGATE_TEST_POSTGRES_URL=$(sh scripts/postgres.sh start "$pgdir")
export TOLLGATE_TEST_POSTGRES_URL

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './mcptool/testdata/npm/*' -not -path './mcptool/testdata/conformance/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
# cmd/tollgate builds its binary once and runs every command end to end; on
# two loaded cores it takes minutes with -race (docs/testing.md), so the limit
# per package is 20 minutes here rather than go test's default ten.
go test -race -count=1 -timeout 20m "$@" ./...
