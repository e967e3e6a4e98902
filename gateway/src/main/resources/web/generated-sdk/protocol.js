// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/** Wire frames, limits and error codes of docs/protocol.md (and docs/asyncapi.yaml). */
export const Limits = {
    MAX_FRAME_BYTES: 65_536,
    MAX_BODY_BYTES: 16_384,
    MAX_SEQ: Number.MAX_SAFE_INTEGER,
    SYNC_DEFAULT_LIMIT: 100,
    SYNC_MAX_LIMIT: 500,
    SUB_DEFAULT_LIMIT: 500,
    SUB_MAX_LIMIT: 1000,
    CATCHUP_DEFAULT_LIMIT: 500,
    CATCHUP_MAX_LIMIT: 1000,
    /** Seqs one `receipts` request may ask about. */
    RECEIPTS_MAX_SEQS: 100,
    /** The SDK writes at most one `typing` per conversation in this window (the gateway's default throttle). */
    TYPING_EVERY_MS: 2000,
    /** How long to show "… is typing" after a `typing` push, unless a message of that user arrives first. */
    TYPING_SHOW_MS: 6000,
};
/** Codes after which the same request may succeed unchanged; INTERNAL only a bounded number of times. */
export const RETRIABLE = new Set(['RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL']);
/** Codes after which the server closes the socket; reconnecting with the same token is pointless. */
export const CLOSES = { BAD_TOKEN: 4001, STALE_INSTALL: 4003, REPLACED: 4009 };
/** An error frame's code and message; `retriable` per the protocol's table. */
export class ImError extends Error {
    code;
    /**
     * A server code, or the client's own: `TIMEOUT` (no reply), `CLOSED` (not connected), `STORAGE` (the local store
     * failed), `TLS` (the gateway's certificate was not accepted: not signed by a trusted CA, expired, or for another host).
     */
    constructor(code, message) {
        super(`${code}: ${message}`);
        this.code = code;
        this.name = 'ImError';
    }
    get retriable() {
        return RETRIABLE.has(this.code) || this.code === 'TIMEOUT' || this.code === 'CLOSED';
    }
}
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Refuses locally what the server would refuse as terminal (empty, NUL, too large). */
export function checkBody(body) {
    if (typeof body !== 'string' || body.length === 0)
        throw new ImError('BAD_FIELD', 'body: must be a non-empty string');
    if (body.includes('\u0000'))
        throw new ImError('BAD_FIELD', 'body: must not contain U+0000');
    if (LONE_SURROGATE.test(body))
        throw new ImError('BAD_UTF8', 'body: not well-formed Unicode');
    if (new TextEncoder().encode(body).length > Limits.MAX_BODY_BYTES) {
        throw new ImError('BODY_TOO_LARGE', `body: over ${Limits.MAX_BODY_BYTES} UTF-8 bytes`);
    }
}
/**
 * Parses a server frame; returns null for a frame this client does not know (ignored, as the protocol says). An
 * `edit` or `recall` event whose `ref` is not a seq below its own is dropped (a pushed one: the frame is null). The
 * read-state frames are checked strictly: a `readack` or `unread` whose `conv` is not a string or whose `read`,
 * `unread` or `head` is not an integer 0 … MAX_SEQ is dropped (null), and so is a `subbed` entry's read state
 * (`read`, `unread`: both or neither) when it is not such a pair; so is a `typing` push without a string `conv` and
 * `user`, and a `receipts` reply whose entries are not all receipts (five integers 0 … MAX_SEQ). Unknown fields are
 * ignored.
 */
export function parseServerFrame(text) {
    let f;
    try {
        f = JSON.parse(text);
    }
    catch {
        return null;
    }
    if (typeof f !== 'object' || f === null)
        return null;
    const t = f.t;
    if (!KNOWN.has(t))
        return null;
    const o = f;
    if (t === 'readack' || t === 'unread') {
        if (typeof o.conv !== 'string' || !isSeq(o.read) || !isSeq(o.unread) || !isSeq(o.head))
            return null;
        if (t === 'readack' && typeof o.rid !== 'string')
            return null;
    }
    else if (t === 'typing') {
        if (typeof o.conv !== 'string' || typeof o.user !== 'string' || o.rid !== undefined)
            return null;
    }
    else if (t === 'receipts') {
        if (typeof o.rid !== 'string' || typeof o.conv !== 'string' || !Array.isArray(o.receipts) || !o.receipts.every(isReceipt))
            return null;
    }
    else if (t === 'event') {
        if (!validChange(o.ev))
            return null;
    }
    else if ((t === 'synced' || t === 'caughtup') && Array.isArray(o.events)) {
        o.events = o.events.filter(validChange); // an edit or recall without its ref changes nothing
    }
    else if (t === 'subbed' && Array.isArray(o.convs)) {
        for (const c of o.convs) {
            if (typeof c !== 'object' || c === null || (c.read === undefined && c.unread === undefined))
                continue;
            if (!isSeq(c.read) || !isSeq(c.unread)) { // not a read state: the entry is kept without one
                delete c.read;
                delete c.unread;
            }
        }
    }
    return f;
}
/** An event that is not an edit or recall, or one whose `ref` is a seq below its own. */
function validChange(e) {
    if (typeof e !== 'object' || e === null)
        return false;
    const ev = e;
    if (ev.kind !== 'edit' && ev.kind !== 'recall')
        return true;
    return isSeq(ev.ref) && isSeq(ev.seq) && ev.ref < ev.seq;
}
const KNOWN = new Set(['authed', 'sent', 'acked', 'readack', 'unread', 'subbed', 'synced', 'caughtup', 'event', 'hint', 'receipts',
    'typing', 'error']);
function isReceipt(r) {
    if (typeof r !== 'object' || r === null)
        return false;
    const o = r;
    return isSeq(o.seq) && isSeq(o.members) && isSeq(o.read) && isSeq(o.devices) && isSeq(o.delivered);
}
/** A JSON integer 0 … MAX_SEQ (a seq, a cursor, a count). */
function isSeq(x) {
    return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}
