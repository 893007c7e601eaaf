import { readlink, rm } from 'node:fs/promises';
import path from 'node:path';

/** Deletes DATA_DIR and the cluster it holds, also where that lives outside it (as root). */
export async function removeEmbeddedPostgres(dataDir: string): Promise<void> {
  const link = path.join(path.resolve(dataDir), 'postgres');
  const cluster = await readlink(link).catch(() => null);
  if (cluster !== null) await rm(path.resolve(path.dirname(link), cluster), { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
}
