// @ts-check
// The configuration `nest new` writes (typescript-eslint's type-checked rules, Prettier as a rule),
// in ESM like the rest of the project.
import eslint from '@eslint/js';
import eslintPluginPrettierRecommended from 'eslint-plugin-prettier/recommended';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/',
      'coverage/',
      'reports/',
      '.stryker-tmp/',
      'data/',
      '.cluster/',
      'packages/client/src/petstore-api.ts',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  eslintPluginPrettierRecommended,
  {
    languageOptions: {
      globals: { ...globals.node, ...globals.jest },
      sourceType: 'module',
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    // @types/jest types the asymmetric matchers (expect.any, expect.stringContaining) as `any`, so
    // every `toEqual({ id: expect.any(Number) })` would be an unsafe assignment. The other no-unsafe
    // rules still hold in tests.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    // Plain JavaScript (configs, scripts) has no types to check against.
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
