#!/usr/bin/env python3
# Stop hook: do not let the agent stop before the tests have passed (a
# marker file the test command writes), unless it was already sent back once.
import json, os, sys

data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)
if not os.path.exists(os.path.join(data["cwd"], ".tests-passed")):
    print(json.dumps({"decision": "block", "reason": "Run the tests (sh test.sh) before you stop."}))
sys.exit(0)
