// A modern-only MCP server (2026-07-28) of the TypeScript SDK 2.x (@modelcontextprotocol/server),
// run by test_interop.c behind mcpvisord: it answers server/discover, no initialize, and
// asks for input the modern way (input_required results), never with a request of its own.
//
//   node modern-server.mjs              stdio (serveStdio, legacy: "reject")
//   node modern-server.mjs --http PORT  Streamable HTTP on 127.0.0.1:PORT/mcp (createMcpHandler,
//                                       modern requests only: legacy: "reject"); prints
//                                       "listening PORT"
//
// Tools: echo {text}; whoami {}: answers input_required with an elicitation of the user's
// name (key "name") and a requestState naming what it asked ("asked:name"), then, on the
// retry with the answer, "hello NAME (state asked:name)". Stderr says each requestState it
// was given ("requestState STATE").
import http from "node:http";
import { McpServer, createMcpHandler, fromJsonSchema, inputRequired, acceptedContent } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

const MODERN = ["2026-07-28"];

function makeServer() {
    const server = new McpServer({ name: "interop-modern-server", version: "2.4.0" },
        { supportedProtocolVersions: MODERN });
    server.registerTool("echo", { description: "Returns its text.", inputSchema: fromJsonSchema({ type: "object", properties: { text: { type: "string" } }, required: ["text"] }) },
        async ({ text }) => ({ content: [{ type: "text", text }] }));
    server.registerTool("whoami", { description: "Asks the user's name, then greets them.", inputSchema: fromJsonSchema({ type: "object", properties: {} }) },
        async (_args, ctx) => {
            const state = ctx.mcpReq.requestState?.();
            if (state !== undefined)
                process.stderr.write(`requestState ${state}\n`);
            const answer = acceptedContent(ctx.mcpReq.inputResponses, "name");
            if (!answer)
                return inputRequired({
                    inputRequests: {
                        name: inputRequired.elicit({
                            message: "your name?",
                            requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
                        }),
                    },
                    requestState: "asked:name",
                });
            return { content: [{ type: "text", text: `hello ${answer.name} (state ${typeof state === "string" ? state : "?"})` }] };
        });
    return server;
}

// node's request as the web-standard one createMcpHandler's fetch takes, and its Response
// (maybe an event stream) written back as it comes: no adapter package needed.
async function serveFetch(handler, req, res) {
    const chunks = [];
    for await (const chunk of req)
        chunks.push(chunk);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
        headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : Buffer.concat(chunks);
    const response = await handler.fetch(new Request(`http://${req.headers.host}${req.url}`,
        { method: req.method, headers, body }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) {
        res.end();
        return;
    }
    const reader = response.body.getReader();
    res.on("close", () => reader.cancel().catch(() => {}));
    for (let r = await reader.read(); !r.done; r = await reader.read())
        res.write(r.value);
    res.end();
}

const [flag, port] = process.argv.slice(2);
if (flag === "--http") {
    const handler = createMcpHandler(makeServer, { legacy: "reject" });
    const httpServer = http.createServer((req, res) => {
        if (!req.url.startsWith("/mcp")) {
            res.writeHead(404).end();
            return;
        }
        serveFetch(handler, req, res).catch((e) => {
            process.stderr.write(`${e?.stack ?? e}\n`);
            if (!res.headersSent)
                res.writeHead(500);
            res.end();
        });
    });
    httpServer.listen(Number(port), "127.0.0.1", () => process.stdout.write(`listening ${port}\n`));
} else {
    serveStdio(makeServer, { legacy: "reject" });
}
