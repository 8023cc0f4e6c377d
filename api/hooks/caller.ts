// The box's calls to its Hooks: one HookCaller per box (a host's boxes each have their own, with
// their own Hooks, allow-list, keys, breakers and metrics: a hook of box A is never asked for box B).
//
// A call (Kubernetes' admission webhooks, and Standard Webhooks for the signature):
// - only to the Hooks of the moment whose matchConditions hold (./conditions.ts);
// - POSTed through the receivers' one sender (api/notices/post.ts): https, every address checked in
//   the lookup the connection uses (loopback and private ranges only where the box's allow-list says,
//   BOXAUTH_NOTICE_ALLOWED_ADDRESSES or PUT /settings/notices), no redirect followed, at most 64 KiB
//   of answer read, within timeoutSeconds;
// - at most maxInFlight at once per Hook in this process, and not while its breaker is open
//   (BREAKER: so many failures in a row open it for a while, then one call probes): both fail at once;
// - signed: the body names the box (its issuer), the Hook and the moment, and the Standard Webhooks
//   headers (webhook-id, webhook-timestamp, webhook-signature) sign it, so a hook checks it came from
//   this box for this Hook and moment, and keeps the ids it saw to spot a replay; and/or a JWT of
//   the box (aud the Hook's URL, 60 seconds, a jti) the hook checks with the box's JWKS.
// What it came to is counted (boxauth_hook_calls_total, boxauth_hook_duration_seconds) and each
// refusal or failure is an audit line. No database connection is held while a hook is asked: the
// Hooks are kept in memory (the change feed drops them when one changes), the allow-list is read
// before the call (at most once a second), and a moment's writes come after the verdict. Connections
// to a hook are kept (keep-alive, as kube-apiserver keeps them to an admission webhook): a TLS
// handshake per call cost more than the call (make bench); each is made through the guarded lookup.
// What every call to a Hook uses alike (its URL, its secret unsealed, its CA) is made once per
// record read; what makes a call this call (its id, timestamp, signature, box token) is made at each.
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import type { Audit } from '../audit.js';
import type { Config } from '../config.js';
import { signJwt, type SigningKey } from '../credentials/jwt.js';
import type { ChangeFeed } from '../db/notify.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { postToReceiver, receiverRulesOf, ReceiverError, type ReceiverRules } from '../notices/post.js';
import { hooks } from '../store/hooks.js';
import type { Stored } from '../store/resources.js';
import type { Hook } from '../types.js';
import { hookSecret, signedHeaders } from '../webhooks/signing.js';
import { matches } from './conditions.js';
import {
  combine,
  readAnswer,
  type CallFailure,
  type CallOutcome,
  type HookPart,
  type HookRequest,
  type Moment,
  type Verdict,
} from './moments.js';

/** What the caller uses of the box's services (api/services.ts). */
export interface Needs {
  config: Pick<Config, 'baseUrl' | 'box' | 'notices'>;
  pool: Pool;
  feed: Pick<ChangeFeed, 'onChange' | 'onReset'>;
  factorKey: Buffer;
  keyring: { readonly active: SigningKey };
  metrics: Pick<Metrics, 'hookCalls' | 'hookDuration'>;
  audit: Pick<Audit, 'record'>;
  log: Logger;
}

/** The defaults of crds/hook.yaml, for a record written through the REST API without them. */
export const HOOK_DEFAULTS = { timeoutSeconds: 2, failurePolicy: 'Fail', maxInFlight: 32 } as const;

/** The circuit breaker of each Hook: `failures` failed calls in a row open it for `openMs`; then one call probes. */
export const BREAKER = { failures: 5, openMs: 30_000 } as const;

/** How long the box's token for a hook lives. */
const BOX_TOKEN_SECONDS = 60;

/** What every call to a Hook uses alike (HookCaller.fixedOf). */
interface Fixed {
  url: string | undefined;
  /** Its signing secret, unsealed: in memory as the factor key it is sealed under is. */
  secret: string | undefined;
  ca?: string;
  timeoutMs: number;
}

interface Breaker {
  failuresInRow: number;
  openUntil: number;
  probing: boolean;
}

/** Where `hook` is called: its url, or its Service's https address in the cluster's DNS. */
export function hookUrl(hook: Pick<Hook, 'url' | 'service'>, box: string): string | undefined {
  if (hook.url !== undefined) return hook.url;
  const service = hook.service;
  if (!service) return undefined;
  const namespace = service.namespace ?? (box.includes('/') ? box.split('/')[0] : undefined);
  if (!namespace) return undefined;
  return `https://${service.name}.${namespace}.svc:${service.port ?? 443}${service.path ?? '/'}`;
}

/** Who the audit line of a moment is about. */
export interface About {
  client?: string;
  user?: string;
}

/** How long the allow-list read from the database stands for every call (PUT /settings/notices holds within it). */
const RULES_MS = 1000;
/** How long a connection to a hook is kept idle. */
const IDLE_MS = 5000;

/** An agent no call will use again: its idle connections closed now, each busy one once its call is over. */
function retire(agent: https.Agent): void {
  agent.keepSocketAlive = () => false;
  for (const idle of Object.values(agent.freeSockets)) for (const socket of idle ?? []) socket.destroy();
}

export class HookCaller {
  private list: Promise<Stored<Hook>[]> | undefined;
  private readonly inFlight = new Map<string, number>();
  private readonly breakers = new Map<string, Breaker>();
  /** Connections kept to each Hook (keep-alive, as the API server keeps them to an admission webhook): retired when a Hook changes. */
  private readonly agents = new Map<string, https.Agent>();
  private rules: { until: number; rules: Promise<ReceiverRules> } | undefined;
  /** By record read: a Hook changed is read anew, so what was made of the old one is dropped with it. */
  private readonly fixed = new WeakMap<Stored<Hook>, Fixed>();
  /** The audit and log lines of failed calls, one a second per hook and result (firstInSecond). */
  private readonly quiet = new Map<string, { until: number; leftOut: number }>();

  constructor(
    private readonly svc: Needs,
    private readonly now = (): number => Date.now(),
  ) {
    svc.feed.onChange('hooks', () => this.forget());
    svc.feed.onReset(() => this.forget());
  }

  /**
   * Drops the Hooks kept in memory: the next moment reads them again, over connections of its own
   * (a Hook changed may name another address or CA). The connections of calls under way are not
   * cut: destroying them failed those calls, and a token request waiting on one was refused 503
   * whenever any Hook of the box was written.
   */
  forget(): void {
    this.list = undefined;
    for (const agent of this.agents.values()) retire(agent);
    this.agents.clear();
  }

  /** The box's rules for its receivers (the allow-list of its settings), read at most once a RULES_MS. */
  private rulesNow(): Promise<ReceiverRules> {
    const now = this.now();
    if (!this.rules || this.rules.until <= now) {
      const rules = receiverRulesOf(this.svc);
      this.rules = { until: now + RULES_MS, rules };
      rules.catch(() => (this.rules = undefined));
    }
    return this.rules.rules;
  }

  private agentOf(hook: Hook): https.Agent {
    let agent = this.agents.get(hook.id);
    if (!agent) {
      const max = hook.maxInFlight ?? HOOK_DEFAULTS.maxInFlight;
      agent = new https.Agent({ keepAlive: true, maxSockets: max, maxFreeSockets: max, timeout: IDLE_MS });
      this.agents.set(hook.id, agent);
    }
    return agent;
  }

  private async enabled(): Promise<Stored<Hook>[]> {
    if (!this.list) {
      const reading = hooks.enabled(this.svc.pool);
      this.list = reading;
      reading.catch(() => {
        if (this.list === reading) this.list = undefined;
      });
    }
    return this.list;
  }

  /** Whether any Hook of the box is asked at `moment` (before building what a call carries). */
  async asksAt(moment: Moment): Promise<boolean> {
    return (await this.enabled()).some((h) => h.resource.moments.includes(moment));
  }

  /**
   * Asks every Hook of `moment` whose conditions hold, at once, and combines their answers
   * (./moments.ts combine). Never throws for a hook: what a hook does is a verdict.
   */
  async ask(moment: Moment, request: HookRequest, about: About = {}): Promise<Verdict> {
    const chosen = (await this.enabled()).filter((h) => h.resource.moments.includes(moment));
    if (!chosen.length) return combine(moment, []);
    const parts = await Promise.all(
      chosen.map(async (stored): Promise<HookPart | undefined> => {
        const hook = stored.resource;
        const failurePolicy = hook.failurePolicy ?? HOOK_DEFAULTS.failurePolicy;
        const matched = matches(hook, moment, request);
        if ('match' in matched && !matched.match) return undefined;
        const outcome: CallOutcome =
          'error' in matched ? { failed: 'condition_error', why: matched.error } : await this.call(stored, moment, request);
        return { hook: hook.id, failurePolicy, outcome };
      }),
    );
    const asked = parts.filter((p): p is HookPart => p !== undefined);
    const verdict = combine(moment, asked);
    for (const part of asked) this.report(part, moment, verdict, about);
    return verdict;
  }

  /** The metric of each call, and the audit line of each refusal or failure. */
  private report({ hook, failurePolicy, outcome }: HookPart, moment: Moment, verdict: Verdict, about: About): void {
    const refused = 'answer' in outcome && !outcome.answer.allowed && moment !== 'passwordImport';
    const result = 'failed' in outcome ? outcome.failed : refused ? 'refused' : 'allowed';
    this.svc.metrics.hookCalls.inc({ hook, moment, result });
    if (result === 'allowed') {
      if (!verdict.allowed || !verdict.dropped.length) return;
      const dropped = verdict.dropped.filter((d) => d.hook === hook);
      const alike = dropped.length ? this.firstInSecond(`${hook}|dropped`) : undefined;
      if (alike !== undefined)
        this.svc.log.warn(
          { hook, moment, claims: dropped.map((d) => d.claim), ...(alike ? { alikeLeftOut: alike } : {}) },
          `claims of hook "${hook}" left out: the box alone states them`,
        );
      return;
    }
    // A refusal is about one person or client: each is kept. A failed call is the hook's: a hook down
    // under load fails every request, so one line a second per hook and result, counting the rest.
    const alike = refused ? 0 : this.firstInSecond(`${hook}|${result}`);
    if (alike === undefined) return;
    const why = 'failed' in outcome ? outcome.why : 'answer' in outcome ? outcome.answer.message : undefined;
    this.svc.audit.record({
      event: 'hook',
      hook,
      moment,
      result,
      outcome: refused || failurePolicy === 'Fail' ? 'refused' : 'went-on',
      ...(why !== undefined ? { reason: why } : {}),
      ...(alike ? { alikeLeftOut: alike } : {}),
      ...about,
    });
  }

  /**
   * Whether a line of `key` may be written now: the first in a second is, with how many alike were
   * left out since the last one written (0: none); undefined, the rest, counted.
   */
  private firstInSecond(key: string): number | undefined {
    const now = this.now();
    const quiet = this.quiet.get(key);
    if (quiet && quiet.until > now) {
      quiet.leftOut++;
      return undefined;
    }
    this.quiet.set(key, { until: now + 1000, leftOut: 0 });
    return quiet?.leftOut ?? 0;
  }

  /** One call, bounded: the breaker, the calls at once, the deadline. */
  private async call(stored: Stored<Hook>, moment: Moment, request: HookRequest): Promise<CallOutcome> {
    const hook = stored.resource;
    const breaker = this.breakerOf(hook.id);
    const now = this.now();
    if (breaker.openUntil > now || breaker.probing)
      return { failed: 'breaker_open', why: `its circuit breaker is open after ${BREAKER.failures} failed calls in a row` };
    const max = hook.maxInFlight ?? HOOK_DEFAULTS.maxInFlight;
    const inFlight = this.inFlight.get(hook.id) ?? 0;
    if (inFlight >= max) return { failed: 'busy', why: `${max} calls to it are under way already (maxInFlight)` };
    // Half-open: the first call after the breaker's time is the one probe.
    if (breaker.openUntil !== 0) breaker.probing = true;
    this.inFlight.set(hook.id, inFlight + 1);
    const started = process.hrtime.bigint();
    try {
      const outcome = await this.post(stored, moment, request);
      const failed = 'failed' in outcome;
      breaker.failuresInRow = failed ? breaker.failuresInRow + 1 : 0;
      breaker.openUntil = failed && breaker.failuresInRow >= BREAKER.failures ? this.now() + BREAKER.openMs : 0;
      return outcome;
    } finally {
      breaker.probing = false;
      this.inFlight.set(hook.id, (this.inFlight.get(hook.id) ?? 1) - 1);
      this.svc.metrics.hookDuration.observe({ hook: hook.id, moment }, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  private breakerOf(hook: string): Breaker {
    let breaker = this.breakers.get(hook);
    if (!breaker) this.breakers.set(hook, (breaker = { failuresInRow: 0, openUntil: 0, probing: false }));
    return breaker;
  }

  /** What every call to `stored` uses alike, made once per record read (its secret unsealed once, not at each call). */
  private fixedOf(stored: Stored<Hook>): Fixed {
    let fixed = this.fixed.get(stored);
    if (!fixed) {
      const hook = stored.resource;
      const ca = hook.caBundle === undefined ? undefined : Buffer.from(hook.caBundle, 'base64').toString('utf8');
      fixed = {
        url: hookUrl(hook, this.svc.config.box),
        secret: hookSecret(this.svc.factorKey, hook.id, stored.secretSealed ?? null),
        ...(ca !== undefined ? { ca } : {}),
        timeoutMs: (hook.timeoutSeconds ?? HOOK_DEFAULTS.timeoutSeconds) * 1000,
      };
      this.fixed.set(stored, fixed);
    }
    return fixed;
  }

  /** The request itself: signed, through the guard, its answer read. */
  private async post(stored: Stored<Hook>, moment: Moment, request: HookRequest): Promise<CallOutcome> {
    const hook = stored.resource;
    const { url, secret, ca, timeoutMs } = this.fixedOf(stored);
    if (!url) return { failed: 'unreachable', why: 'its service names no namespace, and the box runs in none' };
    // Each call its own id, timestamp and signature (a hook refuses an id it saw), and its own box token (jti).
    const id = `hook_${randomUUID()}`;
    const body = JSON.stringify({ id, box: this.svc.config.baseUrl, hook: hook.id, moment, request });
    const nowMs = this.now();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      ...(secret ? signedHeaders(secret, id, body, new Date(nowMs)) : {}),
      ...(hook.boxToken ? { authorization: `Bearer ${this.boxToken(url, nowMs)}` } : {}),
    };
    try {
      // The deadline is the rules' (postToReceiver's one timer): timeoutSeconds.
      const rules = { ...(await this.rulesNow()), timeoutMs };
      const answer = await postToReceiver(url, { headers, body, agent: this.agentOf(hook), ...(ca !== undefined ? { ca } : {}) }, rules);
      if (answer.cut) return { failed: 'garbage', why: 'its answer is longer than 64 KiB' };
      return readAnswer(moment, answer.status, answer.body);
    } catch (err) {
      if (!(err instanceof ReceiverError)) throw err;
      return { failed: failureOf(err.message), why: err.message };
    }
  }

  /**
   * The box's token for one call: its issuer, for the hook's URL, short-lived, once (jti). Signed at
   * each call, not kept for a while: a hook may refuse a jti it saw (docs/guides/hooks.md), and a
   * token kept would be one bearer for many calls, each body then bound by the signature alone.
   */
  private boxToken(url: string, nowMs: number): string {
    const iat = Math.floor(nowMs / 1000);
    const iss = this.svc.config.baseUrl;
    return signJwt(this.svc.keyring.active, { iss, sub: iss, aud: url, iat, exp: iat + BOX_TOKEN_SECONDS, jti: randomUUID() }, 'JWT');
  }
}

/** The result a sender's error is counted as. */
function failureOf(message: string): CallFailure {
  if (/deadline/.test(message)) return 'timeout';
  if (/special-use|box's own|not an address the box allows|must be an https|is the box itself/.test(message)) return 'refused_address';
  return 'unreachable';
}
