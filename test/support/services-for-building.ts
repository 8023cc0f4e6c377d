// Services for building what a box builds at start (its routers, its kinds of notice) in a unit
// test, with no database and no request: its settings are real (the defaults of api/config.ts),
// and every other service answers anything, since nothing asks them while things are built.
import { loadConfig, type Config } from '../../api/config.js';
import type { Services } from '../../api/services.js';

const answersAnything = (): unknown =>
  new Proxy(() => answersAnything(), {
    get: (_target, key) => (key === 'then' || typeof key === 'symbol' ? undefined : answersAnything()),
  });

export function servicesForBuilding(config: Config = loadConfig({})): Services {
  return new Proxy({}, { get: (_target, key) => (key === 'config' ? config : answersAnything()) }) as Services;
}
