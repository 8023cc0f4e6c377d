// The CLI's side of the box API: one client_credentials token per command,
// closed again (DELETE /Session) when the command is done.
import { errorMessage } from '../errors.js';
import type { Target } from './boxes.js';

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** An error answer of the API: what the box said, for a command that acts on it (a record not there yet). */
export class BoxRefusal extends CliError {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(describeFailure(status, body));
  }
}

/** One line a person can act on, from an error answer of the API. */
export function describeFailure(status: number, body: unknown): string {
  const b = (body ?? {}) as { errors?: Record<string, string[]>; error?: string; error_description?: string };
  if (status === 422 && b.errors) {
    return Object.entries(b.errors)
      .map(([field, messages]) => `${field}: ${messages.join(', ')}`)
      .join('; ');
  }
  if (b.error) return `${b.error_description ?? b.error} (${status} ${b.error})`;
  return `the box answered ${status}`;
}

export class BoxApi {
  private token: string | undefined;

  constructor(readonly target: Target) {}

  private async fetch(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(`${this.target.url}${path}`, init);
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach the box at ${this.target.url}: ${cause?.code ?? cause?.message ?? errorMessage(err)}`);
    }
  }

  private async signIn(): Promise<string> {
    if (this.token) return this.token;
    const res = await this.fetch('/auth/token', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from(`${encodeURIComponent(this.target.client_id)}:${encodeURIComponent(this.target.client_secret)}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    const body = (await res.json().catch(() => undefined)) as { access_token?: string } | undefined;
    if (!res.ok || !body?.access_token) {
      throw new CliError(`cannot sign in to ${this.target.url} as client "${this.target.client_id}": ${describeFailure(res.status, body)}`);
    }
    this.token = body.access_token;
    return this.token;
  }

  private send(token: string, method: string, path: string, body: unknown): Promise<Response> {
    return this.fetch(path, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: 'application/json',
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  /** Calls the API; a non-2xx answer becomes a CliError. */
  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T; headers: Headers }> {
    let res = await this.send(await this.signIn(), method, path, body);
    // A token that expired meanwhile (a long `boxauth events --follow`): sign in again, once.
    if (res.status === 401) {
      this.token = undefined;
      res = await this.send(await this.signIn(), method, path, body);
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    if (!res.ok) throw new BoxRefusal(res.status, parsed);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  /** A record, null when there is none (404), undefined when the caller may not read it. */
  async find<T = unknown>(path: string): Promise<T | null | undefined> {
    try {
      return (await this.call<T>('GET', path)).body;
    } catch (err) {
      if (err instanceof BoxRefusal && err.status === 404) return null;
      if (err instanceof BoxRefusal && err.status === 403) return undefined;
      throw err;
    }
  }

  /** The box's own name (what /healthz says). */
  async boxName(): Promise<string> {
    const res = await this.fetch('/healthz', {});
    const body = (await res.json().catch(() => ({}))) as { box?: string };
    return body.box ?? this.target.name ?? this.target.url;
  }

  /** Closes the command's session so CLI runs leave no live tokens behind. */
  async signOut(): Promise<void> {
    if (!this.token) return;
    await fetch(`${this.target.url}/Session`, { method: 'DELETE', headers: { Authorization: `Bearer ${this.token}` } }).catch(
      () => undefined,
    );
    this.token = undefined;
  }
}
