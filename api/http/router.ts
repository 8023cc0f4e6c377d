// Every router of the box matches paths case-sensitively and strictly: /Client/x
// is served, /client/x, /Client/x/ and //Client/x are not (404). A policy sees the
// path that was routed, so no second spelling of a path may reach the same handler.
import { Router } from 'express';

export const strictRouter = (): Router => Router({ caseSensitive: true, strict: true });
