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
  invalidParams,
  notCancelable,
  pushUnsupported,
  restErrorOf,
  RPC_ERROR_CODE,
  taskNotFound,
  unsupported,
  versionUnsupported,
} from '../../../src/protocol/errors.js';

t.test('the standard codes are the SDK’s; the server’s own are outside the A2A range and distinct', async (t) => {
  const own = ['FORBIDDEN', 'UNAUTHORIZED', 'UNAVAILABLE'];
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
