// Call the MCP tools of this sandbox's upstream servers, through the gateway (issue #45).
//
//   const tools = require('sandgate_tools');
//   await tools.list();                                   // servers and tools this sandbox may call
//   console.log(await tools.reference());                 // their signatures, to read
//   await tools.call('tickets', 'search', {query: 'refund'});
//   await tools.tickets.search({query: 'refund'});        // the same, by name
//
// A call resolves to the tool's structured content when it has one, else its text; an image or
// audio as a Buffer; several items as an array. A tool's error rejects with a ToolError carrying
// the upstream's message. The gateway holds the credentials: none is in this sandbox.
'use strict';
const http = require('http');

const SOCKET = '/sandgate/tools.sock';

class ToolError extends Error {
  constructor(message, kind = 'tool_error') {
    super(message);
    this.name = 'ToolError';
    this.kind = kind;
  }
}

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {socketPath: SOCKET, method, path, agent: false,
       headers: payload ? {'Content-Type': 'application/json', 'Content-Length': payload.length}
                        : {}},
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.headers['content-type'] || '').startsWith('text/plain')) {
            if (res.statusCode !== 200) reject(new ToolError(text, 'refused'));
            else resolve(text);
            return;
          }
          let answer;
          try {
            answer = JSON.parse(text);
          } catch (e) {
            reject(new ToolError('the gateway sent no JSON', 'protocol'));
            return;
          }
          if (answer.error) reject(new ToolError(answer.error.message, answer.error.kind));
          else resolve(answer);
        });
        res.on('error', reject);
      });
    req.on('error', (e) => reject(new ToolError(
        `no upstream MCP server answers this sandbox: its tenant has none, or the gateway is ` +
        `going away (${e.message})`, 'unavailable')));
    if (payload) req.write(payload);
    req.end();
  });
}

function contentValue(item) {
  if (item.type === 'text') return item.text ?? '';
  if (item.type === 'image' || item.type === 'audio') return Buffer.from(item.data ?? '', 'base64');
  if (item.type === 'resource') {
    const r = item.resource ?? {};
    return 'text' in r ? r.text : Buffer.from(r.blob ?? '', 'base64');
  }
  return item;
}

function unpack(result) {
  const content = result.content ?? [];
  if (result.isError) {
    const texts = content.filter((c) => c.type === 'text').map((c) => c.text);
    throw new ToolError(texts.join('\n') || 'the tool reported an error', 'tool_error');
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null)
    return result.structuredContent;
  const values = content.map(contentValue);
  if (values.length === 1) return values[0];
  if (values.length && values.every((v) => typeof v === 'string')) return values.join('\n');
  return values;
}

async function call(server, tool, args = {}) {
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    throw new TypeError('arguments must be an object');
  const answer = await request('POST', '/call', {server, tool, arguments: args});
  return unpack(answer.result);
}

async function list() {
  return (await request('GET', '/list')).servers;
}

function reference(server) {
  return request('GET', '/reference' + (server ? '/' + encodeURIComponent(server) : ''));
}

const own = {ToolError, call, list, reference};

// A tool's name as a JavaScript name: '_' for each character that cannot be in one.
const identifier = (name) => name.replace(/[^A-Za-z0-9_$]/g, '_');

// The upstream's real name of `tool` when it was written as an identifier (get_sum for get-sum):
// looked up in the listing once, then kept.
let listing;
async function toolName(server, tool) {
  listing ??= list().catch((e) => {
    listing = undefined;
    throw e;
  });
  const upstream = (await listing).find((s) => s.name === server);
  const tools = (upstream && upstream.tools) || [];
  if (tools.some((t) => t.name === tool)) return tool;
  const match = tools.find((t) => identifier(t.name) === tool);
  return match ? match.name : tool;
}

// tools.<server>.<tool>(args): resolved when called, so that no listing is needed first (unless
// the name was written as an identifier).
module.exports = new Proxy(own, {
  get(target, name) {
    if (typeof name !== 'string' || name in target || name === 'then') return target[name];
    return new Proxy({}, {
      get(_, tool) {
        if (typeof tool !== 'string' || tool === 'then') return undefined;
        return async (args = {}) =>
          call(name, /^[A-Za-z0-9_$]+$/.test(tool) && tool.includes('_')
                       ? await toolName(name, tool) : tool, args);
      },
    });
  },
});
