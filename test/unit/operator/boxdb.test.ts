// The names of a box's PostgreSQL schema and role: no two (database,
// namespace) pairs may share them, since whoever shares a role shares its
// password and its data. The pairs below shared them under the names the
// operator derived before (test/support/old-names.ts).
import { expect } from 'chai';
import { boxDbNames, ownDatabaseMark, ownDatabaseNames } from '../../../operator/boxdb.js';
import { oldBoxDbNames as oldNames, oldTwin } from '../../support/old-names.js';

const LONG = 'payments-production-eu-west-1-primary-cluster-tenant-0123456789';

describe('box database names', function () {
  for (const kind of ['schema', 'role'] as const) {
    it(`no longer lets a short namespace crafted to share a 63-character one's old ${kind} name share its schema or role`, function () {
      const twin = oldTwin(LONG, 'boxauth', kind);
      expect(LONG).to.have.length(63);
      expect(twin)
        .to.match(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
        .and.have.length.below(63); // a namespace anyone may create
      expect(oldNames(twin, 'boxauth')[kind]).to.equal(oldNames(LONG, 'boxauth')[kind]); // the collision the issue reports
      const [a, b] = [boxDbNames(LONG, 'boxauth'), boxDbNames(twin, 'boxauth')];
      expect(a.schema).to.not.equal(b.schema);
      expect(a.role).to.not.equal(b.role);
    });
  }

  it('no longer lets two databases\' namespaces share a role (database "a" + "b-box-c" and "a_box_b" + "c")', function () {
    expect(oldNames('b-box-c', 'a').role).to.equal(oldNames('c', 'a_box_b').role);
    expect(boxDbNames('b-box-c', 'a').role).to.not.equal(boxDbNames('c', 'a_box_b').role);
  });

  it('gives each database its own names for the same namespace', function () {
    expect(boxDbNames('team-a', 'one').role).to.not.equal(boxDbNames('team-a', 'two').role);
  });

  it('is stable, readable, and a valid identifier of at most 63 bytes', function () {
    for (const [namespace, database] of [
      ['team-a', 'boxauth'],
      [LONG, 'boxauth'],
      [oldTwin(LONG, 'boxauth', 'schema'), 'a'.repeat(63)],
      ['x', 'Some DB-Name'],
    ]) {
      const names = boxDbNames(namespace!, database!);
      expect(boxDbNames(namespace!, database!)).to.deep.equal(names);
      for (const name of [names.schema, names.role]) {
        expect(name).to.match(/^[a-z_][a-z0-9_]*$/);
        expect(Buffer.byteLength(name)).to.be.at.most(63);
        expect(name.startsWith(`box_${namespace!.slice(0, 20).replaceAll('-', '_')}`), name).to.equal(true);
      }
    }
  });

  it("names a box's own database, role and schema alike, after a keyed digest that says nothing of the namespace", function () {
    const key = Buffer.alloc(32, 1);
    const names = ownDatabaseNames('payments-prod', key);
    expect(names.database).to.match(/^box_[0-9a-f]{32}$/);
    expect([names.role, names.schema]).to.deep.equal([names.database, names.database]);
    expect(ownDatabaseNames('payments-prod', key)).to.deep.equal(names); // stable: the operator finds it again
    expect(ownDatabaseNames('payments-prod', Buffer.alloc(32, 2)).database).to.not.equal(names.database); // another key, another name
    expect(ownDatabaseNames('payments-pro', key).database).to.not.equal(names.database);
    // The mark every role of the server reads names the administrative database, not the namespace.
    expect(ownDatabaseMark(names, 'boxauth')).to.equal(`boxauth owner: box ${names.database} of database boxauth`);
  });
});
