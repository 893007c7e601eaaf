import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import { describeApi } from '../platform/openapi-document.js';
import { PetResponse } from './pet.dto.js';

export function buildOpenApiDocument(
  app: INestApplication,
  servers: { production: string; staging: string },
): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Pet Store')
    .setDescription(
      'A store of animals available for adoption. Every operation needs `Authorization: Bearer <API key>`.',
    )
    .setVersion('1.0.0')
    .addTag('pets', 'Animals available for adoption.')
    .addServer(servers.production, 'Production')
    .addServer(servers.staging, 'Staging')
    // Not addBearerAuth(): it adds `bearerFormat: JWT`, and the keys are not JWTs.
    .addSecurity('bearerAuth', {
      type: 'http',
      scheme: 'bearer',
      description:
        'An API key, sent as `Authorization: Bearer <key>` (the scheme name in any case). Keys are opaque strings, not JWTs: the ones the service issues are `psk_` followed by 43 base64url characters (256 random bits); an operator may also configure other keys (`API_KEYS`), of visible ASCII characters other than commas. Without a valid key every operation answers 401.',
    })
    .build();
  const document = describeApi(app, config, [PetResponse], {
    Pets: { type: 'array', description: 'A page of animals.', items: { $ref: getSchemaPath('Pet') } },
  });
  referToEnumsDirectly(document);
  return document;
}

/**
 * @nestjs/swagger wraps a property of an enum schema (a status: PetStatus) in `allOf`, even with
 * nothing beside it, and client generators then do not type it as the enum: the bare reference.
 */
function referToEnumsDirectly(document: OpenAPIObject): void {
  for (const schema of Object.values(document.components?.schemas ?? {})) {
    if ('$ref' in schema) continue;
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      const [reference, ...others] = '$ref' in property ? [] : (property.allOf ?? []);
      if (reference !== undefined && others.length === 0 && Object.keys(property).length === 1)
        schema.properties = { ...schema.properties, [name]: reference };
    }
  }
}
