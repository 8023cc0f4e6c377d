// Issue 81 item 6: a stranger cannot stop the box answering through its log. The box's stdout is a
// pipe nobody reads (a stalled log shipper); a stranger sends thousands of GETs with a 14 KB query,
// each an access line. The box answers every request and /healthz all along; a line carries at
// most LOGGED_STRING_CHARS of the URL; the lines the pipe could not take are counted
// (boxauth_log_lines_dropped_total), and once the reader is back a line says how many.
import { expect } from 'chai';
import { Box, boxForSuite } from '../support/box.js';

describe('a stalled log reader and a stranger’s long URLs (issue 81)', function () {
  this.timeout(180_000);
  let box: Box;
  boxForSuite((b) => (box = b));

  it('the box answers /healthz and every request, and counts the lines it could not write', async function () {
    const stdout = box.process!.stdout!;
    stdout.pause(); // nothing reads: the pipe fills, and the box's writes are refused
    // Four values of 3.5 KB: each within what the box takes of a query value.
    const query = ['a', 'b', 'c', 'd'].map((k) => `${k}=${k.repeat(3584)}`).join('&');
    const healthz: number[] = [];
    const statuses = new Map<number, number>();
    let sending = true;
    const probe = (async () => {
      while (sending) {
        const started = performance.now();
        const res = await fetch(`${box.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
        expect(res.status).to.equal(200);
        healthz.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // About 6 MB of access lines: past the 4 MB the box keeps for its reader.
    const total = 5000;
    let next = 0;
    const stranger = async (): Promise<void> => {
      while (next < total) {
        next += 1;
        const res = await fetch(`${box.url}/.well-known/openid-configuration?${query}`, { signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    };
    try {
      await Promise.all(Array.from({ length: 25 }, stranger));
    } finally {
      sending = false;
      await probe.finally(() => stdout.resume());
    }
    expect([...statuses.keys()], JSON.stringify([...statuses])).to.deep.equal([200]);
    expect(healthz.length).to.be.above(5);
    expect(Math.max(...healthz), 'the slowest /healthz, ms').to.be.below(2000);
    const dropped = Number(/^boxauth_log_lines_dropped_total(?:\{[^}]*\})? (\d+)$/m.exec(await box.metrics())?.[1]);
    expect(dropped, 'lines dropped').to.be.above(0);

    // The reader is back (resumed above): what waited is written, and a line says how many were dropped.
    const said = (): number =>
      box.logs
        .filter((l) => l.includes('"droppedLines"'))
        .reduce((sum, l) => sum + (JSON.parse(l) as { droppedLines: number }).droppedLines, 0);
    for (let i = 0; i < 100 && said() < dropped; i++) {
      await box.request('GET', '/healthz'); // a line to write, after which the count is said
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(said()).to.equal(dropped);
    // No line carries the 14 KB query whole: the URL is cut, and says by how much.
    const access = box.logs.filter((l) => l.includes('openid-configuration?a='));
    expect(access.length).to.be.above(0);
    for (const line of access.slice(0, 50)) {
      expect(line.length).to.be.below(2048);
      expect((JSON.parse(line) as { url: string }).url).to.match(/…\[13,\d{3} more characters\]$/);
    }
  });
});
