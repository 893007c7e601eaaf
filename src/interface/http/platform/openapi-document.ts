import type { INestApplication, Type } from '@nestjs/common';
import { type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ErrorResponse } from './api-error.js';

type Schemas = NonNullable<NonNullable<OpenAPIObject['components']>['schemas']>;

/**
 * The document of the routes the app declares, with the Error schema and the product's own models
 * and schemas. Paths are relative to the servers, which end in /v1.
 */
export function describeApi(
  app: INestApplication,
  config: Omit<OpenAPIObject, 'paths'>,
  extraModels: Type[],
  schemas: Schemas,
): OpenAPIObject {
  const document = SwaggerModule.createDocument(app, config, {
    ignoreGlobalPrefix: true,
    extraModels: [...extraModels, ErrorResponse],
  });
  document.components ??= {};
  document.components.schemas = { ...document.components.schemas, ...schemas };
  closeRequestBodies(document);
  return document;
}

/**
 * BodyValidationPipe refuses a property a body's DTO does not define (forbidNonWhitelisted), so
 * every request-body schema says `additionalProperties: false`; @ApiSchema has no option for it.
 */
function closeRequestBodies(document: OpenAPIObject): void {
  const schemas = document.components?.schemas ?? {};
  for (const path of Object.values(document.paths)) {
    for (const operation of [path.get, path.put, path.post, path.patch, path.delete]) {
      const body = operation?.requestBody;
      const ref = body !== undefined && 'content' in body ? body.content['application/json']?.schema : undefined;
      const schema =
        ref !== undefined && '$ref' in ref ? schemas[ref.$ref.replace('#/components/schemas/', '')] : undefined;
      if (schema !== undefined && !('$ref' in schema)) schema.additionalProperties = false;
    }
  }
}

/** /openapi.json, /openapi.yaml and Swagger UI at /docs; outside /v1 and needing no key. */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Pet Store API',
    swaggerOptions: { persistAuthorization: false },
  });
}
