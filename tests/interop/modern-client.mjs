// An MCP client of the modern era (2026-07-28) built on the TypeScript SDK 2.x
// (@modelcontextprotocol/client, pinned in package.json), run by test_interop.c against
// mcpvisord.
//
//   node modern-client.mjs TARGET MODE
//
// TARGET is the daemon's MCP socket, reached through `mcpvisorctl -s SOCKET connect`
// ($MCPVISORCTL), or its http:// endpoint with $MCPVISOR_TOKEN as the bearer token. MODE is
// "pin" (the client speaks 2026-07-28 only, no fallback) or "auto" (it probes with
// server/discover and falls back to initialize only on a legacy answer). The client
// connects, lists, calls everything__get-sum, a long operation with progress, and the same
// cancelled by abort after its first progress (waiting until $WIRELOG, what the everything
// server read on stdin, has the cancellation); then prints ONE line of JSON with what it saw
// ({"ok":true,...}) and exits 0, or {"ok":false,"step":...,"error":...} and exits 1.
import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [target, mode] = process.argv.slice(2);
const CALL_TIMEOUT = 10000;
const DEADLINE = 40000;
let step = "start";

function finish(facts) {
    process.stdout.write(JSON.stringify(facts) + "\n", () => process.exit(facts.ok ? 0 : 1));
}
setTimeout(() => finish({ ok: false, step, error: `not done within ${DEADLINE} ms` }), DEADLINE).unref();

async function waitFor(what, check, ms = CALL_TIMEOUT) {
    const until = Date.now() + ms;
    while (!check()) {
        if (Date.now() > until)
            throw new Error(`not within ${ms} ms: ${what}`);
        await new Promise((r) => setTimeout(r, 20));
    }
}

const text = (result) => result.content?.filter((c) => c.type === "text").map((c) => c.text).join("\n");

async function main() {
    const client = new Client({ name: "interop-modern", version: "2.4.0" }, {
        capabilities: {},
        versionNegotiation: { mode: mode === "auto" ? "auto" : { pin: "2026-07-28" } },
    });
    const transport = target.startsWith("http")
        ? new StreamableHTTPClientTransport(new URL(target),
            { requestInit: { headers: { Authorization: `Bearer ${process.env.MCPVISOR_TOKEN}` } } })
        : new StdioClientTransport({ command: process.env.MCPVISORCTL || "mcpvisorctl", args: ["-s", target, "connect"] });
    const sent = [];
    step = "connect";
    await client.connect(transport, { timeout: CALL_TIMEOUT });
    const send = transport.send.bind(transport);
    transport.send = (msg, opts) => { sent.push(msg); return send(msg, opts); };
    const facts = {
        version: client.getNegotiatedProtocolVersion(),
        server: client.getServerVersion()?.name,
        hasInstructions: typeof client.getInstructions() === "string",
    };
    step = "tools/list";
    facts.tools = (await client.listTools(undefined, { timeout: CALL_TIMEOUT })).tools.map((t) => t.name);
    step = "everything__get-sum";
    facts.sum = text(await client.callTool({ name: "everything__get-sum", arguments: { a: 2, b: 3 } }, { timeout: CALL_TIMEOUT }));
    step = "progress";
    let progressed = 0;
    facts.longResult = text(await client.callTool({ name: "everything__trigger-long-running-operation",
        arguments: { duration: 0.4, steps: 4 } }, { timeout: CALL_TIMEOUT, onprogress: () => progressed++ }));
    facts.progressed = progressed;
    step = "cancel";
    const abort = new AbortController();
    facts.cancelled = await client.callTool({ name: "everything__trigger-long-running-operation",
        arguments: { duration: 3, steps: 30 } }, { timeout: CALL_TIMEOUT, signal: abort.signal,
        onprogress: () => abort.abort("interop test cancels") }).then(() => "answered", (e) => String(e));
    step = "the server reads notifications/cancelled";
    if (process.env.WIRELOG)
        await waitFor("notifications/cancelled in " + process.env.WIRELOG,
            () => readFileSync(process.env.WIRELOG, "utf8").includes("notifications/cancelled"));
    // every request it sent after connecting named its version in _meta, and none was initialize
    facts.allModern = sent.filter((m) => m.method && m.id !== undefined)
        .every((m) => m.params?._meta?.["io.modelcontextprotocol/protocolVersion"] === "2026-07-28");
    facts.methods = [...new Set(sent.map((m) => m.method).filter(Boolean))];
    await client.close();
    return facts;
}

main().then((facts) => finish({ ok: true, ...facts }), (e) => finish({ ok: false, step, error: String(e?.stack ?? e) }));
