"""A do-nothing MCP server on stdio: the peer of `cargo bench -p amc-cli --bench mcp`.

It answers `initialize`, and every `tools/call` with the reply AMC gave (read once from
the file named on the command line), so the bench measures what the transport costs
beside `amc mcp`. Newline-delimited JSON-RPC, as MCP's stdio transport defines it.
"""

import json
import sys

reply = json.load(open(sys.argv[1]))
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "do-nothing", "version": "1"}}
    else:
        result = reply
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
