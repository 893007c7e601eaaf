import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AppModule as ObviousAppModule } from '../obvious-nest/app.module.js';

/** The obvious app's module, with nestjs-pino's request log at its defaults (a JSON line per request, to stdout). */
@Module({ imports: [LoggerModule.forRoot(), ObviousAppModule] })
export class AppModule {}
