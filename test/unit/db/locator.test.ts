// A locator told the host a run before used (a host's box opened again after idling) uses it at
// once: no connection is made to ask what it is first.
import { expect } from 'chai';
import net from 'node:net';
import { parseDatabaseUrl } from '../../../api/database-url.js';
import { HostLocator } from '../../../api/db/locator.js';

describe('a database locator', function () {
  let server: net.Server;
  let port: number;
  let connections = 0;
  before(async () => {
    // Not a PostgreSQL: counts connections and closes them (an ask would fail on it).
    server = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => server.close());

  it('uses a known host at once, without a connection to ask it', async () => {
    const url = parseDatabaseUrl(`postgres://box:pw@127.0.0.1:${port}/db`);
    const known = { host: url.hosts[0]!, url: url.forHost(url.hosts[0]!) };
    const locator = new HostLocator(url, { timeoutMs: 1000, known });
    try {
      expect(await locator.find()).to.deep.equal(known);
      expect(connections).to.equal(0);
    } finally {
      locator.stop();
    }
  });

  it('asks when it knows none', async () => {
    const locator = new HostLocator(parseDatabaseUrl(`postgres://box:pw@127.0.0.1:${port}/db`), { timeoutMs: 1000 });
    try {
      await locator.find().then(
        () => expect.fail('a server that is no PostgreSQL fits no target'),
        () => undefined,
      );
      expect(connections).to.equal(1);
    } finally {
      locator.stop();
    }
  });
});
