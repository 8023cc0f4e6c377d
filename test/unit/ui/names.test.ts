// The admin console's names (api/ui/browser/names.ts): a sentence keeps each name apart, and as plain
// text (a confirm() dialog) each name sits between U+2068 and U+2069 (UAX #9 isolates).
import { expect } from 'chai';
import { chosen, plainText, readText, words } from '../../../api/ui/browser/names.js';

describe('admin console names', function () {
  const evil = 'eve\u202E@example.com';

  it('a sentence keeps each chosen name apart from its words; other values are words', function () {
    expect(words`Added ${chosen(evil)} to ${chosen('ops')} at ${3}.`).to.deep.equal([
      'Added ',
      chosen(evil),
      ' to ',
      chosen('ops'),
      ' at ',
      '3',
      '.',
    ]);
  });

  it('a sentence within a sentence keeps its names', function () {
    const inner = words`user ${chosen(evil)}`;
    expect(words`${inner}, about ${chosen('bob')}`).to.deep.equal(['user ', chosen(evil), ', about ', chosen('bob')]);
  });

  it('as plain text, each name is between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE', function () {
    expect(plainText(words`Delete ${chosen(evil)}? It is gone for good.`)).to.equal(
      'Delete \u2068eve\u202E@example.com\u2069? It is gone for good.',
    );
    expect(plainText(chosen('ops'))).to.equal('\u2068ops\u2069');
    expect(plainText('no names')).to.equal('no names');
  });

  it('as read (what a filter matches), no isolate is added', function () {
    expect(readText(words`${chosen('ann@example.com')} turned off`)).to.equal('ann@example.com turned off');
  });
});
