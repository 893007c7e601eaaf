import { SetMetadata } from '@nestjs/common';

/** The metadata key the bearer-key guard reads. */
export const IS_PUBLIC = 'petstore:public';

/** Marks a controller or route that needs no key (health, metrics, docs). Everything else does. */
export const Public = (): ClassDecorator & MethodDecorator => SetMetadata(IS_PUBLIC, true);
