// OpenID AuthZEN Authorization API 1.0, one policy decision point per app: the
// app's issuer is <base url>/apps/<app>, its metadata at
// /.well-known/authzen-configuration/apps/<app> (RFC 8615: the well-known string
// before the issuer's path), its evaluations at /apps/<app>/access/v1/evaluation(s).
// The caller (the PEP) is a client of the box with a token, allowed by a policy of
// the box's own API like any other caller (deny by default); the decision is the
// app's policies' (api/decision/engine.ts), as for the gateways' doors.
//
// Mapping: subject {type: user, id: <user id>} | {type: client, id} | {type: token,
// id: <an access token for the app>}; action.name is the request object's
// request-method; resource.properties.path (default /<type>/<id>) and .host its
// path and host; resource and context are passed to the policies as sent. A
// decision is always 200 with {decision, context: {id, reason}}; errors of the
// whole request are 4xx (§12.1.8), and X-Request-ID comes back (§12.1.9).
import type { Request, RequestHandler, Response, Router } from 'express';
import { ApiError, badRequest } from '../../errors.js';
import { hostOf } from '../../decision/apps.js';
import { decide, type Credential, type Decision } from '../../decision/engine.js';
import type { Services } from '../../services.js';
import type { App } from '../../types.js';
import { resourceBody } from '../body.js';
import { strictRouter } from '../router.js';

const MAX_EVALUATIONS = 100;
const SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
type Semantic = (typeof SEMANTICS)[number];

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Evaluation {
  subject: { type: string; id: string; properties?: Json };
  action: { name: string; properties?: Json };
  resource: { type: string; id: string; properties?: Json };
  context?: Json;
}

/** One evaluation (its defaults applied), checked: a 400 naming what is missing or malformed. */
function evaluation(raw: Json, at: string): Evaluation {
  const entity = (name: 'subject' | 'action' | 'resource', keys: string[]): Json => {
    const value = raw[name];
    if (!isObject(value)) throw badRequest(`${at}${name} is required (an object)`);
    for (const key of keys)
      if (typeof value[key] !== 'string' || value[key] === '') throw badRequest(`${at}${name}.${key} is required (a string)`);
    if (value.properties !== undefined && !isObject(value.properties)) throw badRequest(`${at}${name}.properties must be an object`);
    return value;
  };
  const context = raw.context;
  if (context !== undefined && !isObject(context)) throw badRequest(`${at}context must be an object`);
  return {
    subject: entity('subject', ['type', 'id']) as Evaluation['subject'],
    action: entity('action', ['name']) as Evaluation['action'],
    resource: entity('resource', ['type', 'id']) as Evaluation['resource'],
    ...(context ? { context } : {}),
  };
}

function credentialOf(subject: Evaluation['subject']): Credential {
  switch (subject.type) {
    case 'user':
      return { user: subject.id };
    case 'client':
      return { client: subject.id };
    case 'token':
      return { bearer: subject.id };
    default:
      throw badRequest(`subject.type must be user, client or token (got "${subject.type}")`);
  }
}

async function evaluate(
  svc: Pick<Services, 'apps' | 'config' | 'decisions' | 'keyring' | 'log' | 'policies' | 'sessions' | 'users'>,
  app: App,
  e: Evaluation,
): Promise<Decision> {
  const props = e.resource.properties ?? {};
  const path = typeof props.path === 'string' ? props.path : `/${encodeURIComponent(e.resource.type)}/${encodeURIComponent(e.resource.id)}`;
  const started = process.hrtime.bigint();
  const d = await decide(svc, {
    door: 'authzen',
    app: app.id,
    method: e.action.name,
    host: typeof props.host === 'string' ? props.host : hostOf(app.urls[0]!),
    target: path,
    headers: {},
    credential: credentialOf(e.subject),
    resource: e.resource,
    ...(e.context ? { context: e.context } : {}),
  });
  svc.decisions.record(d, Number(process.hrtime.bigint() - started) / 1e9);
  return d;
}

const response = (d: Decision): Json => ({ decision: d.allowed, context: { id: d.id, ...(d.allowed ? {} : { reason: d.description }) } });

export function authzenRouter(
  svc: Pick<Services, 'apps' | 'config' | 'decisions' | 'keyring' | 'log' | 'policies' | 'sessions' | 'users'>,
  authenticate: RequestHandler,
  guard: RequestHandler,
): Router {
  const router = strictRouter();
  const base = (app: string): string => `${svc.config.baseUrl}/apps/${app}`;

  async function appOf(req: Request): Promise<App> {
    const id = req.params.app as string;
    const app = /^[a-z0-9][-a-z0-9]*$/.test(id) ? await svc.apps.byId(id) : undefined;
    if (!app) throw new ApiError(404, 'not_found', `no app "${id}"`);
    return app;
  }

  const echoRequestId = (req: Request, res: Response): void => {
    const id = req.headers['x-request-id'];
    if (typeof id === 'string') res.set('X-Request-ID', id);
  };

  // §11.2: public, cacheable metadata.
  router.get('/.well-known/authzen-configuration/apps/:app', async (req, res) => {
    const app = await appOf(req);
    res.set('Cache-Control', 'public, max-age=60').json({
      issuer: base(app.id),
      policy_decision_point: base(app.id),
      access_evaluation_endpoint: `${base(app.id)}/access/v1/evaluation`,
      access_evaluations_endpoint: `${base(app.id)}/access/v1/evaluations`,
    });
  });

  router.post('/apps/:app/access/v1/evaluation', authenticate, guard, ...resourceBody, async (req, res) => {
    echoRequestId(req, res);
    const app = await appOf(req);
    if (!isObject(req.body)) throw badRequest('the body must be an Access Evaluation Request (a JSON object)');
    res.json(response(await evaluate(svc, app, evaluation(req.body, ''))));
  });

  router.post('/apps/:app/access/v1/evaluations', authenticate, guard, ...resourceBody, async (req, res) => {
    echoRequestId(req, res);
    const app = await appOf(req);
    const body = req.body as unknown;
    if (!isObject(body)) throw badRequest('the body must be an Access Evaluations Request (a JSON object)');
    const { evaluations, options, ...defaults } = body;
    // §7.1: without `evaluations`, the request is a single evaluation in the batch's shape.
    if (evaluations === undefined) return void res.json(response(await evaluate(svc, app, evaluation(defaults, ''))));
    if (!Array.isArray(evaluations) || evaluations.some((e) => !isObject(e))) throw badRequest('evaluations must be an array of objects');
    if (evaluations.length > MAX_EVALUATIONS) throw badRequest(`at most ${MAX_EVALUATIONS} evaluations in one request`);
    const semantic = (isObject(options) ? options.evaluations_semantic : undefined) ?? 'execute_all';
    if (!SEMANTICS.includes(semantic as Semantic)) throw badRequest(`options.evaluations_semantic must be one of ${SEMANTICS.join(', ')}`);
    // Every evaluation is checked before any is decided: a malformed one fails the whole request (400).
    const checked = (evaluations as Json[]).map((e, i) => evaluation({ ...defaults, ...e }, `evaluations[${i}].`));
    const results: Json[] = [];
    for (const e of checked) {
      const d = await evaluate(svc, app, e);
      results.push(response(d));
      if ((semantic === 'deny_on_first_deny' && !d.allowed) || (semantic === 'permit_on_first_permit' && d.allowed)) break;
    }
    res.json({ evaluations: results });
  });

  return router;
}
