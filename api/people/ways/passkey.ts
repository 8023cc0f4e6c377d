// A passkey (WebAuthn; the ceremonies' checks are ./webauthn.ts, docs/guides/passkeys.md): a whole
// sign-in alone (a discoverable credential names its person, and the authenticator verified them),
// the second factor of a step, and a way to sign in added — in a sign-in's enrolment, or on the
// person's passkeys page. Every challenge is bound to the browser it was handed to (the SHA-256 of
// the browser's id, which the door keeps) and used once: an assertion replayed, or carried to
// another browser, finds no challenge. Options hand out a challenge, a row each, so they are
// counted per address (a flood is refused before any is written) and given back when answered.
import { withFactor } from '../../credentials/acr.js';
import type { Config } from '../../config.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../../db/pool.js';
import type { FactorKindSpec } from '../../factor-kinds.js';
import { ConstraintViolation } from '../../store/constraints.js';
import {
  addPasskey,
  factorExists,
  factorState,
  findPasskey,
  listPasskeys,
  recordPasskeyUse,
  setMustEnrol,
  type FactorState,
  type FactorSummary,
  type NewPasskey,
  type Passkey,
} from '../../store/factors.js';
import { createChallenge, takeChallenge, type Challenge } from '../../store/webauthn-challenges.js';
import { getUser, holdPerson, type UserRow } from '../../store/users.js';
import type { Refusal } from '../attempts.js';
import { accountHolder, EndedMeanwhile, strengthen, type BrowserFacts, type BrowserToken, type SignedInPerson } from '../browsers.js';
import { recentProof } from '../factors.js';
import { tellOfFactorChange } from '../notices.js';
import { completeStep, currentStep, mayBeSignedIn, proceed, type StepServices, type StepTarget, type WentOn } from '../steps.js';
import { signInThrough, type Answer, type WayServices } from './way.js';
import {
  assertedCredentialId,
  assertedUserHandle,
  authenticationOptions,
  checkAssertion,
  checkRegistration,
  defaultPasskeyName,
  mayEnrolInStep,
  passkeyAmr,
  passkeyName,
  registrationOptions,
  relyingParty,
  userHandle,
} from './webauthn.js';

/** A passkey as a kind of factor (api/factor-kinds.ts; `make generate` copies it there). */
export const FACTOR_KIND = {
  kind: 'passkey',
  position: 10,
  label: 'factor.passkeyKind',
  mailWord: 'factor.passkeyInMail',
  ssfCredential: 'fido2-platform',
  webauthn: {
    path: 'passkeys',
    words: { use: 'step.usePasskey', add: 'passkeys.add', title: 'passkeys.title', orAdd: 'enrol.orPasskey' },
  },
} as const satisfies FactorKindSpec;

/**
 * Everything a passkey does to the database itself (what it completes or strengthens is ../steps.ts's
 * and ../browsers.ts's): its challenges, the person's passkeys, their counters.
 */
export interface PasskeyStore {
  /** A challenge handed out: bound to the browser, the purpose and the sign-in's person, until it expires. */
  createChallenge(db: Queryable, challenge: Challenge): Promise<void>;
  /** A challenge used: deleted, and returned only to its browser, for its purpose, before it expired. */
  takeChallenge(db: Queryable, challenge: string, browser: Buffer, purpose: Challenge['purpose']): Promise<Challenge | undefined>;
  /** The passkey a credential id names, whoever's it is. */
  findPasskey(db: Queryable, credentialId: Buffer): Promise<Passkey | undefined>;
  /** The person's passkeys (the ones a step allows, the ones registration excludes). */
  listPasskeys(db: Queryable, userId: number): Promise<Passkey[]>;
  /** The counter moved from what was read to the assertion's (one UPDATE: of two uses of one assertion, one moves it). */
  recordPasskeyUse(db: Queryable, id: number, readCount: number, newCount: number): Promise<boolean>;
  /** Whether the passkey is still there (a sign-in alone holds while it is). */
  factorExists(db: Queryable, id: number): Promise<boolean>;
  /** A passkey added; a credential id taken already is a ConstraintViolation. */
  addPasskey(db: Queryable, userId: number, key: NewPasskey): Promise<FactorSummary>;
  /** The person's factors and rules (whether a step may enrol one). */
  factorState(db: Queryable, userId: number): Promise<FactorState>;
  /** The person owes no enrolment any more. */
  setMustEnrol(db: Queryable, userId: number, must: boolean): Promise<boolean>;
  /** The person, as a step names them. */
  getUser(db: Queryable, id: number): Promise<UserRow | undefined>;
  /** The person's row held until the transaction ends, as every change of their factors holds it. */
  holdPerson(tx: Transaction, id: number): ReturnType<typeof holdPerson>;
  /** A transaction of its own (a passkey added on the person's page, with the session it strengthens). */
  withTransaction: typeof withTransaction;
}

const store: PasskeyStore = {
  createChallenge,
  takeChallenge,
  findPasskey,
  listPasskeys,
  recordPasskeyUse,
  factorExists,
  addPasskey,
  factorState,
  setMustEnrol,
  getUser,
  holdPerson,
  withTransaction,
};

/** What a passkey uses of the process's services. */
export type PasskeyServices = WayServices &
  StepServices & { pool: Pool; factorKey: Buffer; config: Pick<Config, 'baseUrl' | 'box' | 'smtp'> };

/** A challenge lives this long: the browser's own timeout for a passkey prompt is five minutes. */
const CHALLENGE_MINUTES = 5;

const rpOf = (svc: Pick<PasskeyServices, 'config'>) => relyingParty(svc.config.baseUrl, svc.config.box);

/** Where a call came from: the browser its challenges are bound to (the SHA-256 of its id), and its network address. */
export interface Caller {
  browser: Buffer;
  address: string;
}

/** Options for the browser's passkey prompt, their challenge handed out; or why none. */
export type Options = { options: { challenge: string } } | { throttled: Refusal } | { none: 'no passkey' | 'not signed in' };

/** Hands out `options`' challenge to `caller`, for `purpose` (and `userId`'s sign-in), once counted. */
async function handOut(
  svc: PasskeyServices,
  caller: Caller,
  purpose: Challenge['purpose'],
  userId: number | null,
  options: () => Promise<{ challenge: string }>,
): Promise<Options> {
  const throttled = await svc.attempts.begin([{ challengesFrom: caller.address }]);
  if (throttled) return { throttled };
  const made = await options();
  const expiresAt = new Date(Date.now() + CHALLENGE_MINUTES * 60_000);
  await store.createChallenge(svc.pool, { challenge: made.challenge, browser: caller.browser, purpose, userId, expiresAt });
  return { options: made };
}

/** The challenge a WebAuthn response answers (in its clientDataJSON), when it names one. */
function answeredChallenge(response: unknown): string | undefined {
  const data = (response as { response?: { clientDataJSON?: unknown } } | null)?.response?.clientDataJSON;
  if (typeof data !== 'string' || data.length > 4096) return undefined;
  try {
    const challenge = (JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
    // Challenges are base64url (generated by the box): anything else names none (and a NUL would reach PostgreSQL).
    return typeof challenge === 'string' && /^[A-Za-z0-9_-]{1,256}$/.test(challenge) ? challenge : undefined;
  } catch {
    return undefined;
  }
}

/** The challenge `response` answers, used up: only `caller`'s, for this purpose, once, before it expired; its count given back. */
async function answered(
  svc: PasskeyServices,
  caller: Caller,
  purpose: Challenge['purpose'],
  response: unknown,
): Promise<Challenge | undefined> {
  const challenge = answeredChallenge(response);
  const taken = challenge && (await store.takeChallenge(svc.pool, challenge, caller.browser, purpose));
  if (taken) await svc.attempts.giveBack([{ challengesFrom: caller.address }]);
  return taken || undefined;
}

// --- signing in with a passkey: alone (no step), or as the second factor of a step

/** Options to sign in with: alone, no credentials named (the browser offers the discoverable ones, and its autofill); in a step, the person's. */
export async function signInOptions(svc: PasskeyServices, caller: Caller, stepToken: string | undefined): Promise<Options> {
  const step = await currentStep(svc, stepToken);
  const allowed = step ? await store.listPasskeys(svc.pool, step.userId) : [];
  if (step && !allowed.length) return { none: 'no passkey' };
  return handOut(svc, caller, 'authenticate', step?.userId ?? null, () => authenticationOptions(rpOf(svc), allowed));
}

/** A passkey's assertion: a sign-in alone, or the second factor of the step of `stepToken`. `ended`: that step is gone. */
export async function signInWithPasskey(
  svc: PasskeyServices,
  from: BrowserFacts,
  caller: Caller,
  stepToken: string | undefined,
  response: unknown,
  target: StepTarget,
): Promise<Answer<WentOn | 'ended'>> {
  return signInThrough<WentOn | 'ended'>(svc, { address: caller.address, counts: true }, async () => {
    const refused = (reason: string, user?: number) => ({ refused: `passkey: ${reason}`, said: 'not accepted', ...(user ? { user } : {}) });
    const challenge = await answered(svc, caller, 'authenticate', response);
    if (!challenge) return refused('no such challenge');
    const step = await currentStep(svc, stepToken);
    // A challenge handed out for one sign-in (alone, or a step's person) answers only that one.
    if (challenge.userId !== (step?.userId ?? null)) return refused('challenge of another sign-in');
    const credentialId = assertedCredentialId(response);
    const key = credentialId && (await store.findPasskey(svc.pool, credentialId));
    if (!key) return refused('unknown credential');
    // A second factor is the step's person's own passkey, whatever its signature.
    if (step && key.userId !== step.userId) return refused('another person', step.userId);
    // Alone, the credential names its person; the authenticator's user handle must say the same.
    if (!step && !assertedUserHandle(response)?.equals(userHandle(svc.factorKey, key.userId))) return refused('user handle', key.userId);
    const assertion = await checkAssertion(rpOf(svc), challenge.challenge, key, response);
    if (!assertion) return refused('assertion', key.userId);
    // The counter as read: of two sign-ins with one assertion, one moves it.
    if (!(await store.recordPasskeyUse(svc.pool, key.id, key.signCount, assertion.newCount))) return refused('counter', key.userId);
    const proved = passkeyAmr(assertion.deviceType, assertion.userVerified);
    if (!step) {
      // Alone: signed in only while the passkey is still theirs (a reset or a removal that won the race came first).
      const holds = { still: (tx: Queryable) => store.factorExists(tx, key.id), provider: null };
      return { proven: await proceed(svc, from, { userId: key.userId, amr: withFactor([], proved), holds }, target), user: key.userId };
    }
    const given = (s: { userId: number; amr: readonly string[] }) =>
      s.userId === key.userId ? { amr: withFactor(s.amr, proved), factor: 'given' as const } : undefined;
    return { proven: (await completeStep(svc, from, stepToken, given, target)) ?? 'ended', user: key.userId };
  });
}

// --- adding a passkey: a step's person enrolling, or a signed-in person on their passkeys page

/** Who adds a passkey: a step's person (an enrolment), or a signed-in person on their page. */
export type Adder =
  { userId: number; email: string; inStep: true } | { userId: number; email: string; inStep: false; person: SignedInPerson };

/**
 * Who may add a passkey from this browser: the step's person when the step is an enrolment (a
 * step-up's only after a recent proof), else the signed-in person whose last proof is recent —
 * adding a way to sign in is a credential change, and whoever holds a signed-in browser is not
 * yet its person. A step that still wants a factor the person has is no way to add one.
 * `confirm`: the person is signed in but must confirm it is them first.
 */
export async function passkeyAdder(
  svc: PasskeyServices,
  tokens: { step: string | undefined; session: string | undefined },
): Promise<Adder | 'confirm' | undefined> {
  const step = await currentStep(svc, tokens.step);
  if (step) {
    const stepUp = step.replaces === null ? undefined : { proofAt: step.proofAt, now: Date.now() };
    const user = await store.getUser(svc.pool, step.userId);
    return user && mayEnrolInStep(step.amr, await store.factorState(svc.pool, step.userId), stepUp)
      ? { userId: user.id, email: user.email, inStep: true }
      : undefined;
  }
  const person = await accountHolder(svc, tokens.session);
  if (!person) return undefined;
  return recentProof(person.browser.proofAt, Date.now())
    ? { userId: person.user.id, email: person.user.email, inStep: false, person }
    : 'confirm';
}

/** Options to make a passkey for `adder` with, excluding the ones they have (and naming them by an opaque handle). */
export async function registrationChallenge(svc: PasskeyServices, caller: Caller, adder: Adder): Promise<Options> {
  const existing = await store.listPasskeys(svc.pool, adder.userId);
  const handle = userHandle(svc.factorKey, adder.userId);
  return handOut(svc, caller, 'register', adder.userId, () => registrationOptions(rpOf(svc), { handle, email: adder.email }, existing));
}

/** A passkey added: its id, and what the browser goes on with (the step's way on, or its strengthened session). */
export type Added = { passkey: number; went: WentOn } | { passkey: number; session: BrowserToken };

/** Why no passkey was added (the door's words for each). */
export type NotAdded = 'not for this page' | 'not checked' | 'bad name' | 'taken' | 'ended';

/**
 * The passkey `response` made, added for `adder`, with what it counts for, in one transaction
 * under the person's row: in a step, the step completes with it (enrolled, must_enrol cleared);
 * on the passkeys page, this browser's session counts it from now on (same sid), keeping its
 * sign-in time and last proof. A password change, a reset or a sign-out that ended the session or
 * the step first leaves nothing added, and one that comes after ends what this signed in. Mailed,
 * and audited in the same transaction.
 */
export async function addPasskeyFor(
  svc: PasskeyServices,
  from: BrowserFacts,
  caller: Caller,
  adder: Adder,
  stepToken: string | undefined,
  made: { response: unknown; name: unknown },
  target: StepTarget,
): Promise<Added | { refused: NotAdded }> {
  const challenge = await answered(svc, caller, 'register', made.response);
  if (!challenge || challenge.userId !== adder.userId) return { refused: 'not for this page' };
  const registration = await checkRegistration(rpOf(svc), challenge.challenge, made.response);
  if (!registration) return { refused: 'not checked' };
  const given = made.name === undefined || made.name === '' ? undefined : passkeyName(made.name);
  if (made.name !== undefined && made.name !== '' && !given) return { refused: 'bad name' };
  const name = given ?? defaultPasskeyName((await store.listPasskeys(svc.pool, adder.userId)).map((k) => k.name));
  const proved = passkeyAmr(registration.deviceType, registration.userVerified);
  const user = { id: adder.userId, email: adder.email };
  /** The passkey written in `tx`, the person told by mail, and its `factor` event (one commits with the other). */
  const addIn = async (tx: Transaction): Promise<FactorSummary> => {
    const passkey = await store.addPasskey(tx, adder.userId, { ...registration, name });
    await tellOfFactorChange(svc, tx, user, { change: 'added', factor: 'passkey', name });
    const [id, by] = [String(passkey.id), { user: String(adder.userId) }];
    await svc.audit.recordIn(tx, {
      event: 'factor',
      action: 'enrolled',
      user: by.user,
      kind: 'passkey',
      factor: id,
      by,
      address: caller.address,
    });
    return passkey;
  };
  try {
    if (adder.inStep) {
      let added: FactorSummary | undefined;
      const went = await completeStep(
        svc,
        from,
        stepToken,
        async (step, tx) => {
          if (step.userId !== adder.userId) return undefined;
          added = await addIn(tx);
          await store.setMustEnrol(tx, adder.userId, false);
          return { amr: withFactor(step.amr, proved), factor: 'enrolled' };
        },
        target,
      );
      return went && added ? { passkey: added.id, went } : { refused: 'ended' };
    }
    const { browser } = adder.person;
    return await store.withTransaction(svc.pool, async (tx) => {
      const held = await store.holdPerson(tx, adder.userId);
      if (!held || !mayBeSignedIn(held)) throw new EndedMeanwhile();
      const session = await strengthen(svc, tx, from, withFactor(browser.amr, proved), browser, { proofAt: 'kept', enrolled: true });
      if (!session) throw new EndedMeanwhile();
      return { passkey: (await addIn(tx)).id, session };
    });
  } catch (err) {
    if (err instanceof ConstraintViolation) return { refused: 'taken' };
    if (err instanceof EndedMeanwhile) return { refused: 'ended' };
    throw err;
  }
}

/** The person's passkeys, as their page lists them. */
export const passkeysOf = (svc: Pick<PasskeyServices, 'pool'>, userId: number): Promise<FactorSummary[]> =>
  store.listPasskeys(svc.pool, userId);
