// Responses in the format the client asked for: JSON by default, YAML on request.
import type { Request, Response } from './router.js';
import { stringify } from 'yaml';

export function send(req: Request, res: Response, status: number, body: unknown): void {
  const wanted = req.headers.accept ? req.accepts(['application/json', 'application/yaml', 'text/yaml']) : 'application/json';
  if (wanted === 'application/yaml' || wanted === 'text/yaml') {
    res.status(status).type(`${wanted}; charset=utf-8`).send(stringify(body));
  } else {
    res.status(status).json(body);
  }
}
