// A client of modern-server.mjs (the SDK 2.x modern-only server) through mcpvisord, run by
// test_interop.c:
//
//   node modern-server-client.mjs KIND TARGET
//
// KIND: "legacy", the SDK 1.x client (initialize; the server's input_required must reach it
// as an ordinary elicitation/create request), or "modern", the SDK 2.x client pinned to
// 2026-07-28 (the input_required reaches it as such, which it fulfils and retries).
// TARGET: the daemon's socket (through `mcpvisorctl connect`) or an http:// endpoint
// ($MCPVISOR_TOKEN as bearer token). Lists the tools, calls modern__echo and modern__whoami
// (answering the elicitation with the name "interop"); prints ONE line of JSON
// ({"ok":true,"tools":[...],"echo":...,"whoami":...,"asked":N,"states":[...]}) and exits 0.
import * as legacy from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as LegacyStdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as LegacyHttp } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [kind, target] = process.argv.slice(2);
const CALL_TIMEOUT = 10000;
let step = "start";

function finish(facts) {
    process.stdout.write(JSON.stringify(facts) + "\n", () => process.exit(facts.ok ? 0 : 1));
}
setTimeout(() => finish({ ok: false, step, error: "not done within 30000 ms" }), 30000).unref();

const http = target.startsWith("http");
const headers = { Authorization: `Bearer ${process.env.MCPVISOR_TOKEN}` };
const bridge = { command: process.env.MCPVISORCTL || "mcpvisorctl", args: ["-s", target, "connect"] };

function makeClient() {
    let asked = 0;
    const answer = (message) => {
        asked++;
        return { action: "accept", content: { name: `interop (${message})` } };
    };
    if (kind === "legacy") {
        const client = new legacy.Client({ name: "interop-legacy", version: "1.32.2" }, { capabilities: { elicitation: {} } });
        client.setRequestHandler(ElicitRequestSchema, async (request) => answer(request.params.message));
        const transport = http ? new LegacyHttp(new URL(target), { requestInit: { headers } }) : new LegacyStdio(bridge);
        return { client, transport, asked: () => asked };
    }
    const client = new Client({ name: "interop-modern", version: "2.4.0" }, {
        capabilities: { elicitation: {} },
        versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
    client.setRequestHandler("elicitation/create", async (request) => answer(request.params.message));
    const transport = http ? new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } })
        : new StdioClientTransport(bridge);
    return { client, transport, asked: () => asked };
}

// The SDK 1.x takes a result schema before the options, the 2.x does not.
const call = (client, params) => kind === "legacy" ? client.callTool(params, undefined, { timeout: CALL_TIMEOUT })
    : client.callTool(params, { timeout: CALL_TIMEOUT });
const text = (result) => result.content?.filter((c) => c.type === "text").map((c) => c.text).join("\n");

async function main() {
    const { client, transport, asked } = makeClient();
    step = "connect";
    await client.connect(transport, { timeout: CALL_TIMEOUT });
    const sent = [];
    const send = transport.send.bind(transport);
    transport.send = (msg, opts) => { sent.push(msg); return send(msg, opts); };
    step = "list";
    const tools = (await client.listTools(undefined, { timeout: CALL_TIMEOUT })).tools.map((t) => t.name);
    step = "echo";
    const echo = text(await call(client, { name: "modern__echo", arguments: { text: "through the daemon" } }));
    step = "whoami";
    const whoami = await call(client, { name: "modern__whoami", arguments: {} });
    const states = sent.filter((m) => m.method === "tools/call" && typeof m.params?.requestState === "string")
        .map((m) => m.params.requestState);
    await client.close();
    return { tools, echo, whoami: text(whoami), resultType: whoami.resultType ?? null, asked: asked(), states,
        methods: sent.map((m) => m.method).filter(Boolean) };
}

main().then((facts) => finish({ ok: true, ...facts }), (e) => finish({ ok: false, step, error: String(e?.stack ?? e) }));
