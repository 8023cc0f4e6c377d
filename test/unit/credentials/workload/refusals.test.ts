// A workload's token refused (issue 65, item 6): each refusal names the rule that failed, and never
// holds the token. The issuer is a stand-in whose signatures always verify: the rules of
// ../../../../api/credentials/workload/assertion.ts are what is tested, not the signature check.
import { expect } from 'chai';
import { authenticateWorkload, VerifiedAssertions } from '../../../../api/credentials/workload/assertion.js';
import { WorkloadError } from '../../../../api/credentials/workload/issuers.js';

const BOX = 'https://auth.example';
const KUBE = 'https://kube.example';
const NOW = 1_800_000_000;

function token(claims: Record<string, unknown>): string {
  const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const body = { iss: KUBE, sub: 'system:serviceaccount:shop:orders', aud: BOX, iat: NOW, exp: NOW + 600, ...claims };
  return `${part({ alg: 'ES256', kid: 'k' })}.${part(body)}.${Buffer.from('signature').toString('base64url')}`;
}

const client = {
  id: 'orders',
  resource: { id: 'orders', auth: { workload: { serviceAccounts: [{ namespace: 'shop', name: 'orders' }] } } },
};
const svc = {
  config: { baseUrl: BOX },
  issuers: {
    find: async (iss: string) =>
      iss === KUBE ? { issuer: KUBE, cluster: true, cacheable: false, verify: async () => undefined } : undefined,
    names: async () => [KUBE],
    isCluster: async (iss: string) => iss === KUBE,
  },
  verifiedAssertions: new VerifiedAssertions(),
  clients: { get: async (id: string) => (id === 'orders' ? client : undefined) },
  workloadBindings: {
    clientsOf: async (ns: string, name: string) => (ns === 'shop' && name === 'orders' ? ['orders'] : []),
    clientsOfSubject: async () => [],
  },
} as never;

async function refusal(assertion: string, rule: RegExp, clientId?: string): Promise<void> {
  let err: unknown;
  try {
    await authenticateWorkload(svc, assertion, clientId, NOW);
  } catch (e) {
    err = e;
  }
  expect(err).to.be.instanceOf(WorkloadError);
  const message = (err as Error).message;
  expect(message).to.match(rule);
  for (const part of assertion.split('.')) expect(message, 'no part of the token').not.to.include(part);
}

describe("a workload's token refused: the rule, by name", function () {
  it('accepts the token the stand-ins are built for', async function () {
    expect((await authenticateWorkload(svc, token({}), undefined, NOW)).client.resource.id).to.equal('orders');
  });

  it('issuer not trusted', async function () {
    await refusal(token({ iss: 'https://elsewhere.example' }), /"https:\/\/elsewhere\.example" is not trusted/);
  });

  it('subject not bound: to the client named, or to any', async function () {
    await refusal(token({ sub: 'system:serviceaccount:shop:payments' }), /shop\/payments is not bound to client "orders"/, 'orders');
    await refusal(token({ sub: 'system:serviceaccount:shop:payments' }), /shop\/payments is not bound to any client/);
    await refusal(token({ sub: 'alice' }), /is not a Kubernetes ServiceAccount/);
  });

  it('audience', async function () {
    await refusal(token({ aud: 'https://other.example' }), /^wrong audience: /);
  });

  it('expired, not yet valid, issued in the future', async function () {
    await refusal(token({ exp: NOW - 3600 }), /expired at /);
    await refusal(token({ exp: undefined }), /no expiry \(exp\)/);
    await refusal(token({ nbf: NOW + 3600 }), /not valid yet \(nbf\)/);
    await refusal(token({ iat: NOW + 3600 }), /issued in the future \(iat\)/);
  });
});
