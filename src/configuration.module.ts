import { Global, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { EnvironmentVariables } from './infrastructure/platform/config/environment-variables.js';
import { configOf, petstoreConfig, validateEnvironment } from './infrastructure/platform/config.js';

/**
 * The configuration, for every module: @nestjs/config checks the environment once, as
 * EnvironmentVariables (its `validate`), and the typed Config is shaped from what it validated.
 * .env is read by readEnvFile() (main.ts), not by ConfigModule: one reader for every entry point.
 * skipProcessEnv: a variable the check left unset (blank) reads as unset, not as its raw text.
 */
@Global()
@Module({
  imports: [ConfigModule.forRoot({ ignoreEnvFile: true, skipProcessEnv: true, validate: validateEnvironment })],
  providers: [
    {
      provide: petstoreConfig.KEY,
      inject: [ConfigService],
      useFactory: (env: ConfigService<EnvironmentVariables, true>) =>
        configOf((name) => env.get(name, { infer: true }), process.stdout.isTTY),
    },
  ],
  exports: [petstoreConfig.KEY],
})
export class ConfigurationModule {}
