import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ApiKeys } from '../../application/access/api-keys.js';

export type FirstRunKeyOptions = {
  /** The embedded database: a developer's machine, where the terminal is the place to show the key. */
  embedded: boolean;
  /** Where a key for a server database is written instead (never into the log stream). */
  dataDir: string;
  /** One log line; it never carries the key. */
  log: (line: string) => void;
  print?: (text: string) => void;
};

/**
 * No key anywhere (no API_KEYS, none stored): issue one so that a first run works, and show it
 * once. On the embedded database it is printed to the terminal. On a server database stdout is a
 * production log stream, so the key goes to a file only its owner can read, and the log says where.
 */
export async function announceFirstRunKey(apiKeys: ApiKeys, options: FirstRunKeyOptions): Promise<void> {
  // One step in the store: of instances starting at once on an empty store, one issues the key.
  const issued = await apiKeys.issueIfNone('first run');
  if (issued === null) return;
  const { id, key } = issued;
  if (options.embedded) {
    const print = options.print ?? ((text: string) => process.stdout.write(text));
    print(
      `No API key existed, so key ${id} was issued and stored (as a hash). It is shown this once:\n  API key: ${key}\n` +
        'Manage keys with: npm run keys -- issue --label NAME | list | revoke ID\n',
    );
    return;
  }
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const file = path.resolve(options.dataDir, `first-run-api-key-${id}`);
  // 'wx': never overwrite; mode 0600 from the start, never readable by anyone else.
  await writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  options.log(
    `No API key existed, so key ${id} was issued; it is in ${file} (mode 0600): read it, then delete the file`,
  );
}
