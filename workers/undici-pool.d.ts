// undici's Pool module on its own (see upstream-http.ts); undici types only its index.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const PoolModule: typeof Pool;
  export default PoolModule;
}
