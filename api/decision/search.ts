// The candidates of the AuthZEN search APIs (AuthZEN 1.0 §8) and the walk through them, a page
// at a time: §8 leaves to the PDP where its answers come from, and the box answers only among
// what it knows — the people of the box (Subject Search), the resources and actions an App
// declares (App.resources, App.actions: Resource and Action Search). Each candidate is decided by
// the decision point itself (./engine.ts decide), with the App's policies, as an evaluation would
// be: a search is a list of evaluations the PDP makes, never a second logic.
//
// A page holds at most `limit` results, reads at most SCAN_LIMIT candidates and ends where the
// request's budget for CEL expressions runs out (api/policy/cel withCelBudget): a search among
// many people, or through costly policies, answers in bounded time, and its next_token says where the next page goes on (a
// page may then hold fewer results than the limit, or none, and still have a next one).
import type { Queryable } from '../db/pool.js';
import { ApiError } from '../errors.js';
import { peopleAfter, type NamedPerson } from '../store/users.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Queryable;
}

/** The most candidates one page reads, whatever its limit. */
export const SCAN_LIMIT = 1000;
/** Candidates read from the database at a time. */
const BATCH = 100;

/** One candidate and its key: where a page that stops after it goes on. */
export interface Keyed<T> {
  key: number;
  item: T;
}

/** A page of results, and the key after which the next page goes on (none: this was the last). */
export interface Found<T> {
  results: T[];
  next: number | undefined;
}

/**
 * The next page: candidates after the key `after`, read `BATCH` at a time by `read` (fewer than
 * asked: there are no more), each kept when `keep` says so, until `limit` are kept or SCAN_LIMIT
 * were read. Candidates are decided one after another, in key order, so that identical requests
 * answer identical pages.
 */
export async function walk<T>(
  read: (after: number, n: number) => Promise<Keyed<T>[]>,
  keep: (item: T) => Promise<boolean>,
  page: { limit: number; after: number },
  spent: () => boolean = () => false,
): Promise<Found<T>> {
  const results: T[] = [];
  let after = page.after;
  let scanned = 0;
  for (;;) {
    const batch = await read(after, Math.min(BATCH, SCAN_LIMIT - scanned));
    for (const { key, item } of batch) {
      const kept = await keep(item);
      // The request's budget for expressions ran out while this candidate was decided: its
      // decision may be a denial for want of budget, so the page ends before it and the next
      // page decides it again. A candidate that alone spends a whole budget can never be decided.
      if (spent()) {
        if (scanned === 0)
          throw new ApiError(
            503,
            'temporarily_unavailable',
            "one candidate spends the request's whole cost budget for expressions: the App's policies cost too much to search with",
          );
        return { results, next: after };
      }
      scanned += 1;
      after = key;
      if (kept) results.push(item);
      if (results.length === page.limit || scanned === SCAN_LIMIT) return { results, next: key };
    }
    if (batch.length < BATCH) return { results, next: undefined };
  }
}

/** Subject Search's candidates: the people of the box, by id. */
export const people =
  (svc: Needs) =>
  async (after: number, n: number): Promise<Keyed<NamedPerson>[]> =>
    (await peopleAfter(svc.pool, after, n)).map((p) => ({ key: p.id, item: p }));

/** Resource and Action Search's candidates: a list an App declares, by position (1: the first). */
export const listed =
  <T>(list: readonly T[]) =>
  (after: number, n: number): Promise<Keyed<T>[]> =>
    Promise.resolve(list.slice(after, after + n).map((item, i) => ({ key: after + i + 1, item })));

/**
 * How a search names a person in its results, so that a PEP can name them back: their
 * directory's id (SCIM externalId) when a directory gave them one, else their sign-in name (SCIM
 * userName: their email, or the name a directory gave them) — both names the subject of an
 * evaluation is looked up by (./engine.ts namedCaller).
 */
export const nameOf = (p: NamedPerson): string => p.externalId ?? p.email;
