#!/bin/sh
# The test command of README.md, and what CI runs (.ci/run).
#
# It installs what the tests need, then checks formatting, vets and runs every
# test with the race detector:
#   - Go 1.26 (on PATH);
#   - Node.js and npm, for the real MCP servers the integration tests start
#     (@modelcontextprotocol/server-filesystem and server-everything, pinned in
#     mcptool/testdata/npm/package-lock.json and installed there with npm ci);
#   - jq and python3, which the Claude Code hook fixtures are written in;
#   - PostgreSQL (Debian packages), started privately on 127.0.0.1 by
#     scripts/postgres.sh for the PostgreSQL store and durable-run tests, and
#     stopped by its PID when the tests end;
#   - Chromium, which the approvals page's tests (server/web) drive with
#     chromedp, headless, as root, with no network beyond the loopback.
#
# Usage: sh scripts/test.sh [extra go test flags, e.g. -run TestDemo]
set -eu
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
if ! need node || ! need npm; then
  echo "== installing Node.js and npm (Debian packages)"
  if need apt-get; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "Node.js and npm are required for the MCP integration tests" >&2
    exit 1
  fi
fi

# The Claude Code hook fixtures (hooks/claudecode/testdata) are sh + jq and
# python3 scripts, as such hooks are written.
if ! need jq || ! need python3; then
  echo "== installing jq and python3 (Debian packages)"
  if need apt-get; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq python3 >/dev/null
  else
    echo "jq and python3 are required for the Claude Code hook tests" >&2
    exit 1
  fi
fi

# The approvals page (server/web) is tested in a real browser: Debian's
# Chromium, found on PATH (or at $TOLLGATE_CHROMIUM) by the tests.
if [ -z "${TOLLGATE_CHROMIUM:-}" ] && ! need chromium && ! need chromium-browser; then
  echo "== installing Chromium (Debian package)"
  if need apt-get; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is required for the approvals page tests (server/web)" >&2
    exit 1
  fi
fi

echo "== installing the MCP servers used by the tests (npm ci)"
npm ci --prefix mcptool/testdata/npm --no-audit --no-fund --loglevel=error

echo "== starting PostgreSQL"
pgdir=$(mktemp -d /tmp/tollgate-pg.XXXXXX)
trap 'sh scripts/postgres.sh stop "$pgdir"; rm -rf "$pgdir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TOLLGATE_TEST_POSTGRES_URL=$(sh scripts/postgres.sh start "$pgdir")
export TOLLGATE_TEST_POSTGRES_URL

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './mcptool/testdata/npm/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 "$@" ./...
