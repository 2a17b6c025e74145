import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.kafka/', 'coverage/', 'test-artifacts/', 'docs/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error'] }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Layers (docs/decisions/017-composition-root.md): the Partner client, the guard and the event
    // schemas never reach up into the HTTP face, the CLI, the ops API or the composition root.
    files: ['src/partner/**', 'src/guard/**', 'src/contracts/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/http/*',
                '**/cli/*',
                '**/cli/**',
                '**/ops/*',
                '**/ops/**',
                '**/app/*',
                '**/runtime.js',
              ],
              message:
                'partner, guard and events are lower layers: no imports of http, cli, ops or the composition root',
            },
          ],
        },
      ],
    },
  },
  {
    // One producer construction site (issue 26): every Kafka producer of src/ is made by
    // src/kafka/shared-producer.ts (idempotent, one request in flight, the recording partitioner).
    files: ['src/**/*.ts'],
    ignores: ['src/kafka/shared-producer.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.property.name='producer'][callee.object.name=/kafka/i], CallExpression[callee.property.name='producer'][callee.object.property.name=/kafka/i]",
          message: 'make Kafka producers with createSharedProducer (src/kafka/shared-producer.ts)',
        },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**', 'scripts/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
);
