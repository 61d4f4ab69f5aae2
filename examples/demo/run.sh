#!/bin/sh
# Runs the demo on a fresh copy of examples/demo/workspace, so it can be run
# again and again; the shipped workspace is never touched.
#
#   sh examples/demo/run.sh              # text output
#   sh examples/demo/run.sh --json       # one JSON event per line
#   sh examples/demo/run.sh --with-mcp   # the same gates on an MCP server's tools
#                                        # (needs: npm ci --prefix mcptool/testdata/npm)
#
# The agent reads, greps, edits and runs a shell command; its edit outside
# the workspace is refused by confinement, its `rm` by the policy, its
# overwrite by --deny write, and the edit of the notes waits for approval
# (answered "yes" here; see docs/cli.md for the approve-later flow).
# Exit status is tollgate's.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
mcp=
if [ "${1:-}" = "--with-mcp" ]; then
  shift
  mcp=1
  if [ ! -x "$repo/mcptool/testdata/npm/node_modules/.bin/mcp-server-filesystem" ]; then
    echo "The MCP part needs the filesystem server: npm ci --prefix mcptool/testdata/npm" >&2
    exit 2
  fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$repo/examples/demo/workspace" "$tmp/workspace"
go build -C "$repo" -o "$tmp/tollgate" ./cmd/tollgate
cd "$tmp"
status=0
if [ -n "$mcp" ]; then
  # The server may touch only the copy; the script's paths point into it.
  export TOLLGATE_DEMO_WORKSPACE="$tmp/workspace"
  sed "s|\${WORKSPACE}|$tmp/workspace|g" "$repo/examples/demo/mcp-script.yaml" > "$tmp/mcp-script.yaml"
  "$tmp/tollgate" run \
    --model "script:$tmp/mcp-script.yaml" \
    --workdir "$tmp/workspace" \
    --mcp "$repo/examples/demo/mcp.json" \
    --hooks "$repo/examples/demo/hooks.yaml" \
    --policy "$repo/examples/demo/policy.yaml" \
    --approve yes \
    --state-dir "$tmp/.tollgate" \
    "$@" \
    "Summarise the notes into summary.txt" || status=$?
  echo
  echo "== summary.txt, written through the MCP server after approval"
  cat "$tmp/workspace/summary.txt"
  echo "== notes.txt, protected by the policy (first line)"
  head -n 1 "$tmp/workspace/notes.txt"
  exit $status
fi
"$tmp/tollgate" run \
  --model "script:$repo/examples/demo/script.yaml" \
  --workdir "$tmp/workspace" \
  --deny write \
  --hooks "$repo/examples/demo/hooks.yaml" \
  --policy "$repo/examples/demo/policy.yaml" \
  --approve yes \
  --state-dir "$tmp/.tollgate" \
  --log-file "$tmp/tollgate.log" \
  "$@" \
  "Tidy up the release notes" || status=$?
echo
echo "== todo.md after the run (the copy; the shipped workspace is unchanged)"
cat "$tmp/workspace/todo.md"
if [ -f "$tmp/tollgate.log" ]; then
  echo "== the hooks' log lines (from --log-file tollgate.log)"
  grep -F '[HOOK]' "$tmp/tollgate.log" || true
fi
if [ -f "$tmp/workspace/tollgate-errors.log" ]; then
  echo "== tollgate-errors.log (written in the workspace by the onError hook)"
  cat "$tmp/workspace/tollgate-errors.log"
fi
if [ -e "$tmp/outside.txt" ]; then echo "outside.txt exists: confinement failed" >&2; exit 1; fi
exit $status
