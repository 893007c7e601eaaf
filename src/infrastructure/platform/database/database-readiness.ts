import type { DataSource } from 'typeorm';
import { Readiness } from '../../../application/platform/readiness.js';
import { StoreUnavailableError } from '../../../application/platform/store-unavailable-error.js';
import { translateStoreErrors } from './store-errors.js';

/** Ready when the database answers `SELECT 1` through the service's own pool. */
export class DatabaseReadiness extends Readiness {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async check(): Promise<void> {
    if (!this.dataSource.isInitialized) throw new StoreUnavailableError();
    await translateStoreErrors(() => this.dataSource.query('SELECT 1'));
  }
}
