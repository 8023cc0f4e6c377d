// The HTTP ceiling of `make bench`'s decision scenarios: a bare node:http server
// doing the least a decision point must (ceiling-verify.ts: the ES256 JWT of the
// Authorization header, verified with jose) and answering 200 with the caller in
// a header — no app, no policy, no session, no framework, no record. Run with as
// many workers as the box: `node dist/test/bench/ceiling-decision.js` with
// CEILING_PORT, CEILING_WORKERS and ceiling-verify.ts's settings.
import http from 'node:http';
import { inWorkers, verifierFromEnv } from './ceiling-verify.js';

async function serve(): Promise<void> {
  const verify = await verifierFromEnv();
  http
    .createServer((req, res) => {
      verify(req.headers.authorization).then(
        (client) => res.writeHead(200, { 'X-Auth-Request-Client': client }).end(),
        () => res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end(),
      );
    })
    .listen(Number(process.env.CEILING_PORT), '127.0.0.1');
}

void inWorkers(serve);
