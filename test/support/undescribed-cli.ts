import { allRoutes } from '../../src/http/app';
import { notificationWebhooks } from '../../src/http/notifications';
import { buildOpenApi } from '../../src/http/openapi';
import { undescribedFields } from './openapi-descriptions';

/** Prints every field and parameter of the OpenAPI document that has no description (`npx tsx test/support/undescribed-cli.ts`). */
const doc = buildOpenApi(allRoutes(), 'http://localhost:3000', notificationWebhooks) as unknown as Parameters<typeof undescribedFields>[0];
for (const line of undescribedFields(doc)) console.log(line);
