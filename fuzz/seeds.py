#!/usr/bin/env python3
"""Writes the seed corpora of fuzz/corpus/<target>/ (run from anywhere; the files are
committed, so this is only needed after changing a harness's input format).

The router seeds are scripts in the harness's own encoding (fuzz_router.c): a config
header, three server behaviours, then ops. Each seed is one scenario a fuzzer would take
long to find by itself: a full call, progress, cancellation, a server's request to the
client, a crash mid-call, reloads, roots changed by reloads, the control socket, a stop with
calls in flight."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- router: the op numbers of fuzz_router.c's enum op ----
OPS = ["connect", "connect_control", "initialize", "list", "call", "call2", "cancel", "misc", "control",
       "raw", "answer_upcall", "half_close", "close",
       "child_answer", "child_answer2", "child_wrong", "child_progress", "child_notify", "child_upcall",
       "child_garbage", "child_stderr", "child_close_stdout", "child_stop_reading", "child_exit",
       "child_behaviour",
       "expire", "iterate", "fail_spawn", "reload", "stop"]


def op(name, target=0, *args):
    """One op byte (target in the high 3 bits) and its argument bytes."""
    return bytes([OPS.index(name) | (target << 5)] + list(args))


def header(servers=2, names=0, zero_delay=False, health=False, separator=0, page_size=0, list_wait=False,
           small=False, restart=0, e=0x07, behaviours=None):
    a = (servers - 1) | (names << 2) | (0x40 if zero_delay else 0) | (0x80 if health else 0)
    b = separator | (page_size << 2) | (0x10 if list_wait else 0) | (0xe0 if small else 0)
    c = restart
    beh = behaviours or [(0x00, 0x3f, 0x00)] * 3
    return bytes([a, b, c, e]) + b"".join(bytes(x) for x in beh)


# Client op arguments (see op_initialize, new_id, maybe_token, op_call).
INIT = op("initialize", 0, 0x07, 0)              # all client capabilities, version 0, integer id
def init(k):
    return op("initialize", k, 0x07, 0)
def tools_call(k, entry=0, token=0):
    # what 0 (tools/call), pick_name: how 0 entry i; maybe_token: how (0 none, 4 token 1, 3 fresh int); id: int
    return op("call", k, 0, 0, entry, token) + (b"" if token < 3 else b"") + bytes([0])


ROUTER = {
    "call": header() + op("connect", 0) + init(0) + op("iterate", 2) + op("list", 0, 0x00, 0)
            + tools_call(0, 0, 4) + op("child_progress", 0, 1, 0, 50) + op("child_answer", 0, 1, 0),
    "call-each-server": header(servers=3) + op("connect", 0) + init(0) + op("iterate", 3)
            + tools_call(0, 0, 3) + tools_call(0, 1, 3) + tools_call(0, 2, 3) + tools_call(0, 3, 3)
            + op("child_answer", 0, 0, 3) + op("child_answer", 1, 0, 0) + op("child_answer", 2, 0, 4),
    "upcall": header() + op("connect", 0) + init(0) + op("iterate", 2) + tools_call(0, 0, 0)
            + op("child_upcall", 0, 0, 2, 1, 0) + op("answer_upcall", 0, 0, 0) + op("child_answer", 0, 0, 0),
    "cancel": header() + op("connect", 0) + init(0) + op("iterate", 2) + tools_call(0, 0, 4)
            + op("cancel", 0, 0, 0, 1) + op("child_wrong", 0, 0, 0) + op("child_progress", 0, 0, 0, 10),
    "crash-mid-call": header(zero_delay=True) + op("connect", 0) + init(0) + op("iterate", 2)
            + tools_call(0, 0, 4) + op("child_exit", 0, 1) + op("iterate", 3) + tools_call(0, 0, 0),
    "two-clients-same-token": header() + op("connect", 0) + op("connect", 1) + init(0) + init(1)
            + op("iterate", 2) + tools_call(0, 0, 4) + tools_call(1, 0, 4)
            + op("child_progress", 0, 0, 0, 1) + op("child_progress", 0, 1, 0, 2)
            + op("child_answer", 0, 1, 0) + op("child_answer", 0, 0, 0),
    "reload": header(servers=3) + op("connect", 0) + init(0) + op("iterate", 2) + tools_call(0, 0, 0)
            + op("reload", 0, 0, 0) + op("reload", 0, 1, 1) + op("reload", 0, 3, 0) + op("reload", 0, 2, 4)
            + op("reload", 0, 0, 5) + op("iterate", 4) + op("list", 0, 0, 0),
    "control": header() + op("connect_control", 1) + op("control", 1, 0, 0) + op("control", 1, 3, 0, 0)
            + op("control", 1, 2, 1, 0) + op("control", 1, 1, 1, 0) + op("control", 1, 4, 0)
            + op("control", 1, 6, 0),
    "list-changed": header() + op("connect", 0) + init(0) + op("iterate", 2)
            + op("child_behaviour", 0, 4, 1) + op("child_notify", 0, 0, 0) + op("iterate", 2)
            + op("list", 0, 0x0c | 0x10 | 0x20, 0) + op("misc", 0, 2, 0, 0, 0) + op("child_notify", 0, 3, 0),
    "stop-with-calls": header() + op("connect", 0) + init(0) + op("iterate", 2) + tools_call(0, 0, 4)
            + op("child_behaviour", 0, 3) + op("stop") + op("iterate", 3) + op("expire", 0, 0) + op("expire", 0, 0),
    "half-close": header() + op("connect", 0) + init(0) + op("iterate", 2) + tools_call(0, 0, 0)
            + tools_call(0, 1, 0) + op("half_close", 0) + op("iterate", 2) + op("child_answer", 0, 0, 0),
    "passthrough": header(servers=1) + op("connect", 0) + init(0) + op("iterate", 2)
            + op("misc", 0, 5, 4, 0) + op("misc", 0, 6) + op("child_notify", 0, 5) + op("child_answer", 0, 0, 0),
    "request-timeout": header(e=0x37) + op("connect", 0) + init(0) + op("iterate", 2) + tools_call(0, 0, 4)
            + op("expire", 0, 0) + op("expire", 0, 1) + op("child_answer", 0, 0, 0),
    "slow-start-list-wait": header(list_wait=True, behaviours=[(0x03, 0x3f, 0x00), (0x00, 0x3f, 0x21), (0, 0x3f, 0)])
            + op("connect", 0) + init(0) + op("list", 0, 0, 0) + op("child_answer", 0, 0, 0) + op("iterate", 3)
            + op("child_answer", 1, 0, 0),
    "broken-server": header(behaviours=[(0x00, 0x3f, 0x0f), (0x00, 0x3f, 0x0f), (0, 0x3f, 0)]) + op("connect", 0)
            + init(0) + op("iterate", 2) + op("child_garbage", 0, 5) + b"nope\n" + op("child_close_stdout", 1)
            + op("iterate", 2) + op("child_stop_reading", 0) + tools_call(0, 0, 0) + op("iterate", 2),
    "subscribe-logging": header() + op("connect", 0) + init(0) + op("iterate", 2)
            + op("misc", 0, 2, 0, 0, 0) + op("misc", 0, 1, 0, 0) + op("child_notify", 0, 2, 0, 1, 1)
            + op("child_notify", 0, 3, 1) + op("misc", 0, 3, 0, 0, 0),
    # the client holds the tools; the server's tools change twice, the window is expired
    # after each (the client is told once, then again after it lists anew)
    "list-changed-told": header() + op("connect", 0) + init(0) + op("iterate", 2) + op("list", 0, 0x00, 0)
            + op("child_behaviour", 0, 4, 1) + op("child_notify", 0, 0, 0) + op("iterate", 3) + op("expire", 0, 0)
            + op("iterate", 2) + op("child_behaviour", 0, 4, 2) + op("child_notify", 0, 0, 0) + op("iterate", 3)
            + op("expire", 0, 0) + op("list", 0, 0x00, 0) + op("iterate", 2),
    # one server offered roots only, with the first of the harness's two root lists
    "roots": header(servers=1, restart=0x09, e=0x01) + op("connect", 0) + init(0) + op("iterate", 2)
            + op("child_upcall", 0, 1, 2, 0) + op("reload", 0, 0, 7) + op("iterate", 2)
            + op("child_upcall", 0, 1, 2, 0) + op("reload", 0, 0, 7) + op("iterate", 3)
            + op("reload", 0, 0, 7) + op("iterate", 3) + op("child_upcall", 0, 1, 2, 0) + tools_call(0, 0, 0),
    "paged-lists": header(page_size=1) + op("connect", 0) + init(0) + op("iterate", 2)
            + op("list", 0, 0x04, 0) + op("list", 0, 0x0c | 0x10 | 0x20, 0) + op("list", 0, 0x0c, 0),
}

# ---- framing: [max_line] [4 bytes chunking] [stream] ----
FRAMING = {
    "lines": b"\x05\x01\x02\x03\x04" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n\r\n\n'
             + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n'
             + b'{"jsonrpc":"2.0","id":"a","result":{}}\n{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}',
    "oversize": b"\x08\xff\xff\xff\x7f" + b"x" * 40 + b"\n" + b'{"id":1}\n' + b"y" * 20,
    "invalid": b"\x80\x11\x22\x33\x44" + b'[1,2]\n{"jsonrpc":"1.0","id":1,"method":"m"}\n{"jsonrpc":"2.0","id":1.5,"result":1}\n'
               + b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}\n"str"\nnull\n123\n{"jsonrpc":"2.0"} trailing\n',
}

# ---- scan: one line ----
SCAN = {
    "result": b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"caf\\u00e9 \\ud83d\\ude00"}],"n":-1.5e3}}',
    "spaced": b' { "result" : [ 1 , true , null , "x" ] , "id" : 0 , "jsonrpc" : "2.0" } ',
    "utf8": '{"jsonrpc":"2.0","id":1,"result":"caf\u00e9 \u20ac \U0001f600"}'.encode(),
    "error": b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}',
    "escaped-key": b'{"jsonrpc":"2.0","id":1,"res\\u0075lt":{},"\\u0065rror":{}}',
    "deep": b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 40 + b"]" * 40 + b"}",
    # catalogue items (issue 14): the name first, in the middle, alone, spelled with escapes
    "item-first": b'{"name":"read","description":"Reads","inputSchema":{"type":"object","properties":{"name":{}}}}',
    "item-middle": b'{ "d" : 1 , "name" : "caf\u00e9 \ud83d\ude00" , "x" : {"name":"in"} }',
    "item-alone": b'{"name":"only"}',
    "item-escaped": b'{"a":[],"n\\u0061me":"q\\"x\\\\y"}',
}

# ---- config: [mode] ... ----
def config_seeds():
    seeds = {}
    for path in ("docs/examples/mcpvisor.json", "packaging/mcpvisor.json"):
        full = os.path.join(HERE, "..", path)
        if os.path.exists(full):
            with open(full, "rb") as f:
                seeds["text-" + os.path.basename(os.path.dirname(path))] = b"\x00" + f.read()
    seeds["text-all-settings"] = b"\x00" + json.dumps({
        "mcpvisor": {"socket": "/run/a.sock", "socketMode": "0600", "logLevel": "debug", "maxMessageSize": 4096,
                     "toolNameSeparator": ".", "listPageSize": 0, "idleExit": 30},
        "mcpServers": {"a": {"command": "x", "env": {"A": "1", "B": {"credential": "b"}}, "restart": "never",
                             "clientCapabilities": ["roots"],
                             "roots": [{"uri": "file:///srv/a", "name": "a"}, "/srv/b c"]},
                       "r": {"command": "r", "roots": ["file:///x", "/x", "rel", {"uri": "file://h/y", "k": 1}]},
                       "bad name": {"command": "y"}, "u": {"url": "http://x"}, "t": {"type": "sse", "command": "z"}},
        "other": 1}).encode()
    # VS Code's shape, other clients' keys, and what json-c would have read silently
    seeds["text-vscode"] = b"\x00" + json.dumps({
        "inputs": [{"type": "promptString", "id": "token", "password": True}],
        "servers": {"gh": {"type": "stdio", "command": "npx", "args": ["-y", "server-github"],
                           "env": {"TOKEN": "${input:token}"}, "envFile": "${workspaceFolder}/.env"},
                    "remote": {"type": "http", "url": "https://example.invalid/mcp"}}}).encode()
    seeds["text-other-clients"] = b"\x00" + json.dumps({
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {"c": {"command": "x", "autoApprove": ["a"], "alwaysAllow": [], "disabled": False,
                             "timeout": 60, "trust": True, "includeTools": ["a"], "excludeTools": ["b"],
                             "description": "d", "cwd": "/srv", "httpUrl": "https://example.invalid"},
                       "t": {"command": "y", "arg": ["typo"], "Env": {}}}}).encode()
    # who sees what: rules, profiles, audit, and a server's tool and prompt filters
    seeds["text-access"] = b"\x00" + json.dumps({
        "mcpvisor": {"access": {"default": "deny", "rules": [
                         {"groups": ["root", 0], "servers": ["prod-db"], "action": "allow"},
                         {"servers": ["prod-db"], "action": "deny"},
                         {"users": ["root", "nobody", 65534], "profiles": ["research"],
                          "tools": ["github__create_*", "github__merge_*"], "prompts": ["p?"],
                          "resources": ["file:///srv/*"], "action": "allow"},
                         {"tools": ["github__create_*"], "action": "deny"}, {"action": "allow"}]},
                     "profiles": {"research": {"servers": ["search", "memory"], "tools": ["search__*", "memory__read_*"]},
                                  "empty": {}},
                     "audit": "calls"},
        "mcpServers": {"github": {"command": "/bin/true", "includeTools": ["get_*", "list_*", "create_*"],
                                  "excludeTools": ["get_secret*"], "includePrompts": ["[a-z]*"], "excludePrompts": ["q"]},
                       "prod-db": {"command": "/bin/true", "excludeTools": ["drop_*"]}}}).encode()
    seeds["text-access-bad"] = b"\x00" + json.dumps({
        "mcpvisor": {"access": {"default": "maybe", "rules": [
                         {"users": ["no-such-user-here", -1, 4294967296, 1.5], "groups": [], "action": "allow"},
                         {"profiles": ["missing"], "servers": [""], "action": "deny"},
                         {"tools": [], "action": "perhaps"}, {"servers": ["a"]}, "rule", {"action": "deny", "extra": 1}],
                                "other": 1},
                     "profiles": {"": {"tools": ["x"]}, "p": {"tools": "x", "users": ["a"]}, "q": []},
                     "audit": "everything"},
        "mcpServers": {"a": {"command": "x", "includeTools": [], "excludeTools": ["", 1],
                             "includePrompts": "p*", "excludePrompts": {"a": 1}}}}).encode()
    # the launcher and confinement: every key, good values and bad ones, exec refusing them
    seeds["text-confinement"] = b"\x00" + json.dumps({
        "mcpvisor": {"launcher": "exec"},
        "mcpServers": {"c": {"command": "/bin/true", "launcher": "systemd", "sandbox": "strict",
                             "readWritePaths": ["/srv/a"], "readOnlyPaths": ["/srv/b"], "network": False,
                             "memoryMax": "1.5G", "tasksMax": 64, "cpuQuota": "200%", "user": "nobody",
                             "group": "nogroup", "dynamicUser": True, "stateDirectory": True},
                       "d": {"command": "x", "memoryMax": "infinity"},
                       "e": {"command": "x", "launcher": "auto", "sandbox": "none", "stateDirectory": "mcpvisor/e"},
                       "bad": {"command": "x", "launcher": "docker", "sandbox": "full", "readWritePaths": ["rel", "/a/../b"],
                               "memoryMax": "1g", "tasksMax": 0, "cpuQuota": "0%", "user": "1000",
                               "stateDirectory": "private/x"},
                       "..": {"command": "x", "launcher": "systemd", "stateDirectory": True}}}).encode()
    seeds["text-repeated"] = (b'\x00{"mcpServers": {"a": {"command": "x", "args": [], "args": ["1"]},'
                              b' "b": {"command": "y"}, "a": {"command": "z", "env": {"K": "1", "\\u004b": "2"}}},'
                              b' "mcpvisor": {"logLevel": "info"}, "servers": {}, "mcpServers": {}}')
    seeds["edits"] = b"\x01" + bytes([3, 1, 5, 4, 6, 0, 2, 0, 5, 9, 3, 2, 7, 1, 2, 3, 8, 4, 1])
    seeds["files"] = (b"\x02\x00" + b'{"mcpServers": {"a": {"command": "x"}}}' + b"\xff"
                      + b'{"mcpServers": {"a": {"command": "y", "args": ["1"]}, "b": {"command": "z"}}}' + b"\xff"
                      + b'{"mcpServers": {"b": {"command": ""}}}' + b"\xff" + b'not json')
    return seeds


# ---- http: [config] [method] [peer] then path, Origin, Authorization, Content-Type, Accept,
# MCP-Protocol-Version, Mcp-Session-Id, Last-Event-ID each as a choice byte (0 absent, i: the
# harness's i-th well-formed value, n+1: raw bytes, their length first), 16 bytes of event id
# numbers, then the body (fuzz_http.c) ----
HTTP_FIELDS = [("path", 5), ("origin", 6), ("auth", 7), ("type", 5), ("accept", 4), ("version", 6), ("session", 5),
               ("event", 10)]
GET, POST, DELETE, OTHER = 0, 1, 2, 3
INITIALIZE_BODY = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                   b'"capabilities":{},"clientInfo":{"name":"it","version":"1"}}}')


def http_seed(method, unix=False, config=0, body=b"", numbers=bytes(16), **fields):
    out = bytes([config, method, 1 if unix else 0])
    for name, n in HTTP_FIELDS:
        v = fields.get(name)
        if v is None:
            out += b"\x00"
        elif isinstance(v, int):
            out += bytes([v])
        else:
            out += bytes([n + 1, len(v)]) + v
    return out + numbers + body


HTTP = {
    "initialize": http_seed(POST, path=1, auth=1, type=1, accept=4, body=INITIALIZE_BODY),
    "call-in-session": http_seed(POST, path=1, auth=1, type=2, accept=4, version=1, session=1,
                                 body=b'{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"demo__echo",'
                                      b'"arguments":{"text":"hi"}}}'),
    "notification": http_seed(POST, path=1, auth=5, type=1, session=b"0123456789abcdef0123456789abcdef",
                              body=b'{"jsonrpc":"2.0","method":"notifications/initialized"}'),
    "get-stream-resumed": http_seed(GET, path=1, auth=2, accept=1, version=2, session=1, event=2,
                                    numbers=bytes([5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0])),
    "get-raw-event-id": http_seed(GET, path=1, auth=1, accept=3, session=5, event=b"42-7"),
    "delete": http_seed(DELETE, path=1, auth=1, session=1, version=3),
    "wrong-token": http_seed(POST, path=1, auth=b"Bearer token-a-0123456789abcdeX", type=1, body=INITIALIZE_BODY),
    "bad-origin": http_seed(POST, path=1, origin=5, auth=1, type=1, body=INITIALIZE_BODY),
    "allowed-origin-config": http_seed(POST, config=3, path=b"/x", origin=2, auth=1, type=1, body=INITIALIZE_BODY),
    "unix-peer": http_seed(POST, unix=True, path=1, type=1, body=INITIALIZE_BODY),
    "healthz": http_seed(GET, path=2),
    "put": http_seed(OTHER, path=1, auth=1),
    "bad-version": http_seed(GET, path=1, auth=1, version=5, session=1),
    "bad-json": http_seed(POST, path=1, auth=1, type=1, body=b'{"jsonrpc":"2.0","id":1,"method":"x"'),
# ---- remote: [status] [type] [flags] [4 bytes chunking] [body] (fuzz_remote.c's tables:
# status 0 = 200, 2 = 202, 11 = 429, 13 = 503; type 0 none, 1 application/json,
# 2 text/event-stream, 7 text/html; flags 0x40 = max 64 KiB, 0x80 = a legacy POST) ----
def remote(status, type_, body, flags=0x40, chunking=b"\x05\x00\x00\x30"):
    return bytes([status, type_, flags]) + chunking + body


REMOTE = {
    # the test server's answers (tests/integration/http-server.c)
    "json-pretty": remote(0, 1, json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "hello over http"}]}}, indent=2).encode() + b"\n"),
    "events": remote(0, 2, b'id: 1\nevent: message\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\n\n'
                     b': keep-alive\r\n\r\nid: 2\rdata: {"jsonrpc":"2.0",\rdata: "method":"notifications/progress"}\r\r'),
    "legacy-endpoint": remote(0, 2, b"event: endpoint\ndata: /messages?session=L1\n\n"
                              b'data: {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05"}}\n\n'),
    "legacy-accepted": remote(2, 8, b"Accepted", flags=0xc0),
    "accepted-no-body": remote(2, 1, b""),
    "html": remote(0, 7, b"<html><body>sign in</body></html>"),
    "gzip": remote(0, 1, bytes([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xab, 0x56, 0xca, 0x2a])),
    "other-id": remote(0, 1, b'{"jsonrpc":"2.0","id":1001,"result":{}}'),
    "refused": remote(11, 8, b"refused: body-s3cret"),
    "server-error": remote(13, 1, b'{"error":"' + b"x" * 300 + b'"}'),
    "oversize-json": remote(0, 1, b'{"jsonrpc":"2.0","id":7,"result":{"text":"' + b"y" * 100 + b'"}}', flags=0x10),
    "oversize-event": remote(0, 2, b'data: {"jsonrpc":"2.0","id":8,"result":"' + b"z" * 100 + b'"}\n\n', flags=0x10),
}


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    write("router", ROUTER)
    write("framing", FRAMING)
    write("scan", SCAN)
    write("config", config_seeds())
    write("http", HTTP)
    write("remote", REMOTE)
    print("seeds written", file=sys.stderr)
