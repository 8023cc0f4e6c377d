// App resources → app records: the apps of the cluster a box guards (crds/app.yaml).
// AccessPolicies that name an App (spec.app) decide about its requests; the
// gateway in front of the app asks the box (api/decision/). Validation is the
// REST API's (the CRD's schema), so an App is the same whichever way it comes.
import { ApiError, type App, apps, type AppSpec, boxAudienceClash, checkClaimsCompile, ConstraintViolation } from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { APPS } from '../kube.js';
import { AppReason } from '../reasons.js';
import { baseUrlOf } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordController, type Desired } from './records.js';

export type AppResource = Resource<AppSpec>;

/** A claim that cannot be (api/policy/claims.ts) is the author's to fix: nothing is written. */
function checkClaims(record: App): void {
  try {
    checkClaimsCompile(record);
  } catch (err) {
    if (err instanceof ApiError) throw new Problem(AppReason.InvalidClaims, err.message, { cause: err });
    throw err;
  }
}

export class AppController extends RecordController<AppSpec, 'App'> {
  constructor(informer: ObjectCache<AppResource>, deps: ControllerDeps, boxes: BoxController) {
    super('app', APPS, informer, deps, boxes, apps);
  }

  /** An App's audience is its own: not the box's (here), nor another App's (the database refuses the write: problemOf). */
  protected desired(obj: AppResource, box: BoxResource): Promise<Desired<App>> {
    const record = this.baseRecord(obj);
    const clash = boxAudienceClash(record, baseUrlOf(box));
    if (clash) throw new Problem(AppReason.AudienceTaken, `audience: ${clash}`);
    checkClaims(record);
    return Promise.resolve({ record });
  }

  protected override problemOf(err: unknown): Problem | undefined {
    if (err instanceof ConstraintViolation && err.field === 'audience')
      return new Problem(AppReason.AudienceTaken, err.message, { cause: err });
    return undefined;
  }
}
