import { type ApiKeyInfo, ApiKeys, type IssuedApiKey, type RevokeResult } from '../../src/application/api-keys.js';

/** An honest fake of ApiKeys: issues numbered keys, keeps them, revokes them. */
export class InMemoryApiKeys extends ApiKeys {
  private readonly keys: (ApiKeyInfo & { key: string })[] = [];

  async identify(key: string): Promise<string | null> {
    const stored = this.keys.find((candidate) => candidate.key === key && candidate.revokedAt === null);
    return stored === undefined ? null : `caller-${stored.id}`;
  }

  recognise(): string | null {
    return null;
  }

  async issue(label: string): Promise<IssuedApiKey> {
    const issued = {
      id: this.keys.length + 1,
      label,
      key: `key-${this.keys.length + 1}`,
      createdAt: new Date('2026-11-21T00:00:00Z'),
      revokedAt: null,
    };
    this.keys.push(issued);
    return { id: issued.id, label, key: issued.key };
  }

  async list(): Promise<ApiKeyInfo[]> {
    return this.keys.map(({ id, label, createdAt, revokedAt }) => ({ id, label, createdAt, revokedAt }));
  }

  async revoke(id: number): Promise<RevokeResult> {
    const key = this.keys.find((stored) => stored.id === id);
    if (key === undefined) return 'not_found';
    if (key.revokedAt !== null) return 'already_revoked';
    key.revokedAt = new Date('2026-11-22T00:00:00Z');
    return 'revoked';
  }

  async hasUsableKey(): Promise<boolean> {
    return this.keys.some((key) => key.revokedAt === null);
  }

  async issueIfNone(label: string): Promise<IssuedApiKey | null> {
    return (await this.hasUsableKey()) ? null : this.issue(label);
  }
}
