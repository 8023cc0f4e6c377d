// Dynamic client registration (RFC 7591) at POST /auth/register, for the agents that still use it
// (the MCP authorization specification's 2025-11-25 revision; later ones prefer a Client ID
// Metadata Document, ./agents.ts). Off unless BOXAUTH_DYNAMIC_REGISTRATION is on. What it makes
// is an agent's client as a document's is: public (token_endpoint_auth_method none, PKCE
// required), the code and refresh grants, its redirect URIs matched to the letter; marked
// `registration.kind: dynamic` with the address it came from. It is admitted by the box's
// AccessPolicies when registered (`uri: /auth/register`) and again at each authorization request,
// counted per address per hour in the database, and removed by the upkeep when no person used it
// (api/jobs/purge.ts).
import net from 'node:net';
import { ApiError } from '../errors.js';
import { newOpaqueToken } from '../credentials/tokens.js';
import { OAuthError } from '../credentials/errors.js';
import { registerClientFrom } from '../store/clients.js';
import type { Client } from '../types.js';
import type { OAuthRequest } from './client-auth.js';
import { agentRefusal, sharedHost, type AgentServices } from './agents.js';
import { readClientMetadata, registeredRedirectUris } from './client-metadata.js';

/** What registration uses. */
export type RegistrationServices = AgentServices;

/** The prefix of the client ids the box gives: never `https://` (draft §7.1), so never taken for a document's URL. */
const DYNAMIC_ID_PREFIX = 'dyn-';

/**
 * The network a registration is counted against: an IPv4 address itself, an IPv6 address its /64.
 * RFC 6177 and RFC 7421 have a site, even a home, given at least a /64 and every host pick its own
 * interface identifier within it: counted per IPv6 address, one machine registers without limit by
 * changing the low 64 bits of its address at each registration.
 */
export function registrationNetwork(address: string): string {
  if (!net.isIPv6(address)) return address;
  const groups = expandIpv6(address).slice(0, 4);
  return `${groups.map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, four hex digits each (an IPv4 tail as two groups). */
function expandIpv6(address: string): string[] {
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  let text = address;
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${address.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const middle = rest === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => g.toLowerCase().padStart(4, '0'));
}

/** POST /auth/register: RFC 7591 §3.1's request, §3.2.1's answer (201), §3.2.2's errors. */
export async function registerClient(svc: RegistrationServices, request: OAuthRequest, body: unknown): Promise<Record<string, unknown>> {
  if (!svc.config.dynamicRegistration.enabled)
    throw new ApiError(404, 'not_found', 'dynamic client registration is not served by this box: use a Client ID Metadata Document');
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new OAuthError('invalid_client_metadata', 'send the client metadata as a JSON object (RFC 7591 §3.1)');
  const meta = body as Record<string, unknown>;
  // RFC 7591 §2.3: a software statement is a signed JWT the box could only take from a trusted issuer; none is configured.
  if (meta.software_statement !== undefined)
    throw new OAuthError('invalid_client_metadata', 'software_statement is not taken by this box: send the metadata itself');
  const read = readClientMetadata(meta, 'registration');
  if ('error' in read) throw new OAuthError(read.error, read.description);
  const client: Client = {
    ...read.client,
    id: `${DYNAMIC_ID_PREFIX}${newOpaqueToken().slice(0, 32)}`,
    registration: {
      kind: 'dynamic',
      ...(read.clientName ? { client_name: read.clientName } : {}),
      ...(read.logoUri ? { logo_uri: read.logoUri } : {}),
      address: registrationNetwork(request.address),
    },
  };
  const refusal = await agentRefusal(svc, client, { scope: read.client.scope?.join(' '), resource: [], uri: '/auth/register' });
  if (refusal) {
    svc.log.info({ event: 'registration_refused', address: request.address, reason: refusal }, 'dynamic registration refused');
    throw new OAuthError(
      'invalid_client_metadata',
      `no AccessPolicy of this box admits a client coming back to ${sharedHost(registeredRedirectUris(client.auth?.authorization_code)) || 'these redirect URIs'}`,
    );
  }
  const stored = await registerClientFrom(
    svc.pool,
    client,
    registrationNetwork(request.address),
    svc.config.dynamicRegistration.perAddressPerHour,
  );
  if (!stored)
    throw new ApiError(
      429,
      'too_many_requests',
      `too many registrations from this address: at most ${svc.config.dynamicRegistration.perAddressPerHour} an hour`,
      {
        'Retry-After': '3600',
      },
    );
  svc.log.info({ event: 'client_registered', client: client.id, address: request.address }, 'client registered dynamically');
  return answerOf(stored.resource);
}

/** RFC 7591 §3.2.1: "the client identifier and the client metadata values registered", as the box keeps them. */
function answerOf(client: Client): Record<string, unknown> {
  const created = client.meta?.createdAt ? Math.floor(Date.parse(client.meta.createdAt) / 1000) : Math.floor(Date.now() / 1000);
  return {
    client_id: client.id,
    client_id_issued_at: created,
    redirect_uris: registeredRedirectUris(client.auth?.authorization_code),
    token_endpoint_auth_method: 'none',
    grant_types: client.grant_types,
    response_types: ['code'],
    ...(client.registration?.client_name ? { client_name: client.registration.client_name } : {}),
    ...(client.registration?.logo_uri ? { logo_uri: client.registration.logo_uri } : {}),
    ...(client.scope ? { scope: client.scope.join(' ') } : {}),
  };
}
