/**
 * `npm run lint` fails when a source file of src/ is over 350 lines, or a function there has over
 * 100 lines of its own (docs/decisions/030-command-type-table.md). "Its own" leaves out the
 * functions nested in it: a factory that returns five 40-line methods is five functions of 40
 * lines and a short one around them, not one of 210. ESLint's max-lines-per-function counts nested
 * functions in, which would push such factories apart for no reader's benefit.
 *
 *   tsx scripts/check-size-limits.ts          # fails and names every file and function over
 *   tsx scripts/check-size-limits.ts --report # also prints the ten longest functions
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export const MAX_FILE_LINES = 350;
export const MAX_FUNCTION_LINES = 100;

/**
 * Files allowed to be longer, each with its own limit and the reason. The guard's state machine
 * is one table read top to bottom (issue 40: "allowed to be as long as its table needs"): split
 * over seven files to meet 350 lines, its rules were cut apart from the vocabulary and policy they
 * share. Its functions still meet MAX_FUNCTION_LINES.
 */
export const LONGER_FILES: Record<string, number> = {
  'src/guard/machine/guard-machine.ts': 1100,
};

export interface FunctionSize {
  file: string;
  name: string;
  line: number;
  ownLines: number;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.(ts|js)$/.test(entry) && !entry.endsWith('.d.ts') ? [full] : [];
  });
}

function isFunctionLike(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

function nameOf(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText(source);
  return '(anonymous)';
}

/** Every function of `file` with the lines of its body that no nested function covers. */
export function functionSizes(file: string, text = readFileSync(file, 'utf8')): FunctionSize[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const sizes: FunctionSize[] = [];
  const measure = (fn: ts.FunctionLikeDeclaration): void => {
    const first = lineOf(fn.getStart(source));
    const last = lineOf(fn.getEnd());
    const covered = new Set<number>();
    const nested = (node: ts.Node): void => {
      if (isFunctionLike(node)) {
        // The nested function's first line also holds the outer code that calls or names it.
        for (let l = lineOf(node.getStart(source)) + 1; l <= lineOf(node.getEnd()); l += 1) covered.add(l);
        measure(node);
        return;
      }
      ts.forEachChild(node, nested);
    };
    ts.forEachChild(fn, nested);
    sizes.push({
      file,
      name: nameOf(fn, source),
      line: first + 1,
      ownLines: last - first + 1 - covered.size,
    });
  };
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node)) measure(node);
    else ts.forEachChild(node, visit);
  };
  visit(source);
  return sizes;
}

function main(): void {
  const files = sourceFiles('src');
  const problems: string[] = [];
  const all: FunctionSize[] = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n').length;
    const limit = LONGER_FILES[file] ?? MAX_FILE_LINES;
    if (lines > limit) problems.push(`${file}: ${lines} lines (at most ${limit})`);
    for (const fn of functionSizes(file)) {
      all.push(fn);
      if (fn.ownLines > MAX_FUNCTION_LINES) {
        problems.push(
          `${fn.file}:${fn.line} ${fn.name}: ${fn.ownLines} lines of its own (at most ${MAX_FUNCTION_LINES})`,
        );
      }
    }
  }
  if (process.argv.includes('--report')) {
    console.log('longest functions (lines of their own):');
    for (const fn of all.sort((a, b) => b.ownLines - a.ownLines).slice(0, 10)) {
      console.log(`  ${String(fn.ownLines).padStart(4)}  ${fn.file}:${fn.line} ${fn.name}`);
    }
  }
  if (problems.length > 0) {
    console.error(`size limits (scripts/check-size-limits.ts):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
