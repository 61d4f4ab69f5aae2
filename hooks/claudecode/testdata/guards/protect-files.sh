#!/bin/sh
# PreToolUse guard for Edit|Write: never touch .env files or lock files.
file=$(jq -r '.tool_input.file_path // empty')
case "$(basename "$file")" in
  .env|.env.*|package-lock.json|yarn.lock|pnpm-lock.yaml|go.sum|Cargo.lock)
    jq -n --arg f "$file" '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: ("\($f) is protected")}}'
    ;;
esac
exit 0
