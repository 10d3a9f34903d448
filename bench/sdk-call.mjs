// mcpvisor-bench --only remote (issue 17): the TypeScript SDK's own client calling a
// Streamable HTTP server directly, the baseline an agent would have without mcpvisord.
//   node sdk-call.mjs NODE_MODULES URL TOOL CALLS
// Prints "p50_ns N p99_ns N" of the calls after a warm-up of a tenth (at least 50).
const [modules, url, tool, callsText] = process.argv.slice(2);
const { Client } = await import(`${modules}/@modelcontextprotocol/sdk/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(
  `${modules}/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js`);

const calls = Number(callsText);
const client = new Client({ name: "mcpvisor-bench", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const call = () => client.callTool({ name: tool, arguments: { text: "hello" } });
for (let i = 0; i < Math.max(50, Math.floor(calls / 10)); i++) await call();
const took = [];
for (let i = 0; i < calls; i++) {
  const t0 = process.hrtime.bigint();
  await call();
  took.push(Number(process.hrtime.bigint() - t0));
}
took.sort((a, b) => a - b);
const at = (q) => took[Math.min(took.length - 1, Math.floor((took.length * q) / 100))];
process.stdout.write(`p50_ns ${at(50)} p99_ns ${at(99)}\n`);
await client.close();
