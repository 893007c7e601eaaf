import {
  type CanActivate,
  type ExecutionContext,
  Injectable,
  SetMetadata,
  UnauthorizedException,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';

const IS_PUBLIC = 'isPublic';
/** A route that needs no key. */
export const Public = () => SetMetadata(IS_PUBLIC, true);

/** Every route needs `Authorization: Bearer <key>` with a key from API_KEYS (comma-separated). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly keys: string[];

  constructor(
    private readonly reflector: Reflector,
    config: ConfigService,
  ) {
    this.keys = config.get<string>('API_KEYS', '').split(',');
  }

  canActivate(context: ExecutionContext): boolean {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const [type, key] = context.switchToHttp().getRequest<Request>().headers.authorization?.split(' ') ?? [];
    if (type !== 'Bearer' || !key || !this.keys.includes(key)) throw new UnauthorizedException('Invalid API key');
    return true;
  }
}
