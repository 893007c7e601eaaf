import type { OnModuleInit } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';

/**
 * TRUSTED_PROXIES as Express's `trust proxy`: `request.ip` (what the failed-authentication limit
 * counts by) is then the address a trusted proxy put in X-Forwarded-For, read from the right and
 * stopping at the first address not trusted, so a client cannot forge its way past the balancer's
 * entry. Nothing listed: Express's default, the socket's peer, and no header is believed.
 * Set when the module initialises: the testing module has no HTTP adapter before then.
 */
export class TrustedProxies implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly addresses: string[],
  ) {}

  onModuleInit(): void {
    if (this.addresses.length === 0) return;
    const express: unknown = this.adapterHost.httpAdapter?.getInstance();
    if (typeof express !== 'function' || !('set' in express) || typeof express.set !== 'function') throw new Error('TRUSTED_PROXIES needs the Express adapter');
    express.set('trust proxy', this.addresses);
  }
}
