// docs/operations/notices.md is where an operator learns which notices leave the box, how their
// metrics are labelled and when each is given up; api/notice-kinds.ts is what the box starts.
// The page's table of kinds must name exactly the kinds the registry makes, each with its time.
import { expect } from 'chai';
import { NOTICE_KINDS } from '../../../api/notice-kinds.js';
import { NOTICE_KIND_NAMES, type NoticeKindName } from '../../../api/notices/kinds.js';
import { backquoted, pageTables } from '../../support/page-tables.js';
import { servicesForBuilding } from '../../support/services-for-building.js';

const PAGE = 'docs/operations/notices.md';

/** The rows of the page's table of kinds, without its header. */
function kindRows(): string[][] {
  const found = pageTables(PAGE).filter(([head]) => head!.join('|') === 'kind|what it tells, and to whom|destination|given up after');
  expect(found, `${PAGE}: one table of the kinds of notice`).to.have.length(1);
  return found[0]!.slice(1);
}

const isKind = (name: string): name is NoticeKindName => (NOTICE_KIND_NAMES as readonly string[]).includes(name);

/** A time as the page writes it, in milliseconds: `10 minutes`, `1 day`. */
function millisecondsOf(cell: string): number | undefined {
  const m = /^(\d+) (minute|hour|day)s?$/.exec(cell);
  return m ? Number(m[1]) * { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[m[2] as 'minute' | 'hour' | 'day'] : undefined;
}

describe('notice kinds', function () {
  it(`${PAGE} names every kind the box sends, and no other, with the time it is given up after`, function () {
    const rows = kindRows();
    const named = rows.flatMap(([kind]) => backquoted(kind!));
    const problems = [
      ...named.filter((kind, i) => named.indexOf(kind) !== i).map((kind) => `\`${kind}\` has two rows`),
      ...named.filter((kind) => !isKind(kind)).map((kind) => `\`${kind}\` is no kind of api/notice-kinds.ts`),
      ...NOTICE_KIND_NAMES.filter((kind) => !named.includes(kind)).map((kind) => `\`${kind}\` has no row`),
    ];
    const svc = servicesForBuilding();
    for (const row of rows) {
      const [kind] = backquoted(row[0]!);
      if (!kind || !isKind(kind)) continue;
      const made = NOTICE_KINDS[kind](svc).giveUpAfterMs;
      if (millisecondsOf(row[3]!) !== made) problems.push(`\`${kind}\`: the page says "${row[3]}", the kind gives up after ${made} ms`);
    }
    expect(problems).to.deep.equal([]);
  });
});
