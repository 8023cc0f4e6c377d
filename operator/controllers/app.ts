// App resources → app records: the apps of the cluster a box guards (crds/app.yaml).
// AccessPolicies that name an App (spec.app) decide about its requests; the
// gateway in front of the app asks the box (api/decision/). Validation is the
// REST API's (the CRD's schema), so an App is the same whichever way it comes.
import type { AppSpec } from '../../api/schema/crd-types.js';
import { apps } from '../../api/store/apps.js';
import type { App } from '../../api/types.js';
import type { ControllerDeps, Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { APPS } from '../kube.js';
import type { BoxController } from './box.js';
import { RecordController, type Desired } from './records.js';

export type AppResource = Resource<AppSpec>;

export class AppController extends RecordController<AppSpec, 'App'> {
  constructor(informer: ObjectCache<AppResource>, deps: ControllerDeps, boxes: BoxController) {
    super('app', APPS, informer, deps, boxes, apps);
  }

  protected desired(obj: AppResource): Promise<Desired<App>> {
    return Promise.resolve({ record: this.baseRecord(obj) });
  }
}
