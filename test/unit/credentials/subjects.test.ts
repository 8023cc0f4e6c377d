import { expect } from 'chai';
import { sectorOf, subjectFor, subjectLookup, type SubjectSettings } from '../../../api/credentials/subjects.js';

const key = Buffer.alloc(32, 7);
const opaque: SubjectSettings = { publicSubjects: 'opaque', key };
const sequential: SubjectSettings = { publicSubjects: 'sequential', key };
const ada = { id: 42, subject: '3f1a2b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b' };
const bob = { id: 43, subject: '9e8d7c6b-5a49-4382-b716-05f4e3d2c1b0' };
const a = { id: 'a', subject_type: 'pairwise' as const };
const b = { id: 'b', subject_type: 'pairwise' as const };

describe('subject identifiers (OpenID Connect Core §8)', function () {
  it('a public sub is the row id on a sequential box, the opaque id on an opaque one, for every public client', function () {
    expect(subjectFor(sequential, { id: 'x' }, ada)).to.equal('42');
    expect(subjectFor(opaque, { id: 'x' }, ada)).to.equal(ada.subject);
    expect(subjectFor(opaque, { id: 'y', subject_type: 'public' }, ada)).to.equal(ada.subject);
  });

  it('a pairwise sub differs per client and per person, is stable, and says neither the row id nor the opaque id', function () {
    const subs = [subjectFor(opaque, a, ada), subjectFor(opaque, b, ada), subjectFor(opaque, a, bob), subjectFor(sequential, a, ada)];
    expect(subs[0]).to.equal(subs[3]); // the public kind does not touch pairwise subs
    expect(new Set(subs.slice(0, 3)).size).to.equal(3);
    expect(subjectFor(opaque, a, ada)).to.equal(subs[0]);
    for (const s of subs)
      expect(s)
        .to.match(/^[A-Za-z0-9_-]{22}$/)
        .and.not.include('42');
    expect(subjectFor({ ...opaque, key: Buffer.alloc(32, 8) }, a, ada)).to.not.equal(subs[0]);
  });

  it('clients naming one sector_identifier_uri host share pairwise subs; others do not', function () {
    const c = { id: 'c', subject_type: 'pairwise' as const, sector_identifier_uri: 'https://rp.example/sector.json' };
    const d = { id: 'd', subject_type: 'pairwise' as const, sector_identifier_uri: 'https://rp.example/other.json' };
    expect(sectorOf(c)).to.equal(sectorOf(d));
    expect(subjectFor(opaque, c, ada)).to.equal(subjectFor(opaque, d, ada));
    expect(subjectFor(opaque, c, ada)).to.not.equal(subjectFor(opaque, a, ada));
  });

  it('reads a sub back only for the client (sector) it was made for', function () {
    expect(subjectLookup(opaque, a, subjectFor(opaque, a, ada))).to.deep.equal({ subject: ada.subject });
    // The attack: client A's pairwise sub presented by client B names nobody.
    expect(subjectLookup(opaque, b, subjectFor(opaque, a, ada))).to.equal(undefined);
    expect(subjectLookup(opaque, b, ada.subject)).to.equal(undefined);
    expect(subjectLookup(opaque, { id: 'p' }, ada.subject)).to.deep.equal({ subject: ada.subject });
    expect(subjectLookup(opaque, { id: 'p' }, '42')).to.equal(undefined);
    expect(subjectLookup(sequential, { id: 'p' }, '42')).to.deep.equal({ id: 42 });
    expect(subjectLookup(sequential, { id: 'p' }, subjectFor(opaque, a, ada))).to.equal(undefined);
    for (const junk of ['', 'x', '0', '-1', 'A'.repeat(22), 'A'.repeat(23)]) expect(subjectLookup(opaque, a, junk)).to.equal(undefined);
  });
});
