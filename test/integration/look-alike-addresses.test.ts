// Look-alike sign-ups (issue 63, item 8): `аdmin@localhost`, a Cyrillic а and Latin dmin, was a
// second person drawn exactly as the admin in the console, the audit trail and apps' `email`
// claim. Every door that sets an address refuses a part that mixes scripts (api/schema/scripts.ts).
import { expect } from 'chai';
import { Box, boxForSuite } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { provisioner, USER } from '../support/scim.js';

const LOOK_ALIKE = '\u0430dmin@localhost'; // а: CYRILLIC SMALL LETTER A

describe('look-alike addresses', function () {
  let box: Box;
  let root: string;
  boxForSuite(
    (b, r) => {
      box = b;
      root = r;
    },
    { env: { BOXAUTH_REGISTRATION: 'true', BOXAUTH_ADMIN_EMAIL: 'admin@localhost', BOXAUTH_ADMIN_PASSWORD: 'admin-password-1' } },
  );

  const people = async (): Promise<string[]> =>
    (await box.json('GET', '/users', undefined, root)).body.map((u: { email: string }) => u.email);

  it("sign-up as the admin's look-alike is refused on the page, in the person's language, and makes no one", async function () {
    const refused = await new FormAgent(box).signUpPoster().then((post) => post(LOOK_ALIKE, 'a-good-password-1'));
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.text).to.include('mixes scripts (Cyrillic, Latin) in one part');
    const german = await new FormAgent(box, { 'Accept-Language': 'de' })
      .signUpPoster()
      .then((post) => post(LOOK_ALIKE, 'a-good-password-1'));
    expect(german.text).to.include('mischt Schriften (Cyrillic, Latin) in einem Teil');
    expect(await people()).to.deep.equal(['admin@localhost']);
  });

  it('sign-up with a real address in one script other than Latin works', async function () {
    const cyrillic = '\u043F\u0440\u0438\u043C\u0435\u0440@\u043F\u0440\u0438\u043C\u0435\u0440.\u0440\u0444'; // пример@пример.рф
    const made = await new FormAgent(box).signUpPoster().then((post) => post(cyrillic, 'a-good-password-1'));
    expect(made.status, made.text).to.equal(303);
    expect(await people()).to.include(cyrillic);
  });

  it('the REST API refuses it on create and on a change of address (422), and changes nothing', async function () {
    const created = await box.json('POST', '/users', { email: LOOK_ALIKE, password: 'a-good-password-1' }, root);
    expect(created.status).to.equal(422);
    expect(created.body.errors.email[0]).to.match(/^mixes scripts \(Cyrillic, Latin\)/);
    const ann = (await box.json('POST', '/users', { email: 'ann@example.com', password: 'a-good-password-1' }, root)).body;
    const changed = await box.json('PUT', `/users/${ann.id}`, { email: 'ann@ex\u0430mple.com' }, root);
    expect(changed.status).to.equal(422);
    expect((await box.json('GET', `/users/${ann.id}`, undefined, root)).body.email).to.equal('ann@example.com');
  });

  it('SCIM refuses it as a userName', async function () {
    const scim = await provisioner(box, 'look-alike-provisioning', { 'Content-Type': 'application/scim+json' });
    const res = await scim('POST', '/Users', { schemas: [USER], userName: LOOK_ALIKE, active: true });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.detail).to.match(/userName mixes scripts/);
    expect(await people()).not.to.include(LOOK_ALIKE);
  });

  it("the account page refuses it as a person's new address", async function () {
    await box.json('POST', '/users', { email: 'bo@example.com', password: 'a-good-password-1' }, root);
    const browser = new FormAgent(box);
    expect((await browser.signIn('bo@example.com', 'a-good-password-1')).status).to.equal(303);
    const page = await browser.get('/auth/account');
    const res = await browser.post('/auth/account/email', {
      ...hiddenFields(page.text),
      new_email: 'b\u043E@example.com',
      password: 'a-good-password-1',
    });
    expect(res.text).to.include('mixes scripts (Latin, Cyrillic) in one part');
    expect(await people()).to.include('bo@example.com');
  });
});
