import { join } from 'node:path';
import { statSync } from 'node:fs';
import { expect } from 'chai';
import { SAMPLE } from '../../src/http/openapi-examples';
import { startTestApp } from '../support/app';
import { launchChromium } from '../support/browser';
import { tempDir } from '../support/temp';

describe('the API reference in a browser (/docs)', function () {
  this.timeout(90_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  before(async () => {
    app = await startTestApp();
    chromium = await launchChromium();
  });
  after(async () => {
    await chromium?.close();
    await app?.close();
  });

  it('renders navigation and request examples from the OpenAPI document, with nothing fetched from elsewhere', async () => {
    const page = await chromium.browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const elsewhere: string[] = [];
    page.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith(app.url) && !url.startsWith('data:') && !url.startsWith('blob:')) elsewhere.push(url);
    });
    const response = await page.goto(`${app.url}/docs`);
    expect(response?.status()).to.equal(200);
    // Navigation: the sidebar lists the areas (tags, in their groups); opening one lists its operations by their short titles.
    const navigation = page.getByText('Transactions', { exact: true }).first();
    await navigation.waitFor({ timeout: 30_000 });
    await navigation.click();
    await page.getByText('Create a transfer', { exact: true }).first().waitFor({ timeout: 30_000 });
    // An example: the request sample of an operation (curl by default), built from its schemas.
    await page.waitForFunction('/curl[\\s\\S]*--request POST/.test(document.body.innerText)', undefined, { timeout: 30_000 });
    // The hand-written examples (src/http/openapi-examples.ts), not values made up from the schemas:
    // the first operation's request in its curl sample, its answer, and an error's exact message.
    const shown = (text: string) => page.waitForFunction(`document.body.innerText.includes(${JSON.stringify(text)})`, undefined, { timeout: 30_000 });
    // The first operation (Users, in the Partner API group): its request in its curl sample, its answer, an error.
    await page.getByText('Users', { exact: true }).first().click();
    await page.getByText('Register a user', { exact: true }).first().click();
    await shown(`"email": "${SAMPLE.email}"`);
    await shown('"message": "User created"');
    await page.getByRole('tab', { name: /409/ }).first().click();
    await shown('User with this email already exists');
    const screenshot = join(tempDir('tally-docs-'), 'docs.png');
    await page.screenshot({ path: screenshot, fullPage: false });
    if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT, fullPage: false });
    expect(statSync(screenshot).size).to.be.greaterThan(10_000);
    expect(await navigation.isVisible()).to.equal(true);
    expect(elsewhere, 'requests outside the service').to.deep.equal([]);
    await page.close();
  });
});
