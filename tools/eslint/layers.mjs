// The import-boundary rule (docs/ARCHITECTURE.md, "Layers"): three folders, three roles.
//   protocol/  what both threads agree on: imports nothing of src/ or workers/;
//   workers/   code that runs in a provider thread: imports protocol/ only;
//   src/       the front thread: imports protocol/, and workers/ only where the inline
//              session is started (INLINE_SESSION_START below).
// Specifiers are resolved against the importing file, so `../../src/x.js` and
// `../src/x.js` are judged by where they land, not by how they are spelled.
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const INLINE_SESSION_START = 'src/supervisor/worker-pool.ts';

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
    messages: { wrongWay: '{{from}}/ may not import {{to}}/ ({{spec}}): {{why}}' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const from = layerOf(file);
    if (from === null) return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const to = layerOf(path.resolve(path.dirname(file), spec));
      if (to === null || to === from || ALLOWED[from].includes(to)) return;
      if (from === 'src' && to === 'workers' && path.relative(ROOT, file) === INLINE_SESSION_START) return;
      const why = from === 'protocol' ? 'protocol/ is shared by both threads and depends on neither'
        : from === 'workers' ? 'a worker thread shares only protocol/ with the front'
        : `only ${INLINE_SESSION_START} loads the worker session, to run it inline`;
      context.report({ node, messageId: 'wrongWay', data: { from, to, spec, why } });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};

export default { rules: { layers: rule } };
