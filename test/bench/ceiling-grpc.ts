// The gRPC ceiling of `make bench`'s decision scenarios: a bare @grpc/grpc-js
// server for Envoy's ext_authz v3 Check, from the same protos as the box's gRPC
// door (api/grpc/protos) and the same library, doing the least a decision point
// must (ceiling-verify.ts: the ES256 JWT of the request's authorization header,
// verified with jose) and answering OK with the caller in a header. The fair
// bound for the box's gRPC door: the same transport and the same token check,
// nothing else. Run with as many workers as the box, like ceiling-decision.ts.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { projectPath } from '../../api/paths.js';
import { inWorkers, verifierFromEnv } from './ceiling-verify.js';

interface Check {
  attributes?: { request?: { http?: { headers?: Record<string, string> } } };
}

type Service = { envoy: { service: { auth: { v3: { Authorization: grpc.ServiceClientConstructor } } } } };

async function serve(): Promise<void> {
  const verify = await verifierFromEnv();
  const definition = protoLoader.loadSync('envoy/service/auth/v3/external_auth.proto', {
    includeDirs: [projectPath('api', 'grpc', 'protos')],
    keepCase: true,
    enums: Number,
    defaults: false,
    oneofs: true,
  });
  const service = (grpc.loadPackageDefinition(definition) as unknown as Service).envoy.service.auth.v3.Authorization.service;
  const server = new grpc.Server();
  server.addService(service, {
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
