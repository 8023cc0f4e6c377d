// A request's DPoP proof checked in full: the proof itself (./proof.ts), the server's
// nonce when the box requires one (./nonce.ts), and the replay cache every process of
// the box shares (api/store/dpop-proofs.ts). The one database round trip of a check is
// the replay cache's; it is taken last, by proofs that passed everything else, so a
// forged or stale proof costs the database nothing.
import { createHash } from 'node:crypto';
import type { ProofLedger } from '../../store/dpop-proofs.js';
import { OAuthError, type EndpointErrorCode, type ResourceErrorCode } from '../errors.js';
import type { DpopNonces } from './nonce.js';
import { PROOF_MAX_AGE_SECONDS, singleProof, verifyProof, type ProofRequest, type VerifiedProof } from './proof.js';

/** RFC 9449's error codes: at the token endpoint (§5) and in a resource's DPoP challenge (§7.1); statuses in ../errors.ts. */
export type DpopErrorCode = Extract<ResourceErrorCode & EndpointErrorCode, 'invalid_dpop_proof' | 'use_dpop_nonce'>;

export interface DpopRefusal {
  error: DpopErrorCode;
  description: string;
  /** With use_dpop_nonce: the nonce to use (sent as DPoP-Nonce). */
  nonce?: string;
}

export const isDpopRefusal = (v: VerifiedProof | DpopRefusal): v is DpopRefusal => 'error' in v;

export class Dpop {
  constructor(
    private readonly ledger: Pick<ProofLedger, 'firstSeen'>,
    /** Set when the box requires nonces (BOXAUTH_DPOP_NONCE=required). */
    readonly nonces: DpopNonces | undefined,
  ) {}

  /** The nonce an answer to a request with a proof carries (DPoP-Nonce), when the box requires nonces. */
  freshNonce(): string | undefined {
    return this.nonces?.current();
  }

  /**
   * The proof of a request (its DPoP headers), checked against `request`; or why it is
   * refused. `boundTo`: the key the access token presented with it is bound to.
   */
  async check(proofs: readonly string[] | undefined, request: ProofRequest, boundTo?: string): Promise<VerifiedProof | DpopRefusal> {
    const invalid = (description: string): DpopRefusal => ({ error: 'invalid_dpop_proof', description });
    const proof = singleProof(proofs);
    if (proof === undefined) return invalid('a DPoP proof is required (the DPoP header)');
    if (typeof proof !== 'string') return invalid(proof.problem);
    const verified = verifyProof(proof, request);
    if ('problem' in verified) return invalid(verified.problem);
    // "If the server provided a nonce value to the client, the nonce claim matches the
    // server-provided nonce value" (§4.3 step 10); a missing or old one is answered with a
    // fresh nonce to retry with (§8: "use_dpop_nonce").
    if (this.nonces && (verified.nonce === undefined || !this.nonces.accepts(verified.nonce))) {
      return {
        error: 'use_dpop_nonce',
        description:
          verified.nonce === undefined ? 'the DPoP proof must carry the nonce of DPoP-Nonce' : 'the nonce of the DPoP proof has expired',
        nonce: this.nonces.current(),
      };
    }
    // "confirm that the public key to which the access token is bound matches the public key
    // from the DPoP proof" (§4.3 step 12).
    if (boundTo !== undefined && verified.jkt !== boundTo) {
      return invalid('the DPoP proof is signed with another key than the one the access token is bound to');
    }
    // Replay (§11.1): a jti is accepted once per key in the whole box, for as long as its
    // proof could be accepted at all.
    const digest = createHash('sha256').update(`${verified.jkt}.${verified.jti}`).digest();
    const expiresAt = new Date((verified.iat + PROOF_MAX_AGE_SECONDS + 1) * 1000);
    if (!(await this.ledger.firstSeen({ digest, expiresAt }))) return invalid('the DPoP proof was already used (its jti was seen)');
    return verified;
  }
}

/**
 * The key of the DPoP proof a request to one of the box's OAuth endpoints sent (the token
 * endpoint, the PAR endpoint), once checked; undefined without a proof. A refused proof
 * is the endpoint's error (RFC 9449 §5: invalid_dpop_proof, or use_dpop_nonce with the nonce).
 */
export async function keyOfProof(
  dpop: Dpop,
  request: { dpop?: readonly string[] | undefined; method?: string; url?: string },
): Promise<string | undefined> {
  if (!request.dpop?.length) return undefined;
  const proof = await dpop.check(request.dpop, { method: request.method ?? 'POST', url: request.url ?? '', now: Date.now() });
  if (isDpopRefusal(proof)) throw new OAuthError(proof.error, proof.description, proof.nonce ? { dpopNonce: proof.nonce } : {});
  return proof.jkt;
}
