/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function, and
 * time per pipeline stage (tools/fs, RFC encoder, SSE writes, SDK conversion, http…).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface SelfTime {
  name: string;
  ms: number;
  pct: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Sampled time outside `(idle)`. */
  busyMs: number;
  functions: SelfTime[];
  /** Time by pipeline stage (see STAGES). */
  stages: SelfTime[];
}

/** `src/agent/x.ts`, `pkg:fastify`, `node:internal/…`, or the V8 pseudo-frame name. */
export function areaOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return `pkg:${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return url;
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const src = url.indexOf('/src/');
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, '');
}

/** A time window in µs of CLOCK_MONOTONIC (what `process.hrtime` and V8 profile timestamps both use on Linux). */
export interface Window {
  fromUs: number;
  toUs: number;
}

/** Now, in µs of CLOCK_MONOTONIC, comparable with a child's profile timestamps. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * Pipeline stages, first match wins over a sample's whole stack (leaf to root), so each
 * sample counts once: "where did the main thread's time go, by what it was doing".
 */
const STAGES: [string, RegExp][] = [
  ['GC', /^\(garbage collector\)/],
  ['PGlite (WASM Postgres + its JS glue)', /pkg:@electric-sql\/pglite|wasm:\/\//],
  ['postgres.js driver', /pkg:postgres$/],
  ['drizzle-orm (query build, params, row mapping)', /pkg:drizzle-orm/],
  ['store (src/store: pg-task-store, mappers, queries)', /src\/store\//],
  ['structuredClone (task snapshots)', /^structuredClone /],
  [
    'tools (write_file: realpath, read, diff, write) + fs',
    /src\/tools\/|node:internal\/fs|^(openFileHandle|close|read|fstat|lstat|mkdir|writeBuffer|writeString|open) $/,
  ],
  ['RFC encoder (protobufjs build + field checks)', /rfc-encoder|devtool-schema|json-fields|struct-json|pkg:protobufjs/],
  ['SSE framing + socket writes', /src\/transport\/http\/sse\.ts|^writev /],
  ['@a2a-js/sdk transport (v0.3 <-> v1 conversion)', /pkg:@a2a-js\/sdk/],
  ['JSON-RPC route + params checks', /src\/transport\/http\//],
  ['agent (request handler, loop, task, log)', /src\/agent\//],
  ['fastify', /pkg:(fastify|find-my-way|avvio|@fastify)/],
  ['node http/net', /node:_http|node:net|node:internal\/(http|stream_base|streams)|^parserOnHeadersComplete /],
  ['module loading (startup)', /node:internal\/modules|pkg:tsx/],
];

/** Self time per function, and time per pipeline stage; with `windows`, only samples taken inside them count. */
export function summarizeProfile(file: string, top = 25, windows?: Window[]): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const frame = (id: number) => {
    const { functionName, url } = (byId.get(id) as ProfileNode).callFrame;
    return `${functionName} ${url ? areaOf(url, functionName) : ''}`;
  };
  const stageOf = (leaf: number): string => {
    const frames: string[] = [];
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) frames.push(frame(id));
    for (const [name, re] of STAGES) if (frames.some((f) => re.test(f))) return name;
    return `other (${frames[0].trim()})`;
  };
  const selfUs = new Map<number, number>();
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    const dt = p.timeDeltas[i + 1] ?? 0; // a sample's time is the delta to the next one
    if (windows && !windows.some((w) => at >= w.fromUs && at <= w.toUs)) continue;
    selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + dt);
  }
  const fns = new Map<string, number>();
  const stages = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url } = (byId.get(id) as ProfileNode).callFrame;
    total += us;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const key = url ? `${functionName || '(anonymous)'}  ${shortUrl(url)}` : functionName || '(anonymous)';
    fns.set(key, (fns.get(key) ?? 0) + us);
    const stage = functionName === '(program)' ? '(program: V8/native, no JS stack)' : stageOf(id);
    stages.set(stage, (stages.get(stage) ?? 0) + us);
  }
  const busy = total - idle;
  const list = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, pct: busy > 0 ? (100 * us) / busy : 0 }));
  return { totalMs: total / 1000, busyMs: busy / 1000, functions: list(fns), stages: list(stages) };
}
