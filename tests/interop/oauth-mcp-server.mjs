// A protected MCP server for the OAuth tests, as a hosted one is: Streamable HTTP (the
// TypeScript SDK's server, stateless), every request needing a bearer JWT that the
// authorization server ISSUER signed (its JWKS), for this server as audience (RFC 8707),
// not expired. Anything else is a 401 that points at its protected resource metadata
// (RFC 9728), which it serves.
//
//   node oauth-mcp-server.mjs PORT ISSUER
//       Prints "ready URL" when it listens. Tools: whoami (the token's sub), echo, and
//       write, whose call needs the scope mcp:write too: without it, a 403 with
//       error="insufficient_scope", scope="mcp:write" (a step-up, RFC 6750 section 3.1).
//       POST /test/issuer?url=ISSUER moves it to another authorization server (its
//       metadata names that one, and it takes that one's tokens alone).
//       Each request's verdict goes to stderr, never the token.
import { createServer } from "node:http";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [portText, firstIssuer] = process.argv.slice(2);
let issuer = firstIssuer;
const port = Number(portText);
const origin = `http://127.0.0.1:${port}`;
const resource = `${origin}/mcp`;
const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
let jwks, metadata;
// Its authorization server: the one it trusts and names in its metadata.
function trust(url) {
    issuer = url;
    jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`), { cooldownDuration: 0 });
    metadata = JSON.stringify({ resource, authorization_servers: [issuer], scopes_supported: ["mcp"],
        bearer_methods_supported: ["header"] });
}
trust(firstIssuer);

function log(text) { process.stderr.write(`oauth-mcp-server: ${text}\n`); }

function refuse(res, error, description) {
    const params = [`resource_metadata="${metadataUrl}"`];
    if (error) params.push(`error="${error}"`, `error_description="${description}"`);
    res.writeHead(401, { "content-type": "application/json", "www-authenticate": `Bearer ${params.join(", ")}` })
        .end(JSON.stringify({ error: error || "unauthorized", error_description: description || "a bearer token is required" }));
}

async function verify(req) {
    const auth = req.headers.authorization || "";
    if (!auth.toLowerCase().startsWith("bearer ")) return [null, null, "no token"];
    try {
        const { payload } = await jwtVerify(auth.slice(7).trim(), jwks, { issuer, audience: resource });
        if (!String(payload.scope || "").split(" ").includes("mcp")) return [null, "insufficient_scope", "scope mcp needed"];
        return [payload, null, null];
    } catch (e) {
        return [null, "invalid_token", e.code || "invalid"];
    }
}

function mcpServer(claims) {
    const server = new McpServer({ name: "oauth-protected", version: "1.0.0" });
    server.registerTool("whoami", { description: "The signed-in user", inputSchema: {} },
        async () => ({ content: [{ type: "text", text: String(claims.sub) }] }));
    server.registerTool("echo", { description: "Echoes text", inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: "text", text }] }));
    server.registerTool("write", { description: "Needs the scope mcp:write", inputSchema: {} },
        async () => ({ content: [{ type: "text", text: "written" }] }));
    return server;
}

const http = createServer(async (req, res) => {
    const path = new URL(req.url, origin).pathname;
    if (req.method === "GET" && (path === "/.well-known/oauth-protected-resource/mcp" ||
                                 path === "/.well-known/oauth-protected-resource")) {
        res.writeHead(200, { "content-type": "application/json" }).end(metadata);
        return;
    }
    if (req.method === "POST" && path === "/test/issuer") {
        trust(new URL(req.url, origin).searchParams.get("url"));
        log(`now trusts ${issuer}`);
        res.writeHead(200, { "content-type": "text/plain" }).end(`${issuer}\n`);
        return;
    }
    if (path !== "/mcp") {
        res.writeHead(404).end();
        return;
    }
    const [claims, error, why] = await verify(req);
    if (!claims) {
        log(`${req.method} refused: ${why}`);
        refuse(res, error, why);
        return;
    }
    log(`${req.method} as ${claims.sub}`);
    if (req.method !== "POST") {
        res.writeHead(405, { allow: "POST" }).end();
        return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (body.method === "tools/call" && body.params?.name === "write" &&
        !String(claims.scope || "").split(" ").includes("mcp:write")) {
        log(`${req.method} as ${claims.sub} refused: scope mcp:write needed`);
        res.writeHead(403, { "content-type": "application/json", "www-authenticate":
            `Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="${metadataUrl}"` })
            .end(JSON.stringify({ error: "insufficient_scope", error_description: "secret-body-text" }));
        return;
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = mcpServer(claims);
    res.on("close", () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
});
http.listen(port, "127.0.0.1", () => process.stdout.write(`ready ${resource}\n`));
