// A modern-era (2026-07-28) client of the TypeScript SDK 2.x whose call reaches a legacy
// server that asks for elicitation: the daemon answers the call input_required, the SDK
// fulfils it through its elicitation/create handler and retries (autoFulfill), run by
// test_interop.c.
//
//   node modern-elicit.mjs TARGET
//
// TARGET as for modern-client.mjs (the socket through `mcpvisorctl connect`, or http://).
// Calls demo__ask, which sends elicitation/create and answers with the client's response;
// prints ONE line of JSON ({"ok":true,"text":...,"asked":N,"sent":[methods]}) and exits 0.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [target] = process.argv.slice(2);
const CALL_TIMEOUT = 10000;
let step = "start";

function finish(facts) {
    process.stdout.write(JSON.stringify(facts) + "\n", () => process.exit(facts.ok ? 0 : 1));
}
setTimeout(() => finish({ ok: false, step, error: "not done within 30000 ms" }), 30000).unref();

async function main() {
    const client = new Client({ name: "interop-mrtr", version: "2.4.0" }, {
        capabilities: { elicitation: {} },
        versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
    let asked = 0;
    client.setRequestHandler("elicitation/create", async (request) => {
        asked++;
        return { action: "accept", content: { name: `interop ${request.params.message}` } };
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
    step = "demo__ask";
    const result = await client.callTool({ name: "demo__ask", arguments: { method: "elicitation/create",
        params: { message: "who?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } } } },
        { timeout: CALL_TIMEOUT });
    const text = result.content?.filter((c) => c.type === "text").map((c) => c.text).join("\n");
    const calls = sent.filter((m) => m.method === "tools/call");
    await client.close();
    return { text, asked, calls: calls.length, retried: calls.some((m) => typeof m.params?.requestState === "string") };
}

main().then((facts) => finish({ ok: true, ...facts }), (e) => finish({ ok: false, step, error: String(e?.stack ?? e) }));
