// The Access policies tab (docs/guides/admin-console.md): the box's AccessPolicies with what each
// links (clients, users, groups) and guards (the box's API or an App), the filter that narrows as
// you type, Save, Delete without confirmation; and a dry run of a request at an App, decided by
// its policies as they are now (POST /authz/explain), each policy's verdict and reason shown.
import {
  $,
  api,
  button,
  checkbox,
  chosen,
  field,
  formErrors,
  renderList,
  say,
  showErrors,
  words,
  write,
  type Tab,
  type Words,
} from './console.js';
import {
  deleteRecord,
  FieldError,
  jsonObject,
  problemText,
  search,
  showExplanation,
  writeRecord,
  type Explanation,
  type RecordForm,
  type Stored,
} from './records.js';

type LinkType = 'Client' | 'User' | 'Group';
interface Policy extends Stored {
  app?: string;
  engine: 'allow' | 'json-schema' | 'matcho' | 'cel';
  link?: { id: string; resourceType: LinkType }[];
  matcho?: Record<string, unknown>;
  schema?: Record<string, unknown>;
  cel?: string;
  acr?: string;
  dryRun?: boolean;
}

const FIELDS = ['id', 'description', 'app', 'engine', 'link', 'rule', 'matcho', 'schema', 'cel', 'acr', 'dryRun'];
const LINK_TYPES: LinkType[] = ['Client', 'User', 'Group'];

const state: { policies: Policy[]; selected: Policy | null } = { policies: [], selected: null };
const form: RecordForm<Policy> = { kind: 'AccessPolicy', prefix: 'policy', fields: FIELDS, records: () => state.policies, select, load };

/** What a policy applies to and guards, in words (the list's filter matches these too). */
export function linksText(p: Pick<Policy, 'link'>): Words {
  if (!p.link?.length) return ['every caller (no links)'];
  return p.link.flatMap((l, i) => words`${i ? ', ' : ''}${l.resourceType.toLowerCase()} ${chosen(l.id)}`);
}
const guardsText = (p: Policy): Words => (p.app ? words`App ${chosen(p.app)}` : ["the box's API"]);
const label = (p: Policy): Words => words`${chosen(p.id)} · ${guardsText(p)} · ${linksText(p)}`;

function render(): void {
  renderList('policies-list', state.policies, label, state.selected, field('policies-filter').value, select, (p) =>
    p.meta?.managedBy ? 'Kubernetes' : p.dryRun ? 'dry run' : undefined,
  );
}

function select(policy: Policy | null): void {
  state.selected = policy;
  write($('policy-form-title'), policy ? words`Edit ${chosen(policy.id)}` : 'New policy');
  field('policy-id').value = policy?.id ?? '';
  field('policy-id').readOnly = policy !== null;
  field('policy-description').value = policy?.description ?? '';
  field('policy-app').value = policy?.app ?? field('policies-app').value.trim();
  field('policy-app').readOnly = policy !== null; // a policy guards one thing: its target never changes
  $<HTMLSelectElement>('policy-engine').value = policy?.engine ?? 'matcho';
  field('policy-link').value = (policy?.link ?? []).map((l) => `${l.resourceType} ${l.id}`).join('\n');
  const rule = policy?.engine === 'json-schema' ? policy.schema : policy?.matcho;
  // A cel policy's rule is its expression, as written; the others' are JSON.
  field('policy-rule').value = policy?.engine === 'cel' ? (policy.cel ?? '') : rule ? JSON.stringify(rule, null, 2) : '';
  $<HTMLSelectElement>('policy-acr').value = policy?.acr ?? '';
  checkbox('policy-dryRun').checked = policy?.dryRun === true;
  write($('policy-links-summary'), policy ? words`Applies to ${linksText(policy)}; guards ${guardsText(policy)}.` : '');
  const owner = policy?.meta?.managedBy;
  $('policy-managed').hidden = !owner;
  write(
    $('policy-managed'),
    owner ? words`Managed by the Kubernetes resource ${chosen(owner)}: read-only here. Change it there (kubectl edit).` : '',
  );
  $<HTMLFieldSetElement>('policy-fields').disabled = Boolean(owner);
  button('policy-delete').disabled = !policy;
  showErrors('policy', {}, FIELDS);
  render();
}

/** Every policy, or an App's (`?app=`: what a delegated admin of one App may be allowed to list). */
async function load(): Promise<void> {
  const app = field('policies-app').value.trim();
  try {
    const found = await search<Policy>(`/AccessPolicy?_sort=id${app ? `&app=${encodeURIComponent(app)}` : ''}`);
    if (app !== field('policies-app').value.trim()) return; // an answer to an App no longer asked for
    state.policies = found;
  } catch (err) {
    state.policies = [];
    write(
      $('policies-error'),
      problemText(
        err,
        app ? words`see the policies of App ${chosen(app)}` : 'list every policy of this box (name an App above to see only its policies)',
      ),
    );
    render();
    return;
  }
  $('policies-error').textContent = '';
  const selected = state.selected;
  if (selected) state.selected = state.policies.find((p) => p.id === selected.id) ?? null;
  render();
}

/** "Group editors" a line, into the record's links. */
function parseLinks(text: string): Policy['link'] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [type, ...rest] = line.split(/\s+/);
      const resourceType = LINK_TYPES.find((t) => t.toLowerCase() === type?.toLowerCase());
      const id = rest.join(' ');
      if (!resourceType || !id) throw new FieldError('link', `"${line}": write Client, User or Group, then its id.`);
      return { resourceType, id };
    });
}

function fromForm(): Policy {
  const engine = $<HTMLSelectElement>('policy-engine').value as Policy['engine'];
  const expression = field('policy-rule').value.trim();
  const rule = engine === 'cel' ? undefined : jsonObject(field('policy-rule').value, 'rule');
  const description = field('policy-description').value.trim();
  const app = field('policy-app').value.trim();
  const acr = $<HTMLSelectElement>('policy-acr').value;
  const link = parseLinks(field('policy-link').value);
  return {
    id: field('policy-id').value.trim(),
    engine,
    ...(description ? { description } : {}),
    ...(app ? { app } : {}),
    ...(link?.length ? { link } : {}),
    ...(rule && engine === 'matcho' ? { matcho: rule } : {}),
    ...(rule && engine === 'json-schema' ? { schema: rule } : {}),
    ...(engine === 'cel' ? { cel: expression } : {}),
    ...(acr ? { acr } : {}),
    ...(checkbox('policy-dryRun').checked ? { dryRun: true } : {}),
  };
}

async function save(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  let record: Policy;
  try {
    record = fromForm();
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    return showErrors('policy', { [err.field]: [err.message] }, FIELDS);
  }
  const editing = state.selected;
  try {
    const saved = await writeRecord(form, editing, record);
    if (saved.app && !field('dry-run-app').value) field('dry-run-app').value = saved.app;
    say(words`Saved ${chosen(saved.id)}.`);
  } catch (err) {
    const errors = formErrors(err);
    // The box names the rule's field by the engine's (a cel expression's problems under `cel`); the form shows each as Rule.
    for (const name of ['matcho', 'schema', 'cel']) if (errors[name]) errors.rule = [...(errors.rule ?? []), ...errors[name]];
    showErrors('policy', errors, FIELDS);
  }
}

// ---------------------------------------------------------------- dry run

/** The request to explain: the JSON pasted, else the fields; a person named by email is looked up. */
async function dryRunRequest(): Promise<Record<string, unknown>> {
  const pasted = jsonObject(field('dry-run-request').value, 'request');
  if (pasted) return pasted;
  const who = field('dry-run-who').value.trim();
  const as = $<HTMLSelectElement>('dry-run-as').value;
  let named: Record<string, string> = {};
  if (who && as === 'client') named = { client: who };
  else if (who && who.includes('@')) {
    const [user] = await api<{ id: number }[]>('GET', `/users?email=${encodeURIComponent(who)}`);
    if (!user) throw new FieldError('form', `No user has the email ${who}.`);
    named = { user: String(user.id) };
  } else if (who) named = { user: who };
  return {
    app: field('dry-run-app').value.trim(),
    method: $<HTMLSelectElement>('dry-run-method').value,
    path: field('dry-run-path').value.trim() || '/',
    ...named,
  };
}

async function dryRun(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  $('dry-run-form-error').textContent = '';
  $('dry-run-verdict').textContent = '';
  $('dry-run-table').hidden = true;
  try {
    const explained = await api<Explanation>('POST', '/authz/explain', await dryRunRequest());
    showExplanation($('dry-run-verdict'), $('dry-run-rows'), explained);
    $('dry-run-table').hidden = false;
  } catch (err) {
    write($('dry-run-form-error'), err instanceof FieldError ? err.message : problemText(err, 'dry-run requests at Apps'));
  }
}

/** The Apps to pick from in the App fields, when the admin may list them. */
async function loadAppChoices(): Promise<void> {
  try {
    const apps = await search<Stored>('/App?_sort=id');
    $('policies-apps').replaceChildren(...apps.map((a) => Object.assign(document.createElement('option'), { value: a.id })));
  } catch {
    // typed by hand then
  }
}

let appTimer: ReturnType<typeof setTimeout> | undefined;

export const policiesTab: Tab = {
  name: 'policies',
  start() {
    $('policies-filter').addEventListener('input', render);
    $('policies-app').addEventListener('input', () => {
      clearTimeout(appTimer);
      appTimer = setTimeout(() => void load(), 200);
    });
    $('policies-new').addEventListener('click', () => {
      select(null);
      $('policy-id').focus();
    });
    $('policy-form').addEventListener('submit', (e) => void save(e));
    $('policy-delete').addEventListener('click', () => void deleteRecord(form, state.selected));
    $('dry-run-form').addEventListener('submit', (e) => void dryRun(e));
    select(null);
  },
  show: () => Promise.all([load(), loadAppChoices()]).then(() => undefined),
};
