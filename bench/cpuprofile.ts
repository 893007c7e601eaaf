/**
 * Where the CPU time of a V8 .cpuprofile (node --cpu-prof) goes: self time by function and by
 * package, and for each package the share of samples with it anywhere on the stack.
 * Usable alone: node bench/dist/bench/cpuprofile.js <file.cpuprofile>
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type CallFrame = { functionName: string; url: string; lineNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
export type CpuProfile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] };

export type Share = { name: string; ms: number; percent: number };
export type ProfileSummary = {
  busyMs: number;
  idleMs: number;
  functions: Share[];
  packages: Share[];
  onStack: Share[];
};

export function readCpuProfile(file: string): CpuProfile {
  const data: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (
    typeof data !== 'object' ||
    data === null ||
    !('nodes' in data && 'samples' in data && 'timeDeltas' in data && 'startTime' in data)
  ) {
    throw new Error(`${file} is not a V8 CPU profile`);
  }
  const { nodes, samples, timeDeltas, startTime } = data;
  if (!isNodeArray(nodes) || !isNumberArray(samples) || !isNumberArray(timeDeltas) || typeof startTime !== 'number') {
    throw new Error(`${file} is not a V8 CPU profile`);
  }
  return { nodes, samples, timeDeltas, startTime };
}

function isNumberArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'number');
}

/** The fields the summary reads: id, callFrame's name, url and line, children's ids. */
function isNodeArray(value: unknown): value is ProfileNode[] {
  return (
    Array.isArray(value) &&
    value.every(
      (node: unknown) =>
        typeof node === 'object' &&
        node !== null &&
        'id' in node &&
        typeof node.id === 'number' &&
        'callFrame' in node &&
        typeof node.callFrame === 'object' &&
        node.callFrame !== null &&
        'functionName' in node.callFrame &&
        typeof node.callFrame.functionName === 'string' &&
        'url' in node.callFrame &&
        typeof node.callFrame.url === 'string' &&
        'lineNumber' in node.callFrame &&
        typeof node.callFrame.lineNumber === 'number' &&
        (!('children' in node) || node.children === undefined || isNumberArray(node.children)),
    )
  );
}

/**
 * `window` (µs on the profile's monotonic clock, which is the one process.hrtime reads) keeps only
 * the samples taken under load, leaving out start-up and shutdown.
 */
export function summariseProfile(profile: CpuProfile, window?: { from: number; to: number }): ProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

  // A sample stands for the interval up to the next one.
  const selfUs = new Map<number, number>();
  let time = profile.startTime;
  profile.samples.forEach((id, index) => {
    time += profile.timeDeltas[index] ?? 0;
    if (window && (time < window.from || time > window.to)) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
  });

  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  const onStack = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = nodes.get(id)?.callFrame;
    if (!frame) continue;
    if (frame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    add(functions, describe(frame), us);
    add(packages, packageOf(frame), us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const ancestor = nodes.get(at)?.callFrame;
      if (ancestor && ancestor.functionName !== '(root)') seen.add(packageOf(ancestor));
    }
    for (const name of seen) add(onStack, name, us);
  }
  const busyUs = [...packages.values()].reduce((sum, us) => sum + us, 0);
  const shares = (map: Map<string, number>): Share[] =>
    [...map].map(([name, us]) => ({ name, ms: us / 1000, percent: (100 * us) / busyUs })).sort((a, b) => b.ms - a.ms);
  return {
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    functions: shares(functions),
    packages: shares(packages),
    onStack: shares(onStack),
  };
}

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function describe(frame: CallFrame): string {
  const where =
    frame.url === ''
      ? ''
      : ` ${frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/dist\//, 'dist/')}:${frame.lineNumber + 1}`;
  return `${frame.functionName || '(anonymous)'}${where} [${packageOf(frame)}]`;
}

/** npm package, "node core", our own layer (src/interface, src/infrastructure, ...), or V8's pseudo-frames such as (garbage collector). */
export function packageOf({ url, functionName }: CallFrame): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(V8 builtins)';
  if (url.startsWith('node:')) return 'node core';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [scope = '', name = ''] = url.slice(modules + '/node_modules/'.length).split('/');
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  const own = /\/dist\/((?:src\/)?[^/]+)\//.exec(url);
  return own?.[1] ?? url;
}

export function printSummary(summary: ProfileSummary, top = 20): void {
  const percent = (share: Share): string => `${share.percent.toFixed(1).padStart(5)}%`;
  console.log(
    `busy ${summary.busyMs.toFixed(0)} ms, idle ${summary.idleMs.toFixed(0)} ms (percentages are of busy time)`,
  );
  console.log(`\nSelf time by function (top ${top}):`);
  for (const share of summary.functions.slice(0, top)) console.log(`  ${percent(share)}  ${share.name}`);
  console.log('\nSelf time by package:');
  for (const share of summary.packages.filter((share) => share.percent >= 0.5))
    console.log(`  ${percent(share)}  ${share.name}`);
  console.log('\nOn the stack (self time of everything called from the package, inclusive):');
  for (const share of summary.onStack.filter((share) => share.percent >= 1))
    console.log(`  ${percent(share)}  ${share.name}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of process.argv.slice(2)) {
    console.log(`\n== ${file}`);
    printSummary(summariseProfile(readCpuProfile(file)));
  }
}
