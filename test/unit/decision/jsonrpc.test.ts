// The JSON-RPC envelope reader of the gate (api/decision/jsonrpc.ts): what it keeps of a body,
// and each way a body could be read one way by the gate and another by the app, refused.
import { expect } from 'chai';
import {
  coazCall,
  INVALID_PARAMS,
  INVALID_REQUEST,
  MAX_BATCH,
  MAX_DEPTH,
  PARSE_ERROR,
  readJsonRpc,
  RESPONSE,
  type BodyRefused,
  type JsonRpcBody,
} from '../../../api/decision/jsonrpc.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const read = (text: string | Buffer, headers: Record<string, string> = JSON_TYPE, whole = true) =>
  readJsonRpc({ bytes: typeof text === 'string' ? Buffer.from(text, 'utf8') : text, whole }, headers);
const calls = (text: string, headers?: Record<string, string>): JsonRpcBody => {
  const r = read(text, headers);
  if (r === null || 'refused' in r) throw new Error(`not read: ${JSON.stringify(r)}`);
  return r;
};
const refusal = (text: string | Buffer, headers?: Record<string, string>, whole?: boolean): BodyRefused => {
  const r = read(text, headers, whole);
  if (r === null || !('refused' in r)) throw new Error(`not refused: ${JSON.stringify(r)}`);
  return r;
};
const call = (body: object) => JSON.stringify({ jsonrpc: '2.0', ...body });

describe('the JSON-RPC envelope at the gate', function () {
  it('keeps the method, the tool of a tools/call and the id as sent; not the arguments', function () {
    const r = calls(call({ id: 7, method: 'tools/call', params: { name: 'search', arguments: { q: 'x', secret: 's3' } } }));
    expect(r).to.deep.equal({ batch: false, calls: [{ method: 'tools/call', tool: 'search', id: '7' }] });
    expect(calls(call({ id: 'a"b', method: 'tools/list' })).calls).to.deep.equal([{ method: 'tools/list', tool: null, id: '"a\\"b"' }]);
    // A notification has no id; an id of 12345678901234567890 is echoed exactly, not as a rounded number.
    expect(calls(call({ method: 'notifications/initialized' })).calls[0]).to.deep.equal({
      method: 'notifications/initialized',
      tool: null,
      id: null,
    });
    expect(calls('{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}').calls[0]!.id).to.equal('12345678901234567890');
  });

  it('reads names as the app does: escapes decoded, a byte order mark and white space skipped', function () {
    expect(calls('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\u0064elete_all"}}').calls[0]!.tool).to.equal(
      'delete_all',
    );
    expect(calls('\uFEFF \n {"jsonrpc":"2.0","id":1,"method":"tools/list"}', {}).calls[0]!.method).to.equal('tools/list');
  });

  it('a body that is neither JSON nor sent as JSON carries no JSON-RPC; one sent as JSON must be JSON-RPC', function () {
    expect(read('q=1&r=2', { 'content-type': 'application/x-www-form-urlencoded' })).to.equal(null);
    expect(readJsonRpc(undefined, {})).to.equal(null);
    expect(read('', JSON_TYPE)).to.equal(null);
    // Sent as JSON, or looking like JSON whatever its type: the app would parse it.
    expect(refusal('not json').code).to.equal(PARSE_ERROR);
    expect(refusal('{"jsonrpc":"2.0","method":"x"', { 'content-type': 'text/plain' }).code).to.equal(PARSE_ERROR);
    expect(refusal('{"jsonrpc":"2.0","id":1,"method":"x"} {}').code).to.equal(PARSE_ERROR);
  });

  it('malformed or not an object: refused, never read as no JSON-RPC', function () {
    for (const text of ['{"a":1,}', '{"a":01}', "{'a':1}", '{"a":"\u0001"}', '[1,]', '{"a":tru}', '{"a" 1}']) {
      expect(refusal(text).code, text).to.equal(PARSE_ERROR);
    }
    for (const text of ['"tools/call"', '42', 'null', '[]', '[1]', '{}', '{"jsonrpc":"2.0"}']) {
      expect(refusal(text, JSON_TYPE).code, text).to.equal(INVALID_REQUEST);
    }
    expect(refusal(call({ id: 1, method: 'x' }).replace('"2.0"', '"1.0"')).refused).to.match(/exactly "2.0"/);
    expect(refusal(call({ id: { a: 1 }, method: 'x' })).refused).to.match(/"id"/);
    expect(refusal(call({ id: 1, method: 7 })).refused).to.match(/"method"/);
    expect(refusal(call({ id: 1, method: 'rpc.response' })).refused).to.match(/reserved/);
    expect(refusal(call({ id: 1, method: 'tools/call', params: { name: 42 } })).code).to.equal(INVALID_PARAMS);
    expect(refusal(call({ id: 1, method: 'tools/call', params: ['search'] })).code).to.equal(INVALID_PARAMS);
    expect(refusal(call({ id: 1, method: 'tools/call', params: { name: 'x'.repeat(257) } })).code).to.equal(INVALID_PARAMS);
  });

  it('a name twice in one object is refused: JSON.parse keeps the last params.name, other parsers the first', function () {
    const twice = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","name":"delete_all"}}';
    expect((JSON.parse(twice) as { params: { name: string } }).params.name).to.equal('delete_all');
    expect(refusal(twice).refused).to.match(/"name" appears twice/);
    expect(refusal('{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}}').refused).to.match(
      /"method" appears twice/,
    );
    // Escaped or not, it is the same name.
    expect(refusal('{"jsonrpc":"2.0","id":1,"method":"ping","\\u006dethod":"tools/call"}').refused).to.match(/appears twice/);
    // Deep in the arguments too: the app reads them with the same parser.
    expect(
      refusal(call({ id: 1, method: 'tools/call', params: { name: 's' } }).replace('"s"}', '"s","arguments":{"a":1,"a":2}}')).code,
    ).to.equal(PARSE_ERROR);
  });

  it('nesting deeper than the bound is refused, without a stack overflow', function () {
    const deep = (n: number) =>
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":${'['.repeat(n)}${']'.repeat(n)}}}`;
    expect(calls(deep(MAX_DEPTH - 4)).calls[0]!.tool).to.equal('s');
    expect(refusal(deep(MAX_DEPTH)).refused).to.match(/deeper/);
    expect(refusal('['.repeat(60_000)).refused).to.match(/deeper/);
  });

  it('a huge body is read within the limit, strings and all; one the gate did not read whole is refused (413)', function () {
    const big = call({
      id: 1,
      method: 'tools/call',
      params: { name: 'search', arguments: { q: 'x'.repeat(60_000), e: '\\n'.repeat(2000) } },
    });
    expect(calls(big).calls[0]!.tool).to.equal('search');
    const cut = refusal(big.slice(0, 1000), JSON_TYPE, false);
    expect([cut.status, cut.code, cut.json]).to.deep.equal([413, INVALID_REQUEST, true]);
    // Whatever the type: an upload cut at the gate is not decided as if it were whole.
    expect(refusal('x'.repeat(10), { 'content-type': 'application/octet-stream' }, false)).to.include({ status: 413, json: false });
  });

  it('a body sent compressed or not in UTF-8 is refused: the gate cannot read what the app would', function () {
    expect(refusal(Buffer.from([0x1f, 0x8b, 0x08, 0]), { ...JSON_TYPE, 'content-encoding': 'gzip' }).refused).to.match(/Content-Encoding/);
    expect(refusal(Buffer.from(call({ id: 1, method: 'ping' }), 'utf16le'), JSON_TYPE).code).to.equal(PARSE_ERROR);
  });

  it('a batch is read call by call, a response from the client as its own method; empty or oversized batches are refused', function () {
    const batch = `[${call({ id: 1, method: 'tools/call', params: { name: 'search' } })},${call({ method: 'notifications/x' })},${call({ id: 2, result: {} })}]`;
    expect(calls(batch)).to.deep.equal({
      batch: true,
      calls: [
        { method: 'tools/call', tool: 'search', id: '1' },
        { method: 'notifications/x', tool: null, id: null },
        { method: RESPONSE, tool: null, id: '2' },
      ],
    });
    expect(refusal(`[${call({ id: 1, method: 'ping' })},"x"]`).refused).to.match(/call 2 of the batch/);
    const many = `[${Array.from({ length: MAX_BATCH + 1 }, (_, i) => call({ id: i, method: 'ping' })).join(',')}]`;
    expect(refusal(many).refused).to.match(/more than 100 calls/);
  });

  it("an AuthZEN evaluation names a call as the AuthZEN MCP binding's default mappings do", function () {
    expect(coazCall('tools/call', { type: 'tool', id: 'search' })).to.deep.equal({ method: 'tools/call', tool: 'search' });
    expect(coazCall('tools/list', { type: 'mcp_server', id: 'https://mcp.example' })).to.deep.equal({ method: 'tools/list', tool: null });
    expect(coazCall('get', { type: 'report', id: '7' })).to.equal(null);
  });
});
