/**
 * A PostgreSQL cluster of a test's own: initdb into a temp directory, started on a free port
 * (loopback, socket in the directory), so a test may stop, restart or crash it without
 * touching the machine's server or another test's. As root the cluster runs as `postgres`
 * (PostgreSQL refuses to run as root) through `runuser`, with a directory that user owns.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './process.js';

const run = promisify(execFile);

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface PrivateCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** `pg_ctl stop -m <mode>`: fast ends sessions cleanly, immediate is a crash (recovery on start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** `pg_ctl restart -m <mode>`: down and up again in one step. */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
}

/** The newest installed server's bin directory, or undefined. */
function binDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], 'bin');
}

/** Why a private cluster cannot be made here, or undefined when it can. */
export function privateClusterSkip(): string | undefined {
  if (binDir() === undefined) return 'no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)';
  if (process.getuid?.() === 0 && !existsSync('/sbin/runuser') && !existsSync('/usr/sbin/runuser')) {
    return 'running as root without runuser: PostgreSQL will not run as root';
  }
  return undefined;
}

/** initdb + start; stopped (immediate) and removed at teardown. */
export async function privateCluster(t: Teardown): Promise<PrivateCluster> {
  const bin = binDir();
  if (bin === undefined) throw new Error(privateClusterSkip());
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'devtool-pg-'));
  const data = path.join(dir, 'data');
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = async (tool: string, args: string[]) => {
    const cmd = path.join(bin, tool);
    return asRoot ? run('runuser', ['-u', 'postgres', '--', cmd, ...args]) : run(cmd, args);
  };
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  // Small and quick: no fsync (the test is about connections, not disks), a short checkpoint.
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60 -c shared_buffers=16MB`;
  const log = path.join(dir, 'server.log');
  const start = async () => void (await pg('pg_ctl', ['-D', data, '-o', opts, '-l', log, '-w', '-t', '60', 'start']));
  const stop = async (mode: 'fast' | 'immediate') => void (await pg('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']));
  const restart = async (mode: 'fast' | 'immediate') =>
    void (await pg('pg_ctl', ['-D', data, '-o', opts, '-l', log, '-m', mode, '-w', '-t', '60', 'restart']));
  await start();
  t.teardown(async () => {
    await stop('immediate').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stop, start, restart };
}
