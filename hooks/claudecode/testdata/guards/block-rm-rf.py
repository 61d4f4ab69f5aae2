#!/usr/bin/env python3
# PreToolUse guard: refuse recursive forced deletes in Bash commands.
import json, re, sys

data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
cmd = data.get("tool_input", {}).get("command", "")
if re.search(r"\brm\s+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r|-r\s+-f|-f\s+-r)\b", cmd):
    print("Blocked: rm -rf is not allowed; delete files one by one", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
