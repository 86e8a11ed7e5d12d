/**
 * RPC_ERROR_CODE is the one table of JSON-RPC codes: its A2A and JSON-RPC entries agree with
 * the SDK's A2A_ERROR_CODE, and each error builder answers with the code the table names for
 * it, under both wire versions.
 */
import t from 'tap';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import {
  contentTypeUnsupported,
  extendedCardUnsupported,
  forbidden,
  HTTP_OF_RPC_CODE,
  httpErrorOf,
  invalidParams,
  isStoreUnavailable,
  notCancelable,
  pushUnsupported,
  restErrorOf,
  RPC_ERROR_CODE,
  StoreUnavailableError,
  streamFailure,
  taskNotFound,
  unsupported,
  versionUnsupported,
} from '../../../src/protocol/errors.js';

t.test('the standard codes are the SDK’s; the server’s own are outside the A2A range and distinct', async (t) => {
  const own = ['FORBIDDEN', 'UNAUTHORIZED', 'UNAVAILABLE', 'STORE_UNAVAILABLE'];
  for (const [name, code] of Object.entries(RPC_ERROR_CODE)) {
    if (own.includes(name)) t.notOk(Object.values(A2A_ERROR_CODE).includes(code as never), `${name} ${code} is not an A2A code`);
    else t.equal(code, A2A_ERROR_CODE[name as keyof typeof A2A_ERROR_CODE], `${name} = ${code}`);
  }
  const codes = Object.values(RPC_ERROR_CODE);
  t.equal(new Set(codes).size, codes.length, 'no code has two names');
});

t.test('each builder answers the code the table names for it, under v1.0 and v0.3', async (t) => {
  const cases: Array<[string, unknown, number]> = [
    ['invalidParams', invalidParams('x'), RPC_ERROR_CODE.INVALID_PARAMS],
    ['taskNotFound', taskNotFound('t-1'), RPC_ERROR_CODE.TASK_NOT_FOUND],
    ['notCancelable', notCancelable('x'), RPC_ERROR_CODE.TASK_NOT_CANCELABLE],
    ['pushUnsupported', pushUnsupported(), RPC_ERROR_CODE.PUSH_NOTIFICATION_NOT_SUPPORTED],
    ['unsupported', unsupported('x'), RPC_ERROR_CODE.UNSUPPORTED_OPERATION],
    ['extendedCardUnsupported', extendedCardUnsupported(), RPC_ERROR_CODE.EXTENDED_CARD_NOT_CONFIGURED],
    ['forbidden', forbidden('x'), RPC_ERROR_CODE.FORBIDDEN],
    ['anything else', new Error('boom'), RPC_ERROR_CODE.INTERNAL_ERROR],
  ];
  for (const [name, err, code] of cases) {
    t.equal(JsonRpcTransportHandler.mapToJSONRPCError(err).code, code, `${name} → ${code} (v1.0)`);
    t.equal(LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err).code, code, `${name} → ${code} (v0.3)`);
  }
});

t.test('HTTP+JSON: each builder answers the §5.4 status, a google.rpc.Status body, ErrorInfo on A2A errors', async (t) => {
  const cases: Array<[string, unknown, number, string, string | undefined]> = [
    ['invalidParams', invalidParams('x'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS'],
    ['taskNotFound', taskNotFound('t-1'), 404, 'NOT_FOUND', 'TASK_NOT_FOUND'],
    ['notCancelable', notCancelable('x'), 409, 'FAILED_PRECONDITION', 'TASK_NOT_CANCELABLE'],
    ['pushUnsupported', pushUnsupported(), 400, 'UNIMPLEMENTED', 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
    ['unsupported', unsupported('x'), 400, 'UNIMPLEMENTED', 'UNSUPPORTED_OPERATION'],
    ['contentTypeUnsupported', contentTypeUnsupported('text/plain'), 415, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED'],
    ['versionUnsupported', versionUnsupported('0.3'), 400, 'UNIMPLEMENTED', 'VERSION_NOT_SUPPORTED'],
    ['extendedCardUnsupported', extendedCardUnsupported(), 400, 'FAILED_PRECONDITION', 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'],
    ['forbidden', forbidden('x'), 403, 'PERMISSION_DENIED', undefined],
  ];
  for (const [name, err, status, statusName, reason] of cases) {
    const r = restErrorOf(err);
    t.equal(r.status, status, `${name} → HTTP ${status}`);
    t.equal(r.internal, false);
    t.match(r.body, { error: { code: status, status: statusName, message: String } }, `${name}: the body`);
    t.same(
      r.body.error.details.map((d: any) => d.reason),
      reason ? [reason] : [],
      `${name}: ErrorInfo ${reason ?? 'none'}`,
    );
  }
  const internal = restErrorOf(new Error('SELECT secret FROM t'));
  t.same(
    internal,
    {
      status: 500,
      internal: true,
      code: -32603,
      body: { error: { code: 500, status: 'INTERNAL', message: 'Internal error (details are in the server log)', details: [] } },
    },
    'anything else: 500, nothing leaked',
  );
  t.same(Object.keys(HTTP_OF_RPC_CODE).map(Number).sort(), Object.values(RPC_ERROR_CODE).sort(), 'every code has its HTTP status');
});

t.test('a lost database is the retryable STORE_UNAVAILABLE on every binding; a refused statement is not', async (t) => {
  const coded = (code: string, cause?: unknown) => Object.assign(new Error(`failed (${code})`), { code, cause });
  // drizzle wraps the driver's error in `cause`: the classification looks through it.
  const wrapped = Object.assign(new Error('Failed query: select 1'), { cause: coded('ECONNREFUSED') });
  for (const err of [coded('ECONNRESET'), coded('CONNECTION_CLOSED'), coded('57P01'), coded('57P03'), coded('08006'), wrapped]) {
    t.ok(isStoreUnavailable(err), `${(err.cause as Error | undefined)?.message ?? err.message} is "unavailable"`);
  }
  for (const err of [coded('23505'), coded('42P01'), new Error('bug'), undefined])
    t.notOk(isStoreUnavailable(err), `${String(err)} is not`);

  const err = new StoreUnavailableError(wrapped);
  t.equal(JsonRpcTransportHandler.mapToJSONRPCError(err).code, RPC_ERROR_CODE.STORE_UNAVAILABLE, 'JSON-RPC 1.0: -32050');
  t.equal(LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err).code, RPC_ERROR_CODE.STORE_UNAVAILABLE, 'JSON-RPC 0.3: -32050');
  t.notMatch(err.message, /ECONNREFUSED|select/, 'the message carries no driver detail');
  t.same(streamFailure(wrapped), { code: -32050, message: err.message, data: { retryable: true } }, 'an open stream ends with it');
  const rest = restErrorOf(wrapped);
  t.equal(rest.status, 503);
  t.equal(rest.body.error.status, 'UNAVAILABLE');
  t.strictSame(
    rest.body.error.details.map((d) => (d as { '@type'?: string })['@type']),
    ['type.googleapis.com/google.rpc.RetryInfo'],
    'one detail: retry',
  );
  t.equal(httpErrorOf(wrapped).status, 503, 'legacy REST routes: 503');
  t.equal(restErrorOf(coded('23505')).status, 500, 'a refused statement stays an internal error');
});
