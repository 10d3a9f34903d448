// A small Streamable HTTP MCP server over TLS that offers HTTP/2 (node's http2, HTTP/1.1
// allowed too, ALPN choosing), for the interop test that the daemon's requests arrive as
// HTTP/2 where the server offers it (test_interop.c, remote_over_http2).
//
//   node h2-server.mjs CERT KEY PORT LOG
//
// It listens on 127.0.0.1:PORT. Its log
// has a line per TLS connection ("CONN alpn=h2 open=1", "CONN CLOSED open=0") and per
// request ("POST 2.0 tools/call sess=h2s1 id=3", a cancellation's "requestId=3"), the HTTP
// version as node read it. Tools: echo {text}; slow {ms}: answered after that long; stall:
// never answered, the end of its stream logged ("STREAM CLOSED id=3 answered=false"). GET
// is 405 (no stream), DELETE ends the session.
import fs from 'node:fs';
import http2 from 'node:http2';

const [cert, key, port, logPath] = process.argv.slice(2);
const log = (line) => fs.appendFileSync(logPath, `${line}\n`);
let open = 0;
let session = '';
let sessions = 0;

const tools = [
  { name: 'echo', inputSchema: { type: 'object' } },
  { name: 'slow', inputSchema: { type: 'object' } },
  { name: 'stall', inputSchema: { type: 'object' } },
];

function answer(res, id, result, headers = {}) {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id, result }));
}

function text(t) {
  return { content: [{ type: 'text', text: t }] };
}

function call(res, id, params) {
  const args = params.arguments ?? {};
  if (params.name === 'stall') // never answered; its end is the client's
    res.on('close', () => log(`STREAM CLOSED id=${id} answered=${res.writableEnded}`));
  else if (params.name === 'slow')
    setTimeout(() => answer(res, id, text('slow done')), args.ms ?? 100);
  else
    answer(res, id, text(params.name === 'echo' ? String(args.text) : 'unknown tool'));
}

function post(req, res, msg) {
  const target = msg.params?.requestId === undefined ? '' : ` requestId=${msg.params.requestId}`;
  log(`POST ${req.httpVersion} ${msg.method ?? '(response)'} sess=${req.headers['mcp-session-id'] ?? '-'} id=${msg.id ?? '-'}${target}`);
  if (msg.id === undefined) {
    res.writeHead(202).end();
  } else if (msg.method === 'initialize') {
    session = `h2s${++sessions}`;
    answer(res, msg.id, {
      protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: 'h2-server', version: '1' },
    }, { 'mcp-session-id': session });
  } else if (req.headers['mcp-session-id'] !== session) {
    res.writeHead(404).end();
  } else if (msg.method === 'tools/list') {
    answer(res, msg.id, { tools });
  } else if (msg.method === 'tools/call') {
    call(res, msg.id, msg.params);
  } else {
    answer(res, msg.id, {}); // ping and the rest
  }
}

const server = http2.createSecureServer({
  cert: fs.readFileSync(cert),
  key: fs.readFileSync(key),
  allowHTTP1: true,
});
server.on('secureConnection', (socket) => {
  log(`CONN alpn=${socket.alpnProtocol} open=${++open}`);
  socket.on('close', () => log(`CONN CLOSED open=${--open}`));
});
server.on('request', (req, res) => {
  if (req.method === 'GET') {
    log(`GET ${req.httpVersion}`);
    res.writeHead(405).end();
    return;
  }
  if (req.method === 'DELETE') {
    log(`DELETE ${req.httpVersion} sess=${req.headers['mcp-session-id'] ?? '-'}`);
    session = '';
    res.writeHead(200).end();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      post(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch (e) {
      res.writeHead(400).end(String(e));
    }
  });
});
server.listen(Number(port), '127.0.0.1');
