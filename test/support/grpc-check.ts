// Envoy's Authorization/Check over gRPC, with the box's own service definition: what an Envoy in
// front of an app asks the box's gRPC door (api/grpc/ext-authz.ts).
import * as grpc from '@grpc/grpc-js';
import { authorizationService } from '../../api/grpc/ext-authz.js';
import type { CheckRequest, CheckResponse } from '../../api/grpc/check.js';

export function grpcCheck(port: string, request: CheckRequest): Promise<CheckResponse> {
  const check = authorizationService().Check!;
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise<CheckResponse>((resolve, reject) => {
    client.makeUnaryRequest(
      check.path,
      check.requestSerialize as (m: CheckRequest) => Buffer,
      check.responseDeserialize as (b: Buffer) => CheckResponse,
      request,
      (err, value) => (err ? reject(err) : resolve(value!)),
    );
  }).finally(() => client.close());
}
