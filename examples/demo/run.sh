#!/bin/sh
# Runs the demo on a fresh copy of examples/demo/workspace, so it can be run
# again and again; the shipped workspace is never touched.
#
#   sh examples/demo/run.sh            # text output
#   sh examples/demo/run.sh --json     # one JSON event per line
#
# The agent reads, greps, edits and runs a shell command; its edit outside
# the workspace is refused by confinement, its `rm` by the policy, its
# overwrite by --deny write, and the edit of the notes waits for approval
# (answered "yes" here; see README.md for the approve-later flow).
# Exit status is tollgate's.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$repo/examples/demo/workspace" "$tmp/workspace"
go build -C "$repo" -o "$tmp/tollgate" ./cmd/tollgate
cd "$tmp"   # the hooks' onError command appends to ./tollgate-errors.log
status=0
"$tmp/tollgate" run \
  --model "script:$repo/examples/demo/script.yaml" \
  --workdir "$tmp/workspace" \
  --deny write \
  --hooks "$repo/examples/demo/hooks.yaml" \
  --policy "$repo/examples/demo/policy.yaml" \
  --approve yes \
  --state-dir "$tmp/.tollgate" \
  "$@" \
  "Tidy up the release notes" || status=$?
echo
echo "== todo.md after the run (the copy; the shipped workspace is unchanged)"
cat "$tmp/workspace/todo.md"
if [ -f "$tmp/tollgate-errors.log" ]; then
  echo "== tollgate-errors.log (written by the onError hook)"
  cat "$tmp/tollgate-errors.log"
fi
if [ -e "$tmp/outside.txt" ]; then echo "outside.txt exists: confinement failed" >&2; exit 1; fi
exit $status
