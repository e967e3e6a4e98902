// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/** Browser entry point: the IndexedDB store and the native WebSocket. */
import { ImClient } from './client.js';
export * from './index.js';
/**
 * State in one IndexedDB record, written in a transaction with `durability: "strict"`, so `save`
 * resolves only after the browser reports the commit as flushed.
 */
export class IndexedDbStorage {
    name;
    idb;
    db = null;
    constructor(name, idb = globalThis.indexedDB) {
        this.name = name;
        this.idb = idb;
    }
    open() {
        this.db ??= new Promise((resolve, reject) => {
            const req = this.idb.open(this.name, 1);
            req.onupgradeneeded = () => req.result.createObjectStore('state');
            req.onsuccess = () => resolve(req.result);
            req.onerror = () => reject(req.error);
        });
        return this.db;
    }
    async load() {
        const db = await this.open();
        return new Promise((resolve, reject) => {
            const req = db.transaction('state', 'readonly').objectStore('state').get('state');
            req.onsuccess = () => resolve(req.result ?? null);
            req.onerror = () => reject(req.error);
        });
    }
    async save(state) {
        const db = await this.open();
        const copy = JSON.parse(JSON.stringify(state));
        return new Promise((resolve, reject) => {
            const tx = db.transaction('state', 'readwrite', { durability: 'strict' });
            tx.objectStore('state').put(copy, 'state');
            tx.oncomplete = () => resolve();
            tx.onerror = () => reject(tx.error);
            tx.onabort = () => reject(tx.error);
        });
    }
    close() {
        void this.db?.then((d) => d.close());
        this.db = null;
    }
}
/** Opens a client with an {@link IndexedDbStorage} named `dbName` and the browser's WebSocket. */
export function openBrowserClient(options) {
    const { dbName, ...rest } = options;
    return ImClient.open({ ...rest, storage: new IndexedDbStorage(dbName) });
}
