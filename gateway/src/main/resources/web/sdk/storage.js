// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
export function emptyState() {
    return { outbox: [], events: {}, cursors: {}, failed: [] };
}
/** A store in memory: nothing survives the process. For tests and throw-away clients. */
export class MemoryStorage {
    json = null;
    async load() {
        return this.json === null ? null : JSON.parse(this.json);
    }
    async save(state) {
        this.json = JSON.stringify(state);
    }
}
