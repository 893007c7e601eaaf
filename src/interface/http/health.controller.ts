import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Readiness } from '../../application/readiness.js';
import { Public } from './bearer-key.guard.js';

/** Outside /v1, no key. /healthz: the process is up. /readyz: the database answers (else 503 unavailable). */
@Public()
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(private readonly readiness: Readiness) {}

  @Get('healthz')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  async ready(): Promise<{ status: 'ok' }> {
    await this.readiness.check();
    return { status: 'ok' };
  }
}
