// The IM web client: one device over the documented WebSocket protocol (docs/protocol.md).
// Like the Java SDK it keeps a local store per conversation keyed by seq (in localStorage), a
// contiguous cursor, syncs on gaps and hints, acks only after the store is saved, and resends
// unconfirmed sends with the same cmid. Per-device delivery state comes from
// GET /api/conversations/{conv}/delivery. No build step, no dependencies.
'use strict';
(() => {
  const SYNC_LIMIT = 100;
  const ACK_DELAY_MS = 50;          // acks of a burst of events coalesce into one
  const DELIVERY_POLL_MS = 1500;    // delivery state refresh while the page is visible
  const SEND_TIMEOUT_MS = 10000;    // no `sent` by then: resend with the same cmid
  const MAX_BACKOFF_MS = 10000;
  const MAX_STORED_EVENTS = 2000;   // per conversation; older ones are below the cursor anyway
  const RETRIABLE = new Set(['RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL']);
  // INTERNAL is a server bug, possibly one this message triggers every time: retried with backoff
  // (0.5, 1, 2, 4 s), and after this many such answers the message is shown as not sent, never resent.
  const MAX_INTERNAL_ERRORS = 5;
  const INTERNAL_BACKOFF_MS = 500;
  const TOKEN_KEY = 'im.web.token';

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  const s = {
    token: null,
    me: null,                 // {user, device, epoch} from `authed`
    ws: null,
    authed: false,
    wantOnline: false,
    attempt: 0,
    reconnectTimer: null,
    nextRid: 0,
    requests: new Map(),      // rid -> {t, conv, cmid}
    convs: new Map(),         // conv -> conversation state (see conv())
    outbox: [],               // {cmid, conv, body, rid, sentAt, error, internalErrors}
    selected: null,
    deliveryTimer: null,
    closeReason: null,        // error frame that preceded a server close
  };

  // ------------------------------------------------------------------ local store

  const storeKey = () => `im.web.${s.me.user}.${s.me.device}.${s.me.epoch}`;

  function conv(id) {
    let c = s.convs.get(id);
    if (!c) {
      c = {
        id, head: 0, contiguous: 0, ackSent: 0, delivered: 0, events: new Map(), via: new Map(),
        syncing: false, resync: false, ackTimer: null, delivery: null, deliveryError: null, member: true,
        aheadRefused: 0,        // an ack refused CURSOR_AHEAD: owed again once the server shows a head >= it
      };
      s.convs.set(id, c);
    }
    return c;
  }

  function loadStore() {
    s.convs.clear();
    s.outbox = [];
    // Older installs of this device hold nothing the server still counts: drop their stores.
    const prefix = `im.web.${s.me.user}.${s.me.device}.`;
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const k = localStorage.key(i);
      if (k && k.startsWith(prefix) && k !== storeKey()) localStorage.removeItem(k);
    }
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(storeKey()) || 'null');
    } catch (e) {
      showError('The local store was unreadable and has been reset.');
    }
    if (!saved) return;
    for (const [id, sc] of Object.entries(saved.convs || {})) {
      const c = conv(id);
      c.contiguous = sc.contiguous || 0;
      c.head = c.contiguous;
      for (const ev of sc.events || []) {
        c.events.set(ev.seq, ev);
        c.via.set(ev.seq, 'store');
      }
    }
    s.outbox = (saved.outbox || []).map((o) => ({
      cmid: o.cmid, conv: o.conv, body: o.body, rid: null, sentAt: 0, error: o.error || null, internalErrors: o.internalErrors || 0,
    }));
  }

  /** Synchronous: when it returns, the events are stored and may be acked. */
  function saveStore() {
    if (!s.me) return;
    const convs = {};
    for (const c of s.convs.values()) {
      let seqs = [...c.events.keys()].sort((a, b) => a - b);
      if (seqs.length > MAX_STORED_EVENTS) {
        for (const q of seqs.slice(0, seqs.length - MAX_STORED_EVENTS)) c.events.delete(q);
        seqs = seqs.slice(seqs.length - MAX_STORED_EVENTS);
      }
      convs[c.id] = { contiguous: c.contiguous, events: seqs.map((q) => c.events.get(q)) };
    }
    const outbox = s.outbox.map((o) => ({ cmid: o.cmid, conv: o.conv, body: o.body, error: o.error, internalErrors: o.internalErrors }));
    localStorage.setItem(storeKey(), JSON.stringify({ convs, outbox }));
  }

  /** Stores an event once per seq (a repeat replaces the copy and is never shown twice). */
  function storeEvent(ev, via) {
    const c = conv(ev.conv);
    if (!c.events.has(ev.seq) || c.via.get(ev.seq) === 'sent') c.via.set(ev.seq, via);
    if (ev.kind === 'msg' && s.me && ev.sender === s.me.user && ev.cmid) {
      // Our own send, committed: its push may come before the `sent` reply. One copy only.
      s.outbox = s.outbox.filter((o) => o.cmid !== ev.cmid);
    }
    c.events.set(ev.seq, ev);
    if (ev.seq > c.head) c.head = ev.seq;
    return c;
  }

  /** The server showed a head of at least `head`: an ack it refused below that is due again. */
  function headSeen(c, head) {
    if (c.aheadRefused && head >= c.aheadRefused) c.aheadRefused = 0;
  }

  function advance(c) {
    while (c.events.has(c.contiguous + 1)) c.contiguous++;
  }

  // ------------------------------------------------------------------ connection

  function wsUrl() {
    return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
  }

  function send(frame) {
    if (!s.ws || s.ws.readyState !== WebSocket.OPEN) return false;
    s.ws.send(JSON.stringify(frame));
    return true;
  }

  function request(frame, meta) {
    const rid = 'r' + (++s.nextRid);
    frame.rid = rid;
    if (!send(frame)) return null;
    s.requests.set(rid, Object.assign({ t: frame.t }, meta));
    return rid;
  }

  function connect() {
    clearTimeout(s.reconnectTimer);
    s.reconnectTimer = null;
    if (s.ws) return;
    setStatus(s.attempt === 0 ? 'connecting' : 'reconnecting', s.attempt === 0 ? 'connecting…' : 'reconnecting…');
    const ws = new WebSocket(wsUrl());
    s.ws = ws;
    s.closeReason = null;
    ws.onopen = () => send({ t: 'auth', rid: 'auth', token: s.token });
    ws.onmessage = (m) => {
      let f;
      try {
        f = JSON.parse(m.data);
      } catch (e) {
        showError('The server sent a frame that is not JSON.');
        return;
      }
      onFrame(f);
    };
    ws.onclose = (e) => onClose(ws, e);
  }

  function onClose(ws, e) {
    if (s.ws !== ws) return;
    s.ws = null;
    s.authed = false;
    s.requests.clear();
    for (const c of s.convs.values()) {
      c.syncing = false;
      c.resync = false;
      clearTimeout(c.ackTimer);
      c.ackTimer = null;
      c.ackSent = 0;
      c.aheadRefused = 0;   // the next subbed reports the heads afresh
    }
    for (const o of s.outbox) o.rid = null;
    if (e.code === 4001 || e.code === 4003) {
      // The token is refused: reconnecting with it would fail the same way.
      const code = e.code === 4001 ? 'BAD_TOKEN' : 'STALE_INSTALL';
      const why = s.closeReason ? s.closeReason.msg : e.reason;
      signOut();
      showError(`Sign-in refused (${code}): ${why}. ${code === 'STALE_INSTALL'
        ? 'This device was reinstalled; use its new token.' : 'Check the token and try again.'}`);
      return;
    }
    if (!s.wantOnline) {
      setStatus('offline', 'offline');
      return;
    }
    const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** s.attempt) * (0.5 + Math.random() / 2);
    s.attempt++;
    setStatus('reconnecting', `connection closed${e.code ? ' (' + e.code + ')' : ''}; reconnecting in ${(delay / 1000).toFixed(1)} s (attempt ${s.attempt})`);
    s.reconnectTimer = setTimeout(connect, delay);
  }

  // ------------------------------------------------------------------ frames

  function onFrame(f) {
    switch (f.t) {
      case 'authed': return onAuthed(f);
      case 'subbed': return onSubbed(f);
      case 'synced': return onSynced(f);
      case 'event': return onEvent(f.ev);
      case 'hint': return onHint(f);
      case 'sent': return onSent(f);
      case 'acked': return onAcked(f);
      case 'error': return onError(f);
      default: return undefined;   // unknown frame types are ignored (protocol rule)
    }
  }

  function onAuthed(f) {
    const same = s.me && s.me.user === f.user && s.me.device === f.device && s.me.epoch === f.epoch;
    s.me = { user: f.user, device: f.device, epoch: f.epoch };
    if (!same) {
      loadStore();
      s.selected = null;
    }
    s.authed = true;
    s.attempt = 0;
    hideError();
    setStatus('online', 'online');
    $('whoami').textContent = `${f.user} / ${f.device} (install ${f.epoch})`;
    request({ t: 'sub' }, {});
    for (const o of s.outbox) if (!o.error) transmit(o);
    render();
  }

  function onSubbed(f) {
    s.requests.delete(f.rid);
    const current = new Set();
    for (const cs of f.convs) {
      current.add(cs.conv);
      let c = conv(cs.conv);
      if (c.contiguous > cs.head) {
        // The server has fewer events than this store (a reset platform): the store is not its history.
        s.convs.delete(cs.conv);
        c = conv(cs.conv);
      }
      c.member = true;
      c.head = Math.max(c.head, cs.head);
      c.delivered = cs.delivered;
      if (c.head > c.contiguous) sync(c);
      else scheduleAck(c);
    }
    for (const c of s.convs.values()) if (!current.has(c.id)) c.member = false;
    if (!s.selected || !current.has(s.selected)) s.selected = f.convs.length ? f.convs[0].conv : null;
    saveStore();
    render();
    refreshDelivery();
  }

  function sync(c) {
    if (c.syncing) {
      c.resync = true;
      return;
    }
    if (request({ t: 'sync', conv: c.id, after: c.contiguous, limit: SYNC_LIMIT }, { conv: c.id, after: c.contiguous })) {
      c.syncing = true;
    }
  }

  function onSynced(f) {
    const req = s.requests.get(f.rid);
    s.requests.delete(f.rid);
    const c = conv(f.conv);
    for (const ev of f.events) storeEvent(ev, 'sync');
    c.head = Math.max(c.head, f.head);
    headSeen(c, f.head);
    // The page holds every visible event in (after, last]; with more:false, up to the head
    // (seqs in between are not visible to this member, e.g. before their join).
    const after = req ? req.after : c.contiguous;
    if (after <= c.contiguous) {
      const last = f.events.length ? f.events[f.events.length - 1].seq : after;
      c.contiguous = Math.max(c.contiguous, f.more ? last : Math.max(last, f.head));
    }
    advance(c);
    saveStore();
    c.syncing = false;
    if (f.more || (c.resync && c.head > c.contiguous)) sync(c);
    c.resync = false;
    scheduleAck(c);
    render();
  }

  function onEvent(ev) {
    if (!ev || typeof ev.seq !== 'number') return;
    const c = storeEvent(ev, 'push');
    headSeen(c, ev.seq);
    advance(c);
    saveStore();
    if (ev.seq > c.contiguous + 1 || c.head > c.contiguous) sync(c);   // a gap: fetch what is missing
    scheduleAck(c);
    render();
    refreshDeliverySoon();
  }

  function onHint(f) {
    const c = conv(f.conv);
    c.head = Math.max(c.head, f.head);
    headSeen(c, f.head);
    if (c.head > c.contiguous) sync(c);
    else scheduleAck(c);
  }

  function scheduleAck(c) {
    if (!s.authed || c.contiguous <= c.ackSent || c.ackTimer || c.aheadRefused) return;
    c.ackTimer = setTimeout(() => {
      c.ackTimer = null;
      if (!s.authed || c.contiguous <= c.ackSent) return;
      saveStore();   // the store is durable before the ack says so
      if (request({ t: 'ack', conv: c.id, seq: c.contiguous }, { conv: c.id, seq: c.contiguous })) c.ackSent = c.contiguous;
    }, ACK_DELAY_MS);
  }

  function onAcked(f) {
    s.requests.delete(f.rid);
    const c = conv(f.conv);
    c.delivered = Math.max(c.delivered, f.delivered);
    refreshDeliverySoon();
  }

  function onSent(f) {
    const req = s.requests.get(f.rid);
    s.requests.delete(f.rid);
    if (!req) return;
    const i = s.outbox.findIndex((o) => o.cmid === req.cmid);
    if (i < 0) return;
    const o = s.outbox[i];
    s.outbox.splice(i, 1);
    const c = conv(f.conv);
    if (!c.events.has(f.seq)) {
      // Our own message is the event at this seq; the push (or a sync) brings the server's copy.
      storeEvent({ conv: f.conv, seq: f.seq, kind: 'msg', mid: f.mid, sender: s.me.user, cmid: o.cmid, body: o.body, at: Date.now() }, 'sent');
    }
    advance(c);
    saveStore();
    if (f.seq > c.contiguous) sync(c);
    scheduleAck(c);
    render();
    refreshDeliverySoon();
  }

  function onError(f) {
    if (f.rid === 'auth' || f.code === 'STALE_INSTALL') {
      // the close (4001/4003) follows and reports this; STALE_INSTALL also ends an open
      // connection when the device is reinstalled (with or without a rid)
      s.closeReason = f;
      return;
    }
    const req = f.rid ? s.requests.get(f.rid) : null;
    if (f.rid) s.requests.delete(f.rid);
    if (!req) {
      showError(`Server error ${f.code}: ${f.msg}`);
      return;
    }
    if (req.t === 'send') {
      const o = s.outbox.find((x) => x.cmid === req.cmid);
      if (!o) return;
      o.rid = null;
      if (f.code === 'INTERNAL') o.internalErrors = (o.internalErrors || 0) + 1;
      if (f.code === 'INTERNAL' && o.internalErrors >= MAX_INTERNAL_ERRORS) {
        o.error = `${f.code}: ${f.msg} (gave up after ${o.internalErrors} attempts)`;
        showError(`Message not sent (${f.code}, ${o.internalErrors} attempts): ${f.msg}`);
      } else if (f.code === 'INTERNAL') {
        // The housekeeping tick resends it once the backoff has passed.
        o.sentAt = Date.now() - SEND_TIMEOUT_MS + Math.min(MAX_BACKOFF_MS, INTERNAL_BACKOFF_MS * 2 ** (o.internalErrors - 1));
      } else if (RETRIABLE.has(f.code)) {
        o.sentAt = Date.now() - SEND_TIMEOUT_MS + 2000;   // retried by the housekeeping tick in ~2 s
      } else {
        o.error = `${f.code}: ${f.msg}`;
        showError(`Message not sent (${f.code}): ${f.msg}`);
      }
      saveStore();   // the count and the verdict survive a reload
      render();
      return;
    }
    const c = req.conv ? conv(req.conv) : null;
    if (req.t === 'sync' && c) {
      c.syncing = false;
      if (RETRIABLE.has(f.code)) setTimeout(() => sync(c), 2000);
    }
    if (req.t === 'ack' && c) {
      c.ackSent = 0;
      if (f.code === 'CURSOR_AHEAD') {
        // Not held by the server, and still owed: ack again once it shows a head covering it (headSeen).
        c.aheadRefused = Math.max(c.aheadRefused, req.seq || c.contiguous);
        sync(c);
      }
    }
    showError(`${req.t} failed (${f.code}): ${f.msg}`);
  }

  // ------------------------------------------------------------------ sending

  function randomCmid() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);   // works on plain http too, unlike crypto.randomUUID
    return 'w-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  function transmit(o) {
    o.sentAt = Date.now();
    o.rid = request({ t: 'send', conv: o.conv, cmid: o.cmid, body: o.body }, { cmid: o.cmid, conv: o.conv });
  }

  function compose(e) {
    e.preventDefault();
    const input = $('body');
    const body = input.value;
    if (!body.trim() || !s.selected) return;
    if (new TextEncoder().encode(body).length > 16384) {
      showError('A message is at most 16 384 bytes (UTF-8).');
      return;
    }
    if (body.includes('\0')) {
      showError('A message cannot contain the NUL character (U+0000).');   // the server refuses it: BAD_FIELD
      return;
    }
    const o = { cmid: randomCmid(), conv: s.selected, body, rid: null, sentAt: 0, error: null, internalErrors: 0 };
    s.outbox.push(o);
    saveStore();   // in the outbox before the first send: a reload resends it with the same cmid
    input.value = '';
    if (s.authed) transmit(o);
    render();
  }

  function housekeeping() {
    if (!s.authed) return;
    const now = Date.now();
    for (const o of s.outbox) if (!o.error && now - o.sentAt > SEND_TIMEOUT_MS) transmit(o);
  }

  // ------------------------------------------------------------------ delivery state

  let deliverySoon = null;
  function refreshDeliverySoon() {
    if (deliverySoon) return;
    deliverySoon = setTimeout(() => {
      deliverySoon = null;
      refreshDelivery();
    }, 300);
  }

  async function refreshDelivery() {
    if (!s.token || !s.me || !s.selected || document.visibilityState !== 'visible') return;
    const c = conv(s.selected);
    const token = s.token;
    let r;
    let body;
    try {
      r = await fetch(`/api/conversations/${encodeURIComponent(c.id)}/delivery`, {
        headers: { Authorization: 'Bearer ' + token }, cache: 'no-store',
      });
      body = await r.json();
    } catch (e) {
      c.deliveryError = 'delivery state unavailable (gateway unreachable)';
      renderDelivery();
      return;
    }
    if (token !== s.token) return;
    if (r.ok) {
      c.delivery = body;
      c.deliveryError = null;
    } else {
      c.deliveryError = `delivery state refused: ${body.error || r.status}${body.msg ? ' (' + body.msg + ')' : ''}`;
    }
    renderDelivery();
  }

  // ------------------------------------------------------------------ rendering

  function setStatus(state, text) {
    const st = $('status');
    st.dataset.state = state;
    st.textContent = text;
    $('offline').textContent = s.wantOnline ? 'Go offline' : 'Go online';
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

  function render() {
    const signedIn = !!s.token;
    $('signin').hidden = signedIn;
    $('tools').hidden = !signedIn;
    $('app').hidden = !signedIn || !s.me;
    if (!s.me) return;
    renderConvs();
    renderMessages();
  }

  function renderConvs() {
    const ul = $('convs');
    ul.replaceChildren();
    for (const c of [...s.convs.values()].sort((a, b) => a.id.localeCompare(b.id))) {
      if (!c.member) continue;
      const li = el('li');
      const b = el('button', null, `${c.id} (${[...c.events.values()].filter((e) => e.kind === 'msg').length})`);
      b.type = 'button';
      b.dataset.conv = c.id;
      b.setAttribute('aria-current', String(c.id === s.selected));
      b.onclick = () => {
        s.selected = c.id;
        render();
        refreshDelivery();
      };
      li.append(b);
      ul.append(li);
    }
  }

  function renderMessages() {
    const ol = $('messages');
    ol.replaceChildren();
    $('conv-title').textContent = s.selected || 'No conversation';
    $('composer').hidden = !s.selected;
    if (!s.selected) return;
    const c = conv(s.selected);
    ol.dataset.conv = c.id;
    ol.dataset.contiguous = String(c.contiguous);
    for (const seq of [...c.events.keys()].sort((a, b) => a - b)) {
      const ev = c.events.get(seq);
      let li;
      if (ev.kind === 'msg') {
        li = el('li', 'msg' + (ev.sender === s.me.user ? ' mine' : ''));
        const time = ev.at ? new Date(ev.at).toLocaleTimeString() : '';
        li.append(el('div', 'meta', `${ev.sender} · #${seq} · ${time}`), el('div', 'body', ev.body), el('div', 'dlv'));
      } else {
        li = el('li', 'system', `${ev.sender} ${ev.kind === 'join' ? 'joined' : 'left'} · #${seq}`);
      }
      li.dataset.seq = String(seq);
      li.dataset.kind = ev.kind;
      li.dataset.via = c.via.get(seq) || '';
      ol.append(li);
    }
    for (const o of s.outbox) {
      if (o.conv !== c.id) continue;
      const li = el('li', 'msg mine ' + (o.error ? 'failed' : 'pending'));
      li.dataset.cmid = o.cmid;
      li.append(el('div', 'meta', o.error ? `not sent: ${o.error}` : 'sending…'), el('div', 'body', o.body));
      ol.append(li);
    }
    renderDelivery();
  }

  /** Marks, on each message, which of the conversation's other devices have it (seq <= delivered). */
  function renderDelivery() {
    if (!s.selected || !s.me) return;
    const c = conv(s.selected);
    const summary = $('delivery-summary');
    const others = c.delivery ? c.delivery.devices.filter((d) => d.device !== s.me.device) : [];
    if (c.deliveryError) {
      summary.textContent = c.deliveryError;
      summary.dataset.error = 'true';
    } else {
      summary.dataset.error = 'false';
      summary.dataset.head = c.delivery ? String(c.delivery.head) : '';
      summary.textContent = c.delivery
        ? `head #${c.delivery.head} · ` + (others.length
          ? others.map((d) => `${d.user}/${d.device} has up to #${d.delivered}`).join(' · ')
          : 'no other devices')
        : 'delivery state loading…';
    }
    for (const li of $('messages').querySelectorAll('li.msg[data-seq]')) {
      const seq = Number(li.dataset.seq);
      const box = li.querySelector('.dlv');
      box.replaceChildren();
      for (const d of others) {
        const ok = seq <= d.delivered;
        const span = el('span', 'dev', `${d.device} ${ok ? '✓ delivered' : '… not yet'}`);
        span.dataset.device = d.device;
        span.dataset.delivered = String(ok);
        span.title = `${d.user}/${d.device}: delivered up to #${d.delivered}`;
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
    s.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
    s.wantOnline = true;
    s.attempt = 0;
    render();
    connect();
  }

  function signOut() {
    s.wantOnline = false;
    clearTimeout(s.reconnectTimer);
    const ws = s.ws;
    s.ws = null;
    s.authed = false;
    if (ws) ws.close(1000, 'signed out');
    s.token = null;
    s.me = null;
    s.convs.clear();
    s.outbox = [];
    s.selected = null;
    sessionStorage.removeItem(TOKEN_KEY);
    $('whoami').textContent = '';
    setStatus('signed-out', 'signed out');
    render();
  }

  function toggleOnline() {
    if (s.wantOnline) {
      s.wantOnline = false;
      clearTimeout(s.reconnectTimer);
      if (s.ws) s.ws.close(1000, 'going offline');
      else setStatus('offline', 'offline');
    } else {
      s.wantOnline = true;
      s.attempt = 0;
      connect();
    }
    $('offline').textContent = s.wantOnline ? 'Go offline' : 'Go online';
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('signin').addEventListener('submit', (e) => {
      e.preventDefault();
      signIn($('token').value);
      $('token').value = '';
    });
    $('composer').addEventListener('submit', compose);
    $('offline').addEventListener('click', toggleOnline);
    $('signout').addEventListener('click', () => {
      signOut();
      hideError();
    });
    document.addEventListener('visibilitychange', refreshDelivery);
    setInterval(refreshDelivery, DELIVERY_POLL_MS);
    setInterval(housekeeping, 1000);
    let token = sessionStorage.getItem(TOKEN_KEY);
    if (location.hash.startsWith('#token=')) {
      token = decodeURIComponent(location.hash.slice('#token='.length));
      history.replaceState(null, '', location.pathname + location.search);   // keep it out of the address bar
    }
    if (token) signIn(token);
    else render();
  });
})();
