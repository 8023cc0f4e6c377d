// What bench-peers knows of a decision point under test (make bench-peers'
// decision table): which door it serves, the one question it is asked, what it
// checks to answer it (so a reader of the table knows what a figure pays for).
import type { BenchRequest } from '../load.js';

interface DeciderBase {
  key: string;
  title: string;
  /** The process whose tree is metered (its children too). */
  pid: number;
  /** What it checks for each decision. */
  checks: string;
  stop(): Promise<void>;
}

/** Over HTTP (wrk): an answer of 2xx allows. */
export interface HttpDecider extends DeciderBase {
  door: 'http';
  baseUrl: string;
  request: BenchRequest;
}

/** Over gRPC, Envoy's ext_authz (test/extauthz): status OK allows. */
export interface GrpcDecider extends DeciderBase {
  door: 'grpc';
  addr: string;
  /** A CheckRequest, protojson. */
  request: unknown;
}

export type Decider = HttpDecider | GrpcDecider;

/** The box's trust, as a peer is configured with it: where its keys are, who issues, for whom. */
export interface BoxTrust {
  issuer: string;
  jwksUri: string;
  audience: string;
}
