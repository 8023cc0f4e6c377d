// A password (the sign-in page's form), the box's own or, for a person without one, the directory's
// behind it (an LDAP IdentityProvider with ldap.passwordForm: docs/guides/upstream-ldap.md). The
// password is checked against a real argon2 hash even for an unknown email, so that timing does not
// tell which emails exist; an account whose address is not proven yet (a sign-up where registration
// asks for it first) answers as a wrong password does, and its person is mailed the link again; a
// person turned off is told so, once the password proved it is them (a stranger learns nothing a
// wrong password would not tell).
import { Argon2Busy, dummyHash, type Argon2 } from '../../credentials/secrets.js';
import type { Config } from '../../config.js';
import { withTransaction, type Pool, type Queryable } from '../../db/pool.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { HookCaller } from '../../hooks/caller.js';
import { requestUser } from '../../policy/requests.js';
import type { IdentityProvider, PrincipalUser } from '../../types.js';
import { factorState, type FactorState } from '../../store/factors.js';
import { findUserByEmail, holdPerson, updateUser, type UserRow } from '../../store/users.js';
import type { Acr } from '../../credentials/acr.js';
import { nextStep } from '../factors.js';
import { resendVerification } from '../links.js';
import { mayBeSignedIn, type FirstFactor } from '../steps.js';
import { UpstreamError, type UpstreamProfile } from '../upstream/profile.js';
import { directorySignIn, passwordFormDirectory, type FlowServices } from '../upstream/flow.js';
import { signInThrough, type Answer, type WayServices } from './way.js';

/** Everything the password way does to the database: it reads, and writes nothing itself (../steps.ts records the sign-in). */
export interface PasswordStore {
  /** The person an email names, as the box compares emails. */
  findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined>;
  /** Their factors and rules: whether the sign-in is done with the password, for the count of their failures. */
  factorState(db: Queryable, userId: number): Promise<FactorState>;
  /**
   * A password a Hook vouched for (passwordImport) becomes the person's, as the box's own hash, under
   * their row and only while they still have none (`was`, the hash standing for no password): false otherwise.
   */
  importPassword(pool: Pool, userId: number, was: string, hash: string): Promise<boolean>;
}

const store: PasswordStore = {
  findUserByEmail,
  factorState,
  importPassword: (pool, userId, was, hash) =>
    withTransaction(pool, async (tx) => {
      if ((await holdPerson(tx, userId))?.passwordHash !== was) return false;
      return (await updateUser(tx, userId, { passwordHash: hash })) !== undefined;
    }),
};

/** What the password way uses of the process's services (and, for a directory behind it, what asking one takes). */
export type PasswordServices = WayServices & {
  pool: Pool;
  config: Pick<Config, 'smtp'>;
  argon2: Argon2;
  /** Asked at passwordImport for a person without a password of the box (api/hooks/). */
  hooks: Pick<HookCaller, 'asksAt' | 'ask'>;
  users: RecordCache<PrincipalUser>;
};
export type DirectoryServices = WayServices & FlowServices;

/** A password typed on the sign-in page, and what the sign-in is asked to reach. */
export interface TypedPassword {
  email: string;
  password: string;
  address: string;
  acr: Acr | undefined;
  /** The page's language, for a verification link mailed again. */
  language: string | undefined;
}

/** What the sign-in page's form answered: a first factor, a refusal, or that the directory behind it is to check it. */
export type PasswordAnswer = Answer<FirstFactor> | { directory: IdentityProvider };

/** The refusals a person is told of (the page's words are the door's). */
export const PASSWORD_REFUSALS = { wrong: 'wrong', turnedOff: 'turned off', busy: 'busy' } as const;

/** Checks a password typed on the sign-in page, counted before it is checked (./way.ts). */
export async function signInWithPassword(svc: PasswordServices, typed: TypedPassword): Promise<PasswordAnswer> {
  let directory: IdentityProvider | undefined;
  const answer = await signInThrough<FirstFactor>(svc, { address: typed.address, account: typed.email, counts: true }, async () => {
    const found = typed.email ? await store.findUserByEmail(svc.pool, typed.email) : undefined;
    // A person an IdentityProvider made has no password of the box: the form may ask the directory.
    let user = found?.passwordSet ? found : undefined;
    // Or the old system behind a Hook (passwordImport): on its yes, the box keeps its own hash of it.
    let ok: boolean | undefined;
    if (found && !user && (await svc.hooks.asksAt('passwordImport'))) {
      const imported = await importedPassword(svc, found, typed.password);
      if (imported === 'busy') return { unchecked: PASSWORD_REFUSALS.busy };
      if (imported === undefined) return { refused: 'wrong password (import)', said: PASSWORD_REFUSALS.wrong, user: found.id };
      [user, ok] = [imported, true];
    }
    if (!user) directory = await passwordFormDirectory(svc.pool);
    if (directory) return { unchecked: 'a directory' };
    try {
      ok ??= await svc.argon2.verify(user?.passwordHash ?? (await dummyHash()), typed.password, 'sign-in');
    } catch (err) {
      if (err instanceof Argon2Busy) return { unchecked: PASSWORD_REFUSALS.busy };
      throw err;
    }
    if (!user || !ok)
      return { refused: user ? 'wrong password' : 'unknown email', said: PASSWORD_REFUSALS.wrong, ...(user ? { user: user.id } : {}) };
    if (!mayBeSignedIn(user)) return { refused: 'deactivated', said: PASSWORD_REFUSALS.turnedOff, user: user.id, givenBack: true };
    if (user.mustVerifyEmail) {
      // A new link for an account not open yet, as many as its address may be sent (a stranger who made it knows its password too).
      if (svc.config.smtp !== undefined && !(await svc.attempts.begin([{ mailsTo: user.email }])))
        await resendVerification(svc, user, typed.language);
      return { refused: 'email not verified', said: PASSWORD_REFUSALS.wrong, user: user.id };
    }
    // The account's failures are wiped only by a sign-in that is done: wrong second-factor codes
    // count there too, and a right password must not wipe them (the password again, then more guesses at the code).
    const done = nextStep(['pwd'], await store.factorState(svc.pool, user.id), typed.acr) === 'done';
    const proven = { userId: user.id, amr: ['pwd'], holds: { passwordHash: user.passwordHash, provider: null } };
    return { proven, user: user.id, keepAccountCount: !done };
  });
  return directory ? { directory } : answer;
}

/**
 * The Hooks of passwordImport asked about `password` for `person` (who has no password of the box):
 * on a hook's `valid: true`, the box hashes it (argon2, the sign-up lane) and keeps it, and the person
 * is who they said. Undefined: no hook vouched for it (or the person got a password meanwhile).
 */
async function importedPassword(svc: PasswordServices, person: UserRow, password: string): Promise<UserRow | undefined | 'busy'> {
  const principal = await svc.users.get(String(person.id));
  if (!principal) return undefined;
  const verdict = await svc.hooks.ask(
    'passwordImport',
    { user: requestUser(principal), password: { email: person.email, password } },
    { user: String(person.id) },
  );
  if (!verdict.allowed || verdict.valid !== true) return undefined;
  let hash: string;
  try {
    hash = await svc.argon2.hash(password, 'sign-up');
  } catch (err) {
    if (err instanceof Argon2Busy) return 'busy';
    throw err;
  }
  if (!(await store.importPassword(svc.pool, person.id, person.passwordHash, hash))) return undefined;
  return { ...person, passwordHash: hash, passwordSet: true };
}

/** A username and password a directory checks (its own form, or the sign-in page's: ldap.passwordForm), counted as the box's own. */
export async function signInAtDirectory(
  svc: DirectoryServices,
  provider: IdentityProvider,
  typed: { username: string; password: string; address: string },
): Promise<Answer<UpstreamProfile> | { failed: unknown }> {
  let failed: unknown;
  const account = `${provider.id}:${typed.username.toLowerCase()}`;
  const answer = await signInThrough<UpstreamProfile>(svc, { address: typed.address, account, counts: true, success: false }, async () => {
    try {
      const profile = await directorySignIn(svc, provider, typed.username, typed.password);
      return { proven: profile };
    } catch (err) {
      if (err instanceof UpstreamError && err.failure === 'refused')
        return { refused: `wrong username or password at ${provider.id}`, said: PASSWORD_REFUSALS.wrong };
      // Not the person's doing (the directory is down or misconfigured): not counted against them.
      failed = err;
      return { unchecked: 'the directory failed' };
    }
  });
  return failed !== undefined ? { failed } : answer;
}

/**
 * The person's current password typed again — on their account page (a change of password or
 * address, "confirm it is you"), on a mailed link's page (the link proves the mailbox, not the
 * account) — counted as at sign-in, so that those pages are no way around its throttle.
 */
export async function passwordAgain(
  svc: WayServices & { argon2: Argon2 },
  of: { user: { id: number; email: string; passwordHash: string }; address: string; where: string },
  password: string,
): Promise<Answer<true>> {
  const { user } = of;
  return signInThrough<true>(svc, { address: of.address, account: user.email, counts: false, success: false }, async () => {
    try {
      if (!(await svc.argon2.verify(user.passwordHash, password, 'sign-in')))
        return { refused: `wrong password on ${of.where}`, said: PASSWORD_REFUSALS.wrong, user: user.id };
    } catch (err) {
      if (err instanceof Argon2Busy) return { unchecked: PASSWORD_REFUSALS.busy };
      throw err;
    }
    // Given back, not wiped: a right password here is no sign-in.
    return { proven: true, user: user.id, keepAccountCount: true };
  });
}
