import {
  BackupRefusedError,
  type BackupRestored,
  type BackupWritten,
  DatabaseBackups,
} from '../../../../src/application/platform/database-backups.js';
import { runBackupCommand, runRestoreCommand } from '../../../../src/interface/cli/backup-cli.js';

/** Records what it was asked; refuses a restore of `refused`. */
class FakeBackups extends DatabaseBackups {
  written: string[] = [];
  restored: string[] = [];

  write(file: string): Promise<BackupWritten> {
    this.written.push(file);
    return Promise.resolve({ file, tables: [{ table: 'pets', rows: 3 }], migrations: 6 });
  }

  restore(file: string): Promise<BackupRestored> {
    if (file === 'refused') return Promise.reject(new BackupRefusedError('refused.backup does not exist'));
    this.restored.push(file);
    return Promise.resolve({
      tables: [{ table: 'pets', rows: 3 }],
      sequences: [
        { sequence: 'pets_id_seq', above: 8 },
        { sequence: 'api_keys_id_seq', above: 0 },
      ],
    });
  }
}

async function run(
  command: 'backup' | 'restore',
  args: string[],
  backups = new FakeBackups(),
): Promise<{ code: number; output: string[]; backups: FakeBackups }> {
  const output: string[] = [];
  const print = (line: string): number => output.push(line);
  const code =
    command === 'backup'
      ? await runBackupCommand(args, backups, 'data/backups', new Date('2026-12-01T10:00:00.123Z'), print)
      : await runRestoreCommand(args, backups, print);
  return { code, output, backups };
}

describe('npm run db:backup', () => {
  it('writes to a new file under DATA_DIR/backups named after the time, or to the file given', async () => {
    const byDefault = await run('backup', []);
    const named = await run('backup', ['mine.backup']);

    expect(byDefault.backups.written).toEqual(['data/backups/petstore-2026-12-01T10-00-00-123Z.backup']);
    expect(named.backups.written).toEqual(['mine.backup']);
    expect(named.code).toBe(0);
    expect(named.output[0]).toBe('Backed up 1 tables after 6 migrations (pets 3) to mine.backup');
  });

  it('refuses options and more than one file, with the usage', async () => {
    for (const args of [['--all'], ['a', 'b']]) {
      const { code, output, backups } = await run('backup', args);
      expect(code).toBe(2);
      expect(output.join('\n')).toContain('Usage:');
      expect(backups.written).toEqual([]);
    }
  });
});

describe('npm run db:restore', () => {
  it('restores the file given and says where each id sequence continues', async () => {
    const { code, output, backups } = await run('restore', ['one.backup']);

    expect(code).toBe(0);
    expect(backups.restored).toEqual(['one.backup']);
    expect(output).toEqual([
      'Restored one.backup: pets 3',
      'pets_id_seq continues above 8',
      'api_keys_id_seq: no id handed out yet',
    ]);
  });

  it('needs exactly one file (2); a refusal is printed with its reason (3)', async () => {
    expect((await run('restore', [])).code).toBe(2);
    expect((await run('restore', ['a', 'b'])).code).toBe(2);
    const refused = await run('restore', ['refused']);
    expect(refused.code).toBe(3);
    expect(refused.output).toEqual(['Refused: refused.backup does not exist']);
  });
});
