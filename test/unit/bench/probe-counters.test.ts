/** The bench probe's counters (scripts/bench): wire message counts, round trips, the phase tally and its per-flow arithmetic. */
import t from 'tap';
import { perFlow, PhaseTally } from '../../../scripts/bench/phase-tally.js';
import { countEngineCall, countThreadRequest, emptyWire, MessageSplitter, SocketCounter } from '../../../scripts/bench/wire-count.js';
import diagnosticsChannel from 'node:diagnostics_channel';
import { PHASE_CHANNEL } from '../../../src/protocol/probe.js';
import type { PhaseSample } from '../../../src/protocol/probe.js';
import { storePhase, timedStore } from '../../../src/store/timed-store.js';

/** A typed protocol message: type byte, int32 length (itself + body), body. */
function msg(type: string, body = ''): Buffer {
  const b = Buffer.from(body);
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(4 + b.length, 1);
  return Buffer.concat([head, b]);
}

/** An untyped StartupMessage. */
function startup(): Buffer {
  const body = Buffer.from('user\0postgres\0\0');
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + body.length, 0);
  head.writeInt32BE(196608, 4);
  return Buffer.concat([head, body]);
}

t.test('MessageSplitter finds every message across arbitrary chunk boundaries', async (t) => {
  const stream = Buffer.concat([startup(), msg('P', 'select 1\0\0\0'), msg('B', 'xx'), msg('E', '\0\0\0\0\0'), msg('S')]);
  for (let cut = 1; cut < stream.length; cut++) {
    const seen: string[] = [];
    const s = new MessageSplitter((type) => seen.push(String.fromCharCode(type)), true);
    s.push(stream.subarray(0, cut));
    s.push(stream.subarray(cut));
    t.same(seen, ['\0', 'P', 'B', 'E', 'S'], `cut at ${cut}`);
  }
});

t.test('SocketCounter: pipelined statements share a round trip; a send after the answers starts a new one', async (t) => {
  const w = emptyWire();
  const c = new SocketCounter(w);
  c.written(startup());
  c.read(msg('R', '\0\0\0\0'));
  c.read(msg('Z', 'I'));
  t.same(w, { statements: 0, parses: 0, roundTrips: 1, engineMs: 0 }, 'the startup is one round trip');
  // BEGIN, then two pipelined extended-protocol statements, before any answer.
  c.written(msg('Q', 'begin\0'));
  c.written(Buffer.concat([msg('P', 'x'), msg('B'), msg('E'), msg('S')]));
  c.written(Buffer.concat([msg('B'), msg('E'), msg('S')]));
  t.equal(w.roundTrips, 2, 'sent while BEGIN was unanswered: same round trip');
  c.read(Buffer.concat([msg('C', 'BEGIN\0'), msg('Z', 'T')]));
  c.read(Buffer.concat([msg('1'), msg('2'), msg('C', 'INSERT\0'), msg('Z', 'T')]));
  t.equal(w.roundTrips, 2, 'reads never start a round trip');
  c.written(msg('B'));
  t.equal(w.roundTrips, 2, 'still one answer owed');
  c.read(msg('Z', 'T'));
  c.written(msg('Q', 'commit\0'));
  t.equal(w.roundTrips, 3, 'COMMIT after every answer: a new round trip');
  t.equal(w.statements, 4, 'BEGIN, two Executes, COMMIT');
  t.equal(w.parses, 1);
  c.read(msg('A', 'notify'));
  t.equal(w.roundTrips, 3, 'a notification is not an answer and starts nothing');
});

t.test('countEngineCall: one PGlite call is one round trip; the startup message counts no statement', async (t) => {
  const w = emptyWire();
  countEngineCall(w, startup(), 1);
  countEngineCall(w, msg('P', 'x'), 0.5);
  countEngineCall(w, Buffer.concat([msg('B'), msg('E'), msg('S')]), 0.25);
  countEngineCall(w, msg('Q', 'BEGIN\0'), 0.25);
  t.same(w, { statements: 2, parses: 1, roundTrips: 4, engineMs: 2 });
});

t.test('countThreadRequest: a query with parameters is parsed the first time its text is seen, one without every time', async (t) => {
  const w = emptyWire();
  const prepared = new Set<string>();
  const count = (op: string, sql?: string, params?: unknown[]) => countThreadRequest(w, { op, sql, params }, prepared);
  count('begin');
  count('query', 'select $1', [1]);
  count('query', 'select $1', [2]);
  count('query', 'select 1', []);
  count('query', 'select 1', []);
  count('exec', 'delete from t');
  count('end');
  count('listen');
  t.same(w, { statements: 7, parses: 3, roundTrips: 8, engineMs: 0 });
});

t.test('PhaseTally and perFlow: differences of two snapshots, per flow, every phase listed', async (t) => {
  const tally = new PhaseTally();
  tally.add('commit', 4);
  const before = tally.snapshot();
  tally.add('commit', 6);
  tally.add('commit', 2);
  tally.add('parse', 1);
  tally.add('parse', Number.NaN);
  tally.add('write', -1);
  tally.wire.statements += 10;
  tally.wire.roundTrips += 6;
  const after = tally.snapshot();
  t.equal(before.phases.commit.ms, 4, 'a snapshot is a copy, not a view');
  const b = perFlow(before, after, 2);
  t.ok(b);
  t.same(b?.phases.commit, { ms: 4, calls: 1 });
  t.same(b?.phases.parse, { ms: 0.5, calls: 0.5 }, 'NaN and negative samples are dropped');
  t.same(b?.phases.write, { ms: 0, calls: 0 });
  t.equal(b?.phaseMs, 4.5);
  t.equal(b?.statements, 5);
  t.equal(b?.roundTrips, 3);
  t.equal(perFlow(before, after, 0), undefined, 'no flows, no figures');
});

t.test('storePhase maps store methods onto phases', async (t) => {
  t.equal(storePhase('commit'), 'commit');
  t.equal(storePhase('commitWhileAwaiting'), 'commit');
  t.equal(storePhase('claimCalls'), 'claim');
  t.equal(storePhase('claimAndCommit'), 'claim');
  t.equal(storePhase('leaseTasks'), 'claim');
  t.equal(storePhase('loadTask'), 'load');
  t.equal(storePhase('eventsAfter'), 'load');
  t.equal(storePhase('listTasks'), 'load');
  t.equal(storePhase('createTask'), 'store');
});

t.test('perFlow lists store calls by method, most time first', async (t) => {
  const tally = new PhaseTally();
  const before = tally.snapshot();
  tally.add('load', 3, 'loadTask');
  tally.add('load', 1, 'loadTask');
  tally.add('commit', 6, 'commit');
  tally.add('parse', 1);
  const b = perFlow(before, tally.snapshot(), 2);
  t.same(b?.details, [
    { name: 'commit: commit', ms: 3, calls: 0.5 },
    { name: 'load: loadTask', ms: 2, calls: 1 },
  ]);
});

t.test('timedStore: the store itself when nobody listens; while probed, results and failures pass through, timed', async (t) => {
  const store = {
    n: 1,
    async loadTask(id: string) {
      return `${id}:${this.n}`;
    },
    async commit() {
      throw new Error('refused');
    },
    size() {
      return this.n;
    },
  };
  t.equal(timedStore(store), store, 'no subscriber: no wrapper');
  const samples: PhaseSample[] = [];
  const listen = (m: unknown) => samples.push(m as PhaseSample);
  diagnosticsChannel.subscribe(PHASE_CHANNEL, listen);
  try {
    const timed = timedStore(store);
    t.not(timed, store);
    t.equal(await timed.loadTask('a'), 'a:1', 'methods run on the store itself');
    await t.rejects(timed.commit(), /refused/);
    t.equal(timed.size(), 1);
    t.equal(timed.n, 1, 'fields are read through');
    t.same(
      samples.map((s) => [s.phase, s.detail]),
      [
        ['load', 'loadTask'],
        ['commit', 'commit'],
        ['store', 'size'],
      ],
    );
    t.ok(samples.every((s) => s.ms >= 0));
  } finally {
    diagnosticsChannel.unsubscribe(PHASE_CHANNEL, listen);
  }
});
