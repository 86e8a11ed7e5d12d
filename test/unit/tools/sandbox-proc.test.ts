/**
 * The sandbox's /proc: a command running as root (the server's user may be root) must not be
 * able to write the host's kernel settings. bubblewrap covers /proc/sys read-only only when it
 * finds it writable, and a root /proc/sys directory reports "not writable" (EACCES), so it is
 * left writable: `kernel.core_pattern` or `kernel.modprobe` set to a workspace script would run
 * it as root on the host. Each write below writes back the value already there (harmless).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { bwrapSandbox } from '../../support/sandbox.js';
import { RunShellCommandTool } from '../../../src/tools/shell/run-shell-command.js';

const sandbox = bwrapSandbox();
const BWRAP = { skip: typeof sandbox === 'string' ? sandbox : false };
const SCRATCH = fs.existsSync('/var/tmp') ? '/var/tmp' : path.resolve('.tap');

t.test("the host's kernel settings (/proc/sys) are read-only in the sandbox", BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH, 'proc-ws-')));
  t.teardown(() => fs.rmSync(ws, { recursive: true, force: true }));
  const keys = ['kernel/core_pattern', 'kernel/modprobe', 'vm/swappiness', 'kernel/hostname'].filter((k) =>
    fs.existsSync(`/proc/sys/${k}`),
  );
  const script = keys
    .map((k) => `v=$(cat /proc/sys/${k}) && printf '%s\\n' "$v" > /proc/sys/${k} 2>/dev/null && echo "WROTE ${k}" || echo "REFUSED ${k}"`)
    .join('; ');
  const r = await new RunShellCommandTool({ sandbox }).run(
    { command: `${script}; cat /proc/sys/kernel/ostype; cat /proc/sys/net/ipv4/ip_forward` },
    { workspace: ws, signal: new AbortController().signal },
  );
  const all = r.isError ? (r.llmContent ?? r.error.message) : r.llmContent;
  const out = all.slice(all.indexOf('Output:')); // the Command: line quotes the script
  for (const k of keys) t.match(out, `REFUSED ${k}`, `${k} cannot be written`);
  t.notMatch(out, /WROTE/);
  t.match(out, /Linux/, '/proc/sys stays readable');
});
