// An MCP client built on the TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package.json), run by test_interop.c against mcpvisord.
//
//   node client.mjs SOCKET SCENARIO [ARG...]
//
// The SDK speaks stdio to a command; the command is `mcpvisorctl -s SOCKET connect`, the
// bridge every agent launches ($MCPVISORCTL, else mcpvisorctl from PATH). When SOCKET is an
// http:// URL instead, the SDK's StreamableHTTPClientTransport talks to the daemon's HTTP front
// door, with $MCPVISOR_TOKEN as its bearer token. Each scenario does
// its steps with deadlines, then prints ONE line of JSON on stdout with what it saw
// ({"ok":true,...}) and exits 0; on any failure it prints {"ok":false,"error":"...",
// "step":"..."} and exits 1. The C test asserts on those facts.
//
// Scenarios:
//   list                 the tools the daemon lists, and the size of its answer
//   own CONFIG           no daemon: each server of the mcpvisor config file CONFIG started
//                        by itself, as the daemon starts it, and the tools it lists
//   call FILE            everything__get-sum, filesystem__read_text_file FILE, memory tools,
//                        sequential-thinking__sequentialthinking
//   large FILE SRC DST   filesystem__read_text_file FILE (the text, whole), then
//                        filesystem__write_file DST with the bytes of the local file SRC
//   progress             everything__trigger-long-running-operation with a progress token
//   cancel               the same, cancelled after its first progress; waits until $WIRELOG
//                        (what the everything server read on stdin) has the cancellation
//   sampling             two clients at once, each with its own sampling handler; A, then B,
//                        calls everything__trigger-sampling-request
//   resume               (HTTP) everything's simulated log messages (one every 5 s; with no
//                        call in flight they travel on the GET stream), the stream dropped
//                        after one, and the SDK's reconnection with Last-Event-ID: the
//                        messages it gets after
//   kill                 a long call on everything; on its first progress, kill -9 the pid in
//                        $PIDFILE; the call's error, then everything back and answering
import { readFileSync } from "node:fs";
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema, ToolListChangedNotificationSchema }
    from "@modelcontextprotocol/sdk/types.js";

const [socket, scenario, ...args] = process.argv.slice(2);
const [arg] = args;
const bridge = { command: process.env.MCPVISORCTL || "mcpvisorctl", args: ["-s", socket, "connect"] };
const CALL_TIMEOUT = 10000; // ms, for each request
const LARGE_TIMEOUT = 30000; // ms, for a request or result of megabytes (the daemon may run under ASan)
const DEADLINE = 40000; // ms, for the whole scenario
let step = "start";

// Exits once the line is written: a pipe takes 64 KiB at once, and process.exit() would drop
// the rest of facts of megabytes.
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

// A connected client. raw: every message it received, as parsed JSON; sent: every message
// it sent (the SDK picks ids and progress tokens itself: these tell the test which).
async function connect(name, capabilities = {}, url = socket) {
    const client = new Client({ name, version: "1.0.0" }, { capabilities });
    const transport = url.startsWith("http") ? httpTransport(url) : new StdioClientTransport(bridge);
    const raw = [], sent = [];
    const send = transport.send.bind(transport);
    transport.send = (msg, opts) => { sent.push(msg); return send(msg, opts); };
    client.onerror = (e) => raw.push({ sdkError: String(e) });
    await client.connect(transport, { timeout: CALL_TIMEOUT });
    const onmessage = transport.onmessage;
    transport.onmessage = (msg, extra) => { raw.push(msg); onmessage(msg, extra); };
    return { client, raw, sent };
}

function httpTransport(url) {
    return new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${process.env.MCPVISOR_TOKEN}` } },
        reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
    });
}

// Resolves with the first value of check() that is truthy, trying every 20 ms; rejects at
// the deadline. For what another process does (a file it writes, a notification it sends).
function waitFor(what, check, ms = 5000) {
    return new Promise((resolve, reject) => {
        const until = Date.now() + ms;
        const tick = () => {
            let v;
            try { v = check(); } catch { v = undefined; }
            if (v) return resolve(v);
            if (Date.now() > until) return reject(new Error(`not within ${ms} ms: ${what}`));
            setTimeout(tick, 20);
        };
        tick();
    });
}

// The daemon's ids and progress tokens toward a server start low: this makes a client's
// larger, so that one passed through unchanged would show.
async function skipIds(c) {
    for (let i = 0; i < 40; i++)
        await c.client.ping({ timeout: CALL_TIMEOUT });
}

const text = (result) => result.content?.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const sentCall = (sent, tool) => sent.find((m) => m.method === "tools/call" && m.params?.name === tool);
const call = (c, name, args, opts = {}) =>
    c.client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT, ...opts });

// A proxy in front of the daemon's HTTP front door that can drop the GET streams passing
// through it, as a network or a restarted proxy would; it records the GET requests' headers.
async function streamDropper(target) {
    const upstream = new URL(target);
    const streams = new Set(), gets = [];
    const server = http.createServer((req, res) => {
        const get = req.method === "GET" ? { lastEventId: req.headers["last-event-id"] ?? null, ids: [] } : null;
        if (get)
            gets.push(get);
        const up = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method,
            headers: req.headers }, (ur) => {
            res.writeHead(ur.statusCode, ur.headers);
            if (get) // the event ids the stream carried
                ur.on("data", (b) => get.ids.push(...[...String(b).matchAll(/^id: (\S+)$/gm)].map((m) => m[1])));
            ur.pipe(res);
            if (req.method === "GET" && ur.statusCode === 200)
                streams.add({ req, res, up, ur });
        });
        up.on("error", () => res.destroy());
        req.pipe(up);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        url: `http://127.0.0.1:${server.address().port}${upstream.pathname}`,
        gets,
        drop() {
            for (const s of streams) { s.up.destroy(); s.res.destroy(); }
            streams.clear();
        },
        close() { this.drop(); server.close(); },
    };
}

const scenarios = {
    async list() {
        const c = await connect("interop-list");
        step = "tools/list";
        const { tools } = await c.client.listTools(undefined, { timeout: CALL_TIMEOUT });
        const answer = c.raw.find((m) => m.result?.tools);
        return { tools: tools.map((t) => t.name), bytes: Buffer.byteLength(JSON.stringify(answer)) };
    },

    async call() {
        const c = await connect("interop-call");
        step = "everything__get-sum";
        const sum = text(await call(c, "everything__get-sum", { a: 2, b: 3 }));
        step = "filesystem__read_text_file";
        const file = text(await call(c, "filesystem__read_text_file", { path: arg }));
        step = "memory__create_entities";
        await call(c, "memory__create_entities", {
            entities: [{ name: "mcpvisor", entityType: "daemon", observations: ["routes MCP calls"] }],
        });
        step = "memory__search_nodes";
        const found = JSON.parse(text(await call(c, "memory__search_nodes", { query: "mcpvisor" })));
        step = "sequential-thinking__sequentialthinking";
        const thought = (await call(c, "sequential-thinking__sequentialthinking", {
            thought: "route it through mcpvisor", thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false,
        })).structuredContent;
        return { sum, file, entities: found.entities.map((e) => [e.name, e.entityType, ...e.observations]), thought };
    },

    // Megabytes both ways through the bridge; the sizes are those of the messages as JSON.
    async large() {
        const [file, src, dst] = args;
        const c = await connect("interop-large");
        const size = (m) => Buffer.byteLength(JSON.stringify(m));
        step = "filesystem__read_text_file";
        const read = text(await call(c, "filesystem__read_text_file", { path: file }, { timeout: LARGE_TIMEOUT }));
        const answer = c.raw.find((m) => m.id === sentCall(c.sent, "filesystem__read_text_file").id && !m.method);
        step = "filesystem__write_file";
        const wrote = text(await call(c, "filesystem__write_file", { path: dst, content: readFileSync(src, "utf8") },
            { timeout: LARGE_TIMEOUT }));
        return { read, wrote, resultBytes: size(answer), requestBytes: size(sentCall(c.sent, "filesystem__write_file")) };
    },

    // What each server lists by itself, without mcpvisor: started as the daemon starts it
    // (its entry's command, args and env; of the rest only PATH, HOME, LANG, LC_* and TZ),
    // and offered what the daemon offers its servers by default, roots, sampling and
    // elicitation (the everything server lists some tools only then).
    async own() {
        const { mcpServers } = JSON.parse(readFileSync(arg, "utf8"));
        const passed = Object.fromEntries(Object.entries(process.env).filter(([k]) =>
            ["PATH", "HOME", "LANG", "TZ"].includes(k) || k.startsWith("LC_")));
        step = "each server's tools/list";
        const lists = await Promise.all(Object.entries(mcpServers).map(([name, entry]) => listOwn(name, entry).catch((e) => {
            throw new Error(`${name}: ${e?.message ?? e}`);
        })));
        return { servers: Object.fromEntries(lists) };

        async function listOwn(name, entry) {
            const client = new Client({ name: "interop-own", version: "1.0.0" },
                { capabilities: { roots: {}, sampling: {}, elicitation: {} } });
            const transport = new StdioClientTransport({
                command: entry.command, args: entry.args ?? [],
                env: { ...passed, ...entry.env, MCPVISOR_SERVER: name },
            });
            await client.connect(transport, { timeout: CALL_TIMEOUT });
            const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT });
            await client.close();
            return [name, tools.map((t) => t.name)];
        }
    },

    async progress() {
        const c = await connect("interop-progress");
        let progressed = 0;
        step = "pings";
        await skipIds(c);
        step = "everything__trigger-long-running-operation";
        const result = text(await call(c, "everything__trigger-long-running-operation", { duration: 0.4, steps: 4 }, {
            onprogress: () => progressed++,
        }));
        const request = sentCall(c.sent, "everything__trigger-long-running-operation");
        // What came, in the order it came: the SDK's onprogress is not that (it runs a
        // notification's handler a microtask later but takes a response at once, so a last
        // progress read together with the response is dropped as "unknown token").
        const events = c.raw.filter((m) => m.method === "notifications/progress" || m.id === request.id).map((m) =>
            m.method ? ["progress", m.params.progressToken, m.params.progress, m.params.total] : ["response"]);
        return { token: request.params._meta.progressToken, events, progressed, result };
    },

    async cancel() {
        const c = await connect("interop-cancel");
        step = "pings";
        await skipIds(c);
        step = "everything__trigger-long-running-operation";
        const abort = new AbortController();
        let rejected;
        const pending = call(c, "everything__trigger-long-running-operation", { duration: 3, steps: 30 }, {
            signal: abort.signal,
            onprogress: () => abort.abort("interop test cancels"),
        }).then(() => { rejected = "answered"; }, (e) => { rejected = String(e); });
        await pending;
        const request = sentCall(c.sent, "everything__trigger-long-running-operation");
        const cancelled = c.sent.find((m) => m.method === "notifications/cancelled");
        step = "the server reads notifications/cancelled";
        // a server reached by URL has no stdin to record (MCPVISOR_INTEROP_NO_WIRE)
        if (!process.env.MCPVISOR_INTEROP_NO_WIRE)
            await waitFor("notifications/cancelled in " + process.env.WIRELOG,
                () => readFileSync(process.env.WIRELOG, "utf8").includes("notifications/cancelled"));
        // the daemon answers in order: once a ping is answered, nothing more is coming for
        // the cancelled request unless the daemon sends it late
        await c.client.ping({ timeout: CALL_TIMEOUT });
        const answers = c.raw.filter((m) => m.id === request.id && !m.method).length;
        return { clientId: request.id, cancelledId: cancelled?.params?.requestId, rejected, answers };
    },

    async sampling() {
        const a = await connect("interop-sampler-a", { sampling: {} });
        const b = await connect("interop-sampler-b", { sampling: {} });
        const asked = { a: 0, b: 0 };
        for (const [who, c] of [["a", a], ["b", b]])
            c.client.setRequestHandler(CreateMessageRequestSchema, async () => {
                asked[who]++;
                return { model: `model-${who}`, role: "assistant", content: { type: "text", text: `answer from client ${who.toUpperCase()}` } };
            });
        step = "A calls everything__trigger-sampling-request";
        const ra = text(await call(a, "everything__trigger-sampling-request", { prompt: "who are you?", maxTokens: 20 }));
        step = "B calls everything__trigger-sampling-request";
        const rb = text(await call(b, "everything__trigger-sampling-request", { prompt: "who are you?", maxTokens: 20 }));
        return { a: ra, b: rb, asked };
    },

    async resume() {
        const proxy = await streamDropper(socket);
        const c = await connect("interop-resume", {}, proxy.url);
        const messages = [];
        let dropped = -1;
        c.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => messages.push(n.params));
        step = "the GET stream opened";
        await waitFor("the GET stream", () => proxy.gets.length >= 1);
        step = "logging/setLevel debug, everything__toggle-simulated-logging";
        await c.client.setLoggingLevel("debug", { timeout: CALL_TIMEOUT });
        await call(c, "everything__toggle-simulated-logging", {});
        // the first message may come during the call, with its answer: the next ones, with
        // no call in flight, on the GET stream
        step = "a log message on the GET stream, then the stream dropped";
        await waitFor("an event on the GET stream", () => proxy.gets[0].ids.length >= 1, 12000);
        dropped = messages.length;
        proxy.drop();
        step = "the SDK back with Last-Event-ID, and another message";
        await waitFor("a message after the drop", () => proxy.gets.length >= 2 && messages.length > dropped, 12000);
        await call(c, "everything__toggle-simulated-logging", {});
        proxy.close();
        return { messages: messages.length, afterDrop: messages.length - dropped, gets: proxy.gets };
    },

    async kill() {
        const c = await connect("interop-kill");
        let listChanged = 0;
        c.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged++; });
        step = "long call, then kill -9";
        let killed = 0;
        const started = Date.now();
        const error = await call(c, "everything__trigger-long-running-operation", { duration: 20, steps: 20 }, {
            timeout: 30000,
            onprogress: () => {
                if (killed) return;
                killed = Number(readFileSync(process.env.PIDFILE, "utf8"));
                process.kill(killed, "SIGKILL");
            },
        }).then(() => null, (e) => e);
        const errorAfterMs = Date.now() - started;
        const request = sentCall(c.sent, "everything__trigger-long-running-operation");
        step = "everything back";
        let back = null;
        const until = Date.now() + 15000, meanwhile = [];
        // each list_changed may be the one that brings everything's tools back (a call made
        // while the list still shows them may find the server not ready yet: wait again)
        while (!back && Date.now() < until) {
            const seen = listChanged;
            const { tools } = await c.client.listTools(undefined, { timeout: CALL_TIMEOUT });
            if (tools.some((t) => t.name === "everything__get-sum"))
                back = await call(c, "everything__get-sum", { a: 2, b: 3 })
                    .then(text, (e) => { meanwhile.push(e.message); return null; });
            if (!back)
                await waitFor("tools/list_changed", () => listChanged > seen, until - Date.now());
        }
        const pid = Number(readFileSync(process.env.PIDFILE, "utf8"));
        return {
            killed, pid, errorAfterMs, back, meanwhile,
            error: error && { code: error.code, message: error.message, data: error.data },
            answers: c.raw.filter((m) => m.id === request.id && !m.method).length,
        };
    },
};

if (!scenarios[scenario])
    fail(`unknown scenario ${scenario}`);
scenarios[scenario]().then((facts) => finish({ ok: true, scenario, ...facts }), fail);
