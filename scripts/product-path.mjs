// `npm run product-path`: the files of the pets product each endpoint's request runs through, from
// the import graph TypeScript sees. docs/contributing.md says how they are counted and why at most 8;
// test/unit/product-path.spec.ts holds the count to that.
//
// From the handler method of the controller: the names it uses (and the module functions it calls),
// through the controller's imports, then every runtime import of the product from there on. The
// adapters of the ports the use case is given are added (a class that extends the port), with
// their own imports. Not counted, and why:
// - the platform and the access product (the key guard, @Caller()): every request passes through
//   them alike, so app.ts and app.module.ts list them once;
// - type-only imports, and files that hold only types and abstract classes (the ports): no code of
//   theirs runs in a request;
// - the OpenAPI declarations (*.openapi.ts): they run once, when the controller's class is defined;
// - another endpoint's use case.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const CONTROLLER = 'src/interface/http/pets/pets.controller.ts';

/** Each endpoint: its handler in the controller, its use case, and product middleware app.ts runs for it. */
export const ENDPOINTS = {
  listPets: { handler: 'list', useCase: 'src/application/pets/list-pets.ts', middleware: [] },
  createPet: { handler: 'create', useCase: 'src/application/pets/create-pet.ts', middleware: [] },
  getPet: {
    handler: 'get',
    useCase: 'src/application/pets/get-pet.ts',
    middleware: ['src/interface/http/pets/deprecation.ts'],
  },
};

const PRODUCT = /^src\/(domain|application|infrastructure|interface\/http|interface\/cli)\/pets\//;
const START_UP_ONLY = /\.openapi\.ts$/;

const parsed = new Map();

/** A file's imports (resolved, with the names each brings and whether only as types) and its classes' `extends`. */
function parse(file) {
  if (parsed.has(file)) return parsed.get(file);
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const imports = [];
  const bases = [];
  let runsCode = false;
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) || (ts.isExportDeclaration(statement) && statement.moduleSpecifier)) {
      const target = resolve(file, statement.moduleSpecifier.text);
      if (target === null) continue;
      const clause = ts.isImportDeclaration(statement) ? statement.importClause : undefined;
      const named =
        clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : [];
      const names = named.map((element) => ({
        name: element.name.text,
        typeOnly: Boolean(clause?.isTypeOnly || element.isTypeOnly),
      }));
      if (clause?.name) names.push({ name: clause.name.text, typeOnly: Boolean(clause.isTypeOnly) });
      // A side-effect import or a re-export runs the module.
      imports.push({ target, names, runs: names.length === 0 || names.some((n) => !n.typeOnly) });
      continue;
    }
    if (ts.isTypeAliasDeclaration(statement) || ts.isInterfaceDeclaration(statement)) continue;
    const abstractClass =
      ts.isClassDeclaration(statement) &&
      statement.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.AbstractKeyword);
    if (!abstractClass) runsCode = true;
    if (ts.isClassDeclaration(statement)) {
      for (const clause of statement.heritageClauses ?? []) {
        if (clause.token !== ts.SyntaxKind.ExtendsKeyword) continue;
        for (const type of clause.types) bases.push(type.expression.getText(source));
      }
    }
  }
  const result = { source, imports, bases, runsCode };
  parsed.set(file, result);
  return result;
}

function resolve(from, specifier) {
  if (!specifier.startsWith('.')) return null;
  const target = path.posix.join(path.posix.dirname(from), specifier).replace(/\.js$/, '.ts');
  return target;
}

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(path.posix.join(dir, entry.name)) : [path.posix.join(dir, entry.name)],
  );
}

/** The names the handler method uses: in its decorators, parameters and body, and in the module functions it calls. */
function namesUsedBy(handler) {
  const { source } = parse(CONTROLLER);
  const functions = new Map();
  const fields = new Map();
  let method = null;
  for (const statement of source.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name) functions.set(statement.name.text, statement);
    if (!ts.isClassDeclaration(statement)) continue;
    for (const member of statement.members) {
      if (ts.isConstructorDeclaration(member)) {
        for (const parameter of member.parameters) {
          if (parameter.type && ts.isIdentifier(parameter.name))
            fields.set(parameter.name.text, parameter.type.getText(source));
        }
      }
      if (ts.isMethodDeclaration(member) && member.name.getText(source) === handler) method = member;
    }
  }
  if (method === null) throw new Error(`${CONTROLLER} has no method ${handler}`);
  const names = new Set();
  const visit = (node) => {
    if (ts.isPropertyAccessExpression(node) && node.expression.kind === ts.SyntaxKind.ThisKeyword) {
      const type = fields.get(node.name.text);
      if (type !== undefined) names.add(type);
    } else if (ts.isIdentifier(node) && !names.has(node.text)) {
      names.add(node.text);
      const called = functions.get(node.text);
      if (called !== undefined) ts.forEachChild(called, visit);
    }
    ts.forEachChild(node, visit);
  };
  visit(method);
  return names;
}

/** The product files one endpoint's request runs through, sorted. */
export function productPath(endpoint) {
  const { handler, useCase, middleware } = ENDPOINTS[endpoint];
  const otherUseCases = new Set(Object.values(ENDPOINTS).map((e) => e.useCase));
  otherUseCases.delete(useCase);
  const reached = new Set();
  const walk = (file) => {
    if (reached.has(file) || !PRODUCT.test(file) || START_UP_ONLY.test(file) || otherUseCases.has(file)) return;
    reached.add(file);
    for (const { target, runs } of parse(file).imports) if (runs) walk(target);
  };
  reached.add(CONTROLLER);
  const used = namesUsedBy(handler);
  for (const { target, names, runs } of parse(CONTROLLER).imports) {
    if (runs && names.some(({ name, typeOnly }) => !typeOnly && used.has(name))) walk(target);
  }
  walk(useCase);
  for (const file of middleware) walk(file);
  // The ports the use case is given, and the adapters that extend them.
  const ports = new Set(
    parse(useCase)
      .imports.filter(({ target }) => PRODUCT.test(target))
      .flatMap(({ names }) => names.map(({ name }) => name)),
  );
  for (const name of parse(useCase).source.statements.flatMap((s) =>
    ts.isClassDeclaration(s) && s.name ? [s.name.text] : [],
  ))
    ports.add(name);
  // An adapter may extend another that extends the port: until no new class is found.
  const adapters = filesUnder('src/infrastructure/pets').filter((file) => file.endsWith('.ts'));
  for (let found = true; found;) {
    found = false;
    for (const file of adapters) {
      if (reached.has(file) || !parse(file).bases.some((base) => ports.has(base))) continue;
      walk(file);
      for (const statement of parse(file).source.statements)
        if (ts.isClassDeclaration(statement) && statement.name) ports.add(statement.name.text);
      found = true;
    }
  }
  return [...reached].filter((file) => parse(file).runsCode).sort();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const endpoint of Object.keys(ENDPOINTS)) {
    const files = productPath(endpoint);
    console.log(`${endpoint}: ${files.length} files`);
    for (const file of files) console.log(`  ${file}`);
  }
}
