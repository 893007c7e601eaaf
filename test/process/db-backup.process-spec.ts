import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { removeEmbeddedPostgres } from '../support/embedded-postgres.js';
import { inheritedEnv, outputOf, readiness, startService } from '../support/process.js';
import { freePort } from '../support/server.js';

// `npm run db:backup` and `npm run db:restore` as they run after their build (node
// dist/src/db-backup.js, db-restore.js), on the embedded PostgreSQL in DATA_DIR: beside a service
// running on it (attached to its server, as npm run keys is), and into a new DATA_DIR.

const KEY = 'process-backup-key';

type Run = { code: number; stdout: string; stderr: string };

function tool(script: 'db-backup' | 'db-restore', dataDir: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [`dist/src/${script}.js`, ...args],
      { env: { ...inheritedEnv(), DATA_DIR: dataDir, API_KEYS: KEY }, encoding: 'utf8', timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr }),
    );
  });
}

describe('npm run db:backup and db:restore on the embedded database', () => {
  it('beside a running service: what was created after the backup is gone, new ids are above every id handed out, a kept cursor pages on, no restart', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-backup-'));
    const otherDataDir = await mkdtemp(path.join(tmpdir(), 'petstore-backup-new-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}/v1`;
    const headers = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
    const create = async (name: string): Promise<number> => {
      const response = await fetch(`${base}/pets`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name, categoryId: 1 }),
      });
      expect(response.status).toBe(201);
      return ((await response.json()) as { id: number }).id;
    };
    const walk = async (from: string): Promise<number[]> => {
      const ids: number[] = [];
      for (let next: string | null = from; next !== null;) {
        const response = await fetch(`http://127.0.0.1:${port}${next}`, { headers });
        expect(response.status).toBe(200);
        ids.push(...((await response.json()) as { id: number }[]).map((pet) => pet.id));
        next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
      }
      return ids;
    };
    const service = startService({ PORT: String(port), DATA_DIR: dataDir, API_KEYS: KEY, HOST: '127.0.0.1' });
    const output = outputOf(service);
    try {
      await readiness(port, output);
      const kept = [];
      for (let i = 1; i <= 5; i++) kept.push(await create(`kept ${i}`));
      const first = await fetch(`${base}/pets?limit=2`, { headers });
      const cursor = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1] ?? '';

      const backup = await tool('db-backup', dataDir);
      const file = /to (\S+\.backup)$/m.exec(backup.stdout)?.[1] ?? '';
      const lost = [];
      for (let i = 1; i <= 3; i++) lost.push(await create(`lost ${i}`));
      const restore = await tool('db-restore', dataDir, file);
      process.stdout.write(`db:backup: ${backup.stdout}${backup.stderr}db:restore: ${restore.stdout}${restore.stderr}`);

      expect(backup.code).toBe(0);
      expect(file.startsWith(path.join(dataDir, 'backups'))).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(restore.code).toBe(0);
      expect(restore.stdout).toMatch(/pets_id_seq continues above 8$/m);
      const created = await create('after the restore');
      expect(await walk('/v1/pets')).toEqual([...kept, created]);
      expect(created).toBeGreaterThan(Math.max(...lost));
      // The cursor from before the restore: the pets after it that were backed up, then the new one.
      expect(await walk(cursor)).toEqual([...kept.slice(2), created]);
      expect(service.exitCode).toBeNull();

      // Into a new DATA_DIR, no service running: its own server started and stopped, the schema
      // made by the migrations, then the rows.
      const elsewhere = await tool('db-restore', otherDataDir, file);
      expect(elsewhere).toMatchObject({ code: 0 });
      expect(elsewhere.stdout).toMatch(/^Restored .*pets 5/m);
      expect(elsewhere.stdout).toMatch(/pets_id_seq continues above 5$/m);
    } finally {
      service.kill('SIGKILL');
      await output.exit;
      await removeEmbeddedPostgres(dataDir);
      await removeEmbeddedPostgres(otherDataDir);
    }
  }, 240_000);

  it('refuses what it cannot do, saying why: a database with no table yet (3), no file given (2), a file that is not there (3)', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-backup-refused-'));
    try {
      const empty = await tool('db-backup', dataDir);
      const none = await tool('db-restore', dataDir);
      const missing = await tool('db-restore', dataDir, path.join(dataDir, 'none.backup'));
      expect(empty.code).toBe(3);
      expect(empty.stdout).toContain('Refused: the database holds no table yet');
      expect(none.code).toBe(2);
      expect(none.stdout).toContain('Error: no backup file given');
      expect(missing.code).toBe(3);
      expect(missing.stdout).toContain('none.backup does not exist');
    } finally {
      await removeEmbeddedPostgres(dataDir);
    }
  }, 120_000);
});
