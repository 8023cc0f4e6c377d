// The admin console's Events tab (docs/operations/audit.md#the-events-tab): the audit trail with
// its filters, each event's record a button away. Its script is ./browser/events.ts.
import { CHANGED_KINDS, TRAIL_KINDS, segmentOf, type TrailKind } from '../record-kinds.js';
import { html, type Html } from './html.js';

const EVENTS: [string, string][] = [
  ['', 'Any event'],
  ['record_changed', 'A record changed'],
  ['account', 'An account'],
  ['sign_in', 'A sign-in'],
  ['session_closed', 'Sessions ended'],
  ['session_strengthened', 'A sign-in strengthened'],
  ['factor', 'A second factor'],
  ['upstream', 'An identity provider'],
  ['decision', 'A decision refused'],
];

/**
 * A kind of the Record filter, with where the API reads a record of it when the trail reports its
 * changes (`data-read-at`: the script's button to the record, which cannot import the registry).
 */
const kindOption = (kind: TrailKind): Html => {
  const changed = CHANGED_KINDS.find((k) => k === kind);
  return changed
    ? html`<option value="${kind}" data-read-at="/${segmentOf(changed)}/">${kind}</option>`
    : html`<option value="${kind}">${kind}</option>`;
};

export const eventsTabButton: Html = html`
      <button type="button" role="tab" id="tab-events" aria-controls="panel-events" aria-selected="false" tabindex="-1">Events</button>`;

export const eventsPanel: Html = html`
    <section role="tabpanel" id="panel-events" aria-labelledby="tab-events" hidden>
      <form id="events-filters" class="toolbar wrap" novalidate>
        <label for="events-event">Event</label>
        <select id="events-event">${EVENTS.map(([value, label]) => html`<option value="${value}">${label}</option>`)}</select>
        <label for="events-outcome">Outcome</label>
        <select id="events-outcome"><option value="">Any</option><option value="success">Success</option><option value="failure">Failure</option></select>
        <label for="events-actor">Actor</label>
        <input id="events-actor" type="search" autocomplete="off" placeholder="a user id or a client id">
        <label for="events-user">Person</label>
        <input id="events-user" type="search" autocomplete="off" placeholder="a user id">
        <label for="events-client">Client</label>
        <input id="events-client" type="search" autocomplete="off" placeholder="a client id">
        <label for="events-type">Record</label>
        <select id="events-type"><option value="">Any kind</option>${TRAIL_KINDS.map(kindOption)}</select>
        <label for="events-id">Record id</label>
        <input id="events-id" type="search" autocomplete="off">
        <label for="events-since">Since</label>
        <input id="events-since" type="datetime-local">
        <label for="events-until">Until</label>
        <input id="events-until" type="datetime-local">
      </form>
      <p class="error" id="events-error" role="alert"></p>
      <table class="sessions" aria-label="Events">
        <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">What</th><th scope="col">Outcome</th><th scope="col">Who</th><th scope="col">About</th></tr></thead>
        <tbody id="events-rows"></tbody>
      </table>
      <div class="actions"><button type="button" id="events-more" class="secondary" hidden>Older events</button></div>
      <section id="event-record" aria-labelledby="event-record-title" hidden>
        <h3 id="event-record-title"></h3>
        <pre id="event-record-body"></pre>
      </section>
    </section>`;
