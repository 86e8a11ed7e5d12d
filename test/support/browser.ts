/**
 * Debian's Chromium driven by playwright-core (no browser download): headless, no sandbox (CI
 * runs as root), nothing that reaches the network on its own, a fresh profile per launch.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the browser tests cannot run here, or undefined when they can. */
export function browserSkipReason(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium; .ci/run does)`;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Launches Chromium on a fresh user-data-dir; closed (and the profile removed) at teardown. */
export async function launchBrowser(t: Teardown): Promise<BrowserContext> {
  const profile = mkdtempSync(path.join(tmpdir(), 'console-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1200, height: 760 },
  });
  t.teardown(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return context;
}

/** What a page did that it should not: uncaught errors, console errors, dialogs (alert/confirm/prompt). */
export interface PageTrouble {
  errors: string[];
  dialogs: string[];
}

/** A new page whose errors and dialogs are recorded (dialogs are dismissed). */
export async function watchedPage(context: BrowserContext): Promise<{ page: Page; trouble: PageTrouble }> {
  const page = await context.newPage();
  const trouble: PageTrouble = { errors: [], dialogs: [] };
  page.on('pageerror', (err) => trouble.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') trouble.errors.push(`console: ${msg.text()}`);
  });
  page.on('dialog', (dialog) => {
    trouble.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, trouble };
}
