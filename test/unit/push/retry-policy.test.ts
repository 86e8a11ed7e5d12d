/** backoffDelay: exponential cap, equal jitter, max cap, argument checks; isRetryableStatus. */
import t from 'tap';
import {
  backoffDelay,
  isRetryableStatus,
  PUSH_MAX_ATTEMPTS,
  PUSH_RETRY_BASE_MS,
  PUSH_RETRY_MAX_MS,
} from '../../../src/push/retry-policy.js';

const opts = (random: number) => ({ baseMs: 1000, maxMs: 30_000, random: () => random });

t.test('the cap doubles per attempt up to maxMs', async (t) => {
  const almostOne = 1 - Number.EPSILON;
  t.same(
    [1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(a, opts(almostOne))),
    [999, 1999, 3999, 7999, 15_999, 29_999, 29_999],
  );
  t.equal(backoffDelay(10_000, opts(0.5)), 22_500, 'huge attempt counts stay capped (no Infinity/NaN)');
});

t.test('equal jitter: uniform in [cap/2, cap)', async (t) => {
  t.equal(backoffDelay(3, opts(0)), 2000);
  t.equal(backoffDelay(3, opts(0.25)), 2500);
  t.equal(backoffDelay(3, opts(1)), 3999, 'a random() of 1 is clamped below the cap');
  t.equal(backoffDelay(3, opts(-1)), 2000, 'a negative random() is clamped to 0');
  for (let i = 0; i < 200; i++) {
    const d = backoffDelay(4, { baseMs: 100, maxMs: 10_000 });
    if (!(Number.isInteger(d) && d >= 400 && d < 800)) t.fail(`out of range: ${d}`);
  }
  const floor = Array.from({ length: PUSH_MAX_ATTEMPTS - 1 }, (_, i) =>
    backoffDelay(i + 1, { baseMs: PUSH_RETRY_BASE_MS, maxMs: PUSH_RETRY_MAX_MS, random: () => 0 }),
  );
  t.ok(floor.reduce((a, b) => a + b, 0) > 120_000, 'with the defaults, every attempt of one event spans more than two minutes');
  t.pass('Math.random by default, always in range');
});

t.test('bad arguments', async (t) => {
  t.throws(() => backoffDelay(0, opts(0.5)), RangeError);
  t.throws(() => backoffDelay(1.5, opts(0.5)), RangeError);
  t.throws(() => backoffDelay(1, { baseMs: -1, maxMs: 10 }), RangeError);
  t.throws(() => backoffDelay(1, { baseMs: 1, maxMs: Number.NaN }), RangeError);
});

t.test('constants', async (t) => {
  t.ok(PUSH_MAX_ATTEMPTS >= 1);
  t.ok(PUSH_RETRY_BASE_MS > 0 && PUSH_RETRY_BASE_MS <= PUSH_RETRY_MAX_MS);
});

t.test('isRetryableStatus', async (t) => {
  for (const s of [408, 425, 429, 500, 502, 503, 504, 599]) t.ok(isRetryableStatus(s), `${s} retries`);
  for (const s of [200, 204, 301, 400, 401, 403, 404, 410, 413, 422, 600]) t.notOk(isRetryableStatus(s), `${s} is final`);
});
