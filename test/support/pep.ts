// A PEP names in an AuthZEN evaluation only the people it may read on the box's API
// (api/decision/engine.ts namedCaller): the right the guide gives a PEP that asks about people.
import { expect } from 'chai';
import type { Box } from './box.js';

/** Lets the client `pep` read every person on the box's API (`GET /users/<id>`), with `root`'s token. */
export async function pepReadsPeople(box: Box, root: string, pep: string): Promise<void> {
  const res = await box.json(
    'PUT',
    `/AccessPolicy/${pep}-reads-people`,
    { engine: 'matcho', link: [{ id: pep, resourceType: 'Client' }], matcho: { 'request-method': 'get', uri: '#^/users/[0-9]+$' } },
    root,
  );
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}
