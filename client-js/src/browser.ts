/** Browser entry point: the IndexedDB store and the native WebSocket. */
import { ImClient, type ClientOptions } from './client.js';
import type { State, Storage } from './storage.js';

export * from './index.js';

/**
 * State in one IndexedDB record, written in a transaction with `durability: "strict"`, so `save`
 * resolves only after the browser reports the commit as flushed.
 */
export class IndexedDbStorage implements Storage {
  private db: Promise<IDBDatabase> | null = null;

  constructor(readonly name: string, private readonly idb: IDBFactory = globalThis.indexedDB) {}

  private open(): Promise<IDBDatabase> {
    this.db ??= new Promise((resolve, reject) => {
      const req = this.idb.open(this.name, 1);
      req.onupgradeneeded = () => req.result.createObjectStore('state');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    return this.db;
  }

  async load(): Promise<State | null> {
    const db = await this.open();
    return new Promise((resolve, reject) => {
      const req = db.transaction('state', 'readonly').objectStore('state').get('state');
      req.onsuccess = () => resolve((req.result as State | undefined) ?? null);
      req.onerror = () => reject(req.error);
    });
  }

  async save(state: State): Promise<void> {
    const db = await this.open();
    const copy = JSON.parse(JSON.stringify(state)) as State;
    return new Promise((resolve, reject) => {
      const tx = db.transaction('state', 'readwrite', { durability: 'strict' });
      tx.objectStore('state').put(copy, 'state');
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }

  close(): void {
    void this.db?.then((d) => d.close());
    this.db = null;
  }
}

/** Opens a client with an {@link IndexedDbStorage} named `dbName` and the browser's WebSocket. */
export function openBrowserClient(options: Omit<ClientOptions, 'storage'> & { dbName: string }): Promise<ImClient> {
  const { dbName, ...rest } = options;
  return ImClient.open({ ...rest, storage: new IndexedDbStorage(dbName) });
}
