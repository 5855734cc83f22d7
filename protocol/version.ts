/** The gateway's version, as in package.json (a test keeps the two equal). */
export const VERSION = '0.1.0';
export const PRODUCT = 'switchyard';
/** spec 000, Response headers: `Server` carries the product name. */
export const SERVER_HEADER = `${PRODUCT}/${VERSION}`;
