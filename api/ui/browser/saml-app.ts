// A SAML app in the Clients tab (docs/guides/saml-apps.md): what its metadata says of it (entity
// ID, where assertions and logouts go), its settings, where the metadata comes from and what the
// box last made of it at its URL, and what an admin gives the app (GET /Client/<id>/$saml). The
// entity ID and the URLs are names the app's owner chose: each is shown isolated.
import { $, api, chosen, errorText, when, words, write, type Sentence } from './console.js';

interface Endpoint {
  url: string;
  binding: string;
  index?: number;
  isDefault?: boolean;
}
interface Summary {
  entityId: string;
  consumers: Endpoint[];
  logout: Endpoint[];
  certificatesExpire: string | null;
}
interface Status {
  outcome: 'read' | 'refused';
  reason?: string;
  message?: string;
  url: string;
  fetchedAt: string;
}
interface SamlApp {
  nameIdFormat: string;
  idpInitiated: boolean;
  encryptAssertions: boolean;
  metadata: { source: 'inline' } | { source: 'url'; url: string; status?: Status };
  sp?: Summary;
  problem?: string;
  idp: { metadataUrl: string; entityId: string; ssoUrl: string; sloUrl: string };
}

/** The client whose SAML side is shown: an answer about another one, selected meanwhile, is dropped. */
let shown: string | undefined;

/** A binding's short name: urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST is HTTP-POST. */
const bindingName = (binding: string): string => binding.slice(binding.lastIndexOf(':') + 1);

const endpoint = (e: Endpoint): Sentence =>
  words`${chosen(e.url)} (${bindingName(e.binding)}${e.index !== undefined ? `, index ${e.index}` : ''}${e.isDefault ? ', default' : ''})`;

/** A term and its values, each on a line of its own. */
function facts(list: HTMLElement, rows: [string, Sentence[]][]): void {
  list.replaceChildren(
    ...rows.flatMap(([term, values]) => {
      const dd = document.createElement('dd');
      dd.replaceChildren(
        ...(values.length ? values : ['none']).map((value) => {
          const line = document.createElement('div');
          write(line, value);
          return line;
        }),
      );
      return [Object.assign(document.createElement('dt'), { textContent: term }), dd];
    }),
  );
}

function statusOf(app: SamlApp): Sentence {
  if (app.metadata.source === 'inline')
    return app.problem
      ? `Its metadata, written into the client, cannot be read: ${app.problem}`
      : 'Its metadata is written into the client.';
  const status = app.metadata.status;
  if (!status) return words`The box has not fetched its metadata from ${chosen(app.metadata.url)} yet.`;
  if (status.outcome === 'read') return words`The box read its metadata from ${chosen(status.url)} at ${when(status.fetchedAt)}.`;
  return words`The box could not use its metadata from ${chosen(status.url)} at ${when(status.fetchedAt)} (${status.reason ?? ''}): ${status.message ?? ''}. Nobody signs in to it until it can.`;
}

function render(app: SamlApp): void {
  write($('client-saml-status'), statusOf(app));
  const sp = app.sp;
  facts($('client-saml-list'), [
    ['Metadata', [app.metadata.source === 'url' ? words`at ${chosen(app.metadata.url)}` : 'inline']],
    ['Entity ID', sp ? [chosen(sp.entityId)] : ['unknown']],
    ['Assertion consumer services', sp ? sp.consumers.map(endpoint) : ['unknown']],
    ['Single logout services', sp ? sp.logout.map(endpoint) : ['unknown']],
    ['Certificates expire', sp ? [sp.certificatesExpire ? when(sp.certificatesExpire) : 'it names no certificate'] : ['unknown']],
    ['NameID format', [app.nameIdFormat]],
    ['Sign-in started at the box', [app.idpInitiated ? 'allowed (idpInitiated)' : 'not allowed']],
    ['Encrypted assertions', [app.encryptAssertions ? 'yes' : 'no']],
  ]);
  facts($('client-saml-idp'), [
    ['IdP metadata URL', [app.idp.metadataUrl]],
    ['IdP entity ID', [app.idp.entityId]],
    ['Single sign-on URL', [app.idp.ssoUrl]],
    ['Single logout URL', [app.idp.sloUrl]],
  ]);
}

/** Shows the SAML side of `client`, or hides the section when it is no SAML app. */
export async function showSamlApp(client: { id: string; saml?: unknown } | null): Promise<void> {
  shown = client?.saml ? client.id : undefined;
  $('client-saml').hidden = !shown;
  $('client-saml-error').textContent = '';
  if (!client || !shown) return;
  try {
    const app = await api<SamlApp>('GET', `/Client/${encodeURIComponent(client.id)}/$saml`);
    if (shown === client.id) render(app);
  } catch (err) {
    if (shown === client.id) $('client-saml-error').textContent = errorText(err);
  }
}
