// The IM web client's page. Only the UI lives here: every protocol concern (auth, the durable outbox and
// resends with the same cmid, the local store by (conv, seq) in IndexedDB, the contiguous cursor, gap and
// hint sync, acks only after the store is durable, reconnect with backoff, terminal vs retriable errors,
// the INTERNAL cap) is the TypeScript SDK's (client-js/), whose browser build is committed under generated-sdk/
// (`cd client-js && npm run build:web`; see docs/web-client.md), and so are the user's read cursor and the
// unread counts (the SDK's markRead, unreadCount, totalUnread and `unread` callback), typing (`typing` and its
// callback) and the receipts of one's own messages (`receipts`). Per-device delivery state is read from
// GET /api/conversations/{conv}/delivery.
import { ImClient, IndexedDbStorage, Limits, checkBody } from './generated-sdk/browser.js';

const DELIVERY_POLL_MS = 1500;   // delivery state refresh while the page is visible
const RECEIPTS_POLL_MS = 5000;   // receipts of one's own messages on screen, while the page is visible (docs/protocol.md)
const TOKEN_KEY = 'im.web.token';
const STORE_PREFIX = 'im.web.';  // IndexedDB database per device install: im.web.<user>.<device>.<epoch>
// Reconnect after 0.5 s doubling to 10 s, with jitter; the SDK retries an INTERNAL answer with the same
// backoff (0.5-1, 1-2, 2-4, 4-8 s) and gives the message up after its fifth such answer.
const CLIENT_OPTIONS = { reconnectMinMs: 500, reconnectMaxMs: 10000, maxInternalErrors: 5 };
const PAGE = 200;                // events shown of the open conversation: its newest, read from the local store
const TITLE = document.title;    // with the total unread in front while there is any: "(3) IM web client"
// Edit and Recall are offered on one's own messages younger than this: the server's default IM_EDIT_WINDOW_S and
// IM_RECALL_WINDOW_S (a server with a shorter window answers TOO_LATE, shown as an error).
const CHANGE_WINDOW_MS = 24 * 3600 * 1000;

const $ = (id) => document.getElementById(id);
/** `fn` run 300 ms after the first of a burst of calls, once for the burst. */
const soon = (fn) => {
  let timer = null;
  return () => {
    if (timer === null) timer = setTimeout(() => { timer = null; fn(); }, 300);
  };
};
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const ui = {
  token: null,
  session: 0,               // counts sign-ins: a client opened for an earlier one is discarded
  client: null,
  me: null,                 // client.identity once online: {user, device, epoch}
  wantOnline: false,
  attempt: 0,               // reconnect attempt in progress (0: none)
  convs: new Set(),         // the subscribed conversations, and any that sent an event since
  selected: null,
  via: new Map(),           // `${conv}#${seq}` -> 'push' | 'sync' | 'sent'; absent: read from the local store
  sentNotStored: new Map(), // cmid -> own committed message whose event is not stored yet
  delivery: new Map(),      // conv -> {data, error}
  shownUpTo: new Map(),     // conv -> the newest stored seq on screen (what markRead may read up to)
  readRefused: new Map(),   // conv -> a seq whose markRead was refused for good (not asked again)
  editing: null,            // {conv, seq} of the own message the composer edits; null: it sends
  typing: new Map(),        // conv -> Map(user -> timer hiding "user is typing…" TYPING_SHOW_MS after the last push)
  receipts: new Map(),      // conv -> Map(seq -> the receipt last fetched of one's own message)
  storeName: null,          // the IndexedDB database of the signed-in device (deleted at sign-out)
  clearing: Promise.resolve(),   // a deletion of the last session's store, which a new sign-in waits for
};

// ------------------------------------------------------------------ the client

/** The SDK asks for the store once the server said whose token this is; older installs' stores are deleted. */
async function storeFor(who) {
  const name = `${STORE_PREFIX}${who.user}.${who.device}.${who.epoch}`;
  ui.storeName = name;
  const older = `${STORE_PREFIX}${who.user}.${who.device}.`;
  if (indexedDB.databases) {
    for (const db of await indexedDB.databases()) {
      if (db.name && db.name.startsWith(older) && db.name !== name) indexedDB.deleteDatabase(db.name);
    }
  }
  return new IndexedDbStorage(name);
}

function wsUrl() {
  return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
}

async function start(session) {
  await ui.clearing;
  if (session !== ui.session) return;
  const client = await ImClient.open({ url: wsUrl(), token: ui.token, storage: storeFor, ...CLIENT_OPTIONS });
  if (session !== ui.session) return;   // signed out (or in again) meanwhile
  ui.client = client;
  // Callbacks of a client that was signed out are ignored.
  const on = (name, fn) => client.on(name, (...args) => { if (client === ui.client) fn(...args); });
  on('state', onState);
  on('reconnecting', (attempt, delayMs, code) => {
    ui.attempt = attempt;
    setStatus('reconnecting', `connection closed${code ? ` (${code})` : ''}; reconnecting in ${(delayMs / 1000).toFixed(1)} s (attempt ${attempt})`);
  });
  on('fatal', (err) => {
    signOut();
    showError(err.code === 'STORAGE' ? `This browser's local store failed (${err.message}).`
      : `Sign-in refused (${err.message}). ${err.code === 'STALE_INSTALL'
        ? 'This device was reinstalled; use its new token.' : 'Check the token and try again.'}`);
  });
  on('subscribed', (convs) => {
    ui.convs = new Set(convs.map((c) => c.conv));
    if (!ui.selected || !ui.convs.has(ui.selected)) ui.selected = convs.length ? convs[0].conv : null;
    render();
    refreshDelivery();
  });
  on('event', (e, source) => {
    if (e.kind === 'msg') stopTyping(e.conv, e.sender);   // their message came: no longer typing it
    ui.via.set(`${e.conv}#${e.seq}`, source);
    ui.convs.add(e.conv);
    if (e.cmid) ui.sentNotStored.delete(e.cmid);
    renderSoon();
    if (source === 'push') refreshDeliverySoon();
  });
  // Another device of the user read, a readack, a subscribe or a message from someone else: the badges.
  on('unread', () => renderUnreadSoon());
  on('reset', (conv) => {
    for (const k of [...ui.via.keys()]) if (k.startsWith(`${conv}#`)) ui.via.delete(k);
    renderSoon();
  });
  on('queued', renderSoon);
  on('typing', startTyping);
  // A message's latest text or its tombstone: read from the store by the render (edits are not messages).
  on('edited', renderSoon);
  on('recalled', (conv, seq) => {
    if (ui.editing && ui.editing.conv === conv && ui.editing.seq === seq) stopEditing();
    renderSoon();
  });
  on('sent', async (r) => {
    if (r.target !== undefined) return renderSoon();   // an edit or recall: shown once its event is stored
    const stored = await client.page(r.conv, { after: r.seq - 1, limit: 1 });
    if (client !== ui.client) return;
    if (!stored.some((e) => e.seq === r.seq)) {
      // Committed; its push (or a sync) brings the server's copy, shown in its place then.
      ui.sentNotStored.set(r.cmid, { ...r, at: Date.now() });
      ui.via.set(`${r.conv}#${r.seq}`, 'sent');
    }
    renderSoon();
    refreshDeliverySoon();
  });
  on('sendFailed', (entry, err) => {
    const what = entry.target === undefined ? 'Message not sent' : `${entry.recall ? 'Recall' : 'Edit'} of #${entry.target} refused`;
    showError(`${what} (${err.code}${err.code === 'INTERNAL' ? `, ${entry.internalErrors} attempts` : ''}): ${err.message}`);
    renderSoon();
  });
  on('acked', refreshDeliverySoon);
  on('ackFailed', (conv, seq, err) => showError(`ack of ${conv} #${seq} failed (${err.message}); it is sent again with the next message`));
  on('subscribeFailed', (err) => showError(`Subscribing failed (${err.message})`));
  if (ui.wantOnline) client.connect().catch(() => { /* reported by the fatal and state callbacks */ });
}

function onState(state) {
  if (state === 'connecting') {
    if (ui.attempt > 0) setStatus('reconnecting', `reconnecting… (attempt ${ui.attempt})`);
    else setStatus('connecting', 'connecting…');
  } else if (state === 'online') {
    ui.attempt = 0;
    ui.me = ui.client.identity;
    $('whoami').textContent = `${ui.me.user} / ${ui.me.device} (install ${ui.me.epoch})`;
    hideError();
    setStatus('online', 'online');
    render();
  } else if (state === 'offline') {
    // Lost: the 'reconnecting' callback follows at once with the delay. Chosen: stays offline.
    if (ui.wantOnline) setStatus('reconnecting', 'connection closed; reconnecting…');
    else setStatus('offline', 'offline');
  }
}

// ------------------------------------------------------------------ sending

function compose(e) {
  e.preventDefault();
  const input = $('body');
  const body = input.value;
  if (!body.trim() || !ui.selected || !ui.client) return;
  try {
    checkBody(body);   // what the server would refuse for good is refused here, before the outbox
  } catch (err) {
    showError(`Message not sent (${err.message})`);
    return;
  }
  input.value = '';
  // In the durable outbox before the first attempt; 'queued', 'sent' and 'sendFailed' update the list.
  const editing = ui.editing;
  if (editing) stopEditing();
  const request = editing ? ui.client.edit(editing.conv, editing.seq, body) : ui.client.send(ui.selected, body);
  request.catch(() => { /* reported by sendFailed */ });
}

/** The composer edits the own message `ev`: its text to change, the button says Save; Cancel (or sending) ends it. */
function startEditing(ev) {
  ui.editing = { conv: ev.conv, seq: ev.seq };
  $('body').value = ev.body;
  $('send').textContent = 'Save';
  $('editing').textContent = `Editing #${ev.seq}`;
  $('edit-bar').hidden = false;
  $('body').focus();
}

function stopEditing() {
  ui.editing = null;
  $('body').value = '';
  $('send').textContent = 'Send';
  $('edit-bar').hidden = true;
}

function recallMessage(ev) {
  if (ui.editing && ui.editing.conv === ev.conv && ui.editing.seq === ev.seq) stopEditing();
  ui.client.recall(ev.conv, ev.seq).catch(() => { /* reported by sendFailed */ });
}

// ------------------------------------------------------------------ typing

/** The composer is being typed into: the SDK writes at most one `typing` per 2 s per conversation. */
function onComposerInput() {
  if (ui.client && ui.selected && $('body').value) ui.client.typing(ui.selected);
}

/** A `typing` push: "user is typing…" for TYPING_SHOW_MS, renewed by the next one. */
function startTyping(conv, user) {
  const users = ui.typing.get(conv) || new Map();
  ui.typing.set(conv, users);
  clearTimeout(users.get(user));
  users.set(user, setTimeout(() => stopTyping(conv, user), Limits.TYPING_SHOW_MS));
  renderTyping();
}

function stopTyping(conv, user) {
  const users = ui.typing.get(conv);
  if (!users || !users.has(user)) return;
  clearTimeout(users.get(user));
  users.delete(user);
  renderTyping();
}

function renderTyping() {
  const users = [...(ui.selected && ui.typing.get(ui.selected) || new Map()).keys()].sort();
  const line = $('typing');
  line.textContent = users.length ? `${users.join(', ')} ${users.length === 1 ? 'is' : 'are'} typing…` : '';
  line.dataset.users = users.join(' ');
}

function clearTyping() {
  for (const users of ui.typing.values()) for (const t of users.values()) clearTimeout(t);
  ui.typing.clear();
}

// ------------------------------------------------------------------ receipts

/** The seqs of one's own messages on screen (stored or committed), newest last. */
function ownSeqsShown() {
  return [...$('messages').querySelectorAll('li.msg.mine[data-seq]')].map((li) => Number(li.dataset.seq));
}

/** Fetches soon the receipts of one's own messages on screen (once for a burst of renders). */
const refreshReceiptsSoon = soon(() => refreshReceipts());

/** Asks the server how far one's own messages on screen got (the newest RECEIPTS_MAX_SEQS of them). */
async function refreshReceipts() {
  const client = ui.client;
  const conv = ui.selected;
  if (!client || !ui.me || !conv || client.connectionState !== 'online' || document.visibilityState !== 'visible') return;
  const seqs = ownSeqsShown().slice(-Limits.RECEIPTS_MAX_SEQS);
  if (!seqs.length) return;
  let list;
  try {
    list = await client.receipts(conv, seqs);
  } catch (err) {
    // Asked again at the next poll; a refusal for good (NOT_SENDER, …) is shown.
    if (client === ui.client && !err.retriable && err.code !== 'TIMEOUT') showError(`Receipts of ${conv} refused (${err.message})`);
    return;
  }
  if (client !== ui.client) return;
  const known = ui.receipts.get(conv) || new Map();
  ui.receipts.set(conv, known);
  for (const r of list) known.set(r.seq, r);
  renderReceipts();
}

/** Under each own message: "seen by K of M · delivered N of D" (the other members, their devices). */
function renderReceipts() {
  const known = ui.selected && ui.receipts.get(ui.selected);
  for (const li of $('messages').querySelectorAll('li.msg.mine[data-seq]')) {
    const r = known && known.get(Number(li.dataset.seq));
    const box = li.querySelector('.rcpt');
    if (!box) continue;
    box.textContent = r ? `seen by ${r.read} of ${r.members} · delivered ${r.delivered} of ${r.devices}` : '';
    box.dataset.read = r ? String(r.read) : '';
  }
}

// ------------------------------------------------------------------ delivery state

const refreshDeliverySoon = soon(() => refreshDelivery());

async function refreshDelivery() {
  if (!ui.token || !ui.me || !ui.selected || document.visibilityState !== 'visible') return;
  const conv = ui.selected;
  const token = ui.token;
  let r;
  let body;
  try {
    r = await fetch(`/api/conversations/${encodeURIComponent(conv)}/delivery`, {
      headers: { Authorization: 'Bearer ' + token }, cache: 'no-store',
    });
    body = await r.json();
  } catch (e) {
    ui.delivery.set(conv, { ...ui.delivery.get(conv), error: 'delivery state unavailable (gateway unreachable)' });
    renderDelivery();
    return;
  }
  if (token !== ui.token) return;
  if (r.ok) ui.delivery.set(conv, { data: body, error: null });
  else {
    ui.delivery.set(conv, { ...ui.delivery.get(conv),
      error: `delivery state refused: ${body.error || r.status}${body.msg ? ' (' + body.msg + ')' : ''}` });
  }
  renderDelivery();
}

// ------------------------------------------------------------------ rendering

function setStatus(state, text) {
  const st = $('status');
  st.dataset.state = state;
  st.textContent = text;
  $('offline').textContent = ui.wantOnline ? 'Go offline' : 'Go online';
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg;
  e.hidden = false;
}

function hideError() {
  $('error').hidden = true;
  $('error').textContent = '';
}

let renderTimer = null;
function renderSoon() {
  if (renderTimer === null) renderTimer = setTimeout(render, 0);   // a sync page of events renders once
}

let renders = 0;   // a render reads the local store (async): only the latest one draws
async function render() {
  clearTimeout(renderTimer);
  renderTimer = null;
  const signedIn = !!ui.token;
  $('signin').hidden = signedIn;
  $('tools').hidden = !signedIn;
  $('app').hidden = !signedIn || !ui.me;
  if (!ui.me || !ui.client) return;
  const mine = ++renders;
  const client = ui.client;
  const conv = ui.selected;
  let events;
  try {
    events = conv ? await shownEvents(conv) : [];
  } catch (e) {
    if (client === ui.client) showError(`The local store could not be read (${e.message})`);
    return;
  }
  if (mine !== renders || client !== ui.client || conv !== ui.selected) return;
  renderConvs();
  renderMessages(events);
  renderTyping();
  renderReceipts();
  const known = ui.receipts.get(conv);
  if (ownSeqsShown().some((seq) => !known || !known.has(seq))) refreshReceiptsSoon();   // just opened, or a new own message
  // The newest stored event on screen: what the user has read once the page is visible and focused.
  const last = events.filter((e) => !ui.sentNotStored.has(e.cmid)).at(-1);
  if (last) ui.shownUpTo.set(conv, last.seq);
  markShownRead();
}

/**
 * What is on screen is read: when the page is visible and focused, the open conversation is marked read up
 * to its newest shown event (the SDK sends `read` and the server's read cursor moves for every device of the
 * user; the count comes down with its `readack`, through the `unread` callback). Also on focus and when the
 * page becomes visible.
 */
function markShownRead() {
  const client = ui.client;
  const conv = ui.selected;
  const seq = conv ? ui.shownUpTo.get(conv) : undefined;
  if (!client || !ui.me || seq === undefined || document.visibilityState !== 'visible' || !document.hasFocus()) return;
  if (seq <= (client.readState(conv)?.read ?? 0) || ui.readRefused.get(conv) === seq) return;
  client.markRead(conv, seq).catch((err) => {
    if (client !== ui.client || err.code === 'CLOSED' || err.retriable) return;   // signed out, or stopped (the fatal callback reports it)
    ui.readRefused.set(conv, seq);
    showError(`Could not mark ${conv} read (${err.message})`);
  });
}

let unreadTimer = null;
function renderUnreadSoon() {
  if (unreadTimer === null) unreadTimer = setTimeout(() => { unreadTimer = null; renderConvs(); }, 0);
}

/** The conversation list with an unread badge each, and the total in the list's heading and the page's title. */
function renderConvs() {
  const client = ui.client;
  const ul = $('convs');
  ul.replaceChildren();
  const total = client && ui.me ? client.totalUnread() : 0;
  const totalEl = $('unread-total');
  totalEl.textContent = total ? `${total} unread` : '';
  totalEl.dataset.unread = String(total);
  totalEl.hidden = !total;
  document.title = total ? `(${total}) ${TITLE}` : TITLE;
  if (!client) return;
  for (const id of [...ui.convs].sort((a, b) => a.localeCompare(b))) {
    const li = el('li');
    const unread = client.unreadCount(id);
    const b = el('button');
    const badge = el('span', 'badge', String(unread));
    badge.hidden = !unread;
    badge.title = `${unread} unread`;
    b.append(el('span', 'name', id), badge);
    b.dataset.unread = String(unread);
    b.type = 'button';
    b.dataset.conv = id;
    b.setAttribute('aria-current', String(id === ui.selected));
    b.onclick = () => {
      if (ui.editing && ui.editing.conv !== id) stopEditing();
      ui.selected = id;
      render();
      refreshDelivery();
    };
    li.append(b);
    ul.append(li);
  }
}

/**
 * The newest stored events in seq order (a page of the local store), with own committed messages whose
 * event is not stored yet in their place.
 */
async function shownEvents(conv) {
  const events = await ui.client.page(conv, { limit: PAGE });
  const seqs = new Set(events.map((e) => e.seq));
  for (const r of ui.sentNotStored.values()) {
    if (r.conv === conv && !seqs.has(r.seq)) {
      events.push({ conv, seq: r.seq, kind: 'msg', mid: r.mid, sender: ui.me.user, cmid: r.cmid, body: r.body, at: r.at });
    }
  }
  return events.sort((a, b) => a.seq - b.seq);
}

function renderMessages(events) {
  const ol = $('messages');
  ol.replaceChildren();
  $('conv-title').textContent = ui.selected || 'No conversation';
  $('composer').hidden = !ui.selected;
  if (!ui.selected) return;
  const conv = ui.selected;
  ol.dataset.conv = conv;
  ol.dataset.contiguous = String(ui.client.cursor(conv));
  const committed = new Set();
  for (const ev of events) {
    let li;
    if (ev.kind === 'msg') {
      if (ev.sender === ui.me.user && ev.cmid) committed.add(ev.cmid);
      const mine = ev.sender === ui.me.user;
      li = el('li', 'msg' + (mine ? ' mine' : '') + (ev.recalled ? ' recalled' : ''));
      const time = ev.at ? new Date(ev.at).toLocaleTimeString() : '';
      const meta = el('div', 'meta', `${ev.sender} · #${ev.seq} · ${time}`);
      // A recalled message shows no text to anyone; an edited one its latest text.
      const body = ev.recalled ? el('div', 'body tombstone', 'message recalled') : el('div', 'body', ev.body);
      if (!ev.recalled && ev.edited) body.append(el('span', 'edited', ' (edited)'));
      li.append(meta, body, el('div', 'dlv'));
      if (mine) li.append(el('div', 'rcpt'));
      if (mine && !ev.recalled && ev.at && Date.now() - ev.at < CHANGE_WINDOW_MS && !ui.sentNotStored.has(ev.cmid)) {
        li.append(actionButton('edit', 'Edit', () => startEditing(ev)), actionButton('recall', 'Recall', () => recallMessage(ev)));
      }
      li.dataset.edited = String(!!ev.edited);
      li.dataset.recalled = String(!!ev.recalled);
    } else {
      li = el('li', 'system', `${ev.sender} ${ev.kind === 'join' ? 'joined' : 'left'} · #${ev.seq}`);
    }
    li.dataset.seq = String(ev.seq);
    li.dataset.kind = ev.kind;
    li.dataset.via = ui.via.get(`${conv}#${ev.seq}`) || 'store';
    ol.append(li);
  }
  for (const o of ui.client.outbox()) {
    // Its push may come before the `sent` reply: once the event is stored it is shown once, as the event.
    if (o.conv !== conv || committed.has(o.cmid)) continue;
    const li = el('li', 'msg mine pending');
    li.dataset.cmid = o.cmid;
    if (o.target === undefined) li.append(el('div', 'meta', 'sending…'), el('div', 'body', o.body));
    else li.append(el('div', 'meta', o.recall ? `recalling #${o.target}…` : `saving the edit of #${o.target}…`), el('div', 'body', o.body));
    ol.append(li);
  }
  for (const f of ui.client.failed()) {
    if (f.conv !== conv) continue;
    const li = el('li', 'msg mine failed');
    li.dataset.cmid = f.cmid;
    const why = f.code === 'INTERNAL' ? `${f.msg} (gave up after ${f.internalErrors} attempts)` : f.msg;
    const dismiss = el('button', 'dismiss', 'Dismiss');
    dismiss.type = 'button';
    dismiss.onclick = () => ui.client.dismissFailed(f.cmid).then(render, (e) => showError(`Dismiss failed: ${e.message}`));
    const what = f.target === undefined ? 'not sent' : `${f.recall ? 'recall' : 'edit'} of #${f.target} refused`;
    li.append(el('div', 'meta', `${what}: ${why}`), el('div', 'body', f.body), dismiss);
    ol.append(li);
  }
  renderDelivery();
}

function actionButton(cls, text, onclick) {
  const b = el('button', `action ${cls}`, text);
  b.type = 'button';
  b.onclick = onclick;
  return b;
}

/** Marks, on each message, which of the conversation's other devices have it (seq <= delivered). */
function renderDelivery() {
  if (!ui.selected || !ui.me) return;
  const d = ui.delivery.get(ui.selected) || { data: null, error: null };
  const summary = $('delivery-summary');
  const others = d.data ? d.data.devices.filter((x) => x.device !== ui.me.device) : [];
  if (d.error) {
    summary.textContent = d.error;
    summary.dataset.error = 'true';
  } else {
    summary.dataset.error = 'false';
    summary.dataset.head = d.data ? String(d.data.head) : '';
    summary.textContent = d.data
      ? `head #${d.data.head} · ` + (others.length
        ? others.map((x) => `${x.user}/${x.device} has up to #${x.delivered}`).join(' · ')
        : 'no other devices')
      : 'delivery state loading…';
  }
  for (const li of $('messages').querySelectorAll('li.msg[data-seq]')) {
    const seq = Number(li.dataset.seq);
    const box = li.querySelector('.dlv');
    box.replaceChildren();
    for (const x of others) {
      const ok = seq <= x.delivered;
      const span = el('span', 'dev', `${x.device} ${ok ? '✓ delivered' : '… not yet'}`);
      span.dataset.device = x.device;
      span.dataset.delivered = String(ok);
      span.title = `${x.user}/${x.device}: delivered up to #${x.delivered}`;
      box.append(span);
    }
  }
}

// ------------------------------------------------------------------ sign in / out

function signIn(token) {
  token = token.trim();
  if (!/^[\x21-\x7e]{1,512}$/.test(token)) {
    showError('A token is 1–512 printable ASCII characters without spaces.');
    return;
  }
  hideError();
  signOut();
  ui.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  ui.wantOnline = true;
  render();
  start(++ui.session).catch((e) => {
    signOut();
    showError(`The client could not start: ${e.message}`);
  });
}

/** Forgets the session; `clearStore` (the Sign out button) also deletes this device's local store once the client closed it. */
function signOut({ clearStore = false } = {}) {
  ui.session++;
  ui.wantOnline = false;
  const client = ui.client;
  const storeName = ui.storeName;
  ui.client = null;
  ui.storeName = null;
  if (client) {
    const closed = client.close().catch(() => undefined);
    if (clearStore && storeName) {
      ui.clearing = closed.then(() => IndexedDbStorage.delete(storeName)).catch((e) => showError(`The local store was not deleted (${e.message})`));
    }
  }
  ui.token = null;
  ui.me = null;
  ui.attempt = 0;
  ui.convs = new Set();
  ui.selected = null;
  ui.via.clear();
  ui.sentNotStored.clear();
  ui.delivery.clear();
  ui.shownUpTo.clear();
  ui.readRefused.clear();
  ui.receipts.clear();
  clearTyping();
  stopEditing();
  sessionStorage.removeItem(TOKEN_KEY);
  $('whoami').textContent = '';
  setStatus('signed-out', 'signed out');
  renderConvs();   // no client: no badges, the page's own title
  render();
}

function toggleOnline() {
  if (!ui.client) return;
  ui.wantOnline = !ui.wantOnline;
  if (ui.wantOnline) {
    ui.attempt = 0;
    ui.client.connect().catch(() => { /* reported by the fatal and state callbacks */ });
  } else {
    ui.client.disconnect();
    setStatus('offline', 'offline');   // also when a reconnect was pending (the SDK was offline already)
  }
  $('offline').textContent = ui.wantOnline ? 'Go offline' : 'Go online';
}

$('signin').addEventListener('submit', (e) => {
  e.preventDefault();
  signIn($('token').value);
  $('token').value = '';
});
$('composer').addEventListener('submit', compose);
$('body').addEventListener('input', onComposerInput);
$('cancel-edit').addEventListener('click', stopEditing);
$('offline').addEventListener('click', toggleOnline);
$('signout').addEventListener('click', () => {
  signOut({ clearStore: true });
  hideError();
});
document.addEventListener('visibilitychange', () => {
  refreshDelivery();
  refreshReceipts();
  markShownRead();
});
window.addEventListener('focus', markShownRead);
setInterval(refreshDelivery, DELIVERY_POLL_MS);
setInterval(refreshReceipts, RECEIPTS_POLL_MS);
let token = sessionStorage.getItem(TOKEN_KEY);
if (location.hash.startsWith('#token=')) {
  token = decodeURIComponent(location.hash.slice('#token='.length));
  history.replaceState(null, '', location.pathname + location.search);   // keep it out of the address bar
}
if (token) signIn(token);
else render();
