import { expect } from 'chai';
import path from 'node:path';
import { BoxLine } from '../../../api/host/box-line.js';
import { boxOfHost } from '../../../api/host/host.js';
import { boxEnv, parseRegistry, RegistryError } from '../../../api/host/registry.js';

const entry = (box: string, hostnames: string[], env: Record<string, string> = {}) => ({ box, hostnames, env });
const registry = (...boxes: unknown[]): string => JSON.stringify({ boxes });

describe('the registry of a host', () => {
  it('reads each box with its host names in lower case', () => {
    const [a] = parseRegistry(registry(entry('team-a/auth', ['Auth.Team-A.svc', 'auth.team-a.svc', 'id.example.com:8443'])));
    expect(a).to.deep.equal(entry('team-a/auth', ['auth.team-a.svc', 'id.example.com:8443']));
  });

  const refused: [string, string, RegExp][] = [
    ['not JSON', '{"boxes": [', /not JSON/],
    ['no list', '{"box": 1}', /expected \{"boxes"/],
    ['a box listed twice', registry(entry('a/x', ['a.svc']), entry('a/x', ['b.svc'])), /listed twice/],
    ['one name for two boxes', registry(entry('a/x', ['same.svc']), entry('b/x', ['same.svc'])), /same\.svc is a\/x's too/],
    ['a box without names', registry(entry('a/x', [])), /non-empty list/],
    ['a name that is no host name', registry(entry('a/x', ['a.svc/path'])), /not a host name/],
    ['a variable that is no string', registry({ box: 'a/x', hostnames: ['a.svc'], env: { BOXAUTH_PORT: 1 } }), /expected a string/],
    ['a box name with a slash too many', registry(entry('a/x/y', ['a.svc'])), /<namespace>\/<name>/],
  ];
  for (const [what, text, message] of refused) {
    it(`refuses ${what}, whole`, () => {
      expect(() => parseRegistry(text))
        .to.throw(RegistryError)
        .with.property('message')
        .that.matches(message);
    });
  }

  it("gives a box the host's process-wide variables in place of its own, and no gRPC port", () => {
    const env = boxEnv(entry('a/x', ['a.svc'], { BOXAUTH_PORT: '9999', BOXAUTH_JWT_ALG: 'EdDSA', BOXAUTH_TLS_CERT_FILE: '/x' }), {
      BOXAUTH_PORT: '8080',
    });
    expect(env).to.deep.equal({
      BOXAUTH_PORT: '8080',
      BOXAUTH_JWT_ALG: 'EdDSA',
      BOXAUTH_BOX: 'a/x',
      BOXAUTH_GRPC_PORT: '0',
      BOXAUTH_WORKERS: '1',
      BOXAUTH_DB_POOL_SIZE: '4',
      BOXAUTH_DATA_DIR: path.join('.boxauth', 'boxes', 'a_x'),
    });
  });

  it("gives each box a folder of its own under the host's data folder", () => {
    const dirs = ['a/x', 'a/y', 'b/x'].map(
      (box) => boxEnv(entry(box, [`${box.replace('/', '.')}.svc`], {}), { BOXAUTH_DATA_DIR: '/data' }).BOXAUTH_DATA_DIR,
    );
    expect(dirs).to.deep.equal(['/data/boxes/a_x', '/data/boxes/a_y', '/data/boxes/b_x']);
  });
});

describe("a host's choice of box by the Host header", () => {
  const byHost = new Map<string, never>([
    ['auth.team-a.svc', 'a' as never],
    ['id.example.com:8443', 'b' as never],
  ]);
  it('takes the name with its port first, then without, in any case', () => {
    expect(boxOfHost(byHost, 'AUTH.team-a.svc:8080')).to.equal('a');
    expect(boxOfHost(byHost, 'id.example.com:8443')).to.equal('b');
    expect(boxOfHost(byHost, 'id.example.com')).to.equal(undefined);
    expect(boxOfHost(byHost, undefined)).to.equal(undefined);
  });
});

describe("a hosted box's line", () => {
  it('lets `limit` in, queues `queue` more in order, and refuses the rest', async () => {
    const line = new BoxLine(2, 2);
    expect(line.enter()).to.equal(undefined);
    expect(line.enter()).to.equal(undefined);
    const order: number[] = [];
    const third = line.enter() as Promise<void>;
    const fourth = line.enter() as Promise<void>;
    void third.then(() => order.push(3));
    void fourth.then(() => order.push(4));
    expect(line.enter()).to.equal('full');
    expect(line.busy).to.equal(4);
    line.leave();
    await third;
    expect(order).to.deep.equal([3]);
    line.leave();
    await fourth;
    expect(order).to.deep.equal([3, 4]);
    line.leave();
    line.leave();
    expect(line.busy).to.equal(0);
    expect(line.enter()).to.equal(undefined);
  });
});
