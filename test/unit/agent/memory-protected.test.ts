/** GEMINI.md is read into every model request: through a link it must not reach the server's own files. */
import t from 'tap';
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { memoryInstruction, readMemory } from '../../../src/agent/runtime/memory.js';
import { ProtectedPaths } from '../../../src/tools/index.js';
import { tempDir } from '../../support/server.js';

t.test('a GEMINI.md that links to a protected file is not read; an ordinary one is', async (t) => {
  // The workspace is the server's own directory (WORKSPACE_DIR defaults to it), holding AUTH_CONFIG.
  const linked = tempDir('devtool-server-');
  const secrets = path.join(linked, 'auth.json');
  writeFileSync(secrets, '{"apiKeys":[{"key":"sk-secret"}]}');
  symlinkSync(secrets, path.join(linked, 'GEMINI.md'));
  const guard = new ProtectedPaths([secrets]);
  t.equal(await readMemory(linked, guard), undefined, 'the link is refused');
  t.equal(await memoryInstruction(linked, guard), undefined, 'and nothing reaches the system instruction');
  t.match(await readMemory(linked), /sk-secret/, 'without the guard the link would be followed (what the guard prevents)');
  const plain = tempDir();
  writeFileSync(path.join(plain, 'GEMINI.md'), 'Use pnpm.\n');
  t.equal(await readMemory(plain, guard), 'Use pnpm.\n');
});
