/**
 * loadConfig(env, cwd): defaults, the model choice, one ConfigError per bad variable
 * (naming it), and a frozen result. Pure: only the env object passed in is read.
 */
import t from 'tap';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config/load-config.js';

/** The subtest type (the last `t.test` overload takes just the callback). */
type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** Asserts loadConfig(env) throws a ConfigError whose message names `variable`. */
function refuses(t: Test, env: Record<string, string | undefined>, variable: string, cwd?: string, also?: RegExp): void {
  let caught: unknown;
  try {
    loadConfig(env, cwd);
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof ConfigError, `${variable}: throws a ConfigError`);
  const err = caught as ConfigError;
  t.equal(err?.name, 'ConfigError');
  t.equal(err?.code, 'AGENT_ERR_CONFIG_INVALID');
  t.match(err?.message, variable, `the message names ${variable}`);
  if (also) t.match(err?.message, also);
}

t.test('defaults', async (t) => {
  const dir = realpathSync(t.testdir({}));
  const c = loadConfig({}, dir);
  t.equal(c.port, 41242);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.workspaceDir, dir, 'WORKSPACE_DIR defaults to the working directory');
  t.equal(c.publicUrl, undefined);
  t.equal(c.logLevel, 'info');
  t.same(c.model, { kind: 'scripted', model: 'gemini-2.5-flash', vertexai: false, includeThoughts: true }, 'no keys: the scripted demo');
  t.equal(c.model.scriptFile, undefined, 'the bundled demo script');
  t.same(c.shell, {
    timeoutMs: 300_000,
    maxOutputBytes: 1_048_576,
    env: {},
    sandboxMode: 'auto',
    sandboxNetwork: false,
    unconfinedAutoApprove: false,
  });
  t.equal(c.sseHeartbeatMs, 15_000);
});

t.test('blank values count as unset', async (t) => {
  const dir = realpathSync(t.testdir({}));
  const c = loadConfig({ PORT: '  ', HOST: '', LOG_LEVEL: ' ', GEMINI_API_KEY: '' }, dir);
  t.equal(c.port, 41242);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.logLevel, 'info');
  t.equal(c.model.kind, 'scripted');
});

t.test('explicit values', async (t) => {
  const dir = realpathSync(t.testdir({ ws: {} }));
  const c = loadConfig(
    {
      PORT: '8080',
      HOST: '0.0.0.0',
      ALLOW_UNAUTHENTICATED_REMOTE: '1',
      WORKSPACE_DIR: 'ws',
      LOG_LEVEL: 'debug',
      PUBLIC_URL: 'https://agent.example/',
      SHELL_TIMEOUT_MS: '5000',
      SHELL_MAX_OUTPUT_BYTES: '2048',
      SSE_HEARTBEAT_MS: '250',
      SHUTDOWN_GRACE_MS: '0',
      SHELL_SANDBOX: 'BWRAP',
      SHELL_SANDBOX_NETWORK: 'on',
    },
    dir,
  );
  t.equal(c.port, 8080);
  t.equal(c.host, '0.0.0.0');
  t.equal(c.workspaceDir, path.join(dir, 'ws'), 'a relative WORKSPACE_DIR resolves against cwd');
  t.equal(c.logLevel, 'debug');
  t.equal(c.publicUrl, 'https://agent.example/');
  t.same(
    { ...c.shell, env: undefined },
    { timeoutMs: 5000, maxOutputBytes: 2048, env: undefined, sandboxMode: 'bwrap', sandboxNetwork: true, unconfinedAutoApprove: false },
  );
  t.equal(c.sseHeartbeatMs, 250);
  t.equal(c.shutdownGraceMs, 0, 'SHUTDOWN_GRACE_MS=0: running calls are interrupted at once');
  t.equal(loadConfig({}, dir).shutdownGraceMs, 10_000, 'SHUTDOWN_GRACE_MS defaults to 10 s');
  t.equal(loadConfig({ PORT: '0' }, dir).port, 0, 'PORT=0 (any free port) is allowed');
  t.equal(loadConfig({ PORT: '65535' }, dir).port, 65535);
});

t.test('model choice', async (t) => {
  const dir = realpathSync(t.testdir({ 'script.json': '{"model":"s","scripts":[]}' }));

  t.test('GEMINI_API_KEY selects genai with the default model', async (t) => {
    const c = loadConfig({ GEMINI_API_KEY: 'k-123' }, dir);
    t.same(c.model, {
      kind: 'genai',
      model: 'gemini-2.5-flash',
      vertexai: false,
      includeThoughts: true,
      apiKey: 'k-123',
      project: undefined,
      location: undefined,
      baseUrl: undefined,
    });
  });

  t.test('GOOGLE_API_KEY works too', async (t) => {
    const c = loadConfig({ GOOGLE_API_KEY: 'g-1' }, dir);
    t.equal(c.model.kind, 'genai');
    t.equal(c.model.apiKey, 'g-1');
  });

  t.test('GEMINI_MODEL, base URL and thoughts', async (t) => {
    const c = loadConfig(
      {
        GEMINI_API_KEY: 'k',
        GEMINI_MODEL: 'gemini-2.5-pro',
        GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9999',
        GEMINI_INCLUDE_THOUGHTS: 'false',
      },
      dir,
    );
    t.equal(c.model.model, 'gemini-2.5-pro');
    t.equal(c.model.baseUrl, 'http://127.0.0.1:9999');
    t.equal(c.model.includeThoughts, false);
  });

  t.test('Vertex AI with a project', async (t) => {
    const c = loadConfig({ GOOGLE_GENAI_USE_VERTEXAI: 'true', GOOGLE_CLOUD_PROJECT: 'p', GOOGLE_CLOUD_LOCATION: 'us-central1' }, dir);
    t.match(c.model, { kind: 'genai', vertexai: true, project: 'p', location: 'us-central1', apiKey: undefined });
  });

  t.test('AGENT_MODEL_SCRIPT selects the scripted model, even with a key', async (t) => {
    const c = loadConfig({ AGENT_MODEL_SCRIPT: 'script.json', GEMINI_API_KEY: 'k' }, dir);
    t.equal(c.model.kind, 'scripted');
    t.equal(c.model.scriptFile, path.join(dir, 'script.json'), 'resolved against cwd');
  });
});

t.test('bad values throw a ConfigError naming the variable', async (t) => {
  const dir = realpathSync(t.testdir({ 'a-file': 'x' }));
  refuses(t, { PORT: 'abc' }, 'PORT', dir, /abc/);
  refuses(t, { PORT: '70000' }, 'PORT', dir, /70000/);
  refuses(t, { PORT: '-1' }, 'PORT', dir);
  refuses(t, { PORT: '80.5' }, 'PORT', dir);
  refuses(t, { WORKSPACE_DIR: path.join(dir, 'missing') }, 'WORKSPACE_DIR', dir, /missing/);
  refuses(t, { WORKSPACE_DIR: path.join(dir, 'a-file') }, 'WORKSPACE_DIR', dir, /a-file/);
  refuses(t, { LOG_LEVEL: 'loud' }, 'LOG_LEVEL', dir, /loud/);
  refuses(t, { PUBLIC_URL: 'agent.example' }, 'PUBLIC_URL', dir);
  refuses(t, { GEMINI_API_KEY: 'k', GOOGLE_GEMINI_BASE_URL: 'ftp://x' }, 'GOOGLE_GEMINI_BASE_URL', dir, /ftp:\/\/x/);
  refuses(t, { AGENT_MODEL_SCRIPT: 'nope.json' }, 'AGENT_MODEL_SCRIPT', dir, /nope\.json/);
  refuses(t, { GOOGLE_GENAI_USE_VERTEXAI: 'maybe' }, 'GOOGLE_GENAI_USE_VERTEXAI', dir, /maybe/);
  refuses(t, { GEMINI_INCLUDE_THOUGHTS: 'sometimes' }, 'GEMINI_INCLUDE_THOUGHTS', dir, /sometimes/);
  refuses(t, { GOOGLE_GENAI_USE_VERTEXAI: '1' }, 'GOOGLE_CLOUD_PROJECT', dir);
  refuses(t, { SHELL_TIMEOUT_MS: '10' }, 'SHELL_TIMEOUT_MS', dir);
  refuses(t, { SHELL_MAX_OUTPUT_BYTES: 'lots' }, 'SHELL_MAX_OUTPUT_BYTES', dir);
  refuses(t, { SSE_HEARTBEAT_MS: '0' }, 'SSE_HEARTBEAT_MS', dir);
  refuses(t, { SHUTDOWN_GRACE_MS: '-1' }, 'SHUTDOWN_GRACE_MS', dir);
  refuses(t, { SHUTDOWN_GRACE_MS: '3600001' }, 'SHUTDOWN_GRACE_MS', dir);
  refuses(t, { SHELL_SANDBOX: 'firejail' }, 'SHELL_SANDBOX', dir, /firejail[^]*auto, bwrap, off/);
  refuses(t, { SHELL_SANDBOX_NETWORK: 'some' }, 'SHELL_SANDBOX_NETWORK', dir);
  refuses(t, { SHELL_UNCONFINED_AUTO_APPROVE: 'maybe' }, 'SHELL_UNCONFINED_AUTO_APPROVE', dir, /maybe/);
  refuses(t, { SHELL_SANDBOX: 'bwrap', SHELL_UNCONFINED_AUTO_APPROVE: '1' }, 'SHELL_UNCONFINED_AUTO_APPROVE', dir, /SHELL_SANDBOX=bwrap/);
  t.equal(loadConfig({ SHELL_SANDBOX: 'off', SHELL_UNCONFINED_AUTO_APPROVE: 'true' }, dir).shell.unconfinedAutoApprove, true);
  t.equal(
    loadConfig({ SHELL_UNCONFINED_AUTO_APPROVE: 'yes' }, dir).shell.unconfinedAutoApprove,
    true,
    'with auto: for when bwrap cannot run',
  );
});

t.test('booleans accept the usual spellings', async (t) => {
  const dir = realpathSync(t.testdir({}));
  for (const v of ['1', 'true', 'TRUE', 'yes', 'on']) {
    t.equal(loadConfig({ GEMINI_INCLUDE_THOUGHTS: v }, dir).model.includeThoughts, true, `${v} is true`);
  }
  for (const v of ['0', 'false', 'No', 'off']) {
    t.equal(loadConfig({ GEMINI_INCLUDE_THOUGHTS: v }, dir).model.includeThoughts, false, `${v} is false`);
  }
});

t.test('the result is frozen, nested slices too', async (t) => {
  const dir = realpathSync(t.testdir({}));
  const c = loadConfig({ GEMINI_API_KEY: 'k' }, dir);
  t.ok(Object.isFrozen(c), 'config');
  t.ok(Object.isFrozen(c.model), 'config.model');
  t.ok(Object.isFrozen(c.shell), 'config.shell');
  t.throws(() => {
    (c as { port: number }).port = 1;
  }, TypeError);
  t.equal(c.port, 41242);
});

t.test('pure: reads only the env passed in', async (t) => {
  const dir = realpathSync(t.testdir({}));
  const saved = process.env.PORT;
  process.env.PORT = 'not-a-port';
  t.teardown(() => {
    if (saved === undefined) delete process.env.PORT;
    else process.env.PORT = saved;
  });
  t.equal(loadConfig({}, dir).port, 41242, 'process.env is not consulted');
});

t.test('security defaults: no unauthenticated remote bind; shell commands never see the server secrets; workspace roots', async (t) => {
  const dir = realpathSync(t.testdir({ ws: {}, other: {}, 'auth.json': '{}' }));
  t.throws(() => loadConfig({ HOST: '0.0.0.0' }, dir), /HOST=0\.0\.0\.0 is not a loopback address and AUTH_CONFIG is unset/);
  t.equal(loadConfig({ HOST: '0.0.0.0', AUTH_CONFIG: 'auth.json' }, dir).host, '0.0.0.0', 'with authentication it may bind anywhere');
  t.equal(loadConfig({ HOST: '127.0.0.2' }, dir).host, '127.0.0.2');
  const c = loadConfig(
    { GEMINI_API_KEY: 'k', DATABASE_URL: 'postgres://u:p@h/db', PATH: '/usr/bin', HOME: '/home/x', AUTH_CONFIG: 'auth.json' },
    dir,
  );
  t.same(c.shell.env, { PATH: '/usr/bin', HOME: '/home/x' }, 'the API key, database URL and auth file stay out of commands');
  t.same(c.workspaceRoots, [dir], 'with AUTH_CONFIG, workspaces default to WORKSPACE_DIR');
  t.equal(loadConfig({}, dir).workspaceRoots, undefined, 'without it, anywhere (local use)');
  t.same(loadConfig({ WORKSPACE_ROOTS: `ws${path.delimiter}other` }, dir).workspaceRoots, [path.join(dir, 'ws'), path.join(dir, 'other')]);
  t.throws(() => loadConfig({ WORKSPACE_ROOTS: 'missing' }, dir), /WORKSPACE_ROOTS: missing is not an existing directory/);
});

t.test('DURABILITY: relaxed by default, strict on request, nothing else', async (t) => {
  const dir = realpathSync(t.testdir({}));
  t.equal(loadConfig({}, dir).store.durability, 'relaxed');
  t.equal(loadConfig({ DURABILITY: 'strict' }, dir).store.durability, 'strict');
  t.equal(loadConfig({ DURABILITY: 'relaxed' }, dir).store.durability, 'relaxed');
  refuses(t, { DURABILITY: 'fsync' }, 'DURABILITY', dir, /relaxed, strict/);
});

t.test('DATABASE_URL that is not a URL: a ConfigError that does not repeat it (it may hold a password)', async (t) => {
  const dir = realpathSync(t.testdir({}));
  refuses(t, { DATABASE_URL: 'postgres://u:s3cret@[db/x' }, 'DATABASE_URL', dir, /^DATABASE_URL is not a valid URL/);
  t.throws(() => loadConfig({ DATABASE_URL: 'postgres://u:s3cret@[db/x' }, dir), { message: /^(?!.*s3cret)/ });
  t.equal(
    loadConfig({ DATABASE_URL: 'postgres://u@localhost/db?host=/var/run/postgresql' }, dir).store.databaseUrl,
    'postgres://u@localhost/db?host=/var/run/postgresql',
  );
});

t.test('COMMIT_LANES: 1 unless set, 1–8', async (t) => {
  const dir = realpathSync(t.testdir({}));
  t.equal(loadConfig({}, dir).store.commitLanes, 1);
  t.equal(loadConfig({ DATABASE_URL: 'postgres://db/x' }, dir).store.commitLanes, 1);
  t.equal(loadConfig({ DATABASE_URL: 'postgres://db/x', COMMIT_LANES: '2' }, dir).store.commitLanes, 2);
  refuses(t, { COMMIT_LANES: '0' }, 'COMMIT_LANES', dir, /COMMIT_LANES/);
  refuses(t, { COMMIT_LANES: '9' }, 'COMMIT_LANES', dir, /COMMIT_LANES/);
});

t.test('CHECKPOINTING: off by default; the settings file’s checkpointing.enabled; the variable, when set, wins', async (t) => {
  const dir = realpathSync(
    t.testdir({
      'on.json': JSON.stringify({ checkpointing: { enabled: true } }),
      'off.json': JSON.stringify({ checkpointing: { enabled: false }, mcpServers: {} }),
      'bad.json': JSON.stringify({ checkpointing: { enabled: 'yes' } }),
    }),
  );
  t.equal(loadConfig({}, dir).checkpointing, false, 'off by default, as in gemini-cli');
  t.equal(loadConfig({ CHECKPOINTING: 'true' }, dir).checkpointing, true);
  t.equal(loadConfig({ SETTINGS_FILE: 'on.json' }, dir).checkpointing, true, 'checkpointing.enabled in settings');
  t.equal(loadConfig({ SETTINGS_FILE: 'off.json' }, dir).checkpointing, false);
  t.equal(loadConfig({ SETTINGS_FILE: 'on.json', CHECKPOINTING: 'false' }, dir).checkpointing, false, 'the variable wins');
  t.equal(loadConfig({ SETTINGS_FILE: 'off.json', CHECKPOINTING: '1' }, dir).checkpointing, true);
  refuses(t, { CHECKPOINTING: 'maybe' }, 'CHECKPOINTING', dir);
  refuses(t, { SETTINGS_FILE: 'bad.json' }, 'SETTINGS_FILE', dir, /checkpointing\.enabled/);
});
