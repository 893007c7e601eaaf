import { Controller, Get } from '@nestjs/common';
import { Public } from './api-key.guard.js';

@Controller('healthz')
export class HealthController {
  @Public()
  @Get()
  check(): { status: string } {
    return { status: 'ok' };
  }
}
