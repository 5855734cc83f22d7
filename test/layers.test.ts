/**
 * The import-boundary rule (tools/eslint/layers.mjs) judged on sample files: it must fail on
 * every wrong-way import and pass the ones the layers allow. `npm test` lints the real tree.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: process.cwd() });

async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'switchyard/layers').map((m) => m.message);
}

describe('import boundaries', () => {
  it.each([
    ['protocol/x.ts', "import { ERRORS } from '../src/front/http.js';\nexport { ERRORS };\n", 'protocol/ may not import src/'],
    ['protocol/x.ts', "export * from '../workers/session.js';\n", 'protocol/ may not import workers/'],
    ['workers/x.ts', "import { send } from '../src/front/http.js';\nexport { send };\n", 'workers/ may not import src/'],
    ['workers/providers/x.ts', "import { VERSION } from '../../src/index.js';\nexport { VERSION };\n", 'workers/ may not import src/'],
    ['src/front/x.ts', "import { WorkerSession } from '../../workers/session.js';\nexport { WorkerSession };\n", 'src/ may not import workers/'],
    ['src/front/x.ts', "export const load = () => import('../../workers/session.js');\n", 'src/ may not import workers/'],
    ['src/config/x.ts', "import { azureConfig } from '../../workers/providers/azure/config.js';\nexport { azureConfig };\n", 'src/ may not import workers/'],
    ['workers/providers/azure/config.ts', "import { z } from 'zod';\nexport const s = z.string();\n", 'a provider config may import only'],
    ['workers/providers/azure/config.ts', "import { httpAttempt } from '../http-attempt.js';\nexport { httpAttempt };\n", 'a provider config may import only'],
  ])('%s: %s is refused', async (file, code, message) => {
    expect(await layerErrors(file, code)).toEqual([expect.stringContaining(message)]);
  });

  it.each([
    ['protocol/x.ts', "import { ERRORS } from './errors.js';\nexport { ERRORS };\n"],
    ['workers/providers/x.ts', "import { ERRORS } from '../../protocol/errors.js';\nexport { ERRORS };\n"],
    ['src/front/x.ts', "import { ERRORS } from '../../protocol/errors.js';\nexport { ERRORS };\n"],
    ['src/supervisor/worker-pool.ts', "export const load = () => import('../../workers/session.js');\n"],
    ['test/x.test.ts', "import { WorkerSession } from '../workers/session.js';\nexport { WorkerSession };\n"],
    ['src/config/x.ts', "import { PROVIDER_CONFIGS } from '../../workers/providers/configs.js';\nexport { PROVIDER_CONFIGS };\n"],
    ['workers/providers/azure/config.ts', "import type { z } from 'zod';\nimport { apiVersionParam } from '../config.js';\nexport type Z = typeof z;\nexport { apiVersionParam };\n"],
  ])('%s: %s is allowed', async (file, code) => {
    expect(await layerErrors(file, code)).toEqual([]);
  });
});
