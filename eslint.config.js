// Lint: typescript-eslint's recommended rules, and the import-boundary rule between the
// three layers (tools/eslint/layers.mjs). `npm test` runs it with the type check.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import switchyard from './tools/eslint/layers.mjs';

export default tseslint.config(
  { ignores: ['dist/**', 'dist-builds/**', 'node_modules/**', 'loadtest/profiles/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    plugins: { switchyard },
    rules: {
      'switchyard/layers': 'error',
      // `_name` marks a value kept for its position or left out of a rest copy on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  // Tests read arbitrary JSON off the wire and poke at it.
  { files: ['**/*.test.ts', 'test/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
  // k6 scripts run in k6's runtime, not node's.
  { files: ['loadtest/k6/**'], languageOptions: { globals: { __ENV: 'readonly', __VU: 'readonly', __ITER: 'readonly' } } },
  { files: ['tools/stubs/**'], languageOptions: { sourceType: 'commonjs', globals: globals.commonjs } },
  // A --require preload (Node runs those, not --import ones, in worker threads too) is CommonJS by necessity.
  { files: ['test/support/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: globals.commonjs }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
