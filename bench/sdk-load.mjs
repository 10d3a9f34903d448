// mcpvisor-bench --only sdk (issue 28): the TypeScript SDK's client with N tool calls in
// flight, as an agent's would be, against a gateway's HTTP endpoint.
//   node sdk-load.mjs NODE_MODULES URL TOOL IN_FLIGHT SECONDS [BEARER_TOKEN]
// Connects with StreamableHTTPClientTransport, or, where the endpoint has no Streamable HTTP
// (mcp-hub 4.2.1 serves the older HTTP+SSE transport at /mcp), with SSEClientTransport, the
// fallback the SDK documents. After a warm-up it prints "ready TRANSPORT" and waits for a
// line on stdin (the bench reads the gateway's CPU then), then keeps IN_FLIGHT calls
// outstanding for SECONDS and prints "calls N ns N cpu_us N": the calls answered in that
// time, the time, and this process's CPU (user + system) in it.
import { createInterface } from "node:readline";

const [modules, url, tool, inFlightText, secondsText, token] = process.argv.slice(2);
const sdk = `${modules}/@modelcontextprotocol/sdk/dist/esm/client`;
const { Client } = await import(`${sdk}/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/streamableHttp.js`);
const { SSEClientTransport } = await import(`${sdk}/sse.js`);

const inFlight = Number(inFlightText);
const seconds = Number(secondsText);
const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;

async function connect() {
  const streamable = new Client({ name: "mcpvisor-bench", version: "1" });
  try {
    await streamable.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
    return [streamable, "streamable-http"];
  } catch {
    const legacy = new Client({ name: "mcpvisor-bench", version: "1" });
    await legacy.connect(new SSEClientTransport(new URL(url), { requestInit }));
    return [legacy, "http+sse"];
  }
}

const [client, transport] = await connect();
const call = () => client.callTool({ name: tool, arguments: { text: "hello" } });

// A gateway may listen before its servers are there (mcp-hub): the first call is retried.
for (const until = Date.now() + 30000; ;) {
  try {
    const first = await call();
    if (!first.isError) break;
  } catch (e) {
    if (Date.now() > until) throw e;
  }
  if (Date.now() > until) throw new Error("the tool never answered");
  await new Promise((resolve) => setTimeout(resolve, 100));
}
// Warm-up: the connections opened, the code paths compiled.
const warm = Date.now() + 1000;
await Promise.all(Array.from({ length: inFlight }, async () => {
  while (Date.now() < warm) await call();
}));

process.stdout.write(`ready ${transport}\n`);
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once("line", resolve));

let calls = 0;
let running = true;
const t0 = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
let result;
setTimeout(() => {
  const cpu = process.cpuUsage(cpu0);
  result = `calls ${calls} ns ${process.hrtime.bigint() - t0} cpu_us ${cpu.user + cpu.system}\n`;
  running = false;
}, seconds * 1000);
await Promise.all(Array.from({ length: inFlight }, async () => {
  while (running) {
    await call();
    if (running) calls++;
  }
}));
process.stdout.write(result);
lines.close();
await client.close();
process.exit(0);
