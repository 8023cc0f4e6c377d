// Kubernetes Events (core/v1, what `kubectl describe` and `kubectl get events`
// show). A repeat of the same reason and message for the same object within ten
// minutes bumps the count of the Event already written instead of adding one,
// as client-go's recorder does, so a failing resource retried with backoff does
// not flood the namespace.
import { randomBytes } from 'node:crypto';
import { errorMessage, type Logger } from '../api/public.js';
import { kubeTime, systemClock, type Clock } from './clock.js';
import { EVENTS, isNotFound, type KObject, type Kube } from './kube.js';

const REPEAT_WINDOW_MS = 10 * 60_000;

interface Sent {
  name: string;
  count: number;
  at: number;
}

export class EventRecorder {
  private readonly sent = new Map<string, Sent>();

  constructor(
    private readonly kube: Kube,
    private readonly instance: string,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
  ) {}

  warning(obj: KObject, reason: string, message: string): void {
    this.record(obj, 'Warning', reason, message);
  }

  normal(obj: KObject, reason: string, message: string): void {
    this.record(obj, 'Normal', reason, message);
  }

  private record(obj: KObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.write(obj, type, reason, message).catch((err: unknown) =>
      this.log.warn(
        { err: errorMessage(err), reason, object: `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}` },
        'could not record an Event',
      ),
    );
  }

  private async write(obj: KObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const namespace = obj.metadata.namespace ?? 'default';
    const key = `${obj.metadata.uid}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = new Date(this.clock.now());
    const stamp = kubeTime(now);
    const previous = this.sent.get(key);
    if (previous && now.getTime() - previous.at < REPEAT_WINDOW_MS) {
      previous.count += 1;
      previous.at = now.getTime();
      try {
        await this.kube.patch(EVENTS, namespace, previous.name, { count: previous.count, lastTimestamp: stamp });
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    if (this.sent.size > 5000) this.sent.clear();
    const name = `${obj.metadata.name}.${randomBytes(8).toString('hex')}`;
    await this.kube.create(EVENTS, namespace, {
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
      type,
      reason,
      message: message.slice(0, 1024),
      count: 1,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      source: { component: 'boxauth-operator' },
      reportingComponent: 'boxauth.io/operator',
      reportingInstance: this.instance,
    });
    this.sent.set(key, { name, count: 1, at: now.getTime() });
  }
}
