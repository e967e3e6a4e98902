/** Node entry point: the file store with fsync and the `ws` WebSocket. */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { WebSocket as NodeWebSocket } from 'ws';
import { ImClient, type ClientOptions } from './client.js';
import type { State, Storage } from './storage.js';

export * from './index.js';

/**
 * State in one JSON file, replaced atomically: written to a temporary file, fsynced, renamed over the
 * old one, then the directory is fsynced, so a crash leaves either the old or the new state, never a torn one.
 */
export class FileStorage implements Storage {
  constructor(readonly file: string) {}

  async load(): Promise<State | null> {
    try {
      return JSON.parse(await fs.readFile(this.file, 'utf8')) as State;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async save(state: State): Promise<void> {
    const dir = path.dirname(this.file);
    await fs.mkdir(dir, { recursive: true });
    const tmp = `${this.file}.tmp`;
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify(state));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, this.file);
    const d = await fs.open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  }
}

/** Opens a client with a {@link FileStorage} at `file` and the `ws` package's WebSocket. */
export function openNodeClient(options: Omit<ClientOptions, 'storage' | 'webSocket'> & { file: string }): Promise<ImClient> {
  const { file, ...rest } = options;
  return ImClient.open({ ...rest, storage: new FileStorage(file), webSocket: NodeWebSocket as unknown as ClientOptions['webSocket'] });
}
