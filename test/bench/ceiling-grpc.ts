// The gRPC ceiling of `make bench`'s decision scenarios: a bare @grpc/grpc-js
// server for Envoy's ext_authz v3 Check, with the box's own service definition
// (api/grpc/ext-authz.ts: the same protos, library and message handling), doing the least a decision point
// must (ceiling-verify.ts: the ES256 JWT of the request's authorization header,
// verified with jose) and answering OK with the caller in a header. The fair
// bound for the box's gRPC door: the same transport and the same token check,
// nothing else. Run with as many workers as the box, like ceiling-decision.ts.
import * as grpc from '@grpc/grpc-js';
import { authorizationService } from '../../api/grpc/ext-authz.js';
import { inWorkers, verifierFromEnv } from './ceiling-verify.js';

interface Check {
  attributes?: { request?: { http?: { headers?: Record<string, string> } } };
}

async function serve(): Promise<void> {
  const verify = await verifierFromEnv();
  const server = new grpc.Server();
  server.addService(authorizationService(), {
    Check: (call: grpc.ServerUnaryCall<Check, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      verify(call.request.attributes?.request?.http?.headers?.authorization).then(
        (client) =>
          callback(null, { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'X-Auth-Request-Client', value: client } }] } }),
        () => callback(null, { status: { code: 16 }, denied_response: { status: { code: 401 } } }),
      );
    },
  });
  await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${process.env.CEILING_PORT}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );
}

void inWorkers(serve);
