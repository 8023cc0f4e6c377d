// The SCIM 2.0 server as a compliance checker none of us wrote sees it: scim2-tester
// (python-scim, pinned in test/py-client/requirements.txt) reads /ServiceProviderConfig,
// /ResourceTypes and /Schemas, builds its models of User and Group from what they publish,
// then creates, reads, lists, searches, replaces, patches (add, remove, replace, attribute
// by attribute) and deletes each, checking every answer against RFC 7643/7644.
import { expect } from 'chai';
import { Box, basic, boxForSuite } from '../support/box.js';
import { requirePyClient } from '../support/py-client.js';
import { describeFailure, FAILED, scim2Tester, type ScimCheck } from '../support/scim2-tester.js';

/**
 * The checks scim2-tester skips on this server, and why: listed, so that a new skip (a
 * feature the server stopped announcing, a check that found nothing to try) fails here.
 */
const SKIPPED = [
  // A search at the root, of Users and Groups at once (RFC 7644 §3.4.3: optional), answers 501: each
  // type's own /Users/.search and /Groups/.search are served (test/integration/scim.test.ts).
  'Group search_with_attributes',
  'User search_with_attributes',
];

/**
 * Checks the server fails on purpose, listed so that any other failure, and one of these going
 * away, fails here:
 * - removing `active`: RFC 7644 §3.5.2.2 would leave it unassigned, a person neither on nor off;
 *   the box refuses (400 invalidValue) rather than turn a person on or off that nobody asked to.
 */
const REFUSED_ON_PURPOSE = ['User check_remove_attribute active'];

/** Checks that must have run and passed: without them a run that stopped after discovery would look clean. */
const MUST_PASS = [
  'User object_creation',
  'User object_query',
  'User object_replacement',
  'User object_deletion',
  'Group object_creation',
  'Group object_deletion',
];

describe('scim2-tester against the SCIM server', function () {
  this.timeout(120_000);
  let box: Box;
  boxForSuite((b) => (box = b));

  before(function () {
    // Not skipped when missing: make test builds the venv first, so its absence is a failure.
    requirePyClient();
  });

  const tokenOf = async (id: string, secret: string): Promise<string> => {
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  };

  const names = (checks: ScimCheck[]): string[] => [...new Set(checks.map((check) => check.name))].sort();

  it('passes every check, as a client an access policy allows', async function () {
    const { id, secret } = await box.addClient('scim-tester', {});
    const checks = await scim2Tester(`${box.url}/scim/v2`, await tokenOf(id, secret));

    const failed = checks.filter((check) => FAILED.has(check.status) && !REFUSED_ON_PURPOSE.includes(check.name));
    expect(failed, `${failed.length} of ${checks.length} checks failed:\n\n${failed.map(describeFailure).join('\n\n')}`).to.deep.equal([]);
    expect(names(checks.filter((check) => FAILED.has(check.status)))).to.deep.equal([...REFUSED_ON_PURPOSE].sort());
    expect(names(checks.filter((check) => check.status === 'SKIPPED'))).to.deep.equal([...SKIPPED].sort());
    expect(names(checks.filter((check) => check.status === 'SUCCESS'))).to.include.members(MUST_PASS);
  });

  it('reaches nothing with the token of a client no policy allows', async function () {
    const { id, secret } = await box.addClient('scim-stranger', {}, { policy: false });
    const token = await tokenOf(id, secret);

    const checks = await scim2Tester(`${box.url}/scim/v2`, token);
    // Discovery itself is refused, so scim2-tester stops before it creates anything.
    const passed = checks.filter((check) => check.status === 'SUCCESS' && !check.title?.endsWith('_endpoint_methods'));
    expect(passed.map((check) => check.name)).to.deep.equal([]);
    expect(names(checks)).to.not.include('User object_creation');

    const users = await box.request('GET', '/scim/v2/Users', { headers: { Authorization: `Bearer ${token}` } });
    expect(users.status, users.text).to.equal(403);
    expect(users.body).to.include({ status: '403' });
    expect(users.body.schemas).to.deep.equal(['urn:ietf:params:scim:api:messages:2.0:Error']);
  });
});
