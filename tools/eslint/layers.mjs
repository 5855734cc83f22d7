// The import-boundary rule (docs/ARCHITECTURE.md, "Layers"): three folders, three roles.
//   protocol/  what both threads agree on: imports nothing of src/ or workers/;
//   workers/   code that runs in a provider thread: imports protocol/ only;
//   src/       the front thread: imports protocol/, and workers/ only where the inline
//              session is started (INLINE_SESSION_START below), and the provider configs'
//              registry (PROVIDER_CONFIGS), which the config loader reads.
// A provider config (workers/providers/config.ts, configs.ts, <name>/config.ts) is read by
// both threads, so it loads nothing at run time: it imports only protocol/ and other provider
// configs, and packages (zod) only as types.
// Specifiers are resolved against the importing file, so `../../src/x.js` and
// `../src/x.js` are judged by where they land, not by how they are spelled.
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const INLINE_SESSION_START = 'src/supervisor/worker-pool.ts';
const PROVIDER_CONFIGS = 'workers/providers/configs.ts';
const isProviderConfig = (rel) => rel === 'workers/providers/config.ts' || rel === PROVIDER_CONFIGS || /^workers\/providers\/[^/]+\/config\.ts$/.test(rel);
/** A file's path from the root, as the source file it names (`x.js` in a specifier is `x.ts`). */
const relativeSource = (file) => path.relative(ROOT, file).split(path.sep).join('/').replace(/\.js$/, '.ts');

/** Which layers each layer may import, besides itself. */
const ALLOWED = {
  protocol: [],
  workers: ['protocol'],
  src: ['protocol'],
};

function layerOf(file) {
  const top = path.relative(ROOT, file).split(path.sep)[0];
  return top in ALLOWED ? top : null;
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'protocol/ imports nothing of src/ or workers/; workers/ imports protocol/ only; src/ imports workers/ only to start the inline session' },
    messages: {
      wrongWay: '{{from}}/ may not import {{to}}/ ({{spec}}): {{why}}',
      configLoads: 'a provider config may import only protocol/, other provider configs and types ({{spec}}): both threads read it, so it loads nothing at run time',
    },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const from = layerOf(file);
    if (from === null) return {};
    const config = isProviderConfig(relativeSource(file));
    const check = (node, spec, typeOnly = false) => {
      if (typeof spec !== 'string') return;
      if (!spec.startsWith('.')) {
        if (config && !typeOnly) context.report({ node, messageId: 'configLoads', data: { spec } });
        return;
      }
      const target = path.resolve(path.dirname(file), spec);
      const to = layerOf(target);
      if (config && !typeOnly && to !== 'protocol' && !isProviderConfig(relativeSource(target))) {
        context.report({ node, messageId: 'configLoads', data: { spec } });
        return;
      }
      if (to === null || to === from || ALLOWED[from].includes(to)) return;
      if (from === 'src' && to === 'workers' && relativeSource(file) === INLINE_SESSION_START) return;
      if (from === 'src' && to === 'workers' && relativeSource(target) === PROVIDER_CONFIGS) return;
      const why = from === 'protocol' ? 'protocol/ is shared by both threads and depends on neither'
        : from === 'workers' ? 'a worker thread shares only protocol/ with the front'
        : `only ${INLINE_SESSION_START} loads the worker session, to run it inline, and only ${PROVIDER_CONFIGS} is the config loader's`;
      context.report({ node, messageId: 'wrongWay', data: { from, to, spec, why } });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value, node.importKind === 'type' || (node.specifiers.length > 0 && node.specifiers.every((s) => s.importKind === 'type'))),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};

export default { rules: { layers: rule } };
