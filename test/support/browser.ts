import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { type Browser, chromium } from 'playwright-core';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/** Flags for this closed network (no background connections); the browser is always headless. */
const QUIET_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Flags from `@sparticuz/chromium`'s recommended list that are left out: they switch off the web's
 * security model (the pages under test must behave as in a partner's browser), replace
 * Playwright's own feature lists (Chromium keeps only the last --disable/--enable-features), set
 * the headless mode (Playwright does), or run everything in one process (an AWS Lambda need; the browser then
 * dies when a test opens its second page).
 */
const DROPPED_PACKAGED_ARGS =
  /^--(disable-web-security|allow-running-insecure-content|disable-site-isolation-trials|(dis|en)able-features=|headless|single-process)/;

type Found = { executablePath: string; args: string[]; env?: NodeJS.ProcessEnv; label: string };

let found: Promise<Found> | undefined;

/**
 * The browser the tests drive: `CHROMIUM_PATH` if set, else Debian's `/usr/bin/chromium` if present,
 * else the Chromium shipped inside the `@sparticuz/chromium` dev dependency (no apt step needed).
 * Said once per run.
 */
function findChromium(): Promise<Found> {
  found ??= (async () => {
    const fromEnv = process.env.CHROMIUM_PATH;
    let result: Found;
    if (fromEnv) {
      if (!existsSync(fromEnv)) throw new Error(`CHROMIUM_PATH=${fromEnv} does not exist`);
      result = { executablePath: fromEnv, args: QUIET_ARGS, label: `CHROMIUM_PATH (${fromEnv})` };
    } else if (existsSync(SYSTEM_CHROMIUM)) {
      result = { executablePath: SYSTEM_CHROMIUM, args: QUIET_ARGS, label: `system Chromium (${SYSTEM_CHROMIUM})` };
    } else {
      result = await packagedChromium();
    }
    console.log(`  [browser tests] using ${result.label}`);
    return result;
  })();
  return found;
}

/**
 * Unpacks the package's brotli-compressed Chromium and the shared libraries it needs (NSS, NSPR,
 * expat: not on a machine without a browser; SwiftShader's GL) once per package version into
 * node_modules/.cache, into a fresh folder renamed into place when complete, so an interrupted or concurrent run never
 * sees a half-written binary. (The package's own `executablePath()` writes straight to
 * `/tmp/chromium`, shared by every version, and unpacks the libraries only on AWS.)
 */
async function packagedChromium(): Promise<Found> {
  const { default: sparticuz } = await import('@sparticuz/chromium');
  const packageDir = resolve(dirname(require.resolve('@sparticuz/chromium')), '..', '..');
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const bin = join(packageDir, 'bin');
  const dir = resolve(__dirname, '..', '..', 'node_modules', '.cache', `tally-chromium-${version}`);
  const executablePath = join(dir, 'chromium');
  if (!existsSync(executablePath)) {
    const partial = `${dir}.${process.pid}.partial`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(join(partial, 'lib'), { recursive: true });
    writeFileSync(join(partial, 'chromium'), brotliDecompressSync(readFileSync(join(bin, 'chromium.br'))), { mode: 0o755 });
    // al2023: lib/ with NSS, NSPR, expat; swiftshader: the GL libraries Chromium loads from its own folder
    for (const archive of ['al2023.tar.br', 'swiftshader.tar.br']) {
      const untar = spawnSync('tar', ['-x', '-C', partial], { input: brotliDecompressSync(readFileSync(join(bin, archive))) });
      if (untar.status !== 0) throw new Error(`unpacking @sparticuz/chromium's ${archive} failed: ${untar.error ?? untar.stderr}`);
    }
    try {
      renameSync(partial, dir);
    } catch (error) {
      rmSync(partial, { recursive: true, force: true });
      if (!existsSync(executablePath)) throw error; // else another run finished first
    }
  }
  sparticuz.setGraphicsMode = false; // no WebGL
  const lib = join(dir, 'lib');
  const env = { ...process.env, LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
  const args = [...sparticuz.args.filter((arg) => !DROPPED_PACKAGED_ARGS.test(arg)), ...QUIET_ARGS];
  return { executablePath, args: [...new Set(args)], env, label: `Chromium ${version} from @sparticuz/chromium (${executablePath})` };
}

/** Headless Chromium (see findChromium); Playwright gives each launch a fresh, empty profile. */
export async function launchChromium(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const { executablePath, args, env } = await findChromium();
  const browser = await chromium.launch({ executablePath, headless: true, args, env });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}
