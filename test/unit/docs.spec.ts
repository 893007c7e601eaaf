import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { propertyOf } from '../../src/infrastructure/platform/property-of.js';

// The docs name only what exists. In README.md, packages/client/README.md and docs/*.md, what is
// written between backticks is checked:
// - a path (`src/...`, `test/...`, `deploy/...`, a bare `pet.dto.ts`): a file or folder of the
//   repository; a glob or `{a,b}` matches one, a `<placeholder>` stands for a file a command writes
//   (its folder must exist);
// - an npm script (`npm run x`, `npm test`, also in code blocks): the root package.json's, or the
//   client's with `--workspace @petstore/client`;
// - a name shaped like an identifier (`TypeOrmPetRepository`, `newPet()`, `PET_ERRORS`): declared
//   in this repository's code (what its TypeScript and JavaScript declare, and the environment
//   variables it reads; any word of docs/openapi.json, deploy/, the shell, SQL and Lua scripts, the
//   Dockerfile), or in the type declarations of a package we depend on directly; else it is one
//   of the few in ELSEWHERE.

/** Not the repository's own files: installed, generated or local. */
const NOT_OURS = new Set(['.git', 'node_modules', 'dist', 'data', 'coverage', 'reports', '.stryker-tmp', '.cluster']);
/** The layer rules' fixture: a tree that breaks them on purpose, with files and names of no real code. */
const FIXTURE = 'test/fixtures/';
const TOP_FOLDERS = ['src', 'test', 'scripts', 'bench', 'deploy', 'docs', 'tools', 'packages'];
const FILE_NAME = /^[\w.<>*@-]+\.(ts|mts|mjs|js|cjs|json|md|ya?ml|sql|sh|lua|cfg|svg|png|html)$/;
/** Our code that is not TypeScript or JavaScript, read as words (`run`: .ci/run, a shell script). */
const OTHER_CODE =
  /^deploy\/|^docs\/openapi\.json$|\.(sh|sql|lua|cfg|ya?ml)$|(^|\/)(Dockerfile|Containerfile|\.env\.example|run)$/;

const ENVIRONMENT_VARIABLE = /^[A-Z][A-Z\d]*(_[A-Z\d]+)+$/;
/** What a name looks like, unlike a word or a header: `PetRepository`, `newPet`, `PET_ERRORS`. */
const NAME_SHAPES = [
  /^[A-Z][A-Za-z\d]*[a-z\d][A-Z][A-Za-z\d]*$/,
  /^[a-z][a-z\d]*[A-Z][A-Za-z\d]*$/,
  ENVIRONMENT_VARIABLE,
];

/** Names the docs take from what no package of ours declares. Each one here is checked by nothing. */
const ELSEWHERE = new Set([
  // PostgreSQL's source (internals.md follows a lock or a trigger through it), its lock modes
  ...['AbortTransaction', 'CommitTransaction', 'LockReleaseAll', 'ProcArrayEndTransaction', 'RecordTransactionCommit'],
  ...['WaitForLockers', 'RowExclusiveLock', 'ShareLock'],
  // Linux: a socket option, and /proc/<pid>/status's memory lines
  ...['TCP_USER_TIMEOUT', 'VmHWM', 'VmRSS'],
  // OpenTelemetry's own variables, read by its SDK (observability.md)
  ...['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_BSP_MAX_QUEUE_SIZE'],
  // Kubernetes (deploy.md)
  'terminationGracePeriodSeconds',
]);

const DOCS = [
  'README.md',
  'packages/client/README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (NOT_OURS.has(entry.name)) return [];
    const file = dir === '.' ? entry.name : `${dir}/${entry.name}`;
    return entry.isDirectory() ? [`${file}/`, ...filesUnder(file)] : [file];
  });
}

/** The repository's files, and its folders ending in `/`. */
const REPOSITORY = filesUnder('.');

/** What a doc writes between single backticks, and its code blocks (between ``` lines). */
function codeOf(markdown: string): { spans: string[]; blocks: string[] } {
  const blocks: string[] = [];
  const prose = markdown.replace(/^```.*\n([\s\S]*?)^```/gm, (_, block: string) => {
    blocks.push(block);
    return '';
  });
  return { spans: [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? ''), blocks };
}

/**
 * The words of a span that are paths of ours, as written: not a call (`res.json()`), a package
 * (`@scope/x`), a URL or route, a generated file (`dist/`, `reports/`), or PostgreSQL's C source.
 */
function pathsIn(span: string): string[] {
  return span
    .split(/[\s;'"=]+/)
    .filter((word) => !/[()]|^@|:\/\/|^\/|(^|\/)(dist|reports|coverage|node_modules)\/|\.c$/.test(word))
    .flatMap((word) => word.split(':')) // `4af1f79:docs/performance.md`, `pet.ts:42`
    .map((word) => word.replace(/^(\.\.?\/)+/, '').replace(/(#[\w-]+|,|(?<!\.)\.)$/, ''))
    .filter(
      (word) => TOP_FOLDERS.some((folder) => word.startsWith(`${folder}/`)) || FILE_NAME.test(path.basename(word)),
    );
}

/** Whether a path as written names something in the repository; a `<placeholder>` asks only for its folder. */
function exists(written: string): boolean {
  const known = written.includes('<') ? written.slice(0, written.indexOf('<')).replace(/[^/]*$/, '') : written;
  if (known === '') return true;
  const pattern = known
    .replace(/[.+^$()|[\]\\]/g, '\\$&')
    .replace(/(\\\.){3}/g, '.*')
    .replace(/\*/g, '[^/]*')
    .replace(/\{([^}]+)\}/g, (_, options: string) => `(${options.split(',').join('|')})`)
    // `main.js` is what the build makes of `main.ts`.
    .replace(/\\\.js$/, '\\.(js|ts)');
  const rooted = TOP_FOLDERS.some((folder) => known.startsWith(`${folder}/`));
  const matches = new RegExp(`${rooted ? '^' : '(^|/)'}${pattern}/?$`);
  // A bare name means real code, not the layer rules' fixture, whose files only pretend to be.
  return REPOSITORY.some((file) => matches.test(file) && (rooted || !file.startsWith(FIXTURE)));
}

/** The names a package.json gives under `field` (`scripts`, `dependencies`). */
function namesUnder(manifest: string, field: string): string[] {
  const names: unknown = propertyOf(JSON.parse(readFileSync(manifest, 'utf8')), field);
  return typeof names === 'object' && names !== null ? Object.keys(names) : [];
}

const ROOT_SCRIPTS = new Set(namesUnder('package.json', 'scripts'));
const CLIENT_SCRIPTS = new Set(namesUnder('packages/client/package.json', 'scripts'));

/** The scripts a line runs (`npm run x`, `npm test`, `npm start`), each with the scripts it must be one of. */
function scriptsIn(line: string): { script: string; of: Set<string> }[] {
  const of = /(--workspace|-w)[ =]@petstore\/client/.test(line) ? CLIENT_SCRIPTS : ROOT_SCRIPTS;
  return [...line.matchAll(/\bnpm (?:run ([\w:.-]+)|(test|start)\b)/g)].map((match) => ({
    script: match[1] ?? match[2] ?? '',
    of,
  }));
}

/** The names a span uses: identifiers, not part of a path, a header (`RateLimit-Policy`) or an escape (`\xHH`). */
function namesIn(span: string): string[] {
  return [...span.replace(/\S*\/\S*/g, '').matchAll(/(?<![\w$\\-])[A-Za-z_$][\w$]*(?![\w$-])/g)]
    .map((match) => match[0])
    .filter((word) => NAME_SHAPES.some((shape) => shape.test(word)));
}

/** A declaration that names what it declares: a class, function, variable, parameter, type, member. */
function declaresName(node: ts.Node): node is ts.NamedDeclaration & { name: ts.DeclarationName | ts.BindingName } {
  return (
    ts.isClassDeclaration(node) ||
    ts.isFunctionDeclaration(node) ||
    ts.isVariableDeclaration(node) ||
    ts.isParameter(node) ||
    ts.isBindingElement(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isInterfaceDeclaration(node) ||
    ts.isEnumDeclaration(node) ||
    ts.isEnumMember(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isPropertyDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isMethodSignature(node) ||
    ts.isPropertySignature(node) ||
    ts.isPropertyAssignment(node) ||
    ts.isShorthandPropertyAssignment(node)
  );
}

/** What a TypeScript or JavaScript file declares, and the environment variables it reads by name. */
function declaredIn(file: string, names: Set<string>): void {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (declaresName(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) names.add(node.name.text);
    if (ts.isPropertyAccessExpression(node) && /\benv$/.test(node.expression.getText(source)))
      names.add(node.name.text);
    if (ts.isStringLiteral(node) && ENVIRONMENT_VARIABLE.test(node.text)) names.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
}

function wordsIn(file: string, names: Set<string>): void {
  for (const [word] of readFileSync(file, 'utf8').matchAll(/[A-Za-z_$][\w$]*/g)) names.add(word);
}

/** The type declarations of the packages a package.json names (and their @types), read as words. */
function declaredByDependencies(manifest: string, names: Set<string>): void {
  for (const name of [...namesUnder(manifest, 'dependencies'), ...namesUnder(manifest, 'devDependencies')])
    for (const dir of [`node_modules/${name}`, `node_modules/@types/${name.replace(/^@(.+)\//, '$1__')}`]) {
      if (!existsSync(dir)) continue;
      for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
        if (
          entry.isFile() &&
          /\.d\.[cm]?ts$/.test(entry.name) &&
          !entry.parentPath.slice(dir.length).includes('node_modules')
        )
          wordsIn(path.join(entry.parentPath, entry.name), names);
    }
}

function knownNames(): Set<string> {
  const names = new Set(ELSEWHERE);
  for (const file of REPOSITORY) {
    if (file.endsWith('/') || file.startsWith(FIXTURE)) continue;
    if (/\.(ts|mts|mjs|js|cjs)$/.test(file)) declaredIn(file, names);
    else if (OTHER_CODE.test(file)) wordsIn(file, names);
  }
  declaredByDependencies('package.json', names);
  declaredByDependencies('packages/client/package.json', names);
  return names;
}

describe('the docs', () => {
  it('name in backticks only paths, npm scripts and names that exist', () => {
    const names = knownNames();
    const missing: string[] = [];

    for (const doc of DOCS) {
      const { spans, blocks } = codeOf(readFileSync(doc, 'utf8'));
      for (const span of spans) {
        for (const written of pathsIn(span)) if (!exists(written)) missing.push(`${doc}: path \`${written}\``);
        for (const name of namesIn(span)) if (!names.has(name)) missing.push(`${doc}: name \`${name}\``);
      }
      for (const line of [...spans, ...blocks.flatMap((block) => block.split('\n'))])
        for (const { script, of } of scriptsIn(line))
          if (!of.has(script)) missing.push(`${doc}: npm script \`${script}\``);
    }

    expect(missing).toEqual([]);
  });
});
