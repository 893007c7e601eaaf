import {
  type ApiKeyInfo,
  ApiKeys,
  type IssuedApiKey,
  type RevokeResult,
} from '../../src/application/access/api-keys.js';

/** An honest fake of ApiKeys: issues numbered keys, keeps them, revokes them. */
export class InMemoryApiKeys extends ApiKeys {
  private readonly keys: (ApiKeyInfo & { key: string })[] = [];

  identify(key: string): Promise<string | null> {
    const stored = this.keys.find((candidate) => candidate.key === key && candidate.revokedAt === null);
    return Promise.resolve(stored === undefined ? null : `caller-${stored.id}`);
  }

  recognise(): string | null {
    return null;
  }

  issue(label: string): Promise<IssuedApiKey> {
    const issued = {
      id: this.keys.length + 1,
      label,
      key: `key-${this.keys.length + 1}`,
      createdAt: new Date('2026-11-21T00:00:00Z'),
      revokedAt: null,
    };
    this.keys.push(issued);
    return Promise.resolve({ id: issued.id, label, key: issued.key });
  }

  list(): Promise<ApiKeyInfo[]> {
    return Promise.resolve(
      this.keys.map(({ id, label, createdAt, revokedAt }) => ({ id, label, createdAt, revokedAt })),
    );
  }

  revoke(id: number): Promise<RevokeResult> {
    const key = this.keys.find((stored) => stored.id === id);
    if (key === undefined) return Promise.resolve('not_found');
    if (key.revokedAt !== null) return Promise.resolve('already_revoked');
    key.revokedAt = new Date('2026-11-22T00:00:00Z');
    return Promise.resolve('revoked');
  }

  hasUsableKey(): Promise<boolean> {
    return Promise.resolve(this.keys.some((key) => key.revokedAt === null));
  }

  async issueIfNone(label: string): Promise<IssuedApiKey | null> {
    return (await this.hasUsableKey()) ? null : this.issue(label);
  }
}
