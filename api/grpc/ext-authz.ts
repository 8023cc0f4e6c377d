// The decision point's gRPC door: Envoy's external authorization service
// (envoy.service.auth.v3.Authorization/Check), as Envoy's ext_authz filter, Istio's
// CUSTOM action (envoyExtAuthzGrpc) and Envoy Gateway's SecurityPolicy extAuth.grpc
// call it, on its own port (BOXAUTH_GRPC_PORT). Its protocol is Envoy's own protos
// (./protos, see the README there); ./check.ts reads a CheckRequest into the one
// decision (api/decision/engine.ts) and writes it back.
//
// A CheckResponse always answers a decided request, allow or refuse: a gRPC error
// is what a gateway takes as "the decision point failed", and the docs tell it to
// fail closed then (docs/guides/guard-your-apps.md). With TLS (BOXAUTH_TLS_*) the
// port speaks TLS with the API's certificate, re-read when the files change.
import * as grpc from '@grpc/grpc-js';
import path from 'node:path';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/google/protobuf/descriptor.json' with { type: 'json' };
import type { Config } from '../config.js';
import { decide, type DecisionServices } from '../decision/engine.js';
import { errorMessage } from '../errors.js';
import { portUnavailable } from '../listen.js';
import type { Decisions } from '../decision/record.js';
import { projectPath } from '../paths.js';
import { callSpan } from '../tracing.js';
import { checkResponseOf, gateRequestOf, malformedResponse, unansweredResponse, type CheckRequest, type CheckResponse } from './check.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  decisions: Decisions;
}

const PROTO = 'envoy/service/auth/v3/external_auth.proto';
// Envoy's protos annotate their fields with options that extend descriptor.proto's messages.
protobuf.common(
  'descriptor',
  (descriptor as { nested: { google: { nested: { protobuf: { nested: protobuf.INamespace['nested'] } } } } }).nested.google.nested.protobuf
    .nested!,
);
/** A CheckRequest is headers, a path and, with with_request_body, at most max_request_bytes of the body (BOXAUTH_GATE_BODY_BYTES, at most 512 KiB, is the most the gate reads); far more than that is not Envoy. */
const MAX_MESSAGE_BYTES = 2 << 20;
const TLS_RELOAD_MS = 1000;

export type ExtAuthzServices = DecisionServices & Pick<Needs, 'config' | 'decisions'>;

export interface ExtAuthzServer {
  port: number;
  stop(graceMs: number): Promise<void>;
}

/**
 * Authorization/Check with Envoy's messages as protobufjs decodes them: the handler reads the
 * decoded CheckRequest as it is (fields by their proto names; unset strings are ''), and a
 * plain CheckResponse object is encoded as it is. No conversion to and from plain objects on
 * every call, which is what a generated-code-less loader would otherwise add.
 */
export function authorizationService(): grpc.ServiceDefinition<grpc.UntypedServiceImplementation> {
  const dir = projectPath('api', 'grpc', 'protos');
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(dir, target);
  root.loadSync(PROTO, { keepCase: true });
  const request = root.lookupType('envoy.service.auth.v3.CheckRequest');
  const response = root.lookupType('envoy.service.auth.v3.CheckResponse');
  return {
    Check: {
      path: '/envoy.service.auth.v3.Authorization/Check',
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: object) => Buffer.from(request.encode(m).finish()),
      requestDeserialize: (b: Buffer) => request.decode(b),
      responseSerialize: (m: object) => Buffer.from(response.encode(m).finish()),
      responseDeserialize: (b: Buffer) => response.decode(b),
      originalName: 'check',
    },
  };
}

/**
 * Authorization/Check. decide() turns its own failures into a refusal; whatever else fails on
 * the way to the answer (reading the request, writing the response, recording the decision)
 * is logged and answered as a refusal (503) for that check alone: an error here never ends the
 * process, and the gateway fails closed on it.
 */
const CHECK = 'envoy.service.auth.v3.Authorization/Check';
const CHECK_ATTRIBUTES = { 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.auth.v3.Authorization', 'rpc.method': 'Check' };

export function checkHandler(
  svc: ExtAuthzServices,
): (call: Pick<grpc.ServerUnaryCall<CheckRequest, CheckResponse>, 'request'>, callback: grpc.sendUnaryData<CheckResponse>) => void {
  return (call, callback) => {
    let answered = false;
    const answer = (response: CheckResponse): void => {
      answered = true;
      callback(null, response);
    };
    const fail = (err: unknown): void => {
      svc.log.error({ err }, 'a gRPC check could not be answered; it is refused');
      if (!answered) answer(unansweredResponse());
    };
    const started = process.hrtime.bigint();
    new Promise<CheckResponse>((resolve) => {
      const gate = gateRequestOf(call.request, svc.config.gateBodyBytes);
      // The check's span is a child of the app's request: its traceparent is among the headers Envoy sends.
      resolve(
        callSpan(CHECK, 'refused' in gate ? {} : gate.headers, CHECK_ATTRIBUTES, async () => {
          if ('refused' in gate) return malformedResponse(gate.refused);
          const d = await decide(svc, gate);
          svc.decisions.record(d, Number(process.hrtime.bigint() - started) / 1e9);
          return checkResponseOf(svc.config.box, d, (gate.headers.accept ?? '').includes('text/html'), Object.keys(gate.headers));
        }),
      );
    })
      .then(answer)
      .catch(fail);
  };
}

function credentials(config: Pick<Config, 'tls'>): grpc.ServerCredentials {
  if (!config.tls) return grpc.ServerCredentials.createInsecure();
  const identity = new grpc.experimental.FileWatcherCertificateProvider({
    certificateFile: config.tls.certFile,
    privateKeyFile: config.tls.keyFile,
    refreshIntervalMs: TLS_RELOAD_MS,
  });
  return grpc.experimental.createCertificateProviderServerCredentials(identity, null, false);
}

export async function serveExtAuthz(svc: ExtAuthzServices): Promise<ExtAuthzServer> {
  const { config } = svc;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(authorizationService(), { Check: checkHandler(svc) });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.grpcPort}`,
      credentials(config),
      (err, bound) => (err ? reject(err) : resolve(bound)),
    );
  }).catch((err: unknown) => {
    // grpc-js names the socket's error only in its message.
    const code = /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(errorMessage(err))?.[1];
    throw portUnavailable(code, config.grpcPort, config.host, 'BOXAUTH_GRPC_PORT') ?? err;
  });
  return {
    port,
    stop: (graceMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
