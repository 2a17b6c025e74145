/**
 * `npm run lint` fails on an import cycle (docs/decisions/017-composition-root.md): between files
 * of src/ and consumers/ (type-only imports included: a cycle of types is a cycle of design), and
 * between folders (src/<folder> with its subfolders, consumers/, and each file directly in src/).
 */
import path from 'node:path';
import { parseCircular, parseDependencyTree, shortenTree } from 'dpdm';

const ENTRIES = ['src/**/*.ts', 'consumers/**/*.ts'];

/** The folder a file belongs to: `src/guard/x.ts` → `src/guard`; `src/errors.ts` stays itself. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length <= 2 ? file : parts.slice(0, 2).join('/');
}

/** Strongly connected components of more than one folder (Tarjan). */
function folderCycles(edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!indices.has(v)) visit(v);
  return found;
}

const cwd = process.cwd();
const tree = shortenTree(
  cwd,
  await parseDependencyTree(ENTRIES, {
    context: cwd,
    transform: false,
    tsconfig: path.join(cwd, 'tsconfig.json'),
  }),
);
const problems: string[] = [];

for (const cycle of parseCircular(tree)) problems.push(`files: ${[...cycle, cycle[0]].join(' -> ')}`);

const edges = new Map<string, Set<string>>();
const examples = new Map<string, string>();
for (const [file, deps] of Object.entries(tree)) {
  if (!deps || file.startsWith('node_modules/')) continue;
  const from = folderOf(file);
  for (const dep of deps) {
    if (!dep.id || dep.id.startsWith('node_modules/') || !/^(src|consumers)\//.test(dep.id)) continue;
    const to = folderOf(dep.id);
    if (to === from) continue;
    if (!edges.has(from)) edges.set(from, new Set());
    edges.get(from)!.add(to);
    if (!examples.has(`${from} ${to}`)) examples.set(`${from} ${to}`, `${file} imports ${dep.id}`);
  }
}
for (const component of folderCycles(edges)) {
  const inside = new Set(component);
  const through = [...examples]
    .filter(([key]) => {
      const [from, to] = key.split(' ');
      return inside.has(from!) && inside.has(to!);
    })
    .map(([, example]) => `    ${example}`);
  problems.push(`folders: ${component.join(', ')} import each other:\n${through.join('\n')}`);
}

if (problems.length > 0) {
  console.error(`import cycles:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(
  `no import cycles among ${Object.keys(tree).filter((f) => !f.startsWith('node_modules/')).length} files`,
);
