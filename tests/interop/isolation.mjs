// Two agents through one mcpvisord, each an MCP client of its own (the TypeScript SDK's
// Client, pinned in package.json, through `mcpvisorctl -s SOCKET connect`, the bridge
// every agent launches): agent A leaves state in a stateful server, then agent B, connected
// beside it, looks. Run by test_isolation.c, which asserts on the facts printed.
//
//   node isolation.mjs SOCKET SCENARIO [ARG...]
//
// When SOCKET is an http:// URL, each agent is an HTTP session of the daemon's front door
// instead (the SDK's StreamableHTTPClientTransport, $MCPVISOR_TOKEN its bearer token).
// Either way each agent ends its session at the end (HTTP: a DELETE).
//
// Both clients stay connected to the end, so that with per-client instances both instances
// run at once. Each scenario prints ONE line of JSON on stdout ({"ok":true,...}) and exits 0;
// on any failure {"ok":false,"error":"...","step":"..."} and exits 1.
//
// Scenarios:
//   memory SECRET      A: memory__create_entities, an entity whose observation is SECRET;
//                      then B and A: memory__read_graph (what each sees)
//   thinking           A: two thoughts of sequential-thinking__sequentialthinking, the second
//                      on a branch "a-private-branch"; then B: its first thought (the history
//                      length and branches the server reports to B)
//   browser SECRET     a page on a loopback HTTP server of this script, titled and holding
//                      SECRET; A: playwright__browser_navigate to it and a snapshot; then B:
//                      playwright__browser_snapshot and playwright__browser_tabs
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [socket, scenario, ...args] = process.argv.slice(2);
const bridge = { command: process.env.MCPVISORCTL || "mcpvisorctl", args: ["-s", socket, "connect"] };
const CALL_TIMEOUT = 40000; // ms: the first call of a client may wait for its instance's start (a browser, under ASan)
const DEADLINE = 120000; // ms, for the whole scenario
let step = "start";

let finished = false;
function finish(facts) {
    if (finished)
        return;
    finished = true;
    process.stdout.write(JSON.stringify(facts) + "\n", () => process.exit(facts.ok ? 0 : 1));
}
function fail(error) {
    finish({ ok: false, scenario, step, error: String(error?.stack ?? error) });
}
setTimeout(() => fail(`scenario not done within ${DEADLINE} ms`), DEADLINE);

const agents = [];
async function connect(name) {
    const client = new Client({ name, version: "1.0.0" }, { capabilities: {} });
    const transport = socket.startsWith("http")
        ? new StreamableHTTPClientTransport(new URL(socket),
            { requestInit: { headers: { Authorization: `Bearer ${process.env.MCPVISOR_TOKEN}` } } })
        : new StdioClientTransport(bridge);
    await client.connect(transport, { timeout: CALL_TIMEOUT });
    agents.push({ client, transport });
    return client;
}

// Each agent leaves as agents do when they are done: an HTTP session ended with a DELETE.
async function leave() {
    step = "the agents leave";
    for (const { client, transport } of agents) {
        if (transport.terminateSession)
            await transport.terminateSession();
        await client.close();
    }
}

const text = (result) => result.content?.filter((c) => c.type === "text").map((c) => c.text).join("\n") ?? "";
async function call(client, name, args) {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT });
    if (result.isError)
        throw new Error(`${name}: ${text(result)}`);
    return result;
}

const scenarios = {
    async memory() {
        const [secret] = args;
        step = "A and B connect";
        const a = await connect("agent-a"), b = await connect("agent-b");
        step = "A: memory__create_entities";
        await call(a, "memory__create_entities", {
            entities: [{ name: "project-falcon", entityType: "project", observations: [secret] }],
        });
        step = "B: memory__read_graph";
        const bSees = text(await call(b, "memory__read_graph", {}));
        step = "A: memory__read_graph";
        const aSees = text(await call(a, "memory__read_graph", {}));
        return { aSees, bSees };
    },

    async thinking() {
        step = "A and B connect";
        const a = await connect("agent-a"), b = await connect("agent-b");
        const think = async (c, args) => {
            const result = await call(c, "sequential-thinking__sequentialthinking", args);
            return result.structuredContent ?? JSON.parse(text(result));
        };
        step = "A: thought 1";
        await think(a, { thought: "A plans in private", thoughtNumber: 1, totalThoughts: 3, nextThoughtNeeded: true });
        step = "A: thought 2, on a branch";
        const aSecond = await think(a, { thought: "A's private alternative", thoughtNumber: 2, totalThoughts: 3,
            nextThoughtNeeded: true, branchFromThought: 1, branchId: "a-private-branch" });
        step = "B: its first thought";
        const bFirst = await think(b, { thought: "B starts", thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false });
        return { aSecond, bFirst };
    },

    async browser() {
        const [secret] = args;
        const page = `<!doctype html><html><head><title>A's session ${secret}</title></head>` +
            `<body><h1>Signed in</h1><p>session token: ${secret}</p></body></html>`;
        const server = http.createServer((req, res) => {
            res.writeHead(200, { "content-type": "text/html" });
            res.end(page);
        });
        await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
        const url = `http://127.0.0.1:${server.address().port}/account`;
        step = "A and B connect";
        const a = await connect("agent-a"), b = await connect("agent-b");
        step = "A: playwright__browser_navigate";
        const aNavigated = text(await call(a, "playwright__browser_navigate", { url }));
        step = "A: playwright__browser_snapshot";
        const aSees = text(await call(a, "playwright__browser_snapshot", {}));
        step = "B: playwright__browser_snapshot";
        // B's browser may have no page yet: its answer (an error or not) is what B sees
        const bSnapshot = await b.callTool({ name: "playwright__browser_snapshot", arguments: {} }, undefined,
            { timeout: CALL_TIMEOUT });
        step = "B: playwright__browser_tabs";
        const bTabs = await b.callTool({ name: "playwright__browser_tabs", arguments: { action: "list" } }, undefined,
            { timeout: CALL_TIMEOUT });
        server.close();
        return { url, aNavigated, aSees, bSees: text(bSnapshot) + "\n" + text(bTabs) };
    },
};

if (!scenarios[scenario])
    fail(`unknown scenario ${scenario}`);
scenarios[scenario]().then(async (facts) => { await leave(); finish({ ok: true, scenario, ...facts }); }, fail);
